"""Pairwise judgements and the preference export: a judged pair becomes one
{prompt, chosen, rejected, margin} row with its trace ids; several reviewers' votes combine;
--from-scores pairs traces of one task by their scalar labels."""

from __future__ import annotations

import json

import pytest

from factories import REPO, make_workspace, premature, write_json
from viz_app.cli import main
from viz_app.errors import LabelError
from viz_app.export.consensus import ExportOptions
from viz_app.export.preference import (orchestration_text, preference_export, preference_rows,
                                       score_rows, task_prompt)
from viz_app.export.rewards import reward_rows
from viz_app.io.native import load_trace, trace_from_dict
from viz_app.labels.label import Reviewer
from viz_app.labels.pairs import PAIRWISE_QUESTION


def rollout(name: str, task: str = "checkout-latency-regression", same: bool = False):
    """A rollout of the premature-stop demo's task under another trace id, its first event's
    text naming the run (unless `same`: then it reads exactly as the demo does)."""
    raw = premature().to_dict()
    raw["trace_id"], raw["task_id"] = name, task
    if not same:
        raw["events"][0]["content"] = f"{raw['events'][0].get('content', '')} ({name})"
    return trace_from_dict(raw, f"{name}.json")


@pytest.fixture
def folder(tmp_path):
    """Three rollouts of one task (a, b, c) and one of another task (z), as files."""
    found = tmp_path / "traces"
    found.mkdir()
    for name, task in (("run-a", "t1"), ("run-b", "t1"), ("run-c", "t1"), ("run-z", "t2")):
        write_json(found, rollout(name, task).to_dict(), f"{name}.json")
    return found


@pytest.fixture
def traces(folder):
    return {p.stem: load_trace(p) for p in sorted(folder.glob("*.json"))}


@pytest.fixture
def url(tmp_path):
    return f"sqlite:///{tmp_path / 'orchviz.db'}"


@pytest.fixture
def ws(tmp_path, folder):
    return make_workspace(tmp_path, traces=[folder])


@pytest.fixture
def store(ws):
    return ws.labelling


def save_preference(ws, a, b, chosen, reviewer, reason, strength=None):
    """A judgement saved as the CLI saves one."""
    return ws.labelling.save_preference(a, b, chosen, Reviewer(name=reviewer, via="cli"), reason, strength)


def export(url, folder, out, *extra):
    code = main(["labels", "export", "--db", url, "--format", "preference", "--traces",
                 str(folder), "-o", str(out), *extra])
    assert code == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_a_judged_pair_exports_one_row_with_prompt_chosen_rejected_margin_and_ids(ws, 
        store, traces, folder, url, tmp_path):
    save_preference(ws, traces["run-b"], traces["run-a"], "run-b", "ann",
                    "b waits for the profiler", strength=3)
    rows = export(url, folder, tmp_path / "pref.jsonl")
    assert len(rows) == 1
    row = rows[0]
    assert {"prompt", "chosen", "rejected", "margin", "chosen_trace_id",
            "rejected_trace_id"} <= set(row)
    assert (row["chosen_trace_id"], row["rejected_trace_id"]) == ("run-b", "run-a")
    assert row["prompt"] == "Task: t1\n"
    assert row["chosen"] == orchestration_text(traces["run-b"])
    assert row["rejected"] == orchestration_text(traces["run-a"])
    assert row["margin"] == 1.0 and row["source"] == "judged"
    assert row["reviewers"] == ["ann"] and row["reasons"] == ["b waits for the profiler"]


def test_the_margin_follows_the_strength(ws, store, traces):
    margins = {}
    for strength in (None, 1, 2, 3):
        save_preference(ws, traces["run-a"], traces["run-b"], "run-a", "ann", "why",
                        strength=strength)
        margins[strength] = preference_rows(store.current_records(), traces)[0]["margin"]
    assert margins[None] == margins[1] < margins[2] < margins[3] == 1.0


def test_the_orchestration_text_is_every_event_in_time_order(traces):
    text = orchestration_text(traces["run-a"])
    lines = text.splitlines()
    assert lines[0] == "Orchestration:" and len(lines) == 1 + len(traces["run-a"].events)
    assert task_prompt(traces["run-a"]) + text == "Task: t1\n" + text


def test_the_system_description_is_in_the_text_only_when_asked(traces):
    """The demo's system line states the answer: a reward model must not read it."""
    trace = traces["run-a"]
    assert trace.system not in orchestration_text(trace)
    asked = orchestration_text(trace, with_system=True).splitlines()
    assert asked[0] == f"System: {trace.system} ({trace.topology} topology)"
    assert asked[1] == "Orchestration:"


def test_judging_b_against_a_after_a_against_b_changes_the_one_judgement(ws, store, traces):
    save_preference(ws, traces["run-a"], traces["run-b"], "run-a", "ann", "first view")
    save_preference(ws, traces["run-b"], traces["run-a"], "run-b", "ann", "second view")
    rows = preference_rows(store.current_records(), traces)
    assert [(r["chosen_trace_id"], r["reasons"]) for r in rows] == [("run-b", ["second view"])]
    assert ws.labelling.judgement("run-b", "run-a", "ann").chosen == "run-b"
    assert len(store.history("run-a", question=PAIRWISE_QUESTION)) == 2


def test_reviewers_who_choose_differently_dispute_the_pair_and_it_is_reported(ws, store,
                                                                              traces):
    save_preference(ws, traces["run-a"], traces["run-b"], "run-a", "ann", "a", strength=3)
    save_preference(ws, traces["run-a"], traces["run-b"], "run-b", "bob", "b", strength=1)
    found = preference_export(store.current_records(), traces)
    assert found.rows == []
    assert "1 judged pairs left out because their reviewers chose differently" in \
        found.left_out[0] and "run-a vs run-b (ann: run-a, bob: run-b)" in found.left_out[0]


def test_reviewers_who_agree_on_the_trace_combine_their_strengths(ws, store, traces):
    save_preference(ws, traces["run-a"], traces["run-b"], "run-a", "ann", "a", strength=3)
    save_preference(ws, traces["run-a"], traces["run-b"], "run-a", "bob", "a", strength=1)
    (row,) = preference_rows(store.current_records(), traces)
    assert row["margin"] == pytest.approx((3 / 3 + 1 / 3) / 2)
    assert (row["disputed"], row["resolution"], row["reviewers"]) == (False, "agreed",
                                                                       ["ann", "bob"])
    assert {p["reviewer"] for p in row["provenance"]} == {"ann", "bob"}


def test_disputed_mean_combines_votes_and_a_cancelled_pair_is_left_out(ws, store, traces):
    save_preference(ws, traces["run-a"], traces["run-b"], "run-a", "ann", "a", strength=3)
    save_preference(ws, traces["run-a"], traces["run-b"], "run-b", "bob", "b", strength=1)
    save_preference(ws, traces["run-a"], traces["run-c"], "run-a", "ann", "a", strength=2)
    save_preference(ws, traces["run-a"], traces["run-c"], "run-c", "bob", "c", strength=2)
    rows = preference_rows(store.current_records(), traces,
                           options=ExportOptions(disputed="mean"))
    assert [(r["chosen_trace_id"], r["rejected_trace_id"]) for r in rows] == [("run-a", "run-b")]
    assert rows[0]["margin"] == pytest.approx((3 / 3 - 1 / 3) / 2)
    assert rows[0]["reviewers"] == ["ann", "bob"] and rows[0]["disputed"] is True


def test_min_reviewers_leaves_out_a_pair_judged_once(ws, store, traces):
    save_preference(ws, traces["run-a"], traces["run-b"], "run-a", "ann", "a")
    found = preference_export(store.current_records(), traces,
                              options=ExportOptions(min_reviewers=2))
    assert found.rows == [] and "fewer judges than --min-reviewers 2" in found.left_out[0]


def test_two_identical_runs_cannot_be_judged(ws, store):
    """One run under two ids (copied, or exported twice): a judgement would teach nothing."""
    a, b = rollout("dup-a", "t1", same=True), rollout("dup-b", "t1", same=True)
    with pytest.raises(LabelError, match="identical runs"):
        save_preference(ws, a, b, "dup-a", "ann", "a looks better")
    assert store.count() == 0


def test_a_pair_that_reads_the_same_is_never_written(ws, store, traces):
    """Runs judged while they differed, whose files now read alike: chosen would equal
    rejected, so the pair is reported instead, judged or from scores."""
    save_preference(ws, traces["run-a"], traces["run-b"], "run-a", "ann", "a looks better")
    store.save(traces["run-a"], "task_outcome", "success", "ann")
    store.save(traces["run-b"], "task_outcome", "failure", "ann")
    alike = {"run-a": rollout("run-a", "t1", same=True), "run-b": rollout("run-b", "t1",
                                                                          same=True)}
    found = preference_export(store.current_records(), alike, store.rubric, from_scores=True)
    assert found.rows == [] and "read the same" in found.left_out[0]


def test_the_conversational_variant_has_message_lists(ws, store, traces):
    save_preference(ws, traces["run-a"], traces["run-b"], "run-a", "ann", "a")
    (row,) = preference_rows(store.current_records(), traces,
                             options=ExportOptions(conversational=True))
    assert row["prompt"] == [{"role": "user", "content": "Task: t1\n"}]
    assert {m["role"] for m in row["chosen"]} == {"assistant", "user"}
    assert row["chosen"][0]["role"] == "assistant"  # the root orchestrator speaks first
    assert "".join(m["content"] for m in row["chosen"]) == \
        orchestration_text(traces["run-a"]).removeprefix("Orchestration:\n")


def test_a_tie_is_saved_but_makes_no_row(ws, store, traces):
    save_preference(ws, traces["run-a"], traces["run-b"], None, "ann", "no difference")
    assert ws.labelling.judgement("run-a", "run-b", "ann").chosen is None
    assert preference_rows(store.current_records(), traces) == []


@pytest.mark.parametrize("bad", [dict(chosen="run-z"), dict(strength=4), dict(reason=" "),
                                 dict(reviewer=""), dict(chosen=None, strength=2)])
def test_a_judgement_the_pair_refuses_is_not_saved(ws, store, traces, bad):
    args = dict(chosen="run-a", reviewer="ann", reason="why", strength=None) | bad
    with pytest.raises(LabelError):
        save_preference(ws, traces["run-a"], traces["run-b"], **args)
    assert store.count() == 0


def test_a_trace_cannot_be_judged_against_itself(ws, store, traces):
    with pytest.raises(LabelError, match="two different"):
        save_preference(ws, traces["run-a"], traces["run-a"], "run-a", "ann", "why")


def test_judgements_stay_out_of_the_reward_exports(ws, store, traces):
    save_preference(ws, traces["run-a"], traces["run-b"], "run-a", "ann", "why", strength=2)
    assert reward_rows(store.current_records(), store.rubric) == []


def test_from_scores_pairs_traces_of_one_task_by_their_mean_reward(store, traces, folder, url,
                                                                   tmp_path):
    store.save(traces["run-a"], "task_outcome", "success", "ann")          # score 1.0
    store.save(traces["run-b"], "task_outcome", "failure", "ann")          # score -1.0
    store.save(traces["run-c"], "task_outcome", "partial", "ann")          # score 0.0
    store.save(traces["run-z"], "task_outcome", "success", "ann")          # another task
    rows = export(url, folder, tmp_path / "pref.jsonl", "--from-scores")
    pairs = {(r["chosen_trace_id"], r["rejected_trace_id"]): r for r in rows}
    assert set(pairs) == {("run-a", "run-b"), ("run-a", "run-c"), ("run-c", "run-b")}
    assert pairs[("run-a", "run-b")]["margin"] == 1.0
    assert pairs[("run-a", "run-c")]["margin"] == 0.5
    assert all(r["source"] == "scores" and r["same_task"] for r in rows)
    assert pairs[("run-c", "run-b")]["chosen_score"] == 0.0


def test_a_judged_pair_overrides_its_scores(ws, store, traces):
    store.save(traces["run-a"], "task_outcome", "success", "ann")
    store.save(traces["run-b"], "task_outcome", "failure", "ann")
    save_preference(ws, traces["run-a"], traces["run-b"], "run-b", "bob", "a got lucky")
    rows = preference_rows(store.current_records(), traces, from_scores=True)
    assert [(r["chosen_trace_id"], r["source"]) for r in rows] == [("run-b", "judged")]


def test_traces_with_equal_scores_make_no_pair(store, traces):
    store.save(traces["run-a"], "task_outcome", "success", "ann")
    store.save(traces["run-b"], "task_outcome", "success", "bob")
    assert score_rows(store.current_records(), traces, store.rubric).rows == []


def test_without_traces_the_preference_export_says_what_it_needs(ws, url, tmp_path, capsys):
    code = main(["labels", "export", "--db", url, "--format", "preference", "-o",
                 str(tmp_path / "p.jsonl")])
    assert code == 2 and "--traces" in capsys.readouterr().err


def test_a_pair_whose_trace_is_missing_is_reported_and_skipped(ws, store, traces, url, tmp_path,
                                                                capsys):
    save_preference(ws, traces["run-a"], traces["run-b"], "run-a", "ann", "why")
    only_a = tmp_path / "only-a"
    only_a.mkdir()
    write_json(only_a, traces["run-a"].to_dict(), "run-a.json")
    rows = export(url, only_a, tmp_path / "p.jsonl")
    assert rows == [] and "run-a vs run-b skipped" in capsys.readouterr().err


def test_a_database_from_before_pairs_gains_the_pair_column(tmp_path, folder, traces):
    """A 0.1 database whose labels table is still at its schema 1 (no pair column) is adopted
    with the column added, and takes judgements."""
    import shutil
    import sqlite3

    path = tmp_path / "old.db"
    shutil.copy(REPO / "tests" / "fixtures" / "legacy" / "orchviz-0.1.db", path)
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM labels WHERE pair_trace_id IS NOT NULL")
        conn.execute("ALTER TABLE labels DROP COLUMN pair_trace_id")  # as labels schema 1 was
        conn.execute("UPDATE orchviz_schema SET version = 1 WHERE name = 'labels'")
        [(before,)] = conn.execute("SELECT count(*) FROM labels")
    ws = make_workspace(tmp_path, traces=[folder], db=path)
    save_preference(ws, traces["run-a"], traces["run-b"], "run-a", "ann", "why")
    assert ws.labelling.count() == before + 1
    assert len(preference_rows(ws.labelling.current_records(), traces)) == 1


def test_an_empty_preference_export_says_why_without_scores(ws, store, traces, folder, url,
                                                             tmp_path, capsys):
    store.save(traces["run-a"], "task_outcome", "failure", "ann")
    assert export(url, folder, tmp_path / "pref.jsonl") == []
    said = capsys.readouterr().out
    assert said.startswith("0 preference pairs -> ")
    assert "no pair of traces was judged" in said and "--from-scores also pairs" in said


def test_an_empty_preference_export_from_scores_says_no_two_scored_traces_share_a_task(
        ws, store, traces, folder, url, tmp_path, capsys):
    store.save(traces["run-a"], "task_outcome", "failure", "ann")
    store.save(traces["run-z"], "task_outcome", "success", "ann")
    assert export(url, folder, tmp_path / "pref.jsonl", "--from-scores") == []
    said = capsys.readouterr().out
    assert "no two of the 2 scored traces attempt the same task" in said


def test_an_empty_preference_export_from_scores_says_the_scores_tie(ws, store, traces, folder,
                                                                    url, tmp_path, capsys):
    store.save(traces["run-a"], "task_outcome", "failure", "ann")
    store.save(traces["run-b"], "task_outcome", "failure", "ann")
    assert export(url, folder, tmp_path / "pref.jsonl", "--from-scores") == []
    assert "have the same score (t1: " in capsys.readouterr().out


def test_an_export_of_no_labels_says_none_was_read(url, folder, tmp_path, capsys):
    assert export(url, folder, tmp_path / "pref.jsonl", "--from-scores") == []
    assert "no current label was read" in capsys.readouterr().out


@pytest.mark.parametrize("format", ["jsonl", "stepwise", "decision-pairs", "unpaired"])
def test_every_export_writing_no_row_says_why_in_one_sentence(ws, store, traces, folder, url,
                                                             tmp_path, capsys, format):
    if format != "jsonl":  # a label whose trace makes no row of the shape
        store.save(traces["run-a"], "task_outcome", "success", "ann", comment="")
    out = tmp_path / "out.jsonl"
    extra = ["--traces", str(folder)] if format != "jsonl" else []
    code = main(["labels", "export", "--db", url, "--format", format, "-o", str(out), *extra])
    assert code == 0
    said = capsys.readouterr().out.strip()
    assert said.startswith("0 ") and " · " in said, said
    why = said.split(" · ", 1)[1]
    assert why.endswith(".") and why.count(". ") == 0, why
