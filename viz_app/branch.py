"""A branch: a trace continued by a language model from an edited decision.

At one decision of an orchestrator (a stop, a spawn, a delegation, a message, a merge) a
reviewer writes the decision it should have made. `continue_from` sends the orchestrator's own
context up to that node (`conversation`: the events it had seen, as its chat), with the edited
decision in place of the one it made, to an OpenAI-compatible endpoint (the judge's), and asks
for the orchestrator's next turns, one at a time, until it decides to stop or the turn limit is
reached. The result is a new trace (`Branch.trace`):

- every event before the edited one, exactly as the original recorded it;
- the edited decision, under the original event's id, carrying `forked_from` (the original
  trace's id), `fork_event` (that id) and `replay_model` (who continued it); these are extra
  event keys, which the reference schema allows (its top level is closed, its events open);
- the model's turns, each an `orchestrator_decision` event with `replayed: true`, and what each
  asked for (a spawn, a message or delegation, a tool call) as an event with
  `requested_not_run: true`: only the orchestrator's own LLM turns are replayed; no sub-agent is
  started, no tool called and no message delivered, so no result ever comes back.

Every request is bounded: `ReplayLimits` sets the turns, a deadline on the whole continuation
(each request's timeout is what is left of it, and a reply that trickles in is cut at it), the
bytes one reply may hold (read through a capped transport, never whole) and its tokens. A
timeout, an HTTP error, a refusal, a reply cut at the token limit, a reply that is not the JSON
asked for: each is a `BranchError` saying in one sentence what failed and that nothing was
saved, and no trace is made.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from viz_app.analysis import Analysis, analyze
from viz_app.errors import OrchvizError
from viz_app.labels import Decision as CorrectedDecision
from viz_app.model import DECISIONS, Decision, Event, Trace
from viz_app.settings import ModelEndpoint, ReplayLimits
from viz_app.text import brief, what_came

TEXT_LIMIT = 4000
"""Characters of one event's text put in the conversation (the rest is cut, and said so)."""

CONTEXT_LIMIT = 160
"""Events of the orchestrator's context sent at most (the latest; the earlier ones counted)."""

NAME_LIMIT = 200
"""Characters an agent's or a tool's name in a reply may have."""

NO_KEY = "no-key"
"""The key sent when the environment holds none (a local server that needs no key)."""

NEXT_TURN = ("Recorded. In this replay nothing you ask for is run: no sub-agent is started, no "
             "tool is called and no message is delivered, so no result will arrive. Give your "
             "next turn as one JSON object.")

SYSTEM = """You are {agent}, the orchestrator of a multi-agent system working on task {task}.
The conversation below is what you have seen so far: the messages, returns and tool results \
sent to you (user turns) and your own decisions (assistant turns).{cut}
Give each next turn as one JSON object: "decision" is one of spawn, delegate, communicate, \
aggregate, stop, continue; "text" is what you decide, write or answer (on stop, your final \
answer); "to" names the agent you spawn, delegate to or message ("" when none); "tool" names a \
tool you call ("" when none)."""


class BranchError(OrchvizError):
    """A continuation that failed; the message says what failed and that nothing was saved."""


class Replacement(BaseModel):
    """The decision a reviewer says the orchestrator should have made at one event."""

    model_config = ConfigDict(frozen=True)

    kind: Decision = Field(description="Which decision it is: spawn, delegate, communicate, "
                           "aggregate, stop or continue.")
    text: str = Field(max_length=100_000, description="The decision in the orchestrator's words: "
                      "the merge it should have written, why it continues, the message it "
                      "should have sent.")
    to: str = Field("", max_length=NAME_LIMIT, description="The agent it spawns, delegates to "
                    "or messages, when the decision names one.")


def replacement_from(decision: CorrectedDecision) -> Replacement | None:
    """The replacement a correction gives (`viz_app.labels.correction.corrected_decision`):
    a merge, a final answer, a message or a spawn's task in its own words; a delegation or a
    reuse to its agent; the rest (continue and wait, do it itself, no message) in the
    correction's canonical form. None for a decision that is only the one recorded."""
    action = decision.action
    if action == "as_recorded":
        return None
    kind, text, to = {
        "merge": ("aggregate", decision.text, ""),
        "stop": ("stop", decision.text or "stop", ""),
        "send": ("communicate", decision.text, decision.agent_to),
        "spawn": ("spawn", decision.text, decision.role),
        "delegate": ("delegate", decision.canonical, decision.agent_to or decision.role),
        "reuse_agent": ("delegate", decision.canonical, decision.agent_to),
    }.get(action, ("continue", decision.canonical, ""))
    return Replacement(kind=kind, text=text, to=to[:NAME_LIMIT])


class Turn(BaseModel):
    """One turn of the orchestrator, as the model must reply it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    decision: Decision
    text: str = Field(max_length=40_000)
    to: str = Field(max_length=NAME_LIMIT)
    tool: str = Field(max_length=NAME_LIMIT)


TURN_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "required": ["decision", "text", "to", "tool"],
    "properties": {
        "decision": {"type": "string", "enum": list(DECISIONS)},
        "text": {"type": "string", "description": "What you decide, write or answer."},
        "to": {"type": "string", "description": "The agent spawned, delegated to or messaged; "
               "'' when none."},
        "tool": {"type": "string", "description": "The tool called; '' when none."}}}
"""The strict structured output each turn is asked for."""


class Fork(BaseModel):
    """Where a branch leaves its original (read back from the branch's edited event)."""

    forked_from: str = Field(description="The original trace's id.")
    fork_event: str = Field(description="The id of the edited event, in both traces.")
    t: float = Field(description="When the edited event happened, seconds from the start.")
    model: str = Field("", description="The model that continued the branch.")
    replayed: list[str] = Field(default_factory=list, description="Ids of the model's turns.")
    requested: list[str] = Field(default_factory=list, description="Ids of what they asked for, "
                                 "shown and not run.")
    turn_limit_reached: bool = Field(False, description="Whether the continuation ended at the "
                                     "turn limit rather than at a stop.")


class Branch(BaseModel):
    """A continued trace and how it came about."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    trace: Trace
    fork: Fork
    turns: int = Field(description="Turns the model gave.")
    seconds: float = Field(description="How long the continuation took.")
    warnings: list[str] = Field(default_factory=list, description="What a reviewer should "
                                "know of the model's turns: a turn naming an agent the trace "
                                "does not have (kept as the model wrote it), one sentence each.")


def unknown_agent(turn: Turn, turn_id: str, known: set[str]) -> str | None:
    """The warning for a turn that delegates to or messages an agent that neither the trace
    nor an earlier spawn of the branch has (a spawn adds its agent to `known`)."""
    if not turn.to:
        return None
    if turn.decision == "spawn":
        known.add(turn.to)
        return None
    if turn.to in known:
        return None
    return (f"turn {turn_id} {'delegates to' if turn.decision == 'delegate' else 'names'} "
            f"{turn.to!r}, an agent the trace does not have (kept as the model wrote it)")


# -- reading a trace ------------------------------------------------------------------------------


def fork_of(trace: Trace) -> Fork | None:
    """Where a trace leaves the one it was forked from, when it is a branch."""
    fork: Fork | None = None
    for event in trace.events:
        extras = event.extras
        if fork is None and isinstance(extras.get("forked_from"), str) \
                and isinstance(extras.get("fork_event"), str):
            fork = Fork(forked_from=extras["forked_from"], fork_event=extras["fork_event"],
                        t=float(event.t), model=str(extras.get("replay_model") or ""))
    if fork is None:
        return None
    for event in sorted(trace.events, key=lambda e: e.t):
        if event.extras.get("replayed") is True:
            fork.replayed.append(event.id)
            fork.turn_limit_reached = event.extras.get("turn_limit_reached") is True
        if event.extras.get("requested_not_run") is True:
            fork.requested.append(event.id)
    return fork


def orchestrator_of(analysis: Analysis, event_id: str) -> str:
    """The orchestrating agent that made an event's decision; BranchError when the event is
    not one an orchestrator made (a sub-agent's, a tool's) or the trace lacks it."""
    trace = analysis.trace
    if event_id not in trace.events_by_id:
        raise BranchError(f"trace {trace.trace_id} has no event {event_id}; nothing was saved")
    agent = analysis.actor.get(event_id, trace.event(event_id).agent)
    if analysis.parent.get(agent) is not None and not analysis.children.get(agent):
        raise BranchError(f"event {event_id} of trace {trace.trace_id} belongs to {agent}, a "
                          "sub-agent that orchestrates nobody: only an orchestrator's decision "
                          "can be continued; nothing was saved")
    return agent


def default_kind(trace: Trace, event_id: str) -> str:
    """The kind of decision an event made: its `decision`, an aggregate's, a spawn's, a
    message's (communicate); else continue."""
    event = trace.events_by_id.get(event_id)
    if event is None:
        raise BranchError(f"trace {trace.trace_id} has no event {event_id}; nothing was saved")
    return own_turn(event)["decision"]


def _cut(text: str) -> str:
    if len(text) <= TEXT_LIMIT:
        return text
    return text[:TEXT_LIMIT] + f" [... {len(text) - TEXT_LIMIT} characters left out]"


def own_turn(event: Event) -> dict[str, str]:
    """An orchestrator's own event as the turn it would have replied (the reply's shape)."""
    decision = event.decision or {"spawn": "spawn", "message": "communicate",
                                  "aggregate": "aggregate"}.get(event.type, "continue")
    return {"decision": decision, "text": _cut(event.text),
            "to": event.to or "" if event.type in ("spawn", "message", "orchestrator_decision")
            else "", "tool": event.tool or "" if event.type == "tool_call" else ""}


def _seen(event: Event) -> str:
    """Another party's event as the orchestrator saw it."""
    who = event.from_ or event.agent
    what = {"return": f"return from {who}", "message": f"message from {who}",
            "tool_result": f"result of {event.tool or event.agent}",
            "human_intervention": f"human ({who})", "safety_event": "safety event"
            }.get(event.type, f"{event.type} by {who}")
    return f"[{what}] {_cut(event.text)}"


def conversation(analysis: Analysis, event_id: str) -> list[dict[str, str]]:
    """The orchestrator's context at an event, as chat messages: a system message naming it
    and the reply's format, then, in time order, its own events before this one (assistant
    turns in the reply's shape) and what was sent to it (user turns: returns and messages to
    it, results of its tool calls). At most `CONTEXT_LIMIT` events, the latest."""
    agent = orchestrator_of(analysis, event_id)
    where = analysis.position[event_id]
    turns: list[dict[str, str]] = []
    for event in analysis.order[:where]:
        if analysis.actor.get(event.id, event.agent) == agent and event.type != "tool_result":
            turns.append({"role": "assistant", "content": json.dumps(own_turn(event),
                                                                    ensure_ascii=False)})
        elif event.to == agent or (event.type == "tool_result"
                                   and analysis.actor.get(event.id) == agent):
            turns.append({"role": "user", "content": _seen(event)})
    left_out = max(0, len(turns) - CONTEXT_LIMIT)
    turns = turns[left_out:]
    cut = f" ({left_out} earlier events are left out.)" if left_out else ""
    system = SYSTEM.format(agent=agent, task=analysis.trace.task_id, cut=cut)
    return [{"role": "system", "content": system}, *turns]


# -- asking the endpoint ---------------------------------------------------------------------------


class _Cap:
    """What a capped transport stops a reply at, and what stopped the last one ('size',
    'deadline' or None)."""

    def __init__(self, limit: int, deadline: float):
        self.limit = limit
        self.deadline = deadline
        self.tripped: str | None = None


def _capped_client(cap: _Cap) -> Any:
    """An httpx client whose transport stops reading a reply past `cap.limit` bytes or past
    its deadline, and records which in `cap` (so the failure can say so). httpx comes with the
    openai package (the judge extra): imported only here."""
    import httpx

    class Stream(httpx.SyncByteStream):
        def __init__(self, response: httpx.Response, request: httpx.Request):
            self.response, self.request = response, request

        def __iter__(self) -> Iterator[bytes]:
            seen = 0
            for chunk in self.response.stream:
                seen += len(chunk)
                if seen > cap.limit or time.monotonic() > cap.deadline:
                    cap.tripped = "size" if seen > cap.limit else "deadline"
                    self.response.close()
                    raise httpx.ReadError("reply cut", request=self.request)
                yield chunk

        def close(self) -> None:
            self.response.close()

    class Transport(httpx.BaseTransport):
        def __init__(self) -> None:
            self.inner = httpx.HTTPTransport()

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            response = self.inner.handle_request(request)
            declared = response.headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > cap.limit:
                response.close()
                cap.tripped = "size"
                raise httpx.ReadError("reply over the size limit", request=request)
            return httpx.Response(status_code=response.status_code, headers=response.headers,
                                  stream=Stream(response, request),
                                  extensions=response.extensions, request=request)

        def close(self) -> None:
            self.inner.close()

    return httpx.Client(transport=Transport())


class _Asker:
    """One continuation's client: asks for one turn at a time within the limits."""

    def __init__(self, endpoint: ModelEndpoint, limits: ReplayLimits, what: str):
        try:
            import openai
        except ImportError:
            raise BranchError("continuing a trace needs the openai package: pip install "
                              "'orchviz[judge]'; nothing was saved") from None
        if not endpoint.url.startswith(("http://", "https://")):
            raise BranchError(f"the endpoint {endpoint.url[:200]!r} is not an http(s) URL; "
                              "nothing was saved")
        self.openai = openai
        self.what = what
        self.endpoint = endpoint
        self.limits = limits
        self.started = time.monotonic()
        self.deadline = self.started + limits.deadline
        self.cap = _Cap(limits.reply_bytes, self.deadline)
        self.client = openai.OpenAI(
            base_url=endpoint.url, api_key=os.environ.get(endpoint.key_env) or NO_KEY,
            max_retries=0, timeout=endpoint.timeout,
            default_headers={"Accept-Encoding": "identity"},  # the byte cap counts what is read
            http_client=_capped_client(self.cap))
        self.tokens = 0.0

    def close(self) -> None:
        self.client.close()

    def _fail(self, what: str) -> BranchError:
        return BranchError(f"{self.what} failed: {what}; nothing was saved")

    def turn(self, messages: list[dict[str, str]]) -> Turn:
        """The model's next turn; BranchError saying why there is none usable."""
        openai = self.openai
        left = self.deadline - time.monotonic()
        where = f"the endpoint at {self.endpoint.url}"
        if left <= 0:
            raise self._fail(f"{where} used the whole {self.limits.deadline:g} s deadline")
        self.cap.tripped = None
        try:
            reply = self.client.chat.completions.create(
                model=self.endpoint.model, messages=messages,  # type: ignore[arg-type]
                max_completion_tokens=self.limits.max_tokens,
                timeout=min(self.endpoint.timeout, left),
                response_format={"type": "json_schema", "json_schema": {
                    "name": "orchestrator_turn", "strict": True, "schema": TURN_SCHEMA}})
        except openai.APITimeoutError:
            raise self._fail(f"{where} did not answer within "
                             f"{min(self.endpoint.timeout, left):.3g} s") from None
        except openai.APIStatusError as err:
            raise self._fail(f"{where} answered HTTP {err.status_code} "
                             f"({brief(err.message, 160)})") from None
        except openai.APIConnectionError:
            if self.cap.tripped == "size":
                raise self._fail(f"{where} sent a reply over {self.limits.reply_bytes:,} "
                                 "bytes") from None
            if self.cap.tripped == "deadline":
                raise self._fail(f"{where} was still replying at the "
                                 f"{self.limits.deadline:g} s deadline") from None
            raise self._fail(f"{where} cannot be reached") from None
        except openai.OpenAIError as err:
            raise self._fail(f"the request to {where} failed ({brief(err, 160)})") from None
        if not hasattr(reply, "choices"):  # a body that is not JSON, handed back as its text
            raise self._fail(f"{where} answered HTTP 200 with {what_came(reply)}, not a chat "
                             "completion")
        if getattr(reply, "usage", None) is not None:
            self.tokens += float(reply.usage.total_tokens or 0)
        if not reply.choices:
            raise self._fail("the reply held no turn")
        choice = reply.choices[0]
        if getattr(choice.message, "refusal", None):
            raise self._fail(f"the model refused ({brief(choice.message.refusal, 160)})")
        if choice.finish_reason == "length":
            raise self._fail(f"the turn was cut at the {self.limits.max_tokens}-token limit")
        if choice.finish_reason == "content_filter":
            raise self._fail("the endpoint's content filter stopped the turn")
        return read_turn(choice.message.content, self._fail)


def read_turn(content: str | None, fail: Callable[[str], BranchError]) -> Turn:
    """A reply's turn, checked against the format asked for."""
    if not content or not content.strip():
        raise fail("the reply was empty")
    try:
        raw = json.loads(content)
    except ValueError:
        raise fail("the reply is not JSON") from None
    try:
        return Turn.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        place = ".".join(map(str, first["loc"])) or "the reply"
        raise fail(f"the reply does not fit the turn's format ({place}: {first['msg']})") \
            from None



# -- the branch -----------------------------------------------------------------------------------


def edited_event(original: Event, replacement: Replacement, fork: dict[str, Any]) -> dict:
    """The original event with the replacement decision in its place: an aggregate stays an
    aggregate with the new merge, a spawn or message keeps its type when the decision does;
    anything else becomes an `orchestrator_decision` of the replacement's kind."""
    same = {"aggregate": "aggregate", "spawn": "spawn", "message": "communicate"}
    raw: dict[str, Any] = {"id": original.id, "t": original.t, "agent": original.agent}
    if same.get(original.type) == replacement.kind:
        raw["type"] = original.type
    else:
        raw["type"] = "orchestrator_decision"
        raw["decision"] = replacement.kind
    if original.role is not None:
        raw["role"] = original.role
    if replacement.to:
        raw["to"] = replacement.to
    elif raw["type"] != "orchestrator_decision" and original.to is not None:
        raw["to"] = original.to
    raw["content"] = replacement.text
    return raw | {"corrected": True} | fork


def _requested(turn: Turn, agent: str, event_id: str, t: float) -> dict[str, Any] | None:
    """What a turn asked for, as an event that was not run."""
    base = {"id": event_id, "t": t, "agent": agent, "requested_not_run": True}
    if turn.tool:
        return base | {"type": "tool_call", "tool": turn.tool, "content": turn.text}
    if turn.decision == "spawn" and turn.to:
        return base | {"type": "spawn", "to": turn.to, "content": f"Spawn {turn.to}."}
    if turn.decision in ("delegate", "communicate") and turn.to:
        return base | {"type": "message", "from": agent, "to": turn.to, "content": turn.text}
    return None


def _fresh_id(taken: set[str], wanted: str) -> str:
    found, n = wanted, 1
    while found in taken:
        n += 1
        found = f"{wanted}-{n}"
    taken.add(found)
    return found


def continue_from(trace: Trace, event_id: str, replacement: Replacement,
                  endpoint: ModelEndpoint, limits: ReplayLimits | None = None, *,
                  by: str = "", clock: Callable[[], float] = time.time) -> Branch:
    """The branch of `trace` where the orchestrator made `replacement` at `event_id` and the
    model at `endpoint` made its next turns (see the module's docstring); `by` names who wrote
    the replacement (kept on the edited event as `corrected_by`). BranchError, saying what
    failed and that nothing was saved, when no usable turn came; no trace then."""
    limits = limits or ReplayLimits()
    analysis = analyze(trace)
    agent = orchestrator_of(analysis, event_id)
    original = trace.event(event_id)
    messages = conversation(analysis, event_id)
    fork = {"forked_from": trace.trace_id, "fork_event": event_id,
            "replay_model": endpoint.model} | ({"corrected_by": by} if by else {})
    edited = edited_event(original, replacement, fork)
    messages.append({"role": "assistant", "content": json.dumps(
        {"decision": replacement.kind, "text": replacement.text, "to": replacement.to,
         "tool": ""}, ensure_ascii=False)})
    kept = analysis.order[:analysis.position[event_id]]
    recorded = {e.id for e in kept} | {event_id}
    taken = set(trace.events_by_id)  # new ids never meet an id of the original
    events: list[dict[str, Any]] = [e.to_dict() for e in kept]
    events.append(edited)
    edges = [e.to_dict() for e in trace.edges
             if e.src in recorded and e.dst in recorded]
    asked = _requested(Turn(decision=replacement.kind, text=replacement.text, to=replacement.to,
                            tool=""), agent, _fresh_id(taken, f"{event_id}.asked"),
                       float(original.t))
    if asked is not None:
        events.append(asked)
        edges.append({"src": event_id, "dst": asked["id"], "type": "causal"})
    previous = event_id
    given = 0
    limit_reached = False
    known = set(analysis.agents)
    warnings = [w for w in [unknown_agent(Turn(decision=replacement.kind, text="",
                                               to=replacement.to, tool=""), event_id, known)]
                if w]
    started = time.monotonic()
    if replacement.kind != "stop":
        asker = _Asker(endpoint, limits, f"the continuation of {trace.trace_id} from {event_id}")
        try:
            for n in range(1, limits.turns + 1):
                messages.append({"role": "user", "content": NEXT_TURN})
                asked_at = time.monotonic() - started
                turn = asker.turn(messages)
                answered_at = time.monotonic() - started
                given = n
                messages.append({"role": "assistant",
                                 "content": json.dumps(turn.model_dump(), ensure_ascii=False)})
                turn_id = _fresh_id(taken, f"{event_id}.r{n}")
                t0 = float(original.t) + max(asked_at, 1e-3 * n)
                event = {"id": turn_id, "t": round(t0, 6), "agent": agent,
                         "type": "orchestrator_decision", "decision": turn.decision,
                         "content": turn.text, "model": endpoint.model, "replayed": True,
                         "end_t": round(max(t0, float(original.t) + answered_at), 6)}
                if original.role is not None:
                    event["role"] = original.role
                if turn.to:
                    event["to"] = turn.to
                    warning = unknown_agent(turn, turn_id, known)
                    if warning is not None:
                        event["unknown_agent"] = True
                        warnings.append(warning)
                if n == limits.turns and turn.decision != "stop":
                    event["turn_limit_reached"] = limit_reached = True
                events.append(event)
                edges.append({"src": previous, "dst": turn_id, "type": "causal"})
                previous = turn_id
                asked = _requested(turn, agent, _fresh_id(taken, f"{turn_id}.asked"),
                                   event["end_t"])
                if asked is not None:
                    events.append(asked)
                    edges.append({"src": turn_id, "dst": asked["id"], "type": "causal"})
                if turn.decision == "stop":
                    break
        finally:
            asker.close()
        tokens = asker.tokens
    else:
        tokens = 0.0
    seconds = time.monotonic() - started
    stamp = hashlib.sha256(json.dumps([trace.trace_id, event_id, replacement.model_dump(),
                                       endpoint.model, clock()]).encode()).hexdigest()[:8]
    raw: dict[str, Any] = {
        "trace_id": f"{trace.trace_id}~fork-{event_id}-{stamp}", "task_id": trace.task_id,
        "events": events, "edges": edges, "rewards": {},
        "costs": _costs(events, tokens)}
    if trace.system is not None:
        raw["system"] = trace.system
    if trace.topology is not None:
        raw["topology"] = trace.topology
    from viz_app.io.native import trace_from_dict

    branch = trace_from_dict(raw, f"branch of {trace.trace_id}")
    found = fork_of(branch)
    assert found is not None
    found.turn_limit_reached = limit_reached
    return Branch(trace=branch, fork=found, turns=given, seconds=round(seconds, 3),
                  warnings=warnings)


def _costs(events: list[dict[str, Any]], replay_tokens: float) -> dict[str, float]:
    """What the branch cost: the tokens its recorded events carry and those of the replay, the
    time from its first event to the end of its last."""
    def number(value: Any) -> float:
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
            and value >= 0 else 0.0

    start = min(float(e["t"]) for e in events)
    end = max(max(float(e["t"]), number(e.get("end_t"))) for e in events)
    return {"tokens": sum(number(e.get("tokens")) for e in events) + replay_tokens,
            "wall_clock_s": round(end - start, 6),
            "tool_calls": float(sum(e["type"] == "tool_call" for e in events)),
            "messages": float(sum(e["type"] == "message" for e in events))}
