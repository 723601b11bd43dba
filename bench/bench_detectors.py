"""The fault detectors' precision and recall on planted faults (`viz_app.planted`): traces built
apart from the demos, each fault kind in several shapes with faithful controls, four topologies,
three sizes.

    python bench/bench_detectors.py [--per-cell N] [--baseline REV] [--details]

Two splits: `tuning` (seeds from 0, domains 0-3), on which the rules' thresholds were chosen,
and `held-out` (seeds from 200,000, all six domains, two never seen in tuning), on which
nothing was fitted. `--baseline REV` also scores the rules (`viz_app/suggest/rules/`) as they were
at a git revision (e.g. the rules before issue 27: 1e84f37). `--details` lists every miss and
false positive.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import machine  # noqa: E402
from viz_app import planted  # noqa: E402
from viz_app.analysis import analyze  # noqa: E402
from viz_app.io.native import trace_from_dict  # noqa: E402
from viz_app.suggest import rules  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def rules_at(rev: str):
    """The rules as they were at a git revision, imported under another name: the module
    `viz_app/suggest/rules.py` before the rules were split into a package, the package
    `viz_app/suggest/rules/` since (its modules' imports of one another renamed with it)."""
    name = f"rules_{rev[:8]}"
    folder = Path(tempfile.mkdtemp())
    sys.path.insert(0, str(folder))
    listed = subprocess.run(["git", "-C", str(REPO), "ls-tree", "--name-only", rev,
                             "viz_app/suggest/rules/"], capture_output=True, text=True).stdout
    if not listed.strip():
        source = subprocess.run(["git", "-C", str(REPO), "show",
                                 f"{rev}:viz_app/suggest/rules.py"],
                                check=True, capture_output=True, text=True).stdout
        (folder / f"{name}.py").write_text(source, "utf-8")
    else:
        (folder / name).mkdir()
        for path in listed.split():
            source = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{path}"],
                                    check=True, capture_output=True, text=True).stdout
            (folder / name / Path(path).name).write_text(
                source.replace("viz_app.suggest.rules", name), "utf-8")
    return importlib.import_module(name)  # dataclasses look their module up in sys.modules


def flagged_by(module):
    def flagged(case: planted.Case) -> list[tuple[str, str]]:
        trace = trace_from_dict(case.trace, f"<{case.name}>")
        return [(f.rule, f.event_id) for f in module.findings(trace)]
    return flagged


def table(title: str, scores: dict[str, planted.Score], faults: int, controls: int) -> None:
    print(f"{title}: {faults} fault traces, {controls} controls")
    print(f"  {'detector':<16}{'TP':>5}{'FP':>5}{'FN':>5}  precision  recall")
    for kind, s in scores.items():
        p = f"{s.precision:.2f}" if s.precision is not None else "-"
        r = f"{s.recall:.2f}" if s.recall is not None else "-"
        print(f"  {kind:<16}{s.tp:>5}{s.fp:>5}{s.fn:>5}  {p:>9}  {r:>6}")


def details(scores: dict[str, planted.Score]) -> None:
    for kind, s in scores.items():
        for what, n in sorted(Counter(s.missed).items()):
            print(f"    {kind} missed: {what} x{n}")
        for what, n in sorted(Counter(s.wrong).items()):
            print(f"    {kind} false positive: {what} x{n}")


def _quantiles(values: list[float]) -> str:
    if not values:
        return "none"
    v = sorted(values)
    pick = [v[0], v[len(v) // 10], v[len(v) // 2], v[(9 * len(v)) // 10], v[-1]]
    return f"n={len(v)} min {pick[0]:.2f} p10 {pick[1]:.2f} median {pick[2]:.2f} " \
           f"p90 {pick[3]:.2f} max {pick[4]:.2f}"


def sweep(made: list[planted.Case]) -> None:
    """The raw figures each threshold cuts, on faulty and on sound targets of some cases: what
    docs/suggestions.md quotes for each threshold."""
    lost, kept_best, sound_low, old_lost, old_kept = [], [], [], [], []
    late_hold, sound_hold = [], []
    dup_task, dup_result_loose, sound_task, sound_result_when_alike = [], [], [], []
    dup_task_loose: list[float] = []
    for c in made:
        trace = trace_from_dict(c.trace, f"<{c.name}>")
        ctx = rules.context(analyze(trace))
        truth = {(f.kind, f.event_id) for f in c.faults}
        for point in ctx.analysis.aggregates:
            merged = ctx.merged(point.event_id)
            if len(merged) < 2:
                continue
            out = ctx.event(point.event_id).text
            low = min(merged, key=lambda m: m.presence)
            if ("dropped_result", point.event_id) in truth:
                lost.append(low.presence)
                kept_best.append(max(m.presence for m in merged))
                old_lost.append(min(rules.covered(e.text, out) for e in low.events))
            else:
                sound_low.append(low.presence)
                old_kept.append(min(rules.covered(e.text, out) for m in merged
                                    for e in m.events))
        for point in ctx.analysis.stops:
            stop = ctx.event(point.event_id)
            final = ctx.final_answer(point.agent, stop)
            if final is None:
                continue
            team = set(ctx.subtree(point.agent))
            end = ctx.pos(final.id)
            best = 0.0
            for e in ctx.analysis.order[:end]:
                if e.type in ("return", "message", "aggregate") and e.text and (
                        ctx.analysis.actor[e.id] in team or e.to in team) and any(
                        ctx._new_work(x, team, point.agent)
                        for x in ctx.analysis.order[ctx.pos(e.id) + 1:end]):
                    best = max(best, ctx.holds(e.text, final.text))
            (late_hold if ("late_stop", point.event_id) in truth else sound_hold).append(best)
        for spawn_id, twin in ctx.twins.items():
            if ("over_spawning", spawn_id) in truth:
                if ctx.event(spawn_id).to and ctx.analysis.role_of(ctx.event(spawn_id).to) \
                        == "checker":
                    continue  # spawned after the answer: another branch of the rule
                dup_task.append(twin.task)
                if twin.task < rules.SAME_TASK:
                    dup_result_loose.append(twin.result)
                    dup_task_loose.append(float(twin.subject))
            else:
                sound_task.append(twin.task)
                if twin.result >= rules.SAME_RESULT:
                    sound_result_when_alike.append(float(twin.subject))
    print("  dropped result: presence of the part left out (faulty aggregates)")
    print(f"    {_quantiles(lost)}")
    print(f"    the lowest part's presence at sound aggregates: {_quantiles(sound_low)}")
    print(f"    the best kept part's presence at faulty aggregates: {_quantiles(kept_best)}")
    print(f"    old figure, token_set_ratio of the part left out: {_quantiles(old_lost)}")
    print(f"    old figure, lowest token_set_ratio at sound aggregates: {_quantiles(old_kept)}")
    print("  late stop: how far an earlier text followed by new work held the final answer")
    print(f"    late stops: {_quantiles(late_hold)}")
    print(f"    sound stops: {_quantiles(sound_hold)}")
    print("  over-spawning: closest earlier sibling")
    print(f"    duplicate spawns, task similarity: {_quantiles(dup_task)}")
    print(f"    duplicates under SAME_TASK, result likeness: {_quantiles(dup_result_loose)}")
    print(f"    duplicates under SAME_TASK, sharing a subject (1) or not: "
          f"{_quantiles(dup_task_loose)}")
    print(f"    sound spawns, task similarity: {_quantiles(sound_task)}")
    print("    sound spawns with results at SAME_RESULT or more, sharing a subject (1) or not: "
          f"{_quantiles(sound_result_when_alike)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-cell", type=int, default=2,
                        help="seeds per kind x shape x topology x size (default 2)")
    parser.add_argument("--baseline", help="also score the rules at this git revision")
    parser.add_argument("--details", action="store_true", help="list misses and false positives")
    parser.add_argument("--sweep", action="store_true",
                        help="print the figures each threshold cuts, per split")
    args = parser.parse_args()
    print(machine())
    producers = [(f"rules {rules.VERSION}", rules)]
    if args.baseline:
        old = rules_at(args.baseline)
        producers.append((f"rules {old.VERSION} (at {args.baseline})", old))
    for split in planted.SPLITS:
        start = time.perf_counter()
        made = planted.cases(split, per_cell=args.per_cell)
        built = time.perf_counter() - start
        faults = sum(1 for c in made if not c.control)
        for name, module in producers:
            start = time.perf_counter()
            scores = planted.score(made, flagged_by(module))
            spent = time.perf_counter() - start
            table(f"{split}, {name} ({built:.1f} s to build, {spent:.1f} s to run)", scores,
                  faults, len(made) - faults)
            if args.details:
                details(scores)
        if args.sweep:
            print(f"{split}: the figures the thresholds cut")
            sweep(made)


if __name__ == "__main__":
    main()
