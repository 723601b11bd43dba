"""`orchviz labels check-signal`: a small pairwise model fitted on part of an export's rows,
scored on the rest beside the baselines that read no context, with a warning when the answers
alone tell the rows apart."""

from __future__ import annotations

import json
import random

import orjson
import pytest

from viz_app.cli import main
from viz_app.labels.signal import Pair, check_signal, pairs_of, split_rows

pytest.importorskip("sklearn")

STOP = "stop: Enough to answer; stop."


def stop_rows(n: int, seed: int = 0) -> list[dict]:
    """Stops where only the context tells: every prompt hands work to two workers; in half of
    them both have answered (stopping is right), in the other half the second is still out
    (waiting for it is right). Both sides read alike whichever wins."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        a, b = f"worker_{rng.randint(1, 50)}", f"worker_{rng.randint(51, 99)}"
        done = i % 2 == 0
        lines = ["Task: compare two figures", "Orchestration:",
                 f"[t=1] orchestrator spawn -> {a}: Spawn {a}.",
                 f"[t=2] orchestrator spawn -> {b}: Spawn {b}.",
                 f"[t=3] {a} return -> orchestrator: the first figure is {rng.randint(10, 99)}."]
        if done:
            lines.append(f"[t=4] {b} return -> orchestrator: the second figure is "
                         f"{rng.randint(10, 99)}.")
        wait = f"continue: wait for {b}"
        chosen, rejected = (STOP, wait) if done else (wait, STOP)
        rows.append({"prompt": "\n".join(lines) + "\n", "chosen": chosen, "rejected": rejected,
                     "sub_decision": "O5", "trace_id": f"t{i}",
                     "pair_kind": "confirmation" if done else "correction"})
    return rows


def prior_rows(n: int) -> list[dict]:
    """Rows a prior tells apart: the chosen side is always the longer 'continue'."""
    return [{"prompt": f"Task: t\nOrchestration:\n[t=1] orchestrator spawn -> w{i}: go\n",
             "chosen": f"continue: wait for w{i} and everything else it may bring",
             "rejected": STOP, "sub_decision": "O5", "trace_id": f"p{i}",
             "pair_kind": "correction"} for i in range(n)]


def test_where_only_the_context_tells_the_model_learns_it_and_the_baselines_do_not():
    pairs = pairs_of(stop_rows(400))
    train, test = split_rows(pairs, 0.3)
    assert not {p.trace_id for p in train} & {p.trace_id for p in test}  # held out by trace
    report = check_signal(train, test)
    overall = report.overall
    assert overall.model.accuracy > 0.95 and overall.model.interval()[0] > 0.85
    assert 0.35 < overall.length.accuracy < 0.65 and 0.35 < overall.template.accuracy < 0.65
    assert overall.response_only.accuracy < 0.65 and not report.warning
    kinds = {g.kind for g in report.groups if g.group == "O5"}
    assert kinds == {"both", "confirmation", "correction"}  # apart and together


def test_rows_a_prior_tells_apart_draw_the_one_sentence_warning():
    report = check_signal(*split_rows(pairs_of(prior_rows(200)), 0.3))
    assert report.overall.length.accuracy == 1.0 and report.overall.template.accuracy == 1.0
    assert report.warning.startswith("Warning: these rows can be told apart without reading "
                                     "the prompt") and report.warning.count(".") <= 3


def test_openrlhf_rows_with_the_prompt_inside_are_read_as_prompt_and_answers():
    row = stop_rows(1)[0]
    (pair,) = pairs_of([{"chosen": row["prompt"] + row["chosen"],
                         "rejected": row["prompt"] + row["rejected"], "trace_id": "t0"}])
    assert pair == Pair(row["prompt"], row["chosen"], row["rejected"], "all", "pairs", "t0")


def test_the_cli_reads_an_export_and_prints_the_figures_or_json(tmp_path, capsys):
    out = tmp_path / "pairs.jsonl"
    out.write_bytes(b"\n".join(orjson.dumps(r) for r in stop_rows(300)))
    assert main(["labels", "check-signal", str(out)]) == 0
    said = capsys.readouterr().out
    assert "model" in said and "length" in said and "template" in said and "O5" in said
    assert main(["labels", "check-signal", str(out), "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["overall"]["model"]["accuracy"] > 0.9 and figures["warning"] == ""
    held = tmp_path / "later.jsonl"
    held.write_bytes(b"\n".join(orjson.dumps(r) for r in stop_rows(100, seed=9)))
    assert main(["labels", "check-signal", str(out), "--held-out", str(held), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["test_rows"] == 100


def test_an_unreadable_export_is_one_sentence_naming_it(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "x"}\nnot json\n')
    assert main(["labels", "check-signal", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "bad.jsonl" in err and "line 2" in err and err.count("\n") == 1
