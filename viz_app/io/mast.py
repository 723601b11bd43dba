"""MAST / MAD (Cemri et al., "Why Do Multi-Agent LLM Systems Fail?", arXiv:2503.13657): runs of
seven multi-agent systems with their failure modes annotated, one record per run.

A record (`MAD_full_dataset.json` holds a list of them) has `mas_name`, `llm_name`,
`benchmark_name`, `trace_id`, `trace` (`{key, index, trajectory}`, or the trajectory itself) and
`mast_annotation`: the 14 failure modes by code (`"1.1"` ... `"3.3"`) as 1, 0 or null. The
human-labelled file writes `annotations: [{"failure mode": "1.5 Unaware of stopping conditions
...", annotator_1, annotator_2, annotator_3}]` instead (a mode counts when two of three agree).

The trajectory is the system's own log, as text or as JSON in a string, and agents and turns are
recovered as far as its text allows: AG2 (`{content, role, name}` messages, or `X (to Y):`
blocks), HyperAgent (`Planner's Response:`, `Subgoal:`, `Inner-Navigator-Assistant's Response:`,
`Navigator->Planner:`), ChatDev (`[... INFO] Role: **A<->B on : Phase, turn n**`), MetaGPT
(`Name(Profile): to do Action`, and the `NEW MESSAGES:` log), Magentic-One (`---------- Agent
----------` blocks, `Orchestrator (-> Agent)` roles), AppWorld (`Message to X Agent`, `Response
from X Agent`, `Code Execution Output`), OpenManus (`Manus's thoughts`, `Activating tool`,
`Tool ... completed`). A log no parser reads is kept whole as one message of the system (warning
`mast_unparsed`), so the run and its labels are never lost. Runs have no clock: turn `i` is at
`t = i` seconds. MAST's raw run files (`{run_id, prompt, content, timestamp, cost, log_file}`,
a MetaGPT log in `content`) read as the record they became, without failure modes (none came
with them): its roles are the agents. The record (without its trajectory) is kept verbatim on
the first event;
`annotation_records` maps the failure modes to the rubric's questions (docs/importers.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from viz_app.analysis import analyze
from viz_app.errors import TraceError
from viz_app.io.native import Source, read_source
from viz_app.io.records import (CERTAIN, UNCERTAIN, TraceDraft, as_text, first_value, head_has,
                                json_values, label_record, parse_time, publish, published)
from viz_app.model import Trace

NAME = "mast"
ORIGIN = "MAST"
VERSION = "MAST / MAD (arXiv:2503.13657)"
CREATED_AT = "2025-03-17T00:00:00.000000Z"
"""When a published MAST label is said to be made (fixed, so importing twice adds nothing)."""
MODES = {"1.1": "Disobey task specification", "1.2": "Disobey role specification",
         "1.3": "Step repetition", "1.4": "Loss of conversation history",
         "1.5": "Unaware of termination conditions", "2.1": "Conversation reset",
         "2.2": "Fail to ask for clarification", "2.3": "Task derailment",
         "2.4": "Information withholding", "2.5": "Ignored other agent's input",
         "2.6": "Reasoning-action mismatch", "3.1": "Premature termination",
         "3.2": "No or incomplete verification", "3.3": "Incorrect verification"}
"""The 14 failure modes of the MAST taxonomy, by the codes `mast_annotation` uses."""
_BY_NAME = ((("premature termination",), "3.1"),
            (("unaware of stopping", "unaware of termination"), "1.5"),
            (("incorrect verification", "weak verification"), "3.3"),
            (("no or incomplete verification", "incomplete verification", "no verification",
              "lack of result verification", "lack of critical verification"), "3.2"),
            (("information withholding", "withholding"), "2.4"),
            (("ignored other agent", "ignoring suggestions"), "2.5"))
"""Failure-mode names, as the human-labelled rounds wrote them, of the modes orchviz maps (their
numbers changed between rounds; the names did not)."""


@dataclass
class Turn:
    """One step of a run recovered from its log."""

    agent: str
    kind: str
    """message, delegate, return, tool_call, tool_result, human."""
    content: str
    to: str | None = None
    tool: str | None = None
    at: float | None = None
    """When the log stamped the turn (seconds since the epoch), where it stamps turns."""


def _is_record(value: Any) -> bool:
    return isinstance(value, dict) and "mas_name" in value and "trace" in value


RUN_KEYS = ("run_id", "timestamp", "cost", "log_file")
"""What a raw run file keeps beside its task (`prompt`) and its log (`content`)."""


def _is_run(value: Any) -> bool:
    """Whether a value is one of MAST's raw run files (`{run_id, prompt, content, timestamp,
    cost, log_file}`, the MetaGPT runs before they became MAD records)."""
    return isinstance(value, dict) and "mas_name" not in value \
        and isinstance(value.get("content"), str) and "prompt" in value \
        and any(key in value for key in RUN_KEYS)


def detect(data: bytes, name: str = "") -> float:
    """How sure it is that the bytes are MAST / MAD records, or MAST's raw run files (0 to 1)."""
    first = first_value(data)
    head = first[0] if isinstance(first, list) and first else first
    if _is_record(head):
        return 1.0 if ("mast_annotation" in head or "annotations" in head) else 0.8
    if _is_run(head):
        return 0.9 if "run_id" in head and "log_file" in head else 0.7
    if first is None and head_has(data, b"mas_name", b"trace") and (
            head_has(data, b"mast_annotation") or head_has(data, b"benchmark_name")):
        return 0.8
    return 0.0


def import_mast(source: Source, *, name: str | None = None) -> list[Trace]:
    """One trace per MAST / MAD record."""
    data, label = read_source(source, name)
    traces = []
    for line, value in json_values(data, label):
        records = value if isinstance(value, list) else [value]
        for number, record in enumerate(records):
            if _is_run(record):
                traces.append(run_trace(record, label))
                continue
            if not _is_record(record):
                raise TraceError(label, f"line {line}, record {number + 1}", "is not a MAST "
                                 "record (no `mas_name` and `trace`) nor a raw run (no "
                                 "`prompt` and `content`)")
            traces.append(record_trace(record, label))
    if not traces:
        raise TraceError(label, "", "holds no MAST records")
    return traces


def run_trace(run: dict[str, Any], label: str) -> Trace:
    """One raw run file as a trace, read as the MAD record it became: the system named by its
    log (MetaGPT's logger names itself), `prompt` as the task, `content` as the log; it carries
    no failure modes (none were published with it), its `cost` goes into the trace's metrics
    and the rest of the file, without its log, is kept on the first event (`mast_run`)."""
    content = run["content"]
    system = "MetaGPT" if "metagpt." in content or "NEW MESSAGES:" in content else "mas"
    record = {"mas_name": system, "trace_id": as_text(run.get("run_id")),
              "trace": {"trajectory": {"prompt": run.get("prompt"), "content": content}}}
    return record_trace(record, label, run={k: v for k, v in run.items() if k != "content"})


def record_trace(record: dict[str, Any], label: str, *,
                 run: dict[str, Any] | None = None) -> Trace:
    """One MAST / MAD record as a trace (or a raw run file, given as `run`, read as one)."""
    draft = TraceDraft()
    system = as_text(record.get("mas_name")) or "mas"
    trajectory, task = _trajectory(record.get("trace"))
    turns = _turns(system, trajectory)
    if len(turns) < 2:
        turns = [Turn(system, "message", as_text(trajectory) or "")]
        draft.note("mast_unparsed", f"the {system} log is kept whole as one message: orchviz "
                   "does not recover agents from it")
    root = _root(turns)
    spawned: set[str] = set()
    calls: dict[str, dict[str, Any]] = {}
    clock = _clock(turns)
    for n, turn in enumerate(turns):
        i = clock[n]
        keys = {"source_id": f"turn[{i}]", "content": turn.content or None}
        if turn.kind == "human":
            draft.add(i, "human_intervention", root, from_="human", **keys)
        elif turn.kind == "delegate" and turn.to:
            if turn.to not in spawned:
                spawned.add(turn.to)
                draft.add(i, "spawn", turn.agent, to=turn.to, role=turn.to,
                          inferred_by="importer", source_id=f"turn[{i}]")
            draft.add(i, "orchestrator_decision", turn.agent, decision="delegate", to=turn.to,
                      **keys)
        elif turn.kind == "return" and turn.to:
            draft.add(i, "return", turn.agent, from_=turn.agent, to=turn.to, **keys)
        elif turn.kind == "tool_call":
            calls[turn.agent] = draft.add(i, "tool_call", turn.agent, tool=turn.tool or "tool",
                                          **keys)
        elif turn.kind == "tool_result":
            call = calls.pop(turn.agent, None) or draft.add(
                i, "tool_call", turn.agent, tool=turn.tool or "tool", inferred_by="importer",
                source_id=f"turn[{i}]")
            draft.link(call, draft.add(i, "tool_result", turn.agent, tool=turn.tool or "tool",
                                       trusted=False, **keys), "tool_dependency")
        else:
            draft.add(i, "message", turn.agent, from_=turn.agent, to=turn.to, **keys)
    draft.conclude(_stopper(turns, root))
    first = min(draft.events, key=lambda e: e["t"])
    if run is not None:
        first["mast_run"] = run
        cost = run.get("cost")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0:
            draft.metrics["cost"] = float(cost)
    else:
        kept = {k: v for k, v in record.items() if k != "trace"}
        if isinstance(record.get("trace"), dict):
            kept["trace"] = {k: v for k, v in record["trace"].items() if k != "trajectory"}
        publish(first, ORIGIN, VERSION, kept, modes=failure_modes(record))
    trace_id = "-".join(str(p) for p in ("mast", system, record.get("benchmark_name"),
                                         record.get("trace_id")) if p not in (None, ""))
    task = task or _task_in(as_text(trajectory) or "")
    return draft.build(label, NAME, trace_id=_slug(trace_id),
                       task_id=" ".join(task.split())[:80] or _slug(trace_id),
                       system=system, topology=draft.shape() or "unknown")


_TASK = re.compile(r"(?:\*{3,}[^\n]*Task[^\n]*\*{3,}[ \t]*\n|\*\*task_prompt\*\*:[ \t]*)"
                   r"(?P<task>[^\n]+)")


def _task_in(text: str) -> str:
    """The task a log states (AppWorld's `*** Task ***` header, ChatDev's `**task_prompt**`)."""
    found = _TASK.search(text)
    return found["task"].strip() if found else ''


def failure_modes(record: dict[str, Any]) -> dict[str, int | None]:
    """The failure modes annotated on a record, by code: `mast_annotation` as it is; the
    human-labelled `annotations` by their name (a mode counts when two of three annotators
    agree; names orchviz does not map keep their own label as key)."""
    found: dict[str, int | None] = {}
    given = record.get("mast_annotation")
    if isinstance(given, dict):
        for code, value in given.items():
            found[str(code)] = value if value in (0, 1) else None
    for item in record.get("annotations") or ():
        if not isinstance(item, dict):
            continue
        text = str(item.get("failure mode") or "").strip()
        head = text.split("\n", 1)[0].strip()
        votes = [v for k, v in item.items() if k.startswith("annotator")]
        code = next((c for names, c in _BY_NAME if any(n in head.lower() for n in names)), head)
        agreed = 1 if sum(bool(v) for v in votes) * 2 > len(votes) else 0
        found[code] = max(found.get(code) or 0, agreed)
    return found


def _trajectory(trace: Any) -> tuple[Any, str]:
    """(the trajectory, the task if the log names one): a dict's `trajectory`, a string holding
    JSON read as that JSON."""
    value = trace.get("trajectory") if isinstance(trace, dict) else trace
    task = ""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            pass
    if isinstance(value, dict):
        stated = value.get("problem_statement") or value.get("prompt") or ""
        task = " ".join(map(str, stated)) if isinstance(stated, list) else as_text(stated) or ""
        value = value.get("trajectory") if "trajectory" in value else value.get("content", value)
    return value, task


def _turns(system: str, trajectory: Any) -> list[Turn]:
    """The turns of a run's log, by the parser of its system (or of its shape)."""
    low = system.lower()
    if isinstance(trajectory, list):
        if trajectory and all(isinstance(m, dict) for m in trajectory):
            return _ag2_messages(trajectory)
        text = "\n".join(str(line) for line in trajectory)
    else:
        text = as_text(trajectory) or ""
    if "hyperagent" in low or "HyperAgent_" in text:
        return _hyperagent(text)
    if "magentic" in low:
        return _magentic(text)
    if "openmanus" in low or "manus" in low:
        return _openmanus(text)
    for parser in (_chatdev, _metagpt, _ag2_text, _appworld, _magentic):
        turns = parser(text)
        if len(turns) >= 2:
            return turns
    return []


def _clock(turns: list[Turn]) -> list[float]:
    """When each turn happened: the log's wall-clock stamps where it stamps its turns (a turn
    without one takes the last stamp before it), else turn `i` at `t = i`."""
    stamped = [turn.at for turn in turns if turn.at is not None]
    if len(stamped) < max(2, len(turns) // 2):
        return [float(i) for i in range(len(turns))]
    clock, last = [], stamped[0]
    for turn in turns:
        last = max(last, turn.at) if turn.at is not None else last
        clock.append(last)
    return clock


def _stopper(turns: list[Turn], root: str) -> str:
    """Who stops a run whose log says no stop: the agent that runs it when one delegates, else
    the last to speak (in a round of peers, such as MetaGPT's roles, the last word is theirs)."""
    if any(t.kind == "delegate" for t in turns):
        return root
    return next((t.agent for t in reversed(turns) if t.kind != "human"), root)


def _root(turns: list[Turn]) -> str:
    """Who runs the run: the agent that delegates, else the first to speak."""
    return next((t.agent for t in turns if t.kind == "delegate"),
                next((t.agent for t in turns if t.kind != "human"), turns[0].agent))


def _blocks(text: str, header: re.Pattern[str]) -> list[tuple[re.Match[str], str]]:
    """(header match, body up to the next header) for every header in a log."""
    found = list(header.finditer(text))
    return [(m, text[m.end():found[i + 1].start() if i + 1 < len(found) else len(text)].strip())
            for i, m in enumerate(found)]


def _addressed(turns: list[Turn]) -> list[Turn]:
    """Messages with no recipient go to the next agent who speaks."""
    for i, turn in enumerate(turns):
        if turn.kind == "message" and turn.to is None:
            turn.to = next((t.agent for t in turns[i + 1:] if t.agent != turn.agent
                            and t.kind != "human"), None)
    return turns


def _ag2_messages(messages: list[dict[str, Any]]) -> list[Turn]:
    turns = []
    for message in messages:
        speaker = as_text(message.get("name")) or as_text(message.get("role")) or "agent"
        turns.append(Turn(speaker, "message", as_text(message.get("content")) or ""))
    return _addressed(turns)


_AG2 = re.compile(r"^(?P<sender>[^\s()][^\n()]*?) \(to (?P<to>[^)\n]+)\):[ \t]*$", re.M)


def _ag2_text(text: str) -> list[Turn]:
    return [Turn(m["sender"].strip(), "message", body.strip("-\n "), to=m["to"].strip())
            for m, body in _blocks(text, _AG2)]


_HYPER = re.compile(r"^(?:HyperAgent_\S+ - INFO - )?(?P<label>Planner's Response|Subgoal|"
                    r"Intern Name|Inner-(?P<inner>[\w ]+?)-Assistant's Response|"
                    r"(?P<from>[\w ]+?)->(?P<to>[\w ]+?)):[ \t]*", re.M)


def _hyperagent(text: str) -> list[Turn]:
    turns: list[Turn] = []
    intern = None
    for m, body in _blocks(text, _HYPER):
        label = m["label"]
        if label == "Intern Name":
            intern = _intern(body.splitlines()[0]) if body else None
        elif label == "Subgoal":
            turns.append(Turn("Planner", "delegate", body, to=intern or "Intern"))
        elif label == "Planner's Response":
            turns.append(Turn("Planner", "message", body))
        elif m["inner"]:
            turns.append(Turn(_intern(m["inner"]), "message", body))
        elif m["from"]:
            turns.append(Turn(_intern(m["from"]), "return", body, to=_intern(m["to"])))
    return turns


def _intern(name: str) -> str:
    """HyperAgent names an intern twice: `Codebase Navigator` when the planner picks it,
    `Navigator` when it speaks; both are the same agent."""
    words = name.strip().split()
    return words[-1] if words else name.strip()


_CHATDEV = re.compile(r"^\[[^\]\n]*INFO\] (?P<speaker>[\w .'-]+?): (?P<rest>.*)$", re.M)
_PAIR = re.compile(r"\*\*(?P<a>[^*\n]+?)<->(?P<b>[^*\n]+?) on : (?P<phase>[^,*\n]+), "
                   r"turn (?P<turn>\d+)\*\*")


def _chatdev(text: str) -> list[Turn]:
    turns = []
    for m, body in _blocks(text, _CHATDEV):
        speaker = m["speaker"].strip()
        pair = _PAIR.search(m["rest"])
        if pair is None or speaker in ("System", "HTTP Request"):
            continue
        other = pair["b"].strip() if pair["a"].strip() == speaker else pair["a"].strip()
        turns.append(Turn(speaker, "message", body, to=other))
    return turns


_METAGPT = re.compile(r"^.*?\|\s*INFO\s*\|.*? - (?P<name>[\w ]+)\((?P<profile>[^)]+)\): "
                      r"(?P<rest>.*)$", re.M)
"""A role's turn in MetaGPT's log (loguru pads the level: `| INFO     |`):
`... | INFO | metagpt.roles.role:_act:391 - Alice(SimpleCoder): to do SimpleWriteCode(...)`;
the role (`SimpleCoder`) is the agent, the persona (`Alice`) only its name in the log."""
_METAGPT_NEW = re.compile(r"NEW MESSAGES:\s*\n+(?P<name>[\w()]+):[ \t]*\n", re.M)


_LOGURU = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \|\s*[A-Z]+\s*\|.*\n?", re.M)
"""Any other line of MetaGPT's logger (costs, files saved): bookkeeping, not what a role said."""


_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?)")
"""The wall-clock stamp loguru starts each of MetaGPT's log lines with."""


def _stamp(line: str) -> float | None:
    found = _STAMP.match(line.strip())
    return parse_time(found.group(1).replace(" ", "T")) if found else None


def _metagpt(text: str) -> list[Turn]:
    turns = [Turn(m["profile"].strip(), "message",
                  (m["rest"] + "\n" + _LOGURU.sub("", body)).strip(), at=_stamp(m.group(0)))
             for m, body in _blocks(text, _METAGPT)]
    if not turns:
        turns = [Turn(m["name"].split("(")[0], "message", body.split("\n---")[0].strip())
                 for m, body in _blocks(text, _METAGPT_NEW)]
    merged: list[Turn] = []
    for turn in turns:
        if merged and merged[-1].agent == turn.agent:
            merged[-1].content += "\n" + turn.content
        else:
            merged.append(turn)
    return _addressed(merged)


_MAGENTIC = re.compile(r"^(?:-{5,}[ \t]*(?P<block>[\w][\w ]*?)[ \t]*-{5,}|"
                       r"(?:\[[^\]\n]*\],?[ \t]*)?(?P<agent>[A-Za-z_]\w*) \((?P<note>[^)\n]*)\):)"
                       r"[ \t]*$", re.M)
ORCHESTRATORS = ("orchestrator", "magenticoneorchestrator")


def _magentic(text: str) -> list[Turn]:
    turns: list[Turn] = []
    orchestrator = None
    for m, body in _blocks(text, _MAGENTIC):
        agent = (m["block"] or m["agent"]).strip()
        note = (m["note"] or "").strip()
        if agent.lower() in ("user", "human"):
            turns.append(Turn(agent, "human", body))
        elif agent.lower() in ORCHESTRATORS:
            orchestrator = agent
            if note.startswith("->"):
                turns.append(Turn(agent, "delegate", body, to=note[2:].strip()))
            else:
                turns.append(Turn(agent, "message", body))
        elif orchestrator is not None:
            turns.append(Turn(agent, "return", body, to=orchestrator))
        else:
            turns.append(Turn(agent, "message", body))
    for i, turn in enumerate(turns):  # an orchestrator block before an agent's reply delegates
        if turn.kind == "message" and turn.agent == orchestrator and i + 1 < len(turns) \
                and turns[i + 1].kind == "return":
            turn.kind, turn.to = "delegate", turns[i + 1].agent
    return turns


_APPWORLD = re.compile(r"^(?:Response from (?P<resp>[\w ]+?)|Message to (?P<to>[\w ]+?)|"
                       r"(?P<code>Code Execution Output)|Entering (?P<enter>[\w ]+?) message "
                       r"loop)[ \t]*:?[ \t]*$", re.M)


def _agent_name(text: str) -> str:
    return re.sub(r"\s+Agent$", "", text.strip(), flags=re.I) or text.strip()


def _appworld(text: str) -> list[Turn]:
    turns: list[Turn] = []
    supervisor, active = "Supervisor", None
    for m, body in _blocks(text, _APPWORLD):
        if m["enter"]:
            active = _agent_name(m["enter"])
        elif m["to"]:
            target = _agent_name(m["to"])
            turns.append(Turn(supervisor, "delegate", body, to=target))
            active = target
        elif m["resp"]:
            agent = _agent_name(m["resp"])
            if agent == supervisor:
                turns.append(Turn(agent, "message", body))
            else:
                turns.append(Turn(agent, "return", body, to=supervisor))
        elif m["code"]:
            turns.append(Turn(active or supervisor, "tool_result", body, tool="code"))
    return turns


_MANUS = re.compile(r"(?:✨ (?P<thinker>[\w ]+?)'s thoughts:|"
                    r"🔧 Activating tool: '(?P<call>[^']+)'|"
                    r"🎯 Tool '(?P<done>[^']+)' completed its mission! Result:)", re.M)


def _openmanus(text: str) -> list[Turn]:
    turns: list[Turn] = []
    agent = "Manus"
    for m, body in _blocks(text, _MANUS):
        body = re.split(r"\n\d{4}-\d{2}-\d{2} [\d:.]+ \| ", body)[0].strip()
        if m["thinker"]:
            agent = m["thinker"].strip()
            turns.append(Turn(agent, "message", body))
        elif m["call"]:
            turns.append(Turn(agent, "tool_call", body, tool=m["call"]))
        else:
            turns.append(Turn(agent, "tool_result", body, tool=m["done"]))
    return turns


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:96] or "mast"


def annotation_records(trace: Trace, questions: set[str]) -> list[dict[str, Any]]:
    """The published MAST failure modes as label records under the rubric's questions (see the
    mapping in docs/importers.md): premature termination (3.1) is `stopping_correctness`
    premature on the run's stop, unawareness of termination conditions (1.5) is late
    (uncertain); missing or incorrect verification (3.2, 3.3) is `aggregation_quality` 2 on the
    run's last aggregate (uncertain). Modes annotated 0 are not written as the opposite answer,
    and every other mode stays a raw tag, named in the comments and kept on the trace."""
    kept = published(trace, ORIGIN)
    if not kept:
        return []
    modes = kept[0][1].get("modes") if isinstance(kept[0][1].get("modes"), dict) else {}
    present = sorted(code for code, value in modes.items() if value == 1)
    if not present:
        return []
    named = "; ".join(f"{c} {MODES.get(c, '')}".strip() for c in present)
    comment = f"MAST failure modes annotated on this run: {named}"
    analysis = analyze(trace)
    records = []
    stops = analysis.stops
    if "stopping_correctness" in questions and stops and ("3.1" in present or "1.5" in present):
        stop = stops[-1].event_id
        if "3.1" in present and "1.5" in present:
            records.append(label_record(
                trace, ORIGIN, "stopping_correctness", "premature", comment, event_id=stop,
                mapping=UNCERTAIN, why="MAST marks both premature termination (3.1) and "
                "unawareness of termination conditions (1.5); premature is the first",
                created_at=CREATED_AT))
        elif "3.1" in present:
            records.append(label_record(trace, ORIGIN, "stopping_correctness", "premature",
                                        comment, event_id=stop, mapping=CERTAIN,
                                        created_at=CREATED_AT))
        else:
            records.append(label_record(
                trace, ORIGIN, "stopping_correctness", "late", comment, event_id=stop,
                mapping=UNCERTAIN, why="MAST 1.5 (unaware of termination conditions) is "
                "unnecessary continuation, read as late; it also covers runs that loop",
                created_at=CREATED_AT))
    aggregates = analysis.aggregates
    if "aggregation_quality" in questions and aggregates and ("3.2" in present
                                                              or "3.3" in present):
        records.append(label_record(
            trace, ORIGIN, "aggregation_quality", 2, comment,
            event_id=aggregates[-1].event_id, mapping=UNCERTAIN,
            why="MAST marks missing or incorrect verification (3.2/3.3) of the run, not of "
                "this aggregate; scale point 2 is orchviz's reading", created_at=CREATED_AT))
    return records
