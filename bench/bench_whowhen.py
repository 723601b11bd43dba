"""Who&When failure attribution: which agent, and which step, each producer blames in the
failed runs of the Who&When dataset, beside the published figures of its paper.

    python bench/bench_whowhen.py DIR [--folds 5] [--limit N]
                                      [--endpoint URL --model NAME [--api-key-env VAR]]

DIR is the `Who&When` folder of the published dataset ("Which Agent Causes Task Failures and
When?", Zhang et al., ICML 2025, arXiv:2505.00212): `Hand-Crafted/*.json` (58 Magentic-One runs)
and `Algorithm-Generated/*.json` (126 CaptainAgent group chats), each a failed run with the
agent and the step (`mistake_agent`, `mistake_step`) its annotators blame for the failure. Each
run is read by orchviz's Who&When importer, and each producer's blame is its most confident
suggestion that some decision was at fault (`FAULTS`): that event's agent (the agent that acts
there) against `mistake_agent`, its step (`history[i]`) against `mistake_step`. A producer that
says nothing is at fault in a run is wrong on it: accuracy is over every run, with its Wilson 95 %
interval. `chance` is the expected accuracy of a step drawn uniformly from each run; beside it
the positional rules a producer must beat, which read nothing of a run: **last step** blames
its last step, **after task** the step after the task (history[1]). On the published runs the
first gets about 60 % agent-level on the hand-crafted runs, and the second matches a learned
producer's agent and step figures on the algorithm-generated ones: a producer's figure is worth
what it adds to these.

- **rules** (`viz_app.suggest.rules`): the detectors, as `orchviz suggest` runs them.
- **learned** (`viz_app.suggest.learned`, as `orchviz suggest train` fits it): cross-validated
  over folds of runs. In each fold the runs outside it are the training labels: on every target
  of `LEARNED` (a message, a delegation) the published annotation is the answer, the blamed step
  at fault (`harmful`, `wrong_agent`) and every other target of the run fine (`necessary`,
  `right_agent`), given as one blind reviewer's labels; a model per question is trained with
  `learned.train` (a question with too few blamed targets in a fold is left out there, and said
  so); the runs of the fold are then blamed where the models put the most probability on a
  fault. Who&When blames one decisive step, not every fault, so "fine" elsewhere is an
  assumption of this benchmark, not of the dataset.
- **judge** (`viz_app.suggest.judge.JudgeProducer`), with `--endpoint URL --model NAME` (any
  OpenAI-compatible endpoint; the key from `--api-key-env`, default OPENAI_API_KEY, none for a
  local server): the model asked the rubric's event questions on every target of each run. One
  call per target and question: a few thousand calls for the whole dataset (`--limit N` reads
  the first N runs of each subset). Without `--endpoint` it is skipped, and the output says so.

The published figures (`PUBLISHED`) are the paper's Table 1: GPT-4o as the judge, with and
without the task's ground truth in the prompt. orchviz's producers see no ground truth.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import machine  # noqa: E402
from viz_app.analysis import analyze  # noqa: E402
from viz_app.io.whowhen import _same_agent, annotation, import_whowhen  # noqa: E402
from viz_app.labels.rubric import Rubric, default_rubric, targets  # noqa: E402
from viz_app.labels.suggestion import Suggestion  # noqa: E402
from viz_app.model import Trace  # noqa: E402

SUBSETS = ("Hand-Crafted", "Algorithm-Generated")

FAULTS: dict[str, Callable[[Any], bool]] = {
    "stopping_correctness": lambda v: v in ("premature", "late"),
    "aggregation_quality": lambda v: isinstance(v, (int, float)) and v <= 2,
    "spawn_necessity": lambda v: v in ("redundant", "harmful"),
    "message_necessity": lambda v: v in ("redundant", "harmful"),
    "delegation_fit": lambda v: v in ("wrong_agent", "do_it_itself"),
}
"""Each event question, and the answers that say its decision was at fault."""

LEARNED = {"message_necessity": ("harmful", "necessary"),
           "delegation_fit": ("wrong_agent", "right_agent")}
"""The questions the learned producer is trained on here: (answer at the blamed step, answer
at every other target of the run). Who&When blames messages (group chats) and delegations,
returns and thoughts (Magentic-One); returns and thoughts are no question's target."""

PUBLISHED = {
    "random": {"Hand-Crafted": (12.00, 4.16), "Algorithm-Generated": (29.10, 19.06)},
    "all-at-once (GPT-4o, with ground truth)":
        {"Hand-Crafted": (55.17, 5.26), "Algorithm-Generated": (54.33, 12.50)},
    "step-by-step (GPT-4o, with ground truth)":
        {"Hand-Crafted": (34.48, 7.02), "Algorithm-Generated": (35.20, 25.51)},
    "binary search (GPT-4o, with ground truth)":
        {"Hand-Crafted": (51.72, 6.90), "Algorithm-Generated": (44.13, 23.98)},
    "all-at-once (GPT-4o, without ground truth)":
        {"Hand-Crafted": (53.44, 3.51), "Algorithm-Generated": (51.12, 13.53)},
    "step-by-step (GPT-4o, without ground truth)":
        {"Hand-Crafted": (32.75, 8.77), "Algorithm-Generated": (26.02, 15.31)},
    "binary search (GPT-4o, without ground truth)":
        {"Hand-Crafted": (36.21, 6.90), "Algorithm-Generated": (30.11, 16.59)},
}
"""Agent-level and step-level accuracy (%) in Table 1 of the Who&When paper (ICML 2025)."""


@dataclass
class Case:
    """One annotated failed run."""

    subset: str
    trace: Trace
    agent: str
    step: int | None


@dataclass
class Tally:
    """A producer's attribution on one subset."""

    runs: int = 0
    silent: int = 0
    agent: int = 0
    step: int = 0
    notes: list[str] = field(default_factory=list)

    def add(self, right_agent: bool, right_step: bool, silent: bool) -> None:
        self.runs += 1
        self.silent += silent
        self.agent += right_agent
        self.step += right_step

    def row(self) -> str:
        if not self.runs:
            return "no runs"
        spoke = self.runs - self.silent
        return (f"agent {self.agent / self.runs:6.1%} {wilson(self.agent, self.runs)}  "
                f"step {self.step / self.runs:6.1%} {wilson(self.step, self.runs)}  "
                f"({self.runs} runs, silent on {self.silent}; on the {spoke} it spoke on: "
                f"agent {self.agent}, step {self.step})")


def wilson(hits: int, runs: int, z: float = 1.96) -> str:
    """The Wilson score 95 % interval of a proportion, as `[lo-hi %]`."""
    p = hits / runs
    centre = (p + z * z / (2 * runs)) / (1 + z * z / runs)
    half = z * ((p * (1 - p) / runs + z * z / (4 * runs * runs)) ** 0.5) / (1 + z * z / runs)
    return f"[{max(0.0, centre - half):.0%}-{min(1.0, centre + half):.0%}]"


def load(folder: Path, limit: int | None = None) -> list[Case]:
    """The annotated runs of a Who&When folder, by subset then file number."""
    cases = []
    for subset in SUBSETS:
        files = sorted((folder / subset).glob("*.json"),
                       key=lambda p: (int(p.stem) if p.stem.isdigit() else 0, p.name))
        for path in files[:limit]:
            [trace] = import_whowhen(path)
            blamed = annotation(trace)
            if blamed is None or not blamed["mistake_agent"]:
                continue
            cases.append(Case(subset, trace, blamed["mistake_agent"], blamed["mistake_step"]))
    if not cases:
        raise SystemExit(f"{folder}: no annotated Who&When runs under "
                         f"{' or '.join(SUBSETS)}/ (give the dataset's `Who&When` folder)")
    return cases


def step_of(trace: Trace, event_id: str) -> int | None:
    """The `history` index an event of an imported Who&When run stands for."""
    where = re.search(r"history\[(\d+)\]", str(trace.event(event_id).extras.get("source_id")))
    return int(where.group(1)) if where else None


def blamed_by(suggestions: Iterable[Suggestion]) -> str | None:
    """The event a producer blames: its most confident suggestion that a decision was at
    fault (None when it finds none)."""
    faults = [s for s in suggestions if s.question in FAULTS and s.event_id
              and FAULTS[s.question](s.value)]
    if not faults:
        return None
    return max(faults, key=lambda s: s.confidence).event_id


def score(case: Case, event_id: str | None, tally: Tally) -> None:
    """Count one run: is the blamed event's agent the annotated one, is its step?"""
    if event_id is None:
        tally.add(False, False, silent=True)
        return
    actor = analyze(case.trace).actor.get(event_id)
    tally.add(_same_agent(actor, case.agent),
              case.step is not None and step_of(case.trace, event_id) == case.step, silent=False)


def attribute(cases: Sequence[Case], blame: Callable[[Case], str | None]) -> dict[str, Tally]:
    """Each subset's tally of a producer's blame."""
    tallies = {subset: Tally() for subset in SUBSETS}
    for case in cases:
        score(case, blame(case), tallies[case.subset])
    return tallies


def chance(cases: Sequence[Case]) -> dict[str, tuple[float, float]]:
    """Each subset's expected accuracy of a blame drawn uniformly from a run's steps (agent,
    step): the paper's random baseline, on orchviz's reading of the runs."""
    sums: dict[str, list[float]] = {s: [0.0, 0.0, 0] for s in SUBSETS}
    for case in cases:
        actors = analyze(case.trace).actor
        steps: dict[int, str | None] = {}  # a step's first event's agent
        for e in case.trace.events:
            index = step_of(case.trace, e.id)
            if index is not None and index not in steps:
                steps[index] = actors.get(e.id)
        if steps:
            mine = sum(_same_agent(actor, case.agent) for actor in steps.values())
            sums[case.subset][0] += mine / len(steps)
            sums[case.subset][1] += (case.step is not None) / len(steps)
        sums[case.subset][2] += 1
    return {s: (a / n, st / n) if n else (0.0, 0.0) for s, (a, st, n) in sums.items()}


# -- the producers -------------------------------------------------------------------------------


def steps_of(trace: Trace) -> dict[int, str]:
    """Each `history` step of an imported run and its first event."""
    found: dict[int, str] = {}
    for e in analyze(trace).order:
        index = step_of(trace, e.id)
        if index is not None and index not in found:
            found[index] = e.id
    return found


POSITIONAL: dict[str, Callable[[list[int]], int]] = {
    "last step": max,
    "after task": lambda steps: min((s for s in steps if s > 0), default=min(steps)),
}
"""The positional rules a producer must beat, each given a run's step numbers: blame the last
step; blame the step after the task (history[0] states the task)."""


def positional_blame(rule: str) -> Callable[[Case], str | None]:
    """Blame the step a positional rule picks (its first event), reading nothing of the run."""
    pick = POSITIONAL[rule]

    def blame(case: Case) -> str | None:
        steps = steps_of(case.trace)
        return steps[pick(list(steps))] if steps else None

    return blame



def rules_blame(rubric: Rubric) -> Callable[[Case], str | None]:
    from viz_app.suggest.rules import suggest

    return lambda case: blamed_by(suggest(case.trace, rubric))


def judge_blame(rubric: Rubric, endpoint: str, model: str, api_key_env: str,
                failures: Counter) -> Callable[[Case], str | None]:
    """The judge's blame; its failed questions are counted in `failures` by reason."""
    from viz_app.suggest.judge import JudgeProducer

    judge = JudgeProducer(endpoint, model, api_key_env, questions=tuple(FAULTS))

    def blame(case: Case) -> str | None:
        made, failed = judge.produce(case.trace, rubric)
        for failure in failed:
            failures[failure.error.split(":")[0][:60]] += 1
        return blamed_by(made)

    return blame


def label_records(cases: Iterable[Case], rubric: Rubric) -> list[dict[str, Any]]:
    """The published annotations as one blind reviewer's labels on every target of `LEARNED`:
    the blamed step at fault, every other target fine (see the module's docstring)."""
    records = []
    for case in cases:
        blamed = annotation(case.trace)
        at = blamed["event_id"] if blamed else ""
        for target in targets(rubric, analyze(case.trace)):
            for question in target.questions:
                if question not in LEARNED:
                    continue
                fault, fine = LEARNED[question]
                records.append({
                    "label_id": f"ww-{case.trace.trace_id}-{target.key}-{question}",
                    "trace_id": case.trace.trace_id, "trace_sha256": case.trace.sha256,
                    "event_id": target.key, "question": question,
                    "value": fault if target.key == at else fine, "reviewer": "who&when",
                    "source": "human", "suggestions_visible": False,
                    "created_at": "2025-01-01T00:00:00.000000Z"})
    return records


def fold_of(cases: Sequence[Case], folds: int) -> list[int]:
    """A fold for each run: runs of each subset dealt round in file order, so every fold holds
    both subsets."""
    dealt: Counter = Counter()
    found = []
    for case in cases:
        found.append(dealt[case.subset] % folds)
        dealt[case.subset] += 1
    return found


def learned_blames(cases: Sequence[Case], rubric: Rubric, folds: int,
                   notes: list[str]) -> dict[str, str | None]:
    """Each run's blame by models trained without its fold (trace id -> event id)."""
    import numpy as np

    from viz_app.suggest.features import TraceFeatures, question_rows, vector
    from viz_app.suggest.learned import LearnError, train
    from viz_app.suggest.learned import estimator as fitted_estimator

    assigned = fold_of(cases, folds)
    by_id = {c.trace.trace_id: c.trace for c in cases}
    blames: dict[str, str | None] = {}
    for fold in range(folds):
        held = [c for c, f in zip(cases, assigned) if f == fold]
        labels = label_records([c for c, f in zip(cases, assigned) if f != fold], rubric)
        models = []
        for question in LEARNED:
            try:
                models.append(train(rubric, question, labels, [], by_id, resamples=200))
            except LearnError as why:
                notes.append(f"fold {fold + 1}: {str(why).split(';')[0]}")
        for case in held:
            computed = TraceFeatures(case.trace)
            best, best_p = None, 0.0
            for model in models:
                rows = question_rows(case.trace, rubric, model.question, computed)
                if not rows:
                    continue
                keys = list(rows)
                x = np.array([vector(rows[k], model.features) for k in keys], dtype=float)
                estimator = fitted_estimator(model)
                at_fault = [i for i, code in enumerate(estimator.classes_)
                            if FAULTS[model.question](model.answers[int(code)])]
                p = estimator.predict_proba(x)[:, at_fault].sum(axis=1)
                top = int(p.argmax())
                if p[top] > best_p:
                    best, best_p = keys[top], float(p[top])
            blames[case.trace.trace_id] = best
    return blames


# -- the report -----------------------------------------------------------------------------------


def report(name: str, tallies: dict[str, Tally]) -> None:
    for subset in SUBSETS:
        print(f"  {name:<11}{subset:<21}{tallies[subset].row()}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="the dataset's `Who&When` folder")
    parser.add_argument("--folds", type=int, default=5, help="folds of runs for the learned "
                        "producer's cross-validation")
    parser.add_argument("--limit", type=int, help="read only the first N runs of each subset")
    parser.add_argument("--endpoint", help="an OpenAI-compatible base URL for the judge "
                        "(without it the judge is skipped)")
    parser.add_argument("--model", default="", help="the judge's model name at the endpoint")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY",
                        help="the environment variable holding the endpoint's key")
    args = parser.parse_args(argv)
    print(machine(), f"load {os.getloadavg()[0]:.2f}")
    rubric = default_rubric()
    cases = load(args.folder, args.limit)
    count = Counter(c.subset for c in cases)
    print(f"Who&When at {args.folder}: " + ", ".join(f"{count[s]} {s}" for s in SUBSETS)
          + " annotated failed runs; accuracy over every run (silence counts as wrong)")

    for subset, (agent, step) in chance(cases).items():
        print(f"  {'chance':<11}{subset:<21}agent {agent:6.1%}  step {step:6.1%}  (expected, "
              "a step drawn uniformly)")
    for rule in POSITIONAL:
        report(rule, attribute(cases, positional_blame(rule)))
    start = time.perf_counter()
    report("rules", attribute(cases, rules_blame(rubric)))
    print(f"    ({time.perf_counter() - start:.1f} s)")

    start = time.perf_counter()
    notes: list[str] = []
    try:
        blames = learned_blames(cases, rubric, args.folds, notes)
    except ImportError:
        print("  learned    skipped: it needs scikit-learn (pip install 'orchviz[agreement]')")
    else:
        report("learned", attribute(cases, lambda c: blames[c.trace.trace_id]))
        print(f"    ({args.folds}-fold cross-validation over runs, "
              f"{time.perf_counter() - start:.1f} s)")
        for note in notes:
            print(f"    left out: {note}")

    if not args.endpoint:
        print("  judge      skipped: no --endpoint URL given (see the module's docstring)")
    else:
        failures: Counter = Counter()
        start = time.perf_counter()
        report("judge", attribute(cases, judge_blame(rubric, args.endpoint, args.model,
                                                     args.api_key_env, failures)))
        print(f"    ({args.model} at {args.endpoint}, {time.perf_counter() - start:.1f} s)")
        for reason, n in failures.most_common():
            print(f"    {n} questions unanswered: {reason}")

    print("  published (Who&When paper, Table 1; agent %, step %):")
    for method, figures in PUBLISHED.items():
        print(f"    {method:<46}" + "   ".join(
            f"{s} {a:5.2f} / {st:5.2f}" for s, (a, st) in figures.items()))


if __name__ == "__main__":
    main()
