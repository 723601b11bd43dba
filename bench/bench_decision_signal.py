"""Does the decision-pairs export teach the decision? A careful reviewer's labels on planted
traces, the default export, and a pairwise model trained on the tuning split's pairs and scored
on held-out seeds and unseen domains, beside the baselines that read no context.

    python bench/bench_decision_signal.py [--tuning-per-cell 2] [--held-out-per-cell 1]
                                          [--confirmations balanced] [--json FILE]

**Traces.** `viz_app.planted.cases`: every fault kind, shape, control, topology and size; the
tuning split (seeds from 0, four domains) and the held-out split (seeds from 200,000, six
domains, two never seen in tuning).

**The reviewer** saves, through `ws.labelling.save_answers`, an answer on every stop, aggregate and
spawn, from each case's ground truth: sound targets `correct` / `5` / `necessary`; a premature
stop `premature`, pointing at the first event after the stop that carries the result its merge
lacked (a worker's tool result or return, often one the stopping agent never saw: the export
moves or drops such pointers) with the final answer it should have given (its merge and that
result); a late stop `late`, pointing at the first event that stated the final answer, with that
answer; a merge that dropped a result `2` and the merge with it added back; a redundant spawn
`redundant` and "reuse" the sibling whose task (or first tool call) is closest.

**The model** is `viz_app.labels.signal` (what `orchviz labels check-signal` fits): trained on
the tuning export's rows, scored on the held-out export's, per sub-decision, on corrections and
confirmations apart and together. Also counted: pointer rows whose chosen side states a figure
the prompt lacks (0 is the target).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import machine  # noqa: E402
from viz_app import planted  # noqa: E402
from viz_app.analysis import analyze  # noqa: E402
from viz_app.export.consensus import ExportOptions  # noqa: E402
from viz_app.export.decision_pairs import decision_pair_rows  # noqa: E402
from viz_app.io.native import trace_from_dict, write_trace  # noqa: E402
from viz_app.labels.correction import LATER_THAN_RECORDED, spawned_task  # noqa: E402
from viz_app.labels.label import Reviewer  # noqa: E402
from viz_app.labels.signal import check_signal, pairs_of  # noqa: E402
from viz_app.workspace import Workspace  # noqa: E402

FIGURE = re.compile(r"(?<![\w.])[0-9][0-9,]*(?:\.[0-9]+)?(?![\w])")
REVIEWER = Reviewer(name="careful", via="cli")


def figures(text: str) -> set[str]:
    return set(FIGURE.findall(text or ""))


def words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Za-z][\w-]*|[0-9.]+", text or "")
            if len(w) > 2}


def _last_merge(analysis, agent: str, before: int) -> str:
    merges = [e for e in analysis.events_of.get(agent, ())
              if e.type == "aggregate" and analysis.position[e.id] < before]
    return " ".join(merges[-1].text.split()) if merges else ""


def answers_of(case: planted.Case, trace) -> dict[str, dict]:
    """The careful reviewer's answers on every stop, aggregate and spawn of a case."""
    analysis = analyze(trace)
    faults = {f.event_id: f for f in case.faults}
    found: dict[str, dict] = {}
    for stop in analysis.stops:
        if stop.inferred:
            continue
        where = analysis.position[stop.event_id]
        fault = faults.get(stop.event_id)
        merge = _last_merge(analysis, stop.agent, where)
        if fault is None:
            found[stop.event_id] = {"stopping_correctness": "correct"}
        elif fault.kind == "premature_stop":
            known = figures(merge)
            later = next((e for e in analysis.order[where + 1:]
                          if e.type in ("tool_result", "return", "message")
                          and figures(e.text) - known), None)
            if later is None:
                found[stop.event_id] = {"stopping_correctness": "premature",
                                        "stop_should_have_been": LATER_THAN_RECORDED}
            else:
                found[stop.event_id] = {
                    "stopping_correctness": "premature", "stop_should_have_been": later.id,
                    "stop_correction": {"action": "stop", "text": f"{merge} "
                                        + " ".join(later.text.split())}}
        else:  # late: where the final answer was first stated
            final = figures(merge)
            stated = next((e for e in analysis.order[:where] if final
                           and final <= figures(e.text) and e.type != "tool_result"), None)
            if stated is None:
                continue
            found[stop.event_id] = {"stopping_correctness": "late",
                                    "stop_should_have_been": stated.id,
                                    "stop_correction": {"action": "stop", "text": merge}}
    for point in analysis.aggregates:
        fault = faults.get(point.event_id)
        if fault is None:
            found[point.event_id] = {"aggregation_quality": 5}
            continue
        text = " ".join(trace.event(point.event_id).text.split())
        missing = [" ".join(trace.event(i).text.split()) for i in point.inputs
                   if figures(trace.event(i).text) - figures(text)]
        found[point.event_id] = {"aggregation_quality": 2, "merge_correction": {
            "action": "merge", "text": " ".join([text, *missing])}}
    for e in analysis.order:
        if e.type != "spawn" or e.to not in analysis.agent_names:
            continue
        fault = faults.get(e.id)
        if fault is None:
            found[e.id] = {"spawn_necessity": "necessary"}
            continue
        spawner = analysis.actor[e.id]

        def task(spawn) -> set[str]:
            child = spawn.to
            calls = [x.text for x in analysis.events_of.get(child, ())
                     if x.type == "tool_call"][:1]
            return words(spawned_task(analysis, spawn.id)) | words(" ".join(calls))

        mine = task(e)
        siblings = [s for s in analysis.order[:analysis.position[e.id]]
                    if s.type == "spawn" and analysis.actor[s.id] == spawner
                    and s.to in analysis.agent_names]
        if not siblings:
            continue
        twin = max(siblings, key=lambda s: len(mine & task(s)) / max(1, len(mine | task(s))))
        found[e.id] = {"spawn_necessity": "redundant", "spawn_correction": {
            "action": "reuse_agent", "agent": twin.to}}
    return found


def export(split: str, per_cell: int, folder: Path, options: ExportOptions):
    """The split's cases labelled by the reviewer and exported: (rows, seconds, labels)."""
    cases = planted.cases(split, per_cell)
    traces = {}
    for case in cases:
        trace = trace_from_dict(case.trace, case.name)
        write_trace(trace, folder / split / f"{case.name}.json")
        traces[trace.trace_id] = (case, trace)
    ws = Workspace.open(folder / f"{split}.db", traces=[folder / split])
    traces = {t: (case, ws.library.trace(t)) for t, (case, _) in traces.items()}  # as held
    save = ws.labelling.save_answers
    saved = 0
    start = time.perf_counter()
    for case, trace in traces.values():
        for event_id, answers in answers_of(case, trace).items():
            save(trace, event_id, answers, REVIEWER)
            saved += len(answers)
    took = time.perf_counter() - start
    rows = decision_pair_rows(ws.labelling.current_records(),
                              {t: tr for t, (_, tr) in traces.items()}, ws.rubric, options)
    return rows, took, saved, len(cases)


def unfaithful(rows) -> tuple[int, int]:
    """(pointer rows whose chosen side states a figure the prompt lacks, pointer rows)."""
    pointers = [r for r in rows if r["origin"] == "stop_at_pointer"]
    bad = sum(1 for r in pointers if figures(r["chosen"]) - figures(r["prompt"]))
    return bad, len(pointers)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tuning-per-cell", type=int, default=2)
    parser.add_argument("--held-out-per-cell", type=int, default=1)
    parser.add_argument("--confirmations", default="balanced",
                        choices=("all", "balanced", "none"))
    parser.add_argument("--json", help="write the figures as JSON here")
    args = parser.parse_args(argv)
    print(machine(), f"load {os.getloadavg()[0]:.2f}")
    options = ExportOptions(confirmations=args.confirmations)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        train_rows, t1, n1, c1 = export("tuning", args.tuning_per_cell, folder, options)
        test_rows, t2, n2, c2 = export("held-out", args.held_out_per_cell, folder, options)
    print(f"tuning: {c1} traces, {n1} answers saved ({t1:.0f} s), {len(train_rows)} pairs; "
          f"held-out: {c2} traces, {n2} answers ({t2:.0f} s), {len(test_rows)} pairs "
          f"(--confirmations {args.confirmations})")
    for name, rows in (("tuning", train_rows), ("held-out", test_rows)):
        kinds = Counter((r["sub_decision"], r["pair_kind"]) for r in rows)
        print(f"  {name}: " + ", ".join(f"{s} {k} {n}" for (s, k), n in sorted(kinds.items())))
    start = time.perf_counter()
    report = check_signal(pairs_of(train_rows), pairs_of(test_rows))
    print(f"check-signal fitted and scored in {time.perf_counter() - start:.1f} s")
    for line in report.lines():
        print("  " + line)
    by_origin = {}
    for origin in sorted({r["origin"] for r in test_rows}):
        subset = [r for r in test_rows if r["origin"] == origin]
        part = check_signal(pairs_of(train_rows), pairs_of(subset)).overall
        if part is not None:
            by_origin[origin] = part
            print(f"  origin {origin:<18}{part.rows:>5}  model {part.model.text()}  length "
                  f"{part.length.text()}  template {part.template.text()}")
    slices = {
        "O5 at premature-stop traces (the stop's words are the same in faults and controls: "
        "only the context tells)": lambda r: r["sub_decision"] == "O5"
        and "-premature_stop-" in r["trace_id"],
        "O5 elsewhere": lambda r: r["sub_decision"] == "O5"
        and "-premature_stop-" not in r["trace_id"],
        "O1 where the task is stated (not the numbered shape's 'Spawn X.')":
        lambda r: r["sub_decision"] == "O1" and "-numbered-" not in r["trace_id"],
        "O1 numbered shape (no words tell the task: only its tool calls, after the spawn)":
        lambda r: r["sub_decision"] == "O1" and "-numbered-" in r["trace_id"],
    }
    sliced = {}
    for name, keep in slices.items():
        subset = [r for r in test_rows if keep(r)]
        part = check_signal(pairs_of(train_rows), pairs_of(subset)).overall if subset else None
        if part is not None:
            sliced[name] = part
            print(f"  {name}: {part.rows} rows, model {part.model.text()}, answers only "
                  f"{part.response_only.text()}, length {part.length.text()}, template "
                  f"{part.template.text()}")
    bad, pointers = unfaithful(train_rows + test_rows)
    print(f"pointer rows whose chosen side states a figure its prompt lacks: {bad} of {pointers}")
    print(f"load at the end {os.getloadavg()[0]:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "report": report.as_dict(), "unfaithful_pointer_rows": bad,
            "pointer_rows": pointers,
            "by_origin": {o: {"rows": g.rows, "model": g.model.accuracy,
                              "length": g.length.accuracy, "template": g.template.accuracy}
                          for o, g in by_origin.items()},
            "slices": {o: {"rows": g.rows, "model": g.model.accuracy,
                           "response_only": g.response_only.accuracy,
                           "length": g.length.accuracy, "template": g.template.accuracy}
                       for o, g in sliced.items()}}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
