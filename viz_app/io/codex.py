"""Codex CLI rollouts: JSONL lines `{timestamp, type, payload}` of types `session_meta`,
`response_item`, `event_msg` and `turn_context`, one file per thread.

Mapping: a root thread is the orchestrator `main`; a child thread (its `session_meta` names
`source.subagent.thread_spawn.parent_thread_id`) is an agent named by its nickname or role; the
parent's `spawn_agent` call is the spawn (paired with the child by the `agent_id` in the call's
output or by the `new_thread_id` of the `collab_agent_spawn_end` event that newer rollouts keep,
else by order), `send_input` a message to the child, `close_agent` a despawn, `wait` a
tool call; other `function_call` / `function_call_output` pairs (by `call_id`) are tool calls and
results; a child's `task_complete` is its return to the parent; the root's last `task_complete`
is the stop. `token_count` usage goes on the thread's latest model event. A folder of rollouts
becomes one trace per root thread with its descendants; there a child's lines that repeat its
parent's (a fork copies the parent's history) are known from the parent's own file and left out.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from viz_app.errors import TraceError
from viz_app.io.files import source_path
from viz_app.io.native import Source, read_source
from viz_app.io.records import TraceDraft, as_text, first_value, json_lines, parse_time
from viz_app.model import Trace

NAME = "codex"
SKIPPED_EVENTS = frozenset({"user_message", "agent_message", "agent_reasoning", "task_started",
                            "exec_command_begin", "exec_command_end", "turn_aborted",
                            "agent_reasoning_raw_content", "patch_apply_begin",
                            "patch_apply_end", "turn_diff", "mcp_tool_call_begin",
                            "mcp_tool_call_end", "web_search_begin", "web_search_end",
                            "context_compacted", "entered_review_mode", "exited_review_mode",
                            "error", "stream_error", "background_event", "plan_update",
                            "collab_agent_spawn_begin", "collab_agent_spawn_end",
                            "collab_agent_interaction_begin", "collab_agent_interaction_end",
                            "collab_waiting_begin", "collab_waiting_end", "collab_close_begin",
                            "collab_close_end", "collab_resume_begin", "collab_resume_end"})
"""event_msg kinds that repeat what response items say, or carry nothing orchviz shows (the
collab events repeat the spawn_agent, send_input, wait and close_agent calls; a spawn's end
event names the new thread, read in `_spawned_ids`)."""
CONTEXT_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md")
FIRST_LINE_LIMIT = 1 << 20
"""Bytes of a file's first line read to tell its format: a `session_meta` line carries the
session's whole instructions and can run past 64 KB."""


@dataclass
class Thread:
    """One rollout file: a thread of a Codex session."""

    id: str
    label: str
    parent: str | None = None
    nickname: str | None = None
    role: str | None = None
    lines: list[tuple[float, int, str, dict[str, Any]]] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)


def detect(data: bytes, name: str = "") -> float:
    """How sure it is that the bytes are a Codex rollout (0 to 1)."""
    first = first_value(data)
    if isinstance(first, dict) and first.get("type") in ("session_meta", "response_item",
                                                         "event_msg", "turn_context") \
            and "payload" in first and "timestamp" in first:
        return 1.0 if first.get("type") == "session_meta" else 0.8
    return 0.0


def read_thread(data: bytes, label: str) -> Thread:
    """Parse one rollout file into a thread (lines sorted by time). A forked thread's rollout
    repeats its parent's history before its own turns begin: those lines are left out."""
    thread = Thread(id="", label=label)
    rows: list[tuple[float | None, int, str, dict[str, Any]]] = []
    own: dict[str, Any] | None = None
    for number, value in json_lines(data, label):
        kind, payload = _shape(value)
        if kind == "state":
            continue  # Codex's own bookkeeping
        if kind is None or payload is None:
            thread.unknown.append("line without a payload")
            continue
        t = parse_time(value.get("timestamp"))
        if kind == "session_meta" and own is None:
            own = payload
            thread.id = str(payload.get("id") or "")
            spawn = _thread_spawn(payload.get("source"))
            thread.parent = as_text((spawn or {}).get("parent_thread_id")
                                    or payload.get("parent_thread_id"))
            thread.nickname = as_text((spawn or {}).get("agent_nickname")
                                      or (spawn or {}).get("nickname")
                                      or payload.get("agent_nickname"))
            thread.role = as_text((spawn or {}).get("agent_role") or (spawn or {}).get("role")
                                  or payload.get("agent_role"))
            continue
        rows.append((t, number, str(kind), payload))
    if not thread.id and not rows:
        raise TraceError(label, "", "is not a Codex rollout (no session_meta or items)")
    thread.id = thread.id or label
    replayed = _replayed(rows, own or {}, thread) if own is not None else range(0)
    for i, (t, number, kind, payload) in enumerate(rows):
        if i in replayed:
            continue
        if t is None:
            thread.unknown.append("line without a timestamp")
            continue
        thread.lines.append((t, number, kind, payload))
    thread.lines.sort(key=lambda item: (item[0], item[1]))
    return thread


RESPONSE_TYPES = frozenset({"message", "reasoning", "function_call", "function_call_output",
                            "custom_tool_call", "custom_tool_call_output", "local_shell_call",
                            "web_search_call", "ghost_snapshot", "tool_search_call",
                            "tool_search_output", "image_generation_call", "compaction"})
"""Response item types, which newer rollouts may write at the top level of a line."""


def _shape(value: Any) -> tuple[str | None, dict[str, Any] | None]:
    """(line type, payload) of a rollout line in any of Codex's shapes: `{timestamp, type,
    payload}`; the flattened shape of newer files (`{timestamp, type: "message", role, ...}`);
    the first-line header of the 2025-08 files (`{id, timestamp, instructions}`); the
    `{"record_type": "state"}` sentinel."""
    if not isinstance(value, dict):
        return None, None
    if value.get("record_type") == "state":
        return "state", {}
    kind = value.get("type")
    if isinstance(value.get("payload"), dict):
        return str(kind), value["payload"]
    body = {k: v for k, v in value.items() if k not in ("timestamp", "type")}
    if kind in ("session_meta", "turn_context", "event_msg", "compacted"):
        return kind, body
    if kind in RESPONSE_TYPES:
        return "response_item", {k: v for k, v in value.items() if k != "timestamp"}
    if kind is None and "id" in value and "timestamp" in value and (
            "instructions" in value or "git" in value):
        return "session_meta", body
    return None, None


def uuid7_time(value: Any) -> float | None:
    """Seconds since the epoch that a UUIDv7 carries (Codex's thread and turn ids are UUIDv7,
    minted when the thread or turn began); None for anything else."""
    if not isinstance(value, str):
        return None
    digits = value.replace("-", "")
    if len(digits) != 32 or digits[12] != "7":
        return None
    try:
        return int(digits[:12], 16) / 1000
    except ValueError:
        return None


def _replayed(rows: list[tuple[float | None, int, str, dict[str, Any]]], own: dict[str, Any],
              thread: Thread) -> range:
    """The rows (in file order) that a forked thread's rollout copied from its parent. They
    begin at the parent's replayed `session_meta` and end at the thread's own `session_meta`
    written again, else before the turn that gives the thread the task of a copied spawn_agent
    call, else before its first turn whose UUIDv7 id is not older than the thread, else (no such
    marks) with the burst of lines stamped at the fork instant, a guess the trace warns about. A
    thread that names no parent replays nothing."""
    if not (own.get("forked_from_id") or thread.parent):
        return range(0)
    metas = [i for i, row in enumerate(rows) if row[2] == "session_meta"]
    foreign = next((i for i in metas if rows[i][3].get("id") != thread.id), None)
    again = next((i for i in metas if rows[i][3].get("id") == thread.id
                  and (foreign is None or i > foreign)), None)
    if foreign is not None and again is not None:
        return _noted(thread, range(foreign, again + 1), "its session_meta written again")
    start = foreign if foreign is not None else 0
    delivered = _task_delivered(rows, start)
    if delivered is not None:
        return _noted(thread, range(start, delivered), "its task, as the parent's copied "
                      "spawn_agent call gave it") if delivered > start else range(0)
    born = uuid7_time(thread.id) or parse_time(own.get("timestamp"))
    for i in range(start, len(rows)):
        kind, payload = rows[i][2], rows[i][3]
        if kind == "turn_context" or (kind == "event_msg" and payload.get("type") in (
                "task_started", "turn_started")):
            began = uuid7_time(payload.get("turn_id"))
            if began is None or born is None:
                break
            if began >= born - 0.001:
                return _noted(thread, range(start, i), "the first turn newer than the thread") \
                    if i > start else range(0)
    if foreign is None:
        return range(0)
    fork_t = rows[foreign][0] or 0.0
    end = foreign
    while end < len(rows) and rows[end][0] is not None and rows[end][0] - fork_t <= 1.0:
        end += 1
    thread.notes.append(("fork_boundary_guessed", f"{Path(thread.label).name}: where the "
                         "history copied from the parent ends is not marked; the lines stamped "
                         "within a second of the fork are taken as the copy"))
    return _noted(thread, range(foreign, end), "the burst stamped at the fork")


TURN_STARTS = ("task_started", "turn_started")


def _task_delivered(rows: list[tuple[float | None, int, str, dict[str, Any]]],
                    start: int) -> int | None:
    """Where a child's own history begins, known from the copy itself: the copy holds the
    parent's spawn_agent call that made this child, and the child's first own turn receives
    that call's message as its task. The row of the turn that opens with it (its turn_context,
    if one comes just before), else None (no copied spawn's message reaches the child)."""
    asked: set[str] = set()
    last_call = start
    for i in range(start, len(rows)):
        kind, payload = rows[i][2], rows[i][3]
        if kind != "response_item":
            continue
        if payload.get("name") == "spawn_agent":
            args = _args(payload)
            text = as_text(args.get("message") or args.get("task"))
            if text:
                asked.add(" ".join(text.split()))
                last_call = i
        elif asked and payload.get("type") == "message" and payload.get("role") == "user":
            text = _message_text(payload)
            if text and " ".join(text.split()) in asked:
                k = i
                while k - 1 > last_call and (rows[k - 1][2] == "turn_context" or (
                        rows[k - 1][2] == "event_msg"
                        and rows[k - 1][3].get("type") in TURN_STARTS)):
                    k -= 1
                return k
    return None


def _noted(thread: Thread, rows: range, how: str) -> range:
    thread.notes.append(("fork_replay_skipped", f"{Path(thread.label).name}: {len(rows)} lines "
                         f"copied from the parent thread are left out (boundary: {how})"))
    return rows


def _thread_spawn(source: Any) -> dict[str, Any] | None:
    if isinstance(source, dict):
        sub = source.get("subagent")
        if isinstance(sub, dict) and isinstance(sub.get("thread_spawn"), dict):
            return sub["thread_spawn"]
    return None


def import_codex(source: Source, *, name: str | None = None) -> list[Trace]:
    """One rollout file as a trace: its thread, with every thread descended from it whose
    rollout is in the same folder (as a library reads a sessions folder, file by file; a
    child's own file is then read with its root, see `is_child_file`)."""
    data, label = read_source(source, name)
    thread = read_thread(data, label)
    path = source_path(source, name, len(data))
    family = _descendants(thread, path.parent) if path is not None else []
    return [threads_trace(thread, family, label)]


def _descendants(root: Thread, folder: Path) -> list[Thread]:
    """The threads descended from a root whose rollouts sit in a folder, each read with the
    lines it copied from its parent left out."""
    heads = _heads(str(folder), _stamp(folder))
    read: dict[str, Thread] = {root.id: root}
    family: list[Thread] = []
    waiting = [root.id]
    while waiting:
        parent = waiting.pop(0)
        for thread_id, (file, named) in heads.items():
            if named != parent or thread_id in read:
                continue
            try:
                data, label = read_source(Path(file))
                child = read_thread(data, label)
            except (OSError, TraceError):
                continue  # read on its own, the child's file says what is wrong with it
            _drop_copies(child, read[parent])
            read[child.id] = child
            family.append(child)
            waiting.append(child.id)
    return family


def _stamp(folder: Path) -> int:
    try:
        return folder.stat().st_mtime_ns
    except OSError:
        return 0


@functools.lru_cache(maxsize=64)
def _heads(folder: str, stamp: int) -> dict[str, tuple[str, str | None]]:
    """Thread id -> (file, parent thread id) of the rollouts in a folder, from their first
    lines; kept while the folder's listing is unchanged (`stamp`: its modification time), since
    a library reads a sessions folder file by file."""
    found: dict[str, tuple[str, str | None]] = {}
    for path in sorted(Path(folder).glob("*.jsonl")):
        try:
            with path.open("rb") as handle:
                first = first_value(handle.readline(FIRST_LINE_LIMIT))
        except OSError:
            continue
        kind, payload = _shape(first)
        if kind != "session_meta" or not payload or not payload.get("id"):
            continue
        spawn = _thread_spawn(payload.get("source"))
        parent = as_text((spawn or {}).get("parent_thread_id") or payload.get("parent_thread_id"))
        found[str(payload["id"])] = (str(path), parent)
    return found


def is_child_file(path: Path) -> bool:
    """Whether a file is the rollout of a child thread whose parent's rollout is in the same
    folder (so it is read with its root, not on its own)."""
    if not (path.name.startswith("rollout-") and path.name.endswith(".jsonl")):
        return False
    heads = _heads(str(path.parent), _stamp(path.parent))
    mine = next((thread for thread, (file, _) in heads.items() if file == str(path)), None)
    seen: set[str] = set()
    while mine is not None and mine not in seen:  # up to a root: parents in a loop claim none
        seen.add(mine)
        parent = heads[mine][1]
        if parent is None or parent not in heads:
            return len(seen) > 1
        mine = parent
    return False


def read_rollouts(folder: str | Path) -> list[Trace]:
    """One trace per root thread of a folder of rollouts (searched recursively), each with
    every thread descended from it."""
    threads: dict[str, Thread] = {}
    for path in sorted(Path(folder).rglob("*.jsonl")):
        data, label = read_source(path)
        if detect(data, label) <= 0:
            continue
        thread = read_thread(data, label)
        threads[thread.id] = thread
    children: dict[str, list[Thread]] = defaultdict(list)
    for thread in threads.values():
        if thread.parent and thread.parent in threads:
            children[thread.parent].append(thread)
            _drop_copies(thread, threads[thread.parent])
    traces = []
    for thread in threads.values():
        if thread.parent in threads:
            continue
        family, stack = [], list(children.get(thread.id, []))
        while stack:
            child = stack.pop(0)
            family.append(child)
            stack.extend(children.get(child.id, []))
        traces.append(threads_trace(thread, family, thread.label))
    return traces


def _fingerprint(kind: str, payload: dict[str, Any]) -> bytes:
    return kind.encode() + b"\0" + orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)


def _drop_copies(child: Thread, parent: Thread) -> None:
    """Leave out a child's lines copied from its parent's rollout, known by the parent file
    itself rather than by marks the copy may lack: the leading lines (in file order) that
    repeat one of the parent's lines word for word, timestamps aside, and any spawn_agent call
    that repeats one of the parent's (same call_id): the child's session_meta names its
    parent, so a spawn the parent made is never the child's own."""
    seen = {_fingerprint(kind, payload) for _, _, kind, payload in parent.lines}
    parent_spawns = {str(p.get("call_id")) for _, _, k, p in parent.lines
                     if k == "response_item" and p.get("name") == "spawn_agent"}
    in_order = sorted(child.lines, key=lambda line: line[1])
    leading = 0
    while leading < len(in_order) and _fingerprint(in_order[leading][2],
                                                   in_order[leading][3]) in seen:
        leading += 1
    copied = {line[1] for line in in_order[:leading]
              if line[2] != "turn_context"}  # it only names the model: the child's own may match
    copied |= {line[1] for line in in_order if line[2] == "response_item"
               and line[3].get("name") == "spawn_agent"
               and str(line[3].get("call_id")) in parent_spawns}
    if not copied:
        return
    child.lines = [line for line in child.lines if line[1] not in copied]
    child.notes.append(("fork_replay_skipped", f"{Path(child.label).name}: {len(copied)} "
                        "lines copied from the parent thread are left out (boundary: the "
                        "parent's own rollout)"))


def is_rollout_folder(folder: str | Path) -> bool:
    """Whether a folder holds Codex rollouts (looks at the first line of a few of its .jsonl
    files)."""
    for path in sorted(Path(folder).rglob("*.jsonl"))[:5]:
        try:
            with path.open("rb") as handle:
                if detect(handle.readline(FIRST_LINE_LIMIT), path.name) >= 1.0:
                    return True
        except OSError:
            continue
    return False


def _names(root: Thread, family: list[Thread]) -> dict[str, str]:
    names = {root.id: "main"}
    used = {"main"}
    for thread in sorted(family, key=lambda th: th.lines[0][0] if th.lines else 0.0):
        base = thread.nickname or thread.role or f"agent-{thread.id[:8]}"
        name, n = base, 2
        while name in used:
            name, n = f"{base}-{n}", n + 1
        used.add(name)
        names[thread.id] = name
    return names


def threads_trace(root: Thread, family: list[Thread], label: str) -> Trace:
    """A root thread and its descendants as one trace."""
    draft = TraceDraft()
    names = _names(root, family)
    kids: dict[str, list[Thread]] = defaultdict(list)
    for thread in sorted(family, key=lambda th: th.lines[0][0] if th.lines else 0.0):
        if thread.parent:
            kids[thread.parent].append(thread)
    spawn_of: dict[str, dict[str, Any]] = {}
    stop_at = None
    for thread in [root, *family]:
        for kind in thread.unknown:
            draft.skip(kind)
        for code, message in thread.notes:
            draft.note(code, message)
        end = _thread_events(draft, thread, names, kids.get(thread.id, []), spawn_of,
                             is_root=thread is root)
        if thread is root:
            stop_at = end
    _unclaimed(draft, family, names, spawn_of)
    draft.conclude("main", stop_at=stop_at)
    return draft.build(label, NAME, trace_id=root.id, task_id=_task(root), system="codex-cli",
                       topology="hierarchical" if any(t.parent != root.id for t in family)
                       else ("centralized" if family else "harness"))


def _unclaimed(draft: TraceDraft, family: list[Thread], names: dict[str, str],
               spawn_of: dict[str, dict[str, Any]]) -> None:
    """A child thread whose spawn no line of its parent records still hangs under its parent
    (its session_meta names it), spawned when its own rollout begins."""
    for child in family:
        name = names[child.id]
        if name in spawn_of or not child.lines or child.parent not in names:
            continue
        spawn = spawn_of[name] = draft.add(child.lines[0][0], "spawn", names[child.parent],
                                           to=name, role=child.role or "agent",
                                           inferred_by="importer")
        for event in [e for e in draft.events if e["type"] == "return" and e["agent"] == name]:
            draft.link(spawn, event, "return")
        draft.note("unclaimed_child", f"{Path(child.label).name}: no spawn of this thread is "
                   f"recorded in its parent's rollout; it is shown as spawned by "
                   f"{names[child.parent]} when its own rollout begins")


def _task(root: Thread) -> str:
    for _, _, kind, payload in root.lines:
        if kind == "response_item" and payload.get("type") == "message" \
                and payload.get("role") == "user":
            text = _message_text(payload)
            if text and not text.startswith(CONTEXT_PREFIXES):
                return " ".join(text.split())[:80]
    return root.id


def _message_text(payload: dict[str, Any]) -> str | None:
    content = payload.get("content")
    if isinstance(content, list):
        parts = [c.get("text") for c in content if isinstance(c, dict)
                 and isinstance(c.get("text"), str)]
        return "\n".join(parts) if parts else None
    return as_text(content)


def _args(payload: dict[str, Any]) -> dict[str, Any]:
    raw = payload.get("arguments")
    if isinstance(raw, dict):
        return raw
    try:
        value = orjson.loads(raw) if isinstance(raw, str) else None
    except orjson.JSONDecodeError:
        value = None
    return value if isinstance(value, dict) else {}


def _spawned_ids(thread: Thread) -> dict[str, str]:
    """call_id of each spawn_agent call -> the child thread id its output names."""
    spawn_calls = {str(p.get("call_id")) for _, _, k, p in thread.lines
                   if k == "response_item" and p.get("name") == "spawn_agent"}
    found: dict[str, str] = {}
    for _, _, kind, payload in thread.lines:
        if kind == "response_item" and str(payload.get("call_id")) in spawn_calls \
                and payload.get("type") in ("function_call_output", "custom_tool_call_output"):
            child = _output_agent_id(payload.get("output"))
            if child:
                found[str(payload.get("call_id"))] = child
    for _, _, kind, payload in thread.lines:  # upstream's own record of the spawn, kept when
        if kind == "event_msg" and payload.get("type") == "collab_agent_spawn_end" \
                and payload.get("new_thread_id"):  # the rollout persists extended events
            found[str(payload.get("call_id"))] = str(payload["new_thread_id"])
    return found


def _output_agent_id(output: Any) -> str | None:
    text = output.get("content") if isinstance(output, dict) else output
    try:
        value = orjson.loads(text) if isinstance(text, str) else text
    except orjson.JSONDecodeError:
        return None
    if isinstance(value, dict):
        found = value.get("agent_id") or value.get("id") or value.get("thread_id")
        return str(found) if found else None
    return None


def _thread_events(draft: TraceDraft, thread: Thread, names: dict[str, str],
                   kids: list[Thread], spawn_of: dict[str, dict[str, Any]],
                   is_root: bool) -> float | None:
    """Add one thread's events; returns when its last task completed."""
    agent = names[thread.id]
    by_id = {k.id: k for k in kids}
    spawned = _spawned_ids(thread)
    unclaimed = [k for k in kids if k.id not in spawned.values()]
    calls: dict[str, dict[str, Any]] = {}
    model = None
    last_model_event: dict[str, Any] | None = None
    prompt_skipped = is_root
    completed = None
    for t, number, kind, payload in thread.lines:
        item = payload.get("type")
        source = f"{Path(thread.label).name}:{number}"
        if kind == "turn_context":
            model = as_text(payload.get("model")) or model
        elif kind == "event_msg" and item == "token_count":
            info = payload.get("info") if isinstance(payload.get("info"), dict) else {}
            last = info.get("last_token_usage") if isinstance(info.get("last_token_usage"),
                                                              dict) else {}
            total = last.get("total_tokens")
            if last_model_event is not None and isinstance(total, (int, float)):
                last_model_event["tokens"] = last_model_event.get("tokens", 0) + total
        elif kind == "event_msg" and item == "task_complete":
            completed = t
            if not is_root and thread.parent in names:
                parent = names[thread.parent]
                back = draft.add(t, "return", agent, from_=agent, to=parent, source_id=source,
                                 content=as_text(payload.get("last_agent_message")))
                if agent in spawn_of:
                    draft.link(spawn_of[agent], back, "return")
        elif kind == "event_msg" and item == "collab_agent_spawn_end" \
                and str(payload.get("call_id")) not in calls and payload.get("new_thread_id"):
            last_model_event = _spawn_end(draft, t, agent, payload, by_id, names, spawn_of,
                                          calls, model, source)
        elif kind == "event_msg" and item in SKIPPED_EVENTS:
            continue
        elif kind == "response_item" and item == "message":
            text = _message_text(payload)
            role = payload.get("role")
            if role == "user":
                if not text or text.startswith(CONTEXT_PREFIXES):
                    continue
                if not prompt_skipped:
                    prompt_skipped = True  # the child's task: its spawn carries it
                    continue
                draft.add(t, "human_intervention", agent, from_="user", content=text,
                          source_id=source)
            elif role == "assistant":
                last_model_event = draft.add(t, "message", agent, from_=agent, content=text,
                                             model=model, source_id=source)
        elif kind == "response_item" and item == "reasoning":
            summary = payload.get("summary") if isinstance(payload.get("summary"), list) else []
            text = "\n".join(s.get("text", "") for s in summary if isinstance(s, dict))
            if is_root:
                last_model_event = draft.add(t, "orchestrator_decision", agent,
                                             decision="continue", kind="thinking",
                                             content=text, model=model, source_id=source)
            else:
                last_model_event = draft.add(t, "message", agent, from_=agent, kind="thinking",
                                             content=text, model=model, source_id=source)
        elif kind == "response_item" and item in ("function_call", "custom_tool_call",
                                                  "local_shell_call", "web_search_call"):
            last_model_event = _call(draft, t, agent, payload, calls, by_id, names, unclaimed,
                                     spawn_of, model, source, spawned)
        elif kind == "response_item" and item in ("function_call_output",
                                                  "custom_tool_call_output"):
            _output(draft, t, agent, payload, calls, source)
        else:
            draft.skip(f"{kind} {item!r}" if item else f"line type {kind!r}")
    return completed


def _spawn_end(draft: TraceDraft, t: float, agent: str, payload: dict[str, Any],
               by_id: dict[str, Thread], names: dict[str, str],
               spawn_of: dict[str, dict[str, Any]], calls: dict[str, dict[str, Any]],
               model: str | None, source: str) -> dict[str, Any]:
    """A spawn that only upstream's own `collab_agent_spawn_end` event records (no spawn_agent
    call of its call_id in the rollout)."""
    said = str(payload["new_thread_id"])
    child = by_id.get(said)
    child_name = names[child.id] if child else (as_text(payload.get("new_agent_nickname"))
                                                or f"agent-{said[:8]}")
    call_id = str(payload.get("call_id") or source)
    event = draft.add(t, "spawn", agent, to=child_name,
                      role=as_text(payload.get("new_agent_role")) or (child.role if child else None)
                      or "agent", content=as_text(payload.get("prompt")) or None,
                      call_id=call_id, model=model, source_id=source)
    spawn_of[child_name] = calls[call_id] = event
    return event


def _call(draft: TraceDraft, t: float, agent: str, payload: dict[str, Any],
          calls: dict[str, dict[str, Any]], by_id: dict[str, Thread], names: dict[str, str],
          unclaimed: list[Thread], spawn_of: dict[str, dict[str, Any]], model: str | None,
          source: str, spawned: dict[str, str]) -> dict[str, Any]:
    name = str(payload.get("name") or payload.get("type"))
    args = _args(payload)
    call_id = str(payload.get("call_id") or payload.get("id") or source)
    if name == "spawn_agent":
        said = spawned.get(call_id)
        child = by_id.get(said) if said else None
        if child is None and not said and unclaimed:
            child = unclaimed.pop(0)  # no id in the output: pair by order
        child_name = names[child.id] if child else f"agent-{(said or call_id)[:8]}"
        event = draft.add(t, "spawn", agent, to=child_name,
                          role=as_text(args.get("agent_type")) or (child.role if child else None)
                          or "agent", content=as_text(args.get("message") or args.get("task")),
                          call_id=call_id, model=model, source_id=source)
        spawn_of[child_name] = event
        calls[call_id] = event
        return event
    target = args.get("id") or args.get("target")
    if name == "send_input" and isinstance(target, str):
        to = names.get(target, f"agent-{target[:8]}")
        event = draft.add(t, "message", agent, from_=agent, to=to, call_id=call_id,
                          content=as_text(args.get("message")), model=model, source_id=source)
        calls[call_id] = event
        return event
    if name == "close_agent" and isinstance(target, str):
        event = draft.add(t, "despawn", agent, to=names.get(target, f"agent-{target[:8]}"),
                          call_id=call_id, source_id=source)
        calls[call_id] = event
        return event
    content = args or payload.get("input") or payload.get("action") or payload.get("arguments")
    event = draft.add(t, "tool_call", agent, tool=name, content=as_text(content),
                      call_id=call_id, model=model, source_id=source)
    calls[call_id] = event
    return event


def _output(draft: TraceDraft, t: float, agent: str, payload: dict[str, Any],
            calls: dict[str, dict[str, Any]], source: str) -> None:
    call = calls.get(str(payload.get("call_id")))
    output = payload.get("output")
    if call is not None and call["type"] == "spawn":
        return  # its output (the child's id) was read before, in `_spawned_ids`
    if call is not None and call["type"] in ("message", "despawn"):
        return  # send_input and close_agent answer with an acknowledgement only
    text = output.get("content") if isinstance(output, dict) else output
    result = draft.add(t, "tool_result", agent, tool=call["tool"] if call else "tool",
                       content=as_text(text), call_id=payload.get("call_id"), source_id=source,
                       trusted=False)
    if call is not None:
        draft.link(call, result, "tool_dependency")
