"""Benchmark of the importers: a generated 50 MB Claude Code session and a 50 MB OTLP/JSON file,
imported, against a bare `json.loads` of the same bytes (per line for JSONL) in the same run.

Run: python bench/bench_import.py [--mb 50] [--repeats 3]
Prints, per file, its size, events, the best import time, the best bare parse time and their
ratio. Target: import within 5x the bare parse.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from viz_app.io.claude_code import import_claude_code
from viz_app.io.otlp import import_otlp
from timing import best_of

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


def main() -> None:
    """Generate, time, print the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    target = int(args.mb * 1e6)
    with tempfile.TemporaryDirectory() as folder:
        cases = [("claude_code", Path(folder) / "session.jsonl", claude_session, import_claude_code,
                  lambda data: [json.loads(line) for line in data.splitlines() if line]),
                 ("otlp", Path(folder) / "export.json", otlp_export, import_otlp, json.loads)]
        print(f"{'format':<12}{'MB':>7}{'events':>9}{'import s':>10}{'json s':>9}{'ratio':>7}")
        for name, path, make, importer, bare in cases:
            path.write_bytes(make(target))
            data = path.read_bytes()
            events = sum(len(t.events) for t in importer(path))
            imported = best_of(args.repeats, lambda: importer(path))
            parsed = best_of(args.repeats, lambda: bare(data))
            ratio = imported / parsed
            print(f"{name:<12}{len(data) / 1e6:>7.1f}{events:>9}{imported:>10.2f}{parsed:>9.2f}"
                  f"{ratio:>6.1f}x" + ("" if ratio <= 5 else "  OVER the 5x target"))


if __name__ == "__main__":
    main()
