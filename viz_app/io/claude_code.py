"""Claude Code session transcripts (JSONL, one file per session under a project folder).

Mapping: the session's main thread is the orchestrator `main`; a `Task` (older) or `Agent` (2.1+)
tool_use is a spawn whose role is `input.subagent_type`; sidechain lines (`isSidechain`, `agentId`,
inline or in `agent-<agentId>.jsonl` files) are that sub-agent's events, and when a sub-agent's
transcript is absent it is rebuilt from the parent's `progress` lines (`agent_progress`); other
tool_use and tool_result blocks are tool_call and tool_result; the spawning tool's result is the
sub-agent's return; the first main-thread text once every spawned sub-agent has returned (before
the next human turn) is the aggregate, and the run's end is the stop. Automatic context
compaction (`agent-acompact-*`) is an event of the agent whose transcript marks the
`compact_boundary` that follows it (`main`, or a sub-agent compacted on its own), not a
sub-agent; read alone, its file is a trace of its own. Usage (`message.usage`)
is counted once per `message.id`, however many lines share it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from viz_app.errors import TraceError
from viz_app.io.files import source_path
from viz_app.io.native import Source, read_source
from viz_app.io.records import (NOT_ANSWERS, TraceDraft, as_text, first_value, json_lines,
                                parse_time)
from viz_app.model import Trace

NAME = "claude_code"
SPAWN_TOOLS = frozenset({"Task", "Agent"})
"""Tool names with which Claude Code starts a sub-agent (or, given `team_name` and `name`, a
teammate of an agent team)."""
MESSAGE_TOOL = "SendMessage"
"""The tool with which an agent of a team writes to another (`recipient`, `content`)."""
LEAD = "team-lead"
"""What a team calls its lead (the session that created it: `main` here)."""
TEAM_NOTICES = frozenset({"idle_notification", "shutdown_request", "shutdown_response",
                          "shutdown_approved", "permission_request", "permission_response"})
"""Team protocol messages that carry no words between agents."""
_TEAMMATE_MESSAGE = re.compile(
    r'<teammate-message\s+teammate_id="([^"]+)"[^>]*>\n?(.*?)\n?</teammate-message>', re.S)
SKIPPED_TYPES = frozenset({"summary", "system", "progress", "file-history-snapshot",
                           "queue-operation", "custom-title", "tag"})
"""Line types that carry nothing orchviz shows (compaction summaries, UI progress, snapshots)."""
MAIN = "main"


def detect(data: bytes, name: str = "") -> float:
    """How sure it is that the bytes are a Claude Code transcript (0 to 1)."""
    first = first_value(data)
    if not isinstance(first, dict):
        return 0.0
    if "sessionId" in first and ("uuid" in first or "parentUuid" in first):
        return 1.0
    if first.get("type") in SKIPPED_TYPES and (b'"sessionId"' in data[:65536]
                                               and b'"parentUuid"' in data[:65536]):
        return 0.9
    return 0.0


def import_claude_code(source: Source, *, name: str | None = None,
                       subagent_files: Iterable[Source] | None = None,
                       teammate_files: Iterable[Source] | None = None) -> list[Trace]:
    """The session in a transcript file as one trace; `subagent_files` are the session's
    `agent-<id>.jsonl` files, read as its sidechains (found beside a session file when not
    given, with the agents of its `Workflow` runs and their journals); `teammate_files` the
    sessions of the teammates of the agent team the session leads (found beside it)."""
    data, label = read_source(source, name)
    path = source_path(source, name, len(data))
    if subagent_files is None:
        subagent_files = subagent_files_of(path) if path is not None else []
    if teammate_files is None:
        teammate_files = teammate_files_of(path) if path is not None else []
    lines = list(_lines(data, label))
    for extra in subagent_files:
        more, more_label = read_source(extra)
        run = _workflow_run(Path(more_label))
        for line in _lines(more, more_label):
            if run is not None:
                line["__workflow"] = run
            lines.append(line)
    for teammate in teammate_files:
        more, more_label = read_source(teammate)
        for line in _lines(more, more_label):
            name_ = line.get("agentName")
            if line.get("isSidechain") or not isinstance(name_, str):
                continue  # a teammate's own sub-agents, or a line that names no teammate
            line.update(isSidechain=True, agentId=name_, __teammate=name_)
            lines.append(line)
    results = workflow_results(path) if path is not None else {}
    return [session_trace(lines, label, results)]


def _lines(data: bytes, label: str) -> Iterable[dict[str, Any]]:
    for number, value in json_lines(data, label):
        if isinstance(value, dict):
            value["__line"] = number
            yield value
        else:
            yield {"type": "__not_an_object", "__line": number}


def session_trace(lines: list[dict[str, Any]], label: str,
                  workflow: dict[str, Any] | None = None) -> Trace:
    """One session's lines (main thread, sidechains, teammates' sessions, in any order) as a
    trace; `workflow` holds the journal results of the session's `Workflow` agents by id."""
    if not lines:
        raise TraceError(label, "", "the file is empty")
    if not any("sessionId" in line or "uuid" in line for line in lines):
        raise TraceError(label, "line 1", "is not a Claude Code transcript (no line has a "
                         "sessionId or uuid)")
    draft = TraceDraft()
    threads: dict[str | None, list[tuple[float, int, dict[str, Any]]]] = defaultdict(list)
    progress: dict[str, list[tuple[float, int, dict[str, Any]]]] = defaultdict(list)
    progress_of: dict[str, str] = {}
    session = next((line["sessionId"] for line in lines if isinstance(line.get("sessionId"), str)),
                   "session")
    boundaries: list[tuple[float, str | None]] = []
    for index, line in enumerate(lines):
        kind = line.get("type")
        if kind == "progress":
            _progress_line(line, index, progress, progress_of)
            continue
        if kind == "system" and line.get("subtype") == "compact_boundary":
            at = parse_time(line.get("timestamp"))
            if at is not None:
                boundaries.append((at, _sidechain_of(line)))
            continue
        if kind in SKIPPED_TYPES or line.get("isCompactSummary"):
            continue  # a compaction's summary, given back to the agent: its compaction shows it
        if kind not in ("user", "assistant") or not isinstance(line.get("message"), dict):
            draft.skip(f"line type {kind!r}" if isinstance(kind, str) else "non-object line")
            continue
        t = parse_time(line.get("timestamp"))
        if t is None:
            draft.skip("line without a timestamp")
            continue
        threads[_sidechain_of(line)].append((t, index, line))
    for agent_id, rebuilt in progress.items():
        if agent_id not in threads:  # no transcript of its own: the parent's progress lines
            threads[agent_id] = rebuilt
            draft.note("subagent_from_progress", f"sub-agent {agent_id} has no transcript file; "
                       f"it is rebuilt from {len(rebuilt)} progress lines of its parent")
    if not threads:
        raise TraceError(label, "", "holds no user or assistant lines")
    for thread in threads.values():
        thread.sort(key=lambda item: (item[0], item[1]))  # lines can be out of time order
    compactions = {a: threads.pop(a) for a in list(threads) if is_compaction(a)}

    spawns = _spawn_calls(threads.get(None, []), progress_of)
    teammates = {a for a, thread in threads.items() if thread and thread[0][2].get("__teammate")}
    runs = {a: thread[0][2]["__workflow"] for a, thread in threads.items()
            if thread and thread[0][2].get("__workflow")}
    names = _agent_names(threads, spawns)
    names.update({a: a for a in teammates})  # as the team names them
    names.update({a: f"workflow-{a}" for a in runs})
    calls: dict[str, dict[str, Any]] = {}
    spawn_events: dict[str, dict[str, Any]] = {}
    sent: list[dict[str, Any]] = []
    received: list[tuple[float, str, str, str, dict[str, Any]]] = []
    for agent_id, thread in sorted(threads.items(), key=lambda kv: kv[0] is not None):
        _thread_events(draft, thread, names[agent_id], agent_id, calls, spawn_events, spawns,
                       sent, received)
    _received(draft, sent, received, names)
    _workflow_agents(draft, threads, runs, names, spawn_events, workflow or {})
    for agent_id, thread in sorted(compactions.items(), key=lambda kv: kv[1][0][0]):
        owner = _compacted(thread, boundaries, threads)
        if owner is None and None not in threads:
            owner = agent_id  # read without the transcript it compacted: whose is unknown
            draft.note("compaction_owner_unknown", f"compaction {agent_id} is read without the "
                       "transcript it compacted; it is shown as an agent of its own")
        _compaction(draft, agent_id, thread, names.get(owner, owner or MAIN))
    _unspawned(draft, threads, names, spawn_events)
    _aggregates(draft, {names[a] for a in teammates})
    team = next((line.get("teamName") for line in lines if isinstance(line.get("teamName"), str)
                 and not line.get("__teammate")), None)
    if team and draft.events:
        min(draft.events, key=lambda e: e["t"])["team_name"] = team
    draft.conclude(MAIN, aggregate=False)
    trace_id = session
    if None not in threads:  # a sub-agent's (or a compaction's) file read without its session
        alone = next(iter(threads), None) or next(iter(compactions), None)
        trace_id = f"{session}/agent-{alone}"
    return draft.build(label, NAME, trace_id=trace_id, task_id=_task(threads.get(None, [])),
                       system="claude-code", topology="centralized" if spawn_events else "harness")


def is_compaction(agent_id: str | None) -> bool:
    """Whether a sidechain is automatic context compaction (`agent-acompact-*`), which Claude
    Code runs as a sidechain of the agent whose context it compacts: one event of that agent,
    not a spawned agent."""
    return isinstance(agent_id, str) and agent_id.startswith("acompact")


def _sidechain_of(line: dict[str, Any]) -> str | None:
    """The sidechain a line belongs to (its `agentId`), None for the main thread."""
    if not line.get("isSidechain"):
        return None
    return line.get("agentId") if isinstance(line.get("agentId"), str) else "sidechain"


def _compacted(thread: list[tuple[float, int, dict[str, Any]]],
               boundaries: list[tuple[float, str | None]],
               threads: dict[str | None, list]) -> str | None:
    """Whose context a compaction compacted: the transcript that marks a `compact_boundary`
    first once the compaction has written its summary (the main thread's, or a sub-agent's own
    when its context filled on its own); the main thread when no transcript marks one."""
    done = thread[-1][0]
    after = [(at, owner) for at, owner in boundaries
             if at >= done - 1.0 and (owner is None or owner in threads)]
    return min(after, key=lambda b: b[0])[1] if after else None


def _progress_line(line: dict[str, Any], index: int,
                   progress: dict[str, list[tuple[float, int, dict[str, Any]]]],
                   progress_of: dict[str, str]) -> None:
    """Keep a sub-agent's line that its parent recorded in a `progress` line (`agent_progress`),
    as the sidechain line it stands for; each message once, however many times it is repeated."""
    data = line.get("data") if isinstance(line.get("data"), dict) else {}
    inner = data.get("message") if isinstance(data.get("message"), dict) else {}
    agent_id = data.get("agentId")
    if data.get("type") != "agent_progress" or not isinstance(agent_id, str) \
            or not isinstance(inner.get("message"), dict):
        return
    if isinstance(line.get("parentToolUseID"), str):
        progress_of[line["parentToolUseID"]] = agent_id
    t = parse_time(inner.get("timestamp")) or parse_time(line.get("timestamp"))
    uuid = inner.get("uuid") or line.get("uuid")
    if t is None or any(held[2].get("uuid") == uuid for held in progress[agent_id]):
        return
    progress[agent_id].append((t, index, {
        "type": inner.get("type"), "message": inner["message"], "uuid": uuid, "timestamp":
        inner.get("timestamp") or line.get("timestamp"), "isSidechain": True, "agentId": agent_id,
        "__line": line.get("__line"), "rebuilt_from": "progress"}))


def _compaction(draft: TraceDraft, agent_id: str,
                thread: list[tuple[float, int, dict[str, Any]]], agent: str) -> None:
    """Automatic context compaction as one event of the agent it compacted: when it ran, what
    it cost, and the summary it wrote."""
    texts = [b.get("text") for _, _, line in thread if line.get("type") == "assistant"
             for b in _blocks(line) if b.get("type") == "text" and isinstance(b.get("text"), str)]
    tokens, counted = 0.0, set()
    for _, _, line in thread:
        mid = line["message"].get("id")
        if line.get("type") == "assistant" and mid not in counted:
            counted.add(mid)
            tokens += _usage_tokens(line["message"]) or 0.0
    draft.add(thread[0][0], "message", agent, from_=agent, kind="compaction", end_t=thread[-1][0],
              content=texts[-1] if texts else None, tokens=tokens or None,
              source_id=thread[0][2].get("uuid"), compaction_id=agent_id)


def _aggregates(draft: TraceDraft, teammates: set[str] = frozenset()) -> None:
    """Mark where `main` merges what its sub-agents returned: its first text once every sub-agent
    spawned so far has returned, before the next human turn (if sub-agents are still out when
    the human speaks, its first text after the latest return). A teammate's message to the lead
    is its return."""
    for event in draft.events:
        if event["type"] == "message" and event["agent"] in teammates and event.get("to") == MAIN:
            event["__reports"] = True
    timeline = sorted((e for e in draft.events if e["agent"] == MAIN or e["type"] == "return"
                       or e.pop("__reports", False)), key=lambda e: e["t"])
    out: set[str] = set()
    returned = False
    since_return: list[dict[str, Any]] = []
    for event in timeline:
        if event["type"] == "spawn" and event["agent"] == MAIN:
            out.add(event["to"])
        elif event["type"] in ("return", "message") and event.get("to") == MAIN \
                and event["agent"] != MAIN:
            out.discard(event["agent"])
            returned, since_return = True, []
        elif event["type"] == "human_intervention":
            if returned and since_return:
                _make_aggregate(since_return[0])
            returned, since_return = False, []
        elif returned and event["type"] == "message" and event.get("to") is None \
                and event.get("kind") not in NOT_ANSWERS:
            if not out:
                _make_aggregate(event)
                returned, since_return = False, []
            else:
                since_return.append(event)
    if returned and since_return:
        _make_aggregate(since_return[0])


def _make_aggregate(event: dict[str, Any]) -> None:
    event["type"] = "aggregate"
    event.pop("from", None)


def _spawn_calls(main: list[tuple[float, int, dict[str, Any]]],
                 progress_of: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Each sub-agent tool_use id -> {input, agent_id (from its result, else from the progress
    lines that name it as their parent tool use)}."""
    found: dict[str, dict[str, Any]] = {}
    for _, _, line in main:
        for block in _blocks(line):
            if block.get("type") == "tool_use" and block.get("name") in SPAWN_TOOLS:
                given = block.get("input") if isinstance(block.get("input"), dict) else {}
                mate = _teammate(given)
                found[str(block.get("id"))] = {"input": given, "teammate": mate is not None,
                                               "agent_id": mate or progress_of.get(
                                                   str(block.get("id")))}
    for _, _, line in main:
        result = line.get("toolUseResult")
        for block in _blocks(line):
            if block.get("type") == "tool_result" and block.get("tool_use_id") in found \
                    and not found[block["tool_use_id"]]["teammate"]:
                if isinstance(result, dict) and isinstance(result.get("agentId"), str):
                    found[block["tool_use_id"]]["agent_id"] = result["agentId"]
    return found


def _teammate(given: dict[str, Any]) -> str | None:
    """The teammate a spawning call starts (its `name`, given with a `team_name`), if any."""
    name = given.get("name")
    return name if isinstance(name, str) and name and given.get("team_name") else None


def _agent_names(threads: dict[str | None, list], spawns: dict[str, dict[str, Any]]
                 ) -> dict[str | None, str]:
    """Readable unique agent names: `main`, and `<subagent_type>-<agentId>` for sidechains."""
    names: dict[str | None, str] = {None: MAIN}
    kind_of = {s["agent_id"]: s["input"].get("subagent_type") for s in spawns.values()
               if s["agent_id"]}
    for agent_id in threads:
        if agent_id is not None:
            kind = kind_of.get(agent_id) or "agent"
            names[agent_id] = f"{kind}-{agent_id}"
    unclaimed = [s for s in spawns.values() if not s["agent_id"]]
    orphans = [a for a in threads if a is not None and a not in kind_of]
    # Without toolUseResult.agentId, pair spawns with sidechains by prompt, then by order.
    for spawn in list(unclaimed):
        prompt = spawn["input"].get("prompt")
        for agent_id in orphans:
            if prompt and _first_prompt(threads[agent_id]) == prompt:
                spawn["agent_id"] = agent_id
                orphans.remove(agent_id)
                unclaimed.remove(spawn)
                break
    for spawn, agent_id in zip(unclaimed, sorted(orphans, key=lambda a: threads[a][0][0])):
        spawn["agent_id"] = agent_id
    for spawn in spawns.values():
        if spawn["agent_id"] is not None and spawn["agent_id"] in names:
            kind = spawn["input"].get("subagent_type") or "agent"
            names[spawn["agent_id"]] = f"{kind}-{spawn['agent_id']}"
    return names


def _first_prompt(thread: list[tuple[float, int, dict[str, Any]]]) -> str | None:
    for _, _, line in thread:
        content = line["message"].get("content")
        if line.get("type") == "user":
            if isinstance(content, str):
                return content
            texts = [b.get("text") for b in _blocks(line) if b.get("type") == "text"]
            return texts[0] if texts else None
    return None


def _blocks(line: dict[str, Any]) -> list[dict[str, Any]]:
    content = line.get("message", {}).get("content") if isinstance(line.get("message"), dict) \
        else None
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _task(main: list[tuple[float, int, dict[str, Any]]]) -> str:
    prompt = _first_prompt(main)
    return " ".join(prompt.split())[:80] if prompt else "claude-code-session"


def _usage_tokens(message: dict[str, Any]) -> float | None:
    usage = message.get("usage")
    if not isinstance(usage, dict):
        return None
    total = 0.0
    for key in ("input_tokens", "output_tokens", "cache_creation_input_tokens"):
        value = usage.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            total += value
    return total


def _thread_events(draft: TraceDraft, thread: list[tuple[float, int, dict[str, Any]]],
                   agent: str, agent_id: str | None, calls: dict[str, dict[str, Any]],
                   spawn_events: dict[str, dict[str, Any]],
                   spawns: dict[str, dict[str, Any]], sent: list[dict[str, Any]],
                   received: list[tuple[float, str, str, str]]) -> None:
    """Events of one thread (the main one, a sidechain, a teammate's session) in time order.
    A team's messages: `SendMessage` calls are messages to their recipient (`sent`); the
    `<teammate-message>` turns that deliver them are kept aside (`received`), to stand for a
    message whose sender's session is missing."""
    counted: set[str] = set()
    first_prompt_seen = agent_id is None
    for t, _, line in thread:
        message = line["message"]
        uuid = line.get("uuid")
        model = message.get("model") if isinstance(message.get("model"), str) else None
        tokens = None
        mid = message.get("id")
        if line["type"] == "assistant" and not (isinstance(mid, str) and mid in counted):
            tokens = _usage_tokens(message)
            if isinstance(mid, str):
                counted.add(mid)
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            draft.skip("message without content")
            continue
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            keys = {"source_id": uuid, "model": model, "tokens": tokens}
            if kind == "text" and line["type"] == "user":
                if not first_prompt_seen:
                    first_prompt_seen = True  # a sub-agent's prompt: its spawn carries it
                    continue
                text = as_text(block.get("text")) or ""
                if text.lstrip().startswith("<task-notification>"):  # a background task's end
                    draft.add(t, "tool_result", agent, tool="task-notification", content=text,
                              source_id=uuid, trusted=False)
                    continue
                delivered = _TEAMMATE_MESSAGE.findall(text)
                if delivered:
                    for sender, body in delivered:
                        if _notice(body):
                            draft.skip("team notice (idle, shutdown, permission)")
                        else:
                            received.append((t, sender, agent, body.strip()))
                    continue
                draft.add(t, "human_intervention", agent, from_="user", content=text,
                          source_id=uuid)
            elif kind == "text":
                draft.add(t, "message", agent, from_=agent, content=as_text(block.get("text")),
                          **keys)
            elif kind in ("thinking", "redacted_thinking"):
                text = as_text(block.get("thinking") or block.get("data") or "")
                if agent_id is None:
                    draft.add(t, "orchestrator_decision", agent, decision="continue",
                              kind="thinking", content=text, **keys)
                else:
                    draft.add(t, "message", agent, from_=agent, kind="thinking", content=text,
                              **keys)
            elif kind == "tool_use" and block.get("name") == MESSAGE_TOOL:
                given = block.get("input") if isinstance(block.get("input"), dict) else {}
                to = as_text(given.get("recipient") or given.get("to")) or "team"
                event = draft.add(t, "message", agent, from_=agent,
                                  to=MAIN if to == LEAD else to,
                                  content=as_text(given.get("content") or given.get("message")),
                                  summary=as_text(given.get("summary")), tool=MESSAGE_TOOL,
                                  tool_use_id=block.get("id"), **keys)
                sent.append(event)
                calls[str(block.get("id"))] = event
            elif kind == "tool_use" and block.get("name") in SPAWN_TOOLS and agent_id is None:
                spawn = spawns.get(str(block.get("id")), {})
                given = block.get("input") if isinstance(block.get("input"), dict) else {}
                child = spawn.get("agent_id")
                child_name = f"{given.get('subagent_type') or 'agent'}-{child}" if child \
                    else f"{given.get('subagent_type') or 'agent'}-{block.get('id')}"
                if spawn.get("teammate"):
                    child_name = child
                event = draft.add(t, "spawn", agent, to=child_name,
                                  role=as_text(given.get("subagent_type") or "agent"),
                                  tool=block.get("name"), content=as_text(given.get("prompt")),
                                  description=as_text(given.get("description")),
                                  team_name=as_text(given.get("team_name")),
                                  source_id=uuid, tool_use_id=block.get("id"), **_no_source(keys))
                spawn_events[child_name] = event
                calls[str(block.get("id"))] = event
            elif kind == "tool_use":
                calls[str(block.get("id"))] = draft.add(
                    t, "tool_call", agent, tool=as_text(block.get("name")) or "tool",
                    content=as_text(block.get("input")), tool_use_id=block.get("id"), **keys)
            elif kind == "tool_result":
                _tool_result(draft, t, agent, line, block, calls)
            else:
                draft.skip(f"content block {kind!r}" if kind else "content block")
            tokens = None  # a message's usage goes on its first event only
            keys["tokens"] = None


def _notice(body: str) -> bool:
    """Whether a delivered teammate message is team protocol (idle, shutdown...), not words."""
    try:
        value = orjson.loads(body.strip())
    except orjson.JSONDecodeError:
        return False
    return isinstance(value, dict) and value.get("type") in TEAM_NOTICES


def _received(draft: TraceDraft, sent: list[dict[str, Any]],
              received: list[tuple[float, str, str, str]], names: dict[str | None, str]) -> None:
    """A delivered teammate message whose sender's `SendMessage` is not among the sessions read
    is a message from that sender, when it arrived (`inferred_by: importer`)."""
    known = {(e["agent"], e.get("to"), (e.get("content") or "").strip()) for e in sent}
    for t, sender, recipient, body in received:
        who = MAIN if sender == LEAD else sender
        if (who, recipient, body) in known:
            continue
        draft.add(t, "message", who, from_=who, to=recipient, content=body,
                  inferred_by="importer", tool=MESSAGE_TOOL)


def _workflow_agents(draft: TraceDraft, threads: dict[str | None, list],
                     runs: dict[str, str], names: dict[str | None, str],
                     spawn_events: dict[str, dict[str, Any]], results: dict[str, Any]) -> None:
    """Each agent of a `Workflow` run is spawned by `main` when its transcript begins (after
    the `Workflow` call that started the run) and returns to it when it ends, with the result
    the run's journal recorded for it (else its last words)."""
    if None not in threads:
        return
    launches = sorted((e for e in draft.events if e["agent"] == MAIN
                       and e["type"] == "tool_call" and e.get("tool") == "Workflow"),
                      key=lambda e: e["t"])
    for agent_id, run in runs.items():
        thread = threads[agent_id]
        child = names[agent_id]
        start, end = thread[0][0], thread[-1][0]
        launch = next((e for e in reversed(launches) if e["t"] <= start), None)
        spawn = draft.add(start, "spawn", MAIN, to=child, role="workflow-subagent",
                          content=_first_prompt(thread), tool="Workflow", workflow_run=run)
        if launch is not None:
            draft.link(launch, spawn, "causal")
        said = [b.get("text") for _, _, line in thread if line.get("type") == "assistant"
                for b in _blocks(line) if b.get("type") == "text"]
        result = results.get(agent_id)
        back = draft.add(end, "return", child, from_=child, to=MAIN,
                         content=as_text(result) if result is not None else
                         (said[-1] if said else None), workflow_run=run)
        draft.link(spawn, back, "return")
        spawn_events[child] = spawn


def _no_source(keys: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in keys.items() if k != "source_id"}


def _tool_result(draft: TraceDraft, t: float, agent: str, line: dict[str, Any],
                 block: dict[str, Any], calls: dict[str, dict[str, Any]]) -> None:
    call = calls.get(str(block.get("tool_use_id")))
    text = _result_text(block.get("content"))
    uuid = line.get("uuid")
    if call is not None and (call["type"] == "message" or call.get("team_name")):
        return  # a message delivered, a teammate started: the call is the event
    if call is not None and call["type"] == "spawn":
        result = line.get("toolUseResult") if isinstance(line.get("toolUseResult"), dict) else {}
        child = call["to"]
        event = draft.add(t, "return", child, from_=child, to=agent, content=text,
                          source_id=uuid, tool_use_id=block.get("tool_use_id"),
                          duration_ms=result.get("totalDurationMs"),
                          total_tokens=result.get("totalTokens"),
                          is_error=block.get("is_error") or None)
        draft.link(call, event, "return")
        return
    event = draft.add(t, "tool_result", agent, tool=call["tool"] if call else "tool",
                      content=text, source_id=uuid, tool_use_id=block.get("tool_use_id"),
                      is_error=block.get("is_error") or None, trusted=False)
    if call is not None:
        draft.link(call, event, "tool_dependency")


def _result_text(content: Any) -> str | None:
    if isinstance(content, list):
        parts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        if parts and all(isinstance(p, str) for p in parts):
            return "\n".join(parts)
    return as_text(content)


def _unspawned(draft: TraceDraft, threads: dict[str | None, list], names: dict[str | None, str],
               spawn_events: dict[str, dict[str, Any]]) -> None:
    """A sidechain no Task/Agent call claims still hangs under `main`, spawned when it began."""
    if None not in threads:
        return
    for agent_id, thread in threads.items():
        if agent_id is None or names[agent_id] in spawn_events:
            continue
        spawn_events[names[agent_id]] = draft.add(
            thread[0][0], "spawn", MAIN, to=names[agent_id], role="agent",
            content=_first_prompt(thread), inferred_by="importer")
        draft.note("unclaimed_sidechain", f"sidechain {agent_id} matches no Task or Agent call; "
                   "it is shown as spawned by main when it began")


def read_project(folder: str | Path) -> list[Trace]:
    """One trace per session of a Claude Code project folder, each with its sub-agent files;
    an agent team's sessions are one trace, its lead's."""
    sessions = sorted(p for p in Path(folder).glob("*.jsonl") if not p.name.startswith("agent-")
                      and not is_teammate_file(p))
    return [trace for path in sessions for trace in import_claude_code(path)]


WORKFLOWS = "workflows"
"""Under `<sessionId>/subagents/`: one folder per `Workflow` run, its agents' transcripts
(`agent-<id>.jsonl`, with `agent-<id>.meta.json`) and its `journal.jsonl`."""


def subagent_files_of(session: Path) -> list[Path]:
    """A session's sub-agent transcripts: `agent-<id>.jsonl` beside it that name its session,
    every one under `<sessionId>/subagents/`, and those of its `Workflow` runs
    (`<sessionId>/subagents/workflows/<run>/agent-<id>.jsonl`)."""
    if session.name.startswith("agent-") or not session.parent.is_dir():
        return []
    beside = [p for p in sorted(session.parent.glob("agent-*.jsonl"))
              if _session_of(p) == session.stem]
    own = session.parent / session.stem / "subagents"
    return beside + sorted(own.glob("agent-*.jsonl")) + sorted(
        own.glob(f"{WORKFLOWS}/*/agent-*.jsonl"))


def _workflow_run(path: Path) -> str | None:
    """The `Workflow` run a sub-agent transcript belongs to (its folder), if any."""
    parts = path.parts
    return parts[-2] if len(parts) >= 4 and parts[-3] == WORKFLOWS \
        and parts[-4] == "subagents" else None


def workflow_results(session: Path) -> dict[str, Any]:
    """What each agent of the session's `Workflow` runs returned, by agent id: the `result`
    lines of each run's `journal.jsonl` (a journal that cannot be read gives none)."""
    found: dict[str, Any] = {}
    root = session.parent / session.stem / "subagents" / WORKFLOWS
    for journal in sorted(root.glob("*/journal.jsonl")) if root.is_dir() else ():
        try:
            for _, value in json_lines(journal.read_bytes(), str(journal)):
                if isinstance(value, dict) and value.get("type") == "result" \
                        and isinstance(value.get("agentId"), str):
                    found[value["agentId"]] = value.get("result")
        except (OSError, TraceError):
            continue
    return found


def _team_of(path: Path) -> tuple[str | None, str | None]:
    """(team, agent name) a session's first lines carry: a lead's lines name the team only,
    a teammate's its own name too."""
    try:
        with path.open("rb") as handle:
            head = handle.read(65536)
    except OSError:
        return None, None
    if b'"teamName"' not in head:
        return None, None
    for raw in head.split(b"\n")[:50]:
        try:
            line = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(line, dict) and isinstance(line.get("teamName"), str):
            name = line.get("agentName")
            return line["teamName"], name if isinstance(name, str) else None
    return None, None


def teammate_files_of(session: Path) -> list[Path]:
    """The sessions of the teammates of the team a session leads (beside it in its folder)."""
    team, name = _team_of(session)
    if team is None or name not in (None, LEAD) or not session.parent.is_dir():
        return []
    return [p for p in sorted(session.parent.glob("*.jsonl")) if p != session
            and not p.name.startswith("agent-") and (lambda t: t[0] == team and t[1] not in
                                                     (None, LEAD))(_team_of(p))]


def is_teammate_file(path: Path) -> bool:
    """Whether a session is a teammate's whose team lead's session is beside it (and so is read
    with the lead's, as one trace)."""
    team, name = _team_of(path)
    if team is None or name in (None, LEAD):
        return False
    return any(_team_of(p) in ((team, None), (team, LEAD)) for p in path.parent.glob("*.jsonl")
               if p != path and not p.name.startswith("agent-"))


def is_subagent_file(path: Path) -> bool:
    """Whether a file belongs to a session file and is read with it, not on its own: a
    sub-agent transcript, anything under `<sessionId>/subagents/` (a `Workflow` run's agents,
    their `meta.json`, its journal), a teammate's session beside its lead's."""
    for depth, parent in enumerate(path.parents):
        if parent.name == "subagents" and depth <= 3:
            return (parent.parent.parent / f"{parent.parent.name}.jsonl").exists()
    if path.name.endswith(".jsonl") and not path.name.startswith("agent-"):
        return is_teammate_file(path)
    if not (path.name.startswith("agent-") and path.name.endswith(".jsonl")):
        return False
    session = _session_of(path)
    return session is not None and (path.parent / f"{session}.jsonl").exists()


def _session_of(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            first = first_value(handle.readline(1 << 20))  # a first line can pass 64 KB
    except OSError:
        return None
    session = first.get("sessionId") if isinstance(first, dict) else None
    return session if isinstance(session, str) else None


def is_project(folder: str | Path) -> bool:
    """Whether a folder looks like a Claude Code project folder (session transcripts in it)."""
    root = Path(folder)
    for path in sorted(root.glob("*.jsonl"))[:5]:
        try:
            with path.open("rb") as handle:
                head = handle.read(65536)
                if b"\n" not in head:  # a first line past 64 KB: the rest of it
                    head += handle.readline(1 << 20)
        except OSError:
            continue
        if detect(head, path.name) >= 0.9:
            return True
    return False
