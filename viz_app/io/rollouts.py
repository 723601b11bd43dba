"""What the readers of RL trainers' rollout files share (verl, OpenRLHF, OpenPipe ART, SkyRL,
rLLM): a `Rollout` (the training step, the group of siblings sampled for one prompt, the
checkpoint), the `Chat` that turns one rollout's prompt and response (or its chat messages) into
a trace, the lines of a file a trainer may still be writing, and the join of a rollout with the
spans (OTLP, Agent Lightning) recorded for the same rollout id.

A rollout becomes a trace in the reference schema. The schema closes the trace's top level, so
what a trainer says of the rollout lives where the schema leaves room: the trainer's reward in
`rewards` (`trainer`, and `trainer.<name>` for the parts its reward function reported), a
reward the trace carries and never a label; the step, group, checkpoint and rollout id in the
`rollout` key of the trace's first event (`rollout_of` reads it back). Nothing is a label.

Readers build the trace's events directly (they are valid by construction: ids `e1...` in time
order, the schema's types), without the general reader's validation, so that reading 100,000
rollouts costs little more than parsing them.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import PurePath
from typing import Any

import msgspec
import orjson

from viz_app.errors import TraceError
from viz_app.io.otlp import SPAN_ROLLOUT_KEY
from viz_app.model import Edge, Event, Trace, TraceWarning, paused_gc

TRAINER_REWARD = "trainer"
"""The key of `Trace.rewards` that holds the trainer's own reward for the rollout."""

ROLLOUT_KEY = "rollout"
"""The key of the first event that holds what the trainer says of the rollout (`Rollout`)."""

POLICY = "policy"
"""The agent a single-agent rollout is of: the model being trained."""


class Rollout(msgspec.Struct, frozen=True, omit_defaults=True):
    """What a trainer's rollout file says of one rollout, beside its conversation."""

    trainer: str
    """The trainer that wrote it: `verl`, `openrlhf`, `art`, `skyrl`, `rllm`."""
    group: str
    """The siblings sampled for one prompt at one step share it (a GRPO group)."""
    step: int | None = None
    """The training step (global step) the rollout was sampled at; None when not said."""
    index: int | None = None
    """Its place among the rollouts of its file (or of its group, where the file says)."""
    rollout_id: str | None = None
    """The id the trainer gave the rollout (a request id, an episode id), to join spans on."""
    checkpoint: str | None = None
    """The weights that sampled it, where the file says (a model step, a weight version)."""
    split: str | None = None
    """`train`, or the evaluation split (`val`, a dataset) it was sampled for."""
    source: str | None = None
    """Where in the file it was read: `line 12`, `row 3`."""

    def to_dict(self) -> dict[str, Any]:
        """The rollout as the first event of its trace keeps it."""
        return msgspec.to_builtins(self)


def rollout_of(trace: Trace) -> Rollout | None:
    """What the trainer said of the rollout a trace was read from (None for another trace)."""
    if not trace.events:
        return None
    first = min(trace.events, key=lambda e: e.t)
    found = first.other.get(ROLLOUT_KEY) if first.other else None
    if not isinstance(found, dict):
        found = next((e.other[ROLLOUT_KEY] for e in trace.events
                      if e.other and isinstance(e.other.get(ROLLOUT_KEY), dict)), None)
    if not isinstance(found, dict):
        return None
    try:
        return msgspec.convert(found, Rollout)
    except msgspec.ValidationError:
        return None


def trainer_reward(trace: Trace) -> float | None:
    """The trainer's reward a trace carries, if any."""
    value = (trace.rewards or {}).get(TRAINER_REWARD)
    return float(value) if value is not None else None


def number(value: Any) -> float | None:
    """A finite number from a reward field (true/false count as 1/0); None for anything else."""
    if value.__class__ is bool:
        return 1.0 if value else 0.0
    if value.__class__ in (int, float) and math.isfinite(value):
        return float(value)
    return None


def group_id(*parts: object) -> str:
    """A group's id from its parts (split, step, prompt key): `-` stands for one not known."""
    return ":".join("-" if p is None else str(p) for p in parts)


def prompt_key(text: str) -> str:
    """A short stable key of a prompt's text: the siblings of one prompt share it."""
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def as_text(value: Any) -> str | None:
    """A value as inline text: strings as they are, None as None, anything else as JSON."""
    if value is None or value.__class__ is str:
        return value
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return str(value)


def content_text(content: Any) -> str | None:
    """The text of a chat message's content: a string, or the text parts of a part list."""
    if content is None or content.__class__ is str:
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)
                 and isinstance(p.get("text"), str)]
        if parts:
            return "\n".join(parts)
    return as_text(content)


_STEP_IN_NAME = re.compile(r"(?:global_step_|step_|^)(\d+)(?:_evals)?$")


def step_in_name(name: str) -> int | None:
    """The step a trainer wrote in a file or folder name: `12`, `0012`, `global_step_12`,
    `global_step_12_evals`, `step_12`; None when the name holds none."""
    found = _STEP_IN_NAME.search(name)
    return int(found.group(1)) if found else None


def run_name(label: str, skip: Sequence[str] = ()) -> str:
    """The name of the run a rollout file belongs to: the folder above it, past the folders
    the trainer makes inside a run (`skip`); '' for an upload without a folder."""
    parents = [p for p in PurePath(label).parent.parts if p not in ("/", "")]
    while parents and (parents[-1] in skip or step_in_name(parents[-1]) is not None):
        parents.pop()
    return parents[-1] if parents else ""


# -- lines a trainer may still be writing ----------------------------------------------------------

def complete_lines(data: bytes) -> tuple[bytes, bool]:
    """The lines of JSON Lines bytes that are complete, and whether a last line was left out:
    a last line without its newline that is not yet whole JSON is one a trainer is still
    writing. It is waited for (read once the trainer finishes it), never reported as an error."""
    if not data or data.endswith(b"\n"):
        return data, False
    cut = data.rfind(b"\n") + 1
    tail = data[cut:]
    if not tail.strip():
        return data, False
    try:
        orjson.loads(tail)
    except orjson.JSONDecodeError:
        return data[:cut], True
    return data, False


OnError = Callable[[TraceError], None]


def rollout_lines(data: bytes, label: str, first_line: int = 1,
                  on_error: OnError | None = None, *, needs: tuple[str, ...] = (),
                  kind: str = "") -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of each complete line of a rollout file (see `complete_lines`),
    numbered from `first_line` (the bytes may be the part a trainer added since a line was
    read). A line that is not a JSON object is refused naming it: raised, or with `on_error`
    told to it and left out, the other lines read; so is an object without the keys `needs`
    (saying it is not `kind`). The cyclic garbage collector waits while the lines become
    traces (it would scan them again and again for cycles they lack), and the traces made
    join its oldest generation unscanned (`paused_gc(keep=True)`)."""
    wanted = frozenset(needs)
    loads, decode_error = orjson.loads, orjson.JSONDecodeError
    with paused_gc(keep=True):
        body, _pending = complete_lines(data)
        number_, start, size = first_line - 1, 0, len(body)
        find = body.find
        view = memoryview(body)  # each line parsed where it lies: no copy of it (nor of its strip)
        while start < size:
            end = find(b"\n", start)
            if end < 0:
                end = size
            number_ += 1
            line = view[start:end]
            start = end + 1
            try:
                value = loads(line)
            except decode_error as err:
                if not bytes(line).strip():
                    continue  # a blank line holds no rollout
                problem = TraceError(label, f"line {number_}", f"is not JSON ({err.msg}); a "
                                     "rollout file holds one JSON object a line")
            else:
                if value.__class__ is dict:  # what orjson gives for an object
                    if not wanted or value.keys() >= wanted:
                        yield number_, value
                        continue
                    problem = TraceError(label, f"line {number_}",
                                         f"is not {kind} (no {' and '.join(needs)})")
                else:
                    problem = TraceError(label, f"line {number_}", "is not a JSON object; a "
                                         "rollout file holds one rollout (an object) a line")
            if on_error is None:
                raise problem
            on_error(problem)


def pending_note(data: bytes, label: str) -> TraceWarning | None:
    """The warning the last trace of a file carries while its last line is being written."""
    if complete_lines(data)[1]:
        return TraceWarning(code="last_line_pending", message=(
            f"the last line of {PurePath(label).name} is not complete yet (the trainer is "
            "still writing it?): it is read once it is"))
    return None


# -- one rollout as a trace ------------------------------------------------------------------------

class Chat:
    """The events of one rollout, built in order: turn i at t = i (rollout files keep no clock).

    `prompt` and `response` give a text rollout (the prompt as the user's turn, the response as
    the policy's generation); `messages` an OpenAI chat (system, user, assistant with tool calls,
    tool results); `spawn` a sub-agent with its own conversation (an ART additional history).
    `trace` closes it with the policy's stop and returns the trace.

    Each event is built as its struct when it is added (`add`: the schema's keys into their
    fields, every other key into `other`), not as a dict converted later: a reader of 100,000
    rollouts spends little more than their parse. What a reader learns of an event later
    (`annotate`) is gathered and given to it once, when the trace is made."""

    __slots__ = ("events", "edges", "t", "root", "notes", "opening", "_calls", "_first",
                 "_extra", "_tokens")

    def __init__(self, root: str = POLICY) -> None:
        self.events: list[Event] = []
        self.edges: list[Edge] = []
        self.t = 0.0
        self.root = root
        self.notes: list[TraceWarning] = []
        self.opening: str | None = None
        """The first user turn `messages` read (the task, most often)."""
        self._calls: dict[str, str] = {}
        self._first: dict[str, int] = {}
        """Agent -> the place of its first event."""
        self._extra: dict[int, dict[str, Any]] = {}
        """The place of an event -> the keys `annotate` gave it since it was added."""
        self._tokens = 0.0
        """The tokens of the events added (`add`'s `tokens`, the only way an event has any)."""

    def add(self, type_: str, agent: str, *, content: str | None = None,
            from_: str | None = None, to: str | None = None, role: str | None = None,
            tool: str | None = None, tool_call_id: str | None = None,
            decision: str | None = None, tokens: float | None = None, **other: Any) -> Event:
        """Add an event at the current turn: the schema's keys (text; `tokens` a number), and
        any other key into the event's `other` (keys that are None are left out)."""
        if other:
            other = {k: v for k, v in other.items() if v is not None} or None
        n = len(self.events)
        fields = {"id": f"e{n + 1}", "t": self.t, "type": type_, "agent": agent,
                  "content": content, "other": other or None}
        # only the fields given: a struct built of fewer is quicker
        if from_ is not None:
            fields["from_"] = from_
        if to is not None:
            fields["to"] = to
        if role is not None:
            fields["role"] = role
        if tool is not None:
            fields["tool"] = tool
        if tool_call_id is not None:
            fields["tool_call_id"] = tool_call_id
        if decision is not None:
            fields["decision_"] = decision
        if tokens is not None:
            fields["tokens_"] = tokens
            if tokens >= 0:
                self._tokens += tokens
        event = Event(**fields)
        self.events.append(event)
        if agent not in self._first:
            self._first[agent] = n
        return event

    def annotate(self, event: Event, **keys: Any) -> None:
        """Give an event added before more keys of its own (into `other`, None left out; a
        key given again replaces the last), as the reader learns them."""
        self._note(int(event.id[1:]) - 1, keys)

    def _note(self, place: int, keys: dict[str, Any]) -> None:
        extra = self._extra.get(place)
        if extra is None:
            extra = self._extra[place] = {}
        for key, value in keys.items():
            if value is not None:
                extra[key] = value

    def keys_of(self, event: Event) -> dict[str, Any]:
        """The other keys an event has so far (`add`'s and `annotate`'s)."""
        return {**(event.other or {}), **self._extra.get(int(event.id[1:]) - 1, {})}

    def next_turn(self) -> None:
        """Move to the next turn."""
        self.t += 1.0

    def link(self, src: Event, dst: Event, type_: str) -> None:
        """A typed edge between two events already added."""
        self.edges.append(Edge(src=src.id, dst=dst.id, type=type_))

    def prompt(self, text: Any, agent: str | None = None) -> Event | None:
        """The prompt, as the user's turn to the agent (None for an empty prompt)."""
        content = content_text(text)
        if not content:
            return None
        event = self.heard(agent or self.root, content)
        self.t += 1.0
        return event

    def heard(self, agent: str, text: str) -> Event:
        """The user's turn to an agent, at the current turn (the first is the `opening`)."""
        n = len(self.events)
        event = Event(id=f"e{n + 1}", t=self.t, type="human_intervention", agent=agent,
                      from_="user", content=text)
        self.events.append(event)
        if agent not in self._first:
            self._first[agent] = n
        if self.opening is None:
            self.opening = text
        return event

    def response(self, text: Any, agent: str | None = None, **keys: Any) -> Event:
        """The policy's generated response."""
        if keys and keys.get("tokens") is not None:  # a field of the event, not an other key
            event = self.add("message", agent or self.root, content=content_text(text) or "",
                             kind="generation", **keys)
        else:
            event = self._said(agent or self.root, content_text(text) or "", None, None, {
                k: v for k, v in keys.items() if v is not None and k != "tokens"} if keys
                else None)
        self.t += 1.0
        return event

    def messages(self, messages: Sequence[Any], agent: str | None = None) -> None:
        """An OpenAI chat: system (kept on the agent's first event), user turns, assistant
        turns (a `message`, and a `tool_call` per tool call), tool results (linked to their
        call). A message with `trainable` (ART's flattened rows) or in a Choice (`message`,
        `finish_reason`) is a generation of the policy."""
        who = agent or self.root
        system: list[str] = []
        add = self.add
        for item in messages:
            if item.__class__ is not dict:
                continue
            inner = item.get("message")
            choice = inner.__class__ is dict and "finish_reason" in item
            message = inner if choice else item
            role = message.get("role")
            text = message.get("content")
            if text is not None and text.__class__ is not str:
                text = content_text(text)
            if role == "assistant":
                said = self._said(who, text or "", True if choice or message.get("trainable")
                                  else None, item.get("finish_reason") if choice else None)
                calls = message.get("tool_calls")
                if calls:
                    for call in _tool_calls(calls):
                        function = call.get("function") if isinstance(call.get("function"),
                                                                      dict) else {}
                        name = str(function.get("name") or call.get("name") or "tool")
                        made = add("tool_call", who, tool=name, tool_call_id=as_text(
                            call.get("id")), content=as_text(function.get("arguments")))
                        self.link(said, made, "causal")
                        if call.get("id") is not None:
                            self._calls[str(call["id"])] = made.id
                self.t += 1.0
            elif role == "user":
                if text:
                    self.heard(who, text)
                    self.t += 1.0
            elif role in ("system", "developer"):
                if text:
                    system.append(text)
            elif role == "tool":
                call_id = as_text(message.get("tool_call_id"))
                result = add("tool_result", who, content=text, tool_call_id=call_id,
                             tool=as_text(message.get("name")))
                if call_id in self._calls:
                    self.edges.append(Edge(src=self._calls[call_id], dst=result.id,
                                           type="tool_dependency"))
                self.t += 1.0
            else:
                add("message", who, content=text or "", kind=str(role or "unknown"))
                self.t += 1.0
        if system and who in self._first:
            self._note(self._first[who], {"system_prompt": "\n\n".join(system)})

    def said(self, agent: str, text: str, extra: dict[str, Any] | None = None) -> Event:
        """The policy's generation, at the current turn, with `extra` keys of its own."""
        return self._said(agent, text, None, None, extra)

    def _said(self, agent: str, text: str, trainable: bool | None, finish_reason: Any,
              extra: dict[str, Any] | None = None) -> Event:
        """An assistant's turn: a generation of the policy (`add`'s event, its `other` one
        shared dict for each kind of turn, most turns of a file being alike, unless it has
        `extra` keys of its own)."""
        other = generation(trainable, finish_reason)
        if extra:
            other = {**other, **extra}
        n = len(self.events)
        event = Event(id=f"e{n + 1}", t=self.t, type="message", agent=agent, content=text,
                      other=other)
        self.events.append(event)
        if agent not in self._first:
            self._first[agent] = n
        return event

    def spawn(self, child: str, messages: Sequence[Any], parent: str | None = None) -> None:
        """A sub-agent's conversation: spawned by the parent, its events, its return."""
        parent = parent or self.root
        opening = next((content_text(m.get("content")) for m in messages
                        if isinstance(m, dict) and m.get("role") == "user"), None)
        spawned = self.add("spawn", parent, to=child, role="subagent", content=opening)
        self.next_turn()
        start = len(self.events)
        self.messages(messages, child)
        own = self.events[start:]
        if own:
            self.link(spawned, own[0], "spawn")
        answer = next((e for e in reversed(own) if e.type == "message"), None)
        back = self.add("return", child, from_=child, to=parent,
                        content=answer.content if answer else None)
        self.link(spawned, back, "return")
        self.next_turn()

    def trace(self, *, label: str, source_format: str, trace_id: str, task_id: str,
              rollout: Rollout | dict[str, Any], rewards: dict[str, float],
              system: str | None = None, metrics: dict[str, float] | None = None,
              first: dict[str, Any] | None = None) -> Trace:
        """The rollout's trace: the root's last message (after sub-agents returned) is its
        aggregate, the root stops after the last event, the rollout (a `Rollout`, or the dict
        `rollout_dict` gives) is kept on the first, after the `first` keys (None left out)."""
        events = self.events
        if not events:
            place = rollout.source if isinstance(rollout, Rollout) else rollout.get("source")
            raise TraceError(label, place or "", "holds no prompt or response")
        types = [e.type for e in events]
        if "return" in types:
            final = next((i for i in range(len(events) - 1, -1, -1)
                          if events[i].agent == self.root and types[i] == "message"), None)
            if final is not None and any(types[i] == "return" and events[i].t < events[final].t
                                         for i in range(len(events))):
                events[final] = msgspec.structs.replace(events[final], type="aggregate")
                types[final] = "aggregate"
        end = events[-1].t
        events.append(Event(id=f"e{len(events) + 1}", t=end, type="orchestrator_decision",
                            agent=self.root, decision_="stop", content="rollout ended",
                            other=_STOPPED))
        head = self._extra.get(0)
        if head is None:
            head = self._extra[0] = {}
        if first:
            for key, value in first.items():
                if value is not None:
                    head[key] = value
        head[ROLLOUT_KEY] = rollout if rollout.__class__ is dict else rollout.to_dict()
        for place, extra in self._extra.items():
            # set in place: the event is this chat's own and no one holds it yet (a copy of
            # each trace's first event was a tenth of an ART log's reading)
            event = events[place]
            _force_setattr(event, "other", {**event.other, **extra} if event.other else extra)
        self._extra = {}
        costs = {"tokens": self._tokens, "wall_clock_s": float(end),
                 "tool_calls": float(types.count("tool_call")),
                 "messages": float(types.count("message"))}
        trace = Trace(trace_id=trace_id or "rollout", task_id=task_id or "task",
                      system=system or None,
                      topology="centralized" if "spawn" in types else None,
                      events=events, edges=self.edges, rewards=rewards, costs_=costs,
                      metrics=metrics or None)
        trace._source = label
        trace._source_format = source_format
        if self.notes:
            trace._warnings = list(self.notes)
        return trace


_force_setattr = msgspec.structs.force_setattr


def generation(trainable: bool | None, finish_reason: Any) -> dict[str, Any]:
    """The `other` of an assistant's turn (a generation of the policy): one dict for each
    (trainable, finish reason), shared by the turns alike (never changed in place)."""
    key = (trainable, finish_reason) if finish_reason.__class__ in (str, type(None)) else None
    other = _GENERATIONS.get(key) if key is not None else None
    if other is None:
        other = {k: v for k, v in (("kind", "generation"), ("trainable", trainable),
                                   ("finish_reason", finish_reason)) if v is not None}
        if key is not None and len(_GENERATIONS) < 64:
            _GENERATIONS[key] = other
    return other


_GENERATIONS: dict[tuple[bool | None, str | None], dict[str, Any]] = {}
"""The `other` of an assistant's turn by (trainable, finish_reason): one dict each, shared (an
event's `other` is never changed in place)."""
_GENERATION = {"kind": "generation"}
_STOPPED = {"inferred_by": "importer"}  # the `other` of the policy's inferred stop (shared)
ONE_EXCHANGE_COSTS = {"tokens": 0.0, "wall_clock_s": 1.0, "tool_calls": 0.0, "messages": 1.0}
POLICY_STOP = Event(id="e3", t=1.0, type="orchestrator_decision", agent=POLICY, decision_="stop",
                    content="rollout ended", other=_STOPPED)
"""The costs of a rollout of one exchange (a prompt, its response) that counts no tokens, and
the policy's inferred stop as its third event: one of each shared by every such trace, as
strings are (an event is frozen; neither dict is ever changed in place)."""


def text_trace(*, label: str, source_format: str, trace_id: str, task_id: str,
               rollout: dict[str, Any], rewards: dict[str, float], prompt: str | None,
               response: str, asked: dict[str, Any] | None = None,
               said: dict[str, Any] | None = None, tokens: float | None = None,
               system: str | None = None, metrics: dict[str, float] | None = None,
               agent: str = POLICY, head: dict[str, Any] | None = None) -> Trace:
    """The trace of a rollout that is a prompt and a response (verl, OpenRLHF, SkyRL, a
    one-step rLLM episode): the user's turn, the agent's generation, its stop, the rollout (as
    `Rollout.to_dict` gives it) on the first event after its `head` keys; `asked` and `said`
    are other keys of the two events. The same trace a `Chat` builds, built straight into its
    structs: a reader of 100,000 rollouts spends little more than their parse (`Chat` stays
    for conversations)."""
    if prompt:
        first = {**head, ROLLOUT_KEY: rollout} if head else {ROLLOUT_KEY: rollout}
        if asked:
            first.update(asked)
        other = {**_GENERATION, **said} if said else _GENERATION
        events = [Event(id="e1", t=0.0, type="human_intervention", agent=agent, from_="user",
                        content=prompt, other=first),
                  Event(id="e2", t=1.0, type="message", agent=agent, content=response,
                        other=other) if tokens is None else
                  Event(id="e2", t=1.0, type="message", agent=agent, content=response,
                        tokens_=tokens, other=other),
                  POLICY_STOP if agent == POLICY else
                  Event(id="e3", t=1.0, type="orchestrator_decision", agent=agent,
                        decision_="stop", content="rollout ended", other=_STOPPED)]
        t = 1.0
    else:  # no prompt: the generation is the first event, and keeps the rollout
        other = {**_GENERATION, **(said or {}), **(head or {}), ROLLOUT_KEY: rollout}
        events = [Event(id="e1", t=0.0, type="message", agent=agent, content=response,
                        other=other) if tokens is None else
                  Event(id="e1", t=0.0, type="message", agent=agent, content=response,
                        tokens_=tokens, other=other),
                  Event(id="e2", t=0.0, type="orchestrator_decision", agent=agent,
                        decision_="stop", content="rollout ended", other=_STOPPED)]
        t = 0.0
    costs = ONE_EXCHANGE_COSTS if t == 1.0 and not tokens else {
        "tokens": tokens or 0.0, "wall_clock_s": t, "tool_calls": 0.0, "messages": 1.0}
    trace = Trace(trace_id=trace_id, task_id=task_id, system=system, events=events, edges=[],
                  rewards=rewards, costs_=costs, metrics=metrics or None)
    trace._source = label
    trace._source_format = source_format
    return trace


class PromptKeys(dict):
    """Prompt text -> its key, computed once per prompt (a group's siblings share theirs)."""

    def __missing__(self, text: str) -> str:
        found = self[text] = prompt_key(text)
        return found


def rollout_dict(trainer: str, group: str, step: int | None, index: int | None,
                 rollout_id: str | None = None, checkpoint: str | None = None,
                 split: str | None = None, source: str | None = None) -> dict[str, Any]:
    """A rollout as its trace's first event keeps it (`Rollout.to_dict`), without the struct."""
    found: dict[str, Any] = {"trainer": trainer, "group": group}
    for key, value in (("step", step), ("index", index), ("rollout_id", rollout_id),
                       ("checkpoint", checkpoint), ("split", split), ("source", source)):
        if value is not None:
            found[key] = value
    return found


def _tool_calls(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, str):  # ART's flattened rows keep them as JSON text
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return []
    return [c for c in value if isinstance(c, dict)] if isinstance(value, list) else []


def with_note(traces: list[Trace], note: TraceWarning | None) -> list[Trace]:
    """The traces of a file, the last carrying a note about the file (a line pending)."""
    if note is not None and traces:
        traces[-1]._warnings = [*traces[-1].reader_warnings, note]
    return traces


# -- a rollout joined with its spans ---------------------------------------------------------------

SPAN_FORMATS = frozenset({"otlp", "agentlightning"})
"""Formats whose traces are spans of a run: the orchestration graph of a rollout they share an
id with."""


class JoinKeys(msgspec.Struct, frozen=True, omit_defaults=True):
    """What the join reads of one trace: the rollout id a rollout names (`rollout_id`, None for
    a trace of spans or one without), or the rollout ids a span trace names (`span_ids`, None
    for a trace that is not spans). An index keeps them beside its rows, so it plans the join
    of a whole library without reading its traces again (`plan_join`)."""

    rollout_id: str | None = None
    span_ids: tuple[str, ...] | None = None


def join_keys(trace: Trace) -> JoinKeys:
    """The keys the join reads of a trace (`JoinKeys`)."""
    if trace.source_format in SPAN_FORMATS:
        return JoinKeys(span_ids=tuple(span_rollout_ids(trace)))
    found = rollout_of(trace)
    return JoinKeys(rollout_id=found.rollout_id if found is not None else None)


class JoinPlan(msgspec.Struct, frozen=True):
    """Which traces the join makes one, by their places in the list planned: `joined` maps a
    span trace's place to the place of the rollout it takes in; `elsewhere` a span trace that
    names a rollout already taken by an earlier one to that earlier one's place (it is kept as
    it is, and says so)."""

    joined: dict[int, int]
    elsewhere: dict[int, int]

    @property
    def absorbed(self) -> set[int]:
        """The places of the rollouts taken in by a span trace (no longer a trace of their own)."""
        return set(self.joined.values())


def plan_join(keys: Sequence[JoinKeys]) -> JoinPlan:
    """The join of a list of traces, from their keys alone (`join_keys`), in the list's order:
    a rollout joins the first span trace that names its id (the first rollout of that id
    counts); a later span trace naming the same rollout is kept apart. The one rule every path
    follows: `orchviz import` and `pool write` (`join`), the folder index and `pool follow`."""
    rollouts: dict[str, int] = {}
    for place, key in enumerate(keys):
        if key.span_ids is None and key.rollout_id:
            rollouts.setdefault(key.rollout_id, place)
    joined: dict[int, int] = {}
    elsewhere: dict[int, int] = {}
    if not rollouts:
        return JoinPlan(joined=joined, elsewhere=elsewhere)
    taken: dict[int, int] = {}  # a rollout's place -> the span trace's that took it
    for place, key in enumerate(keys):
        if key.span_ids is None:
            continue
        found = next((rollouts[k] for k in key.span_ids if k in rollouts), None)
        if found is None:
            continue
        if found in taken:
            elsewhere[place] = taken[found]
        else:
            taken[found] = place
            joined[place] = found
    return JoinPlan(joined=joined, elsewhere=elsewhere)


def join(traces: Sequence[Trace], keys: Sequence[JoinKeys] | None = None) -> list[Trace]:
    """Rollouts joined with the spans of the same rollout id: where a span trace (OTLP, Agent
    Lightning) names the id of a rollout (`span_rollout_ids`: an attribute of its spans, such
    as Agent Lightning's `agentlightning.rollout_id`, a `rollout_id` or a `session.id`, or its
    trace id), the two are one trace (`joined_trace`): the spans give the orchestration graph,
    the rollout file its step, group, checkpoint and the trainer's reward. A rollout joins the
    first span trace that names it (another one naming it too is kept as it is, and says so:
    `plan_join`). Every other trace is kept as it is, in order; a joined trace takes the
    rollout's place. `keys`: the traces' `join_keys`, where the caller has them."""
    keys = [join_keys(t) for t in traces] if keys is None else keys
    plan = plan_join(keys)
    if not plan.joined and not plan.elsewhere:
        return list(traces)
    made = {rollout: joined_trace(traces[span], traces[rollout])
            for span, rollout in plan.joined.items()}
    kept: list[Trace] = []
    for place, trace in enumerate(traces):
        if place in plan.joined:
            continue
        if place in made:
            kept.append(made[place])
        elif place in plan.elsewhere:
            first = plan.elsewhere[place]
            kept.append(elsewhere_noted(trace, keys[plan.joined[first]].rollout_id or "",
                                        traces[first].trace_id))
        else:
            kept.append(trace)
    return kept


def join_stream(traces: Iterable[Trace]) -> Iterator[Trace]:
    """`join` over a stream of traces (a pool written a file at a time): a trace the join
    cannot touch (no rollout id, no spans) passes at once; the rollouts with an id and the span
    traces are held until the stream ends, then joined. The same traces `join` gives, the
    joined ones last."""
    held: list[Trace] = []
    for trace in traces:
        keys = join_keys(trace)
        if keys.rollout_id or keys.span_ids is not None:
            held.append(trace)
        else:
            yield trace
    yield from join(held)


def elsewhere_noted(spans: Trace, rollout_id: str, first: str) -> Trace:
    """A span trace naming a rollout that the spans of trace `first` took in: kept as it is,
    saying so."""
    return _noted(spans, TraceWarning(
        code="rollout_joined_elsewhere", message=f"names rollout {rollout_id}, which is joined "
        f"with the spans of trace {first}"))


def span_rollout_ids(trace: Trace) -> list[str]:
    """The rollout ids a span trace names: the one its spans' attributes named (kept on its
    first event by the span readers), then its trace id (an Agent Lightning trace is named by
    its rollout: `<rollout_id>` or `<rollout_id>/<attempt_id>`)."""
    found: list[str] = []
    for event in trace.events:
        named = (event.other or {}).get(SPAN_ROLLOUT_KEY)
        if isinstance(named, str) and named:
            found.append(named)
            break
    found += [trace.trace_id, trace.trace_id.split("/")[0]]
    return list(dict.fromkeys(found))


def _noted(trace: Trace, note: TraceWarning) -> Trace:
    trace._warnings = [*trace.reader_warnings, note]
    return trace


def joined_trace(spans: Trace, rollout_trace: Trace) -> Trace:
    """The span trace, carrying the facts of the rollout `rollout_trace` was read from (on its
    first event) and the trainer's rewards: one trace, with the spans' id."""
    rollout = rollout_of(rollout_trace)
    if rollout is None:
        raise ValueError(f"{rollout_trace.trace_id} is not a trainer's rollout")
    events = sorted(spans.events, key=lambda e: e.t)
    first = events[0].to_dict()
    first[ROLLOUT_KEY] = {**rollout.to_dict(), "joined": spans.source_format}
    by_id = {e.id: e for e in spans.events}
    by_id[events[0].id] = Event.of(**first)
    rewards = {**spans.rewards, **{k: v for k, v in rollout_trace.rewards.items()
                                   if k == TRAINER_REWARD or k.startswith(TRAINER_REWARD + ".")}}
    trace = Trace(trace_id=spans.trace_id, task_id=spans.task_id, system=spans.system,
                  topology=spans.topology, events=[by_id[e.id] for e in spans.events],
                  edges=spans.edges, rewards=rewards, costs_=spans.costs_,
                  metrics=spans.metrics)
    trace._source = spans.source
    trace._source_format = spans.source_format
    trace._warnings = [*spans.reader_warnings, TraceWarning(
        code="rollout_joined", message=f"joined with rollout {rollout.rollout_id} of "
        f"{rollout_trace.source or rollout.trainer} (step {rollout.step}, group {rollout.group})")]
    return trace
