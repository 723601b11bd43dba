"""Benchmark: how far the learned producer agrees with held-out human labels.

Two label sets, each saved in a real store as blind labels of one reviewer and trained on with
`ws.suggestions.train` (what `orchviz suggest train` runs):

1. **The demos' labels**: the answers a person wrote by reading the twelve demo traces
   (`tests/fixtures/demo_expected_suggestions.yaml`; every target not listed is fine). The
   figure is the cross-validated one `orchviz suggest train` prints (folds of whole traces).
2. **The planted faults** (`viz_app.planted`, when present): each case's ground truth as the
   labels (a planted fault's answer on its target, the fine answer on every other target of
   the four kinds' questions). The model is trained on the `tuning` split (its cross-validated
   figure is printed too) and then measured on the `held-out` split, which nothing was fitted
   on (other seeds, two domains never seen in tuning): its suggestions there against the
   ground truth, alpha and kappa with bootstrap 95 % intervals over targets
   (`suggestion_agreement`, the Agreement page's figures), beside the rules' on the same
   targets (their silence read as the fine answer on every target).

Run: `python bench/bench_learned.py [--resamples 1000] [--per-cell 1]`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import yaml  # noqa: E402
from timing import machine  # noqa: E402

from viz_app.analysis import analyze  # noqa: E402
from viz_app.io.native import trace_from_dict, write_trace  # noqa: E402
from viz_app.labels.agreement import suggestion_agreement  # noqa: E402
from viz_app.labels.rubric import targets  # noqa: E402
from viz_app.labels.suggestion import Suggestion  # noqa: E402
from viz_app.suggest import rules  # noqa: E402
from viz_app.suggest.learned import LearnedProducer, LearnError  # noqa: E402
from viz_app.workspace import Workspace  # noqa: E402

DEMOS = REPO / "demo_traces"
EXPECTED = REPO / "tests" / "fixtures" / "demo_expected_suggestions.yaml"
QUESTIONS = ("stopping_correctness", "aggregation_quality", "spawn_necessity",
             "message_necessity")
PLANTED_QUESTIONS = ("stopping_correctness", "aggregation_quality", "spawn_necessity")
REVIEWER = "truth"


def stat(name: str, found) -> str:
    """'alpha 0.712 [0.601, 0.804]'."""
    if found.value is None:
        return f"{name} -"
    if found.low is None:
        return f"{name} {found.value:.3f}"
    return f"{name} {found.value:.3f} [{found.low:.3f}, {found.high:.3f}]"


def save_truth(ws: Workspace, traces, answer_of, questions) -> int:
    """Save, blind, one reviewer's answer on every target of `questions`: `answer_of(trace id,
    event id, question)`, else the fine answer."""
    made = []
    for trace in traces:
        for t in targets(ws.rubric, analyze(trace)):
            for q in t.questions:
                if q in questions:
                    value = answer_of(trace.trace_id, t.key, q)
                    made += ws.labelling.checked(trace, t.event_id, {q: value}, REVIEWER,
                                              suggestions_visible=False)
    return ws.labelling.add(made)


def report_line(model) -> str:
    r = model.report
    answers = ", ".join(f"{k} {n}" for k, n in r.answers.items())
    return (f"{r.targets} targets ({answers}), {r.folds} folds of whole traces: "
            f"{stat('alpha', r.learned.alpha)}  {stat('kappa', r.learned.kappa)}  "
            f"accuracy {r.accuracy:.3f}, mean confidence {r.mean_confidence:.3f}, "
            f"Brier {r.brier:.3f}")


def demos(resamples: int) -> None:
    print("\n== the demos' labels (cross-validated, folds of whole traces)")
    expected = yaml.safe_load(EXPECTED.read_text("utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace.open(Path(tmp) / "orchviz.db", traces=[DEMOS])
        traces = list(ws.library.read_traces().traces.values())
        ws.library.update_index()
        saved = save_truth(ws, traces, lambda tid, key, q: expected.get(tid, {}).get(key, {})
                           .get(q, rules.FINE[q]), QUESTIONS)
        print(f"{len(traces)} traces, {saved} blind labels")
        for q in QUESTIONS:
            try:
                model, _ = ws.suggestions.train(q, resamples=resamples)
                print(f"{q}: {report_line(model)}")
            except LearnError as err:
                print(f"{q}: refused: {err}")


def planted(resamples: int, per_cell: int) -> None:
    try:
        from viz_app import planted as generator
    except ImportError:
        print("\n== planted faults: viz_app.planted is not in this checkout, skipped")
        return
    print(f"\n== planted faults: trained on the tuning split, measured on the held-out split "
          f"({per_cell} case(s) per cell)")
    with tempfile.TemporaryDirectory() as tmp:
        split_traces = {}
        truth = {}
        for split in ("tuning", "held-out"):
            folder = Path(tmp) / split
            made = []
            for c in generator.cases(split, per_cell=per_cell):
                trace = trace_from_dict(c.trace, c.name)
                write_trace(trace, folder / f"{c.name}.json")
                made.append(trace)
                for f in c.faults:
                    truth[(trace.trace_id, f.event_id, f.question)] = f.value
            split_traces[split] = made

        def answer_of(tid, key, q):
            return truth.get((tid, key, q), rules.FINE[q])

        ws = Workspace.open(Path(tmp) / "tuning.db", traces=[Path(tmp) / "tuning"])
        ws.library.update_index()
        split_traces["tuning"] = list(ws.library.read_traces().traces.values())  # as the files hold
        split_traces["held-out"] = list(Workspace.open(
            Path(tmp) / "held-out.db", traces=[Path(tmp) / "held-out"]).library.read_traces()
            .traces.values())
        start = time.process_time()
        saved = save_truth(ws, split_traces["tuning"], answer_of, PLANTED_QUESTIONS)
        print(f"tuning: {len(split_traces['tuning'])} traces, {saved} blind labels "
              f"({time.process_time() - start:.1f} s CPU to save)")
        held = split_traces["held-out"]
        labels = [{"trace_id": t.trace_id, "trace_sha256": t.sha256, "event_id": x.key,
                   "question": q, "value": answer_of(t.trace_id, x.key, q),
                   "reviewer": REVIEWER, "source": "human", "suggestions_visible": False,
                   "created_at": "2026-01-01T00:00:00+00:00", "label_id": f"{t.trace_id}/{x.key}"}
                  for t in held for x in targets(ws.rubric, analyze(t)) for q in x.questions
                  if q in PLANTED_QUESTIONS]
        rule_suggestions = [s for t in held for s in rules.suggest(t, ws.rubric)]
        said = {(s.trace_id, s.event_id, s.question) for s in rule_suggestions}
        by_id = {t.trace_id: t for t in held}
        # the rules' silence as the fine answer on every held-out target, not only on traces
        # where they said something (what `silence` alone reads), so both are compared on all
        rule_suggestions += [Suggestion(
            trace_id=x["trace_id"], trace_sha256=x["trace_sha256"], event_id=x["event_id"],
            question=x["question"], value=rules.FINE[x["question"]], confidence=0.5,
            producer=rules.PRODUCER) for x in labels
            if (x["trace_id"], x["event_id"], x["question"]) not in said
            and by_id.get(x["trace_id"]) is not None]
        print(f"held-out: {len(held)} traces, {len(labels)} ground-truth answers")
        for q in PLANTED_QUESTIONS:
            try:
                start = time.process_time()
                model, _ = ws.suggestions.train(q, resamples=resamples)
                took = time.process_time() - start
            except LearnError as err:
                print(f"{q}: refused: {err}")
                continue
            print(f"{q}: tuning, cross-validated: {report_line(model)} ({took:.1f} s CPU)")
            producer = LearnedProducer([model])
            start = time.process_time()
            made = [s for t in held for s in producer.produce(t, ws.rubric)[0]]
            took = time.process_time() - start
            found = suggestion_agreement(ws.rubric, labels, made + rule_suggestions,
                                         question=q, resamples=resamples)
            for row in found.rows:
                if row.rater in ("learned", "rules"):
                    print(f"  held-out, {row.rater:<8} {row.targets:>5} targets  "
                          f"{stat('alpha', row.alpha)}  {stat('kappa', row.kappa)}")
            right = sum(s.value == answer_of(s.trace_id, s.event_id, q) for s in made)
            print(f"  held-out, learned accuracy {right / max(1, len(made)):.3f} over "
                  f"{len(made)} targets, mean confidence "
                  f"{sum(s.confidence for s in made) / max(1, len(made)):.3f} "
                  f"({took:.1f} s CPU to suggest)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--per-cell", type=int, default=1)
    args = parser.parse_args()
    print(machine())
    demos(args.resamples)
    planted(args.resamples, args.per_cell)


if __name__ == "__main__":
    main()
