"""Benchmark of the importers: for every format, a generated file of about 50 MB imported,
against a bare `json.loads` of the same bytes (per line for JSONL) in the same run.

Run: python bench/bench_import.py [--mb 50] [--repeats 3] [--formats claude_code,otlp,...]
Prints, per format, its size, events, the best import time, the best bare parse time and their
ratio. Target: import within 5x the bare parse.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from viz_app.io.agentlightning import import_agentlightning
from viz_app.io.agentops import import_agentops
from viz_app.io.claude_code import import_claude_code
from viz_app.io.codex import import_codex
from viz_app.io.langfuse import import_langfuse
from viz_app.io.mast import import_mast
from viz_app.io.openai_agents import import_openai_agents
from viz_app.io.otlp import import_otlp
from viz_app.io.trail import import_trail
from viz_app.io.whowhen import import_whowhen
from timing import best_of, machine

WORDS = ("agent tool result search file patch test review plan merge answer context token "
         "budget parallel return spawn stop aggregate evidence source claim").split()


def text(rng: random.Random, n: int) -> str:
    """n words of filler text."""
    return " ".join(rng.choice(WORDS) for _ in range(n))


def claude_session(target_bytes: int, seed: int = 0) -> bytes:
    """A Claude Code transcript of about `target_bytes`: a main thread spawning sub-agents in
    pairs, each running tool calls, lines shuffled a little as real files are."""
    rng = random.Random(seed)
    lines: list[str] = []
    size, clock, n = 0, 0.0, 0

    def stamp(t: float) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(1748779200 + t)) + \
            f".{int((t % 1) * 1000):03d}Z"

    def emit(t: float, kind: str, content, *, agent: str | None = None, extra=None) -> None:
        nonlocal size, n
        n += 1
        message = {"role": "user" if kind == "user" else "assistant", "content": content}
        if kind == "assistant":
            message.update(id=f"msg_{n}", model="claude-sonnet-4-5",
                           usage={"input_tokens": rng.randint(50, 500), "output_tokens": 80})
        line = {"parentUuid": f"u{n - 1}", "isSidechain": agent is not None, "sessionId": "bench",
                "type": kind, "message": message, "uuid": f"u{n}", "timestamp": stamp(t),
                "cwd": "/repo", "version": "2.1.0"}
        if agent:
            line["agentId"] = agent
        if extra:
            line.update(extra)
        encoded = json.dumps(line)
        lines.append(encoded)
        size += len(encoded) + 1

    emit(0, "user", "Run the whole audit.")
    task = 0
    while size < target_bytes:
        pair = []
        for _ in range(2):
            task += 1
            tid, aid = f"toolu_{task}", f"a{task:05d}"
            emit(clock, "assistant", [{"type": "tool_use", "id": tid, "name": "Agent",
                                       "input": {"subagent_type": "worker", "description": "part",
                                                 "prompt": text(rng, 30)}}])
            pair.append((tid, aid))
        for tid, aid in pair:
            t = clock + 0.5
            emit(t, "user", text(rng, 30), agent=aid)
            for step in range(6):
                call = f"{aid}_{step}"
                emit(t + step, "assistant", [{"type": "tool_use", "id": call, "name": "Read",
                                              "input": {"file_path": f"/repo/{step}.py"}}],
                     agent=aid)
                emit(t + step + 0.5, "user", [{"type": "tool_result", "tool_use_id": call,
                                               "content": text(rng, 120)}], agent=aid)
            emit(t + 7, "assistant", [{"type": "text", "text": text(rng, 60)}], agent=aid)
        clock += 8
        for tid, aid in pair:
            emit(clock, "user", [{"type": "tool_result", "tool_use_id": tid,
                                  "content": [{"type": "text", "text": text(rng, 60)}]}],
                 extra={"toolUseResult": {"agentId": aid, "totalDurationMs": 8000,
                                          "totalTokens": 900}})
        clock += 1
    emit(clock + 1, "assistant", [{"type": "text", "text": "All parts audited."}])
    for i in range(0, len(lines) - 1, 97):  # a few neighbours swapped: out-of-order lines
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
    return ("\n".join(lines) + "\n").encode()


def otlp_export(target_bytes: int, seed: int = 0) -> bytes:
    """One OTLP/JSON export request of about `target_bytes`: an orchestrator agent span with
    worker agent spans under it, each with chat and execute_tool spans (GenAI conventions)."""
    rng = random.Random(seed)
    spans: list[dict] = []
    base = 1748779200 * 10**9
    size, counter = 0, 0

    def attrs(**values) -> list[dict]:
        out = []
        for key, value in values.items():
            typed = {"intValue": str(value)} if isinstance(value, int) else {"stringValue": value}
            out.append({"key": key.replace("__", "."), "value": typed})
        return out

    def span(parent: str | None, name: str, start: float, end: float, **values) -> str:
        nonlocal size, counter
        counter += 1
        sid = f"{counter:016x}"
        record = {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": sid, "name": name,
                  "kind": 1, "startTimeUnixNano": str(base + int(start * 1e9)),
                  "endTimeUnixNano": str(base + int(end * 1e9)), "attributes": attrs(**values),
                  "status": {}}
        if parent:
            record["parentSpanId"] = parent
        spans.append(record)
        size += len(json.dumps(record)) + 1
        return sid

    root = span(None, "invoke_agent lead", 0, 1e6, gen_ai__operation__name="invoke_agent",
                gen_ai__agent__name="lead")
    clock, worker = 1.0, 0
    while size < target_bytes:
        worker += 1
        agent = span(root, "invoke_agent worker", clock, clock + 20,
                     gen_ai__operation__name="invoke_agent", gen_ai__agent__name=f"w{worker}")
        for step in range(5):
            span(agent, "chat", clock + step * 4, clock + step * 4 + 2,
                 gen_ai__operation__name="chat", gen_ai__request__model="gpt-4o",
                 gen_ai__usage__input_tokens=rng.randint(100, 900), gen_ai__usage__output_tokens=80,
                 output__value=text(rng, 80))
            span(agent, "execute_tool", clock + step * 4 + 2, clock + step * 4 + 3,
                 gen_ai__operation__name="execute_tool", gen_ai__tool__name="search",
                 gen_ai__tool__call__id=f"c{worker}_{step}",
                 gen_ai__tool__call__result=text(rng, 60))
        clock += 5
    request = {"resourceSpans": [{"resource": {"attributes": attrs(service__name="bench")},
                                  "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}]}]}
    return json.dumps(request).encode()


def iso(t: float) -> str:
    """An ISO 8601 UTC time, `t` seconds after the benchmark's epoch, with microseconds."""
    whole = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(1748779200 + int(t)))
    return f"{whole}.{int(round((t % 1) * 1e6)):06d}Z"


def codex_rollout(target_bytes: int, seed: int = 0) -> bytes:
    """A root Codex rollout of about `target_bytes`: turns of reasoning, shell calls and
    outputs, token counts."""
    rng = random.Random(seed)
    lines = [json.dumps({"timestamp": iso(0), "type": "session_meta", "payload": {
        "id": "0197a3b0-0000-7000-8000-00000000bead", "timestamp": iso(0), "cwd": "/repo",
        "originator": "codex_cli_rs", "cli_version": "0.80.0", "source": "cli"}})]
    size, clock, n = len(lines[0]), 1.0, 0

    def emit(kind: str, payload: dict) -> None:
        nonlocal size, clock
        clock += 0.25
        line = json.dumps({"timestamp": iso(clock), "type": kind, "payload": payload})
        lines.append(line)
        size += len(line) + 1

    emit("response_item", {"type": "message", "role": "user",
                           "content": [{"type": "input_text", "text": "Audit the repository."}]})
    while size < target_bytes:
        n += 1
        emit("turn_context", {"cwd": "/repo", "model": "gpt-5-codex"})
        emit("response_item", {"type": "reasoning", "summary": [
            {"type": "summary_text", "text": text(rng, 40)}]})
        emit("response_item", {"type": "function_call", "name": "shell", "call_id": f"c{n}",
                               "arguments": json.dumps({"command": ["rg", text(rng, 2)]})})
        emit("response_item", {"type": "function_call_output", "call_id": f"c{n}",
                               "output": text(rng, 150)})
        emit("event_msg", {"type": "token_count", "info": {"last_token_usage": {
            "total_tokens": rng.randint(500, 5000)}}})
        emit("response_item", {"type": "message", "role": "assistant",
                               "content": [{"type": "output_text", "text": text(rng, 60)}]})
    emit("event_msg", {"type": "task_complete", "last_agent_message": "Done."})
    return ("\n".join(lines) + "\n").encode()


def openai_agents_spans(target_bytes: int, seed: int = 0) -> bytes:
    """OpenAI Agents SDK span records, one a line: a triage agent handing off to specialists
    that call functions and models."""
    rng = random.Random(seed)
    trace = "trace_0a1b2c3d4e5f60718293a4b5c6d7e8f9"
    lines = [json.dumps({"object": "trace", "id": trace, "workflow_name": "bench",
                         "group_id": "bench"})]
    size, clock, n = len(lines[0]), 0.0, 0

    def emit(kind: str, parent: str | None, start: float, end: float, **data) -> str:
        nonlocal size, n
        n += 1
        sid = f"span_{n}"
        line = json.dumps({"object": "trace.span", "id": sid, "trace_id": trace,
                           "parent_id": parent, "started_at": iso(start), "ended_at": iso(end),
                           "span_data": {"type": kind, **data}, "error": None})
        lines.append(line)
        size += len(line) + 1
        return sid

    root = emit("agent", None, 0, 1e6, name="Triage", handoffs=[], tools=[])
    while size < target_bytes:
        agent = emit("agent", root, clock, clock + 10, name=f"S{n % 50}", handoffs=[], tools=[])
        for step in range(4):
            emit("generation", agent, clock + step * 2, clock + step * 2 + 1, model="gpt-4o",
                 output=[{"role": "assistant", "content": text(rng, 60)}],
                 usage={"input_tokens": rng.randint(50, 900), "output_tokens": 60})
            emit("function", agent, clock + step * 2 + 1, clock + step * 2 + 2, name="lookup",
                 input=json.dumps({"q": text(rng, 4)}), output=text(rng, 80))
        clock += 11
    return ("\n".join(lines) + "\n").encode()


def whowhen_task(target_bytes: int, seed: int = 0) -> bytes:
    """A Who&When Magentic-One task with a history of about `target_bytes`."""
    rng = random.Random(seed)
    history, size, agents = [{"role": "human", "content": "Answer the question."}], 0, (
        "WebSurfer", "FileSurfer", "Coder")
    while size < target_bytes:
        agent = rng.choice(agents)
        for step in ({"role": "Orchestrator (thought)", "content": text(rng, 60)},
                     {"role": f"Orchestrator (-> {agent})", "content": text(rng, 30)},
                     {"role": agent, "content": text(rng, 200)}):
            history.append(step)
            size += len(step["content"]) + 40
    task = {"question": "Answer the question.", "ground_truth": "42", "question_ID": "bench",
            "history": history, "mistake_agent": "WebSurfer", "mistake_step": "3",
            "mistake_reason": "Misread the page."}
    return json.dumps(task).encode()


def trail_trace(target_bytes: int, seed: int = 0) -> bytes:
    """A TRAIL trace of about `target_bytes`: a manager's steps, each a model call and a
    managed agent's run with its own model and tool calls, nested in child_spans."""
    rng = random.Random(seed)
    counter, size, clock = 0, 0, 0.0

    def span(name: str, start: float, seconds: float, attrs: dict, children=()) -> dict:
        nonlocal counter, size
        counter += 1
        record = {"timestamp": iso(start), "trace_id": "bench", "span_id": f"{counter:016x}",
                  "parent_span_id": None, "span_name": name, "span_kind": "Internal",
                  "service_name": "bench", "span_attributes": attrs,
                  "duration": f"PT{seconds:.6f}S", "status_code": "Unset", "status_message": "",
                  "events": [], "links": [], "logs": [], "child_spans": list(children)}
        size += len(json.dumps(attrs)) + 400
        return record

    def llm(start: float) -> dict:
        return span("LiteLLMModel.__call__", start, 1.0, {
            "openinference.span.kind": "LLM", "llm.model_name": "o3-mini",
            "output.value": text(rng, 80), "llm.token_count.total": rng.randint(200, 2000)})

    steps = []
    while size < target_bytes:
        managed = span("ToolCallingAgent.run", clock + 1, 6, {
            "openinference.span.kind": "AGENT", "agent.name": "search_agent",
            "input.value": text(rng, 20), "output.value": text(rng, 60)}, [
            llm(clock + 1.1), span("web_search", clock + 2.2, 2, {
                "openinference.span.kind": "TOOL", "tool.name": "web_search",
                "input.value": text(rng, 6), "output.value": text(rng, 150)}), llm(clock + 4.5)])
        steps.append(span(f"Step {len(steps) + 1}", clock, 8, {
            "openinference.span.kind": "CHAIN"}, [llm(clock + 0.1), span(
                "search_agent", clock + 0.9, 6.2, {"openinference.span.kind": "TOOL",
                                                  "tool.name": "search_agent"}, [managed])]))
        clock += 8
    root = span("CodeAgent.run", 0, clock + 1, {"openinference.span.kind": "AGENT",
                                               "agent.name": "manager", "input.value": "Q?",
                                               "output.value": "A."}, steps)
    return json.dumps({"trace_id": "bench", "spans": [root]}).encode()


def agentops_export(target_bytes: int, seed: int = 0) -> bytes:
    """An AgentOps export of about `target_bytes`: a crew workflow of many tasks, each with its
    agent, model calls and a tool (attributes nested, as AgentOps writes them)."""
    rng = random.Random(seed)
    spans, size, clock, n = [], 0, 0.0, 0

    def span(parent: str, name: str, kind: str, start: float, end: float, attrs: dict,
             metrics=None) -> str:
        nonlocal size, n
        n += 1
        sid = f"{n:016x}"
        record = {"span_id": sid, "parent_span_id": parent, "span_name": name,
                  "span_kind": "Client", "span_type": "agent" if kind != "llm" else "request",
                  "service_name": "agentops", "start_time": iso(start), "end_time": iso(end),
                  "duration": int((end - start) * 1e9), "status_code": "OK", "status_message": "",
                  "attributes": {}, "span_attributes": {"agentops": {"span": {"kind": kind}},
                                                        **attrs}, "metrics": metrics}
        spans.append(record)
        size += len(json.dumps(record)) + 1
        return sid

    root = span("", "crewai.workflow", "workflow", 0, 1e6, {"agentops": {
        "entity": {"name": "Crew"}, "span": {"kind": "workflow"}}})
    while size < target_bytes:
        role = f"Analyst {n % 40}"
        task = span(root, "task.task", "workflow.step", clock, clock + 9, {
            "agentops": {"entity": {"input": text(rng, 20), "output": text(rng, 60)},
                         "span": {"kind": "workflow.step"}}, "crewai": {"task": {"agent": role}}})
        agent = span(task, f"{role}.agent", "agent", clock, clock + 9, {"agent": {"role": role}})
        for step in range(3):
            span(agent, "llm", "llm", clock + step * 3, clock + step * 3 + 2, {"gen_ai": {
                "completion": [{"role": "assistant", "content": text(rng, 80)}],
                "request": {"model": "gpt-4o"}}}, {"total_tokens": rng.randint(100, 900)})
            span(agent, "tool", "tool", clock + step * 3 + 2, clock + step * 3 + 3, {
                "tool": {"name": "search"}, "agentops": {"entity": {"output": text(rng, 60)},
                                                         "span": {"kind": "tool"}}})
        clock += 10
    return json.dumps({"trace": {"trace_id": "bench"}, "spans": spans}).encode()


def langfuse_trace(target_bytes: int, seed: int = 0) -> bytes:
    """A Langfuse trace of about `target_bytes`: a supervisor with many agent observations,
    each with generations and tools."""
    rng = random.Random(seed)
    observations, size, clock, n = [], 0, 0.0, 0

    def obs(kind: str, name: str, start: float, end: float, parent: str | None, **extra) -> str:
        nonlocal size, n
        n += 1
        record = {"id": f"o{n}", "traceId": "bench", "type": kind, "name": name,
                  "startTime": iso(start), "endTime": iso(end), "parentObservationId": parent,
                  "level": "DEFAULT", **extra}
        observations.append(record)
        size += len(json.dumps(record)) + 1
        return record["id"]

    root = obs("AGENT", "supervisor", 0, 1e6, None, input="Q?", output="A.")
    while size < target_bytes:
        agent = obs("AGENT", f"worker{n % 30}", clock, clock + 9, root, input=text(rng, 20),
                    output=text(rng, 60))
        for step in range(3):
            obs("GENERATION", "ChatOpenAI", clock + step * 3, clock + step * 3 + 2, agent,
                model="gpt-4o", output={"role": "assistant", "content": text(rng, 80)},
                usageDetails={"total": rng.randint(100, 900)})
            obs("TOOL", "search", clock + step * 3 + 2, clock + step * 3 + 3, agent,
                input={"q": text(rng, 4)}, output=text(rng, 60))
        clock += 10
    return json.dumps({"id": "bench", "name": "bench", "observations": observations}).encode()


def agentlightning_spans(target_bytes: int, seed: int = 0) -> bytes:
    """Agent Lightning spans of one rollout, about `target_bytes`: an agent calling a checker
    agent, model calls with flat gen_ai attributes, a reward at the end."""
    rng = random.Random(seed)
    spans, size, clock, n = [], 0, 0.0, 0

    def span(parent: str | None, name: str, start: float, end: float, attrs: dict) -> str:
        nonlocal size, n
        n += 1
        record = {"rollout_id": "ro-bench", "attempt_id": "at-1", "sequence_id": n,
                  "trace_id": "bench", "span_id": f"{n:016x}", "parent_id": parent, "name": name,
                  "status": {"status_code": "OK"}, "attributes": attrs, "events": [],
                  "links": [], "start_time": 1748779200 + start, "end_time": 1748779200 + end,
                  "resource": {"attributes": {"service.name": "bench"}, "schema_url": ""}}
        spans.append(record)
        size += len(json.dumps(record)) + 1
        return record["span_id"]

    root = span(None, "agent", 0, 1e6, {"agentops.span.kind": "agent", "agent.name": "solver"})
    while size < target_bytes:
        checker = span(root, "check.agent", clock, clock + 4, {
            "agentops.span.kind": "agent", "agent.name": "checker",
            "agentops.entity.input": text(rng, 20), "agentops.entity.output": text(rng, 40)})
        for parent in (root, checker):
            span(parent, "openai.chat", clock + 1, clock + 2, {
                "agentops.span.kind": "llm", "gen_ai.request.model": "qwen",
                "gen_ai.completion.0.content": text(rng, 80),
                "gen_ai.usage.prompt_tokens": rng.randint(100, 900),
                "gen_ai.usage.completion_tokens": 40})
        clock += 5
    span(None, "agentlightning.annotation", clock, clock, {
        "agentlightning.reward.0.name": "primary", "agentlightning.reward.0.value": 1.0})
    return json.dumps({"rollout": {"rollout_id": "ro-bench", "input": "Q?"},
                       "spans": spans}).encode()


def mast_records(target_bytes: int, seed: int = 0) -> bytes:
    """MAD records of about `target_bytes`: AG2 runs whose trajectories are JSON strings of
    messages, as MAD writes them, with their failure-mode annotations."""
    rng = random.Random(seed)
    records, size, n = [], 0, 0
    while size < target_bytes:
        n += 1
        messages = [{"content": text(rng, 120), "role": "user" if i % 2 else "assistant",
                     "name": "assistant" if i % 2 else "mathproxyagent"} for i in range(12)]
        record = {"mas_name": "AG2", "llm_name": "gpt-4o", "benchmark_name": "GSM-Plus",
                  "trace_id": n, "trace": {"key": f"k{n}", "index": n, "trajectory": json.dumps(
                      {"problem_statement": ["Q?"], "trajectory": messages})},
                  "mast_annotation": {code: rng.choice((0, 0, 1)) for code in (
                      "1.1", "1.5", "2.4", "3.1", "3.2", "3.3")}}
        records.append(record)
        size += len(json.dumps(record)) + 1
    return json.dumps(records).encode()


def _lines(data: bytes) -> list:
    return [json.loads(line) for line in data.splitlines() if line]


CASES = {
    "claude_code": ("session.jsonl", claude_session, import_claude_code, _lines),
    "codex": ("rollout.jsonl", codex_rollout, import_codex, _lines),
    "openai_agents": ("spans.jsonl", openai_agents_spans, import_openai_agents, _lines),
    "otlp": ("export.json", otlp_export, import_otlp, json.loads),
    "whowhen": ("task.json", whowhen_task, import_whowhen, json.loads),
    "trail": ("trail.json", trail_trace, import_trail, json.loads),
    "agentops": ("agentops.json", agentops_export, import_agentops, json.loads),
    "langfuse": ("langfuse.json", langfuse_trace, import_langfuse, json.loads),
    "agentlightning": ("rollout.json", agentlightning_spans, import_agentlightning, json.loads),
    "mast": ("mad.json", mast_records, import_mast, json.loads),
}
"""Every format's file name, generator, importer and bare parse of the same bytes."""


def main() -> None:
    """Generate, time, print the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--formats", default=",".join(CASES),
                        help="comma-separated formats to time (default: all)")
    args = parser.parse_args()
    target = int(args.mb * 1e6)
    print(machine())
    with tempfile.TemporaryDirectory() as folder:
        print(f"{'format':<15}{'MB':>7}{'events':>9}{'import s':>10}{'json s':>9}{'ratio':>7}")
        for name in args.formats.split(","):
            file_name, make, importer, bare = CASES[name]
            path = Path(folder) / file_name
            path.write_bytes(make(target))
            data = path.read_bytes()
            events = sum(len(t.events) for t in importer(path))
            imported = best_of(args.repeats, lambda: importer(path))
            parsed = best_of(args.repeats, lambda: bare(data))
            ratio = imported / parsed
            print(f"{name:<15}{len(data) / 1e6:>7.1f}{events:>9}{imported:>10.2f}{parsed:>9.2f}"
                  f"{ratio:>6.1f}x" + ("" if ratio <= 5 else "  OVER the 5x target"), flush=True)
            path.unlink()


if __name__ == "__main__":
    main()
