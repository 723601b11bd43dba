"""`--format decision-groups`: the original decision and the branches replayed from one fork
point in one group, each member's labels its reward (the shape GRPO-style trainers read)."""

from __future__ import annotations

import orjson

from factories import make_workspace, premature
from viz_app.cli import main
from viz_app.export.decision_groups import DECISION_GROUP_FIELDS
from viz_app.export.readers import read_export


def branch(trace_id: str, words: str) -> dict:
    """Demo 10 replayed from its stop e13 with another decision there."""
    raw = premature().to_dict()
    raw["trace_id"] = trace_id
    fork = next(e for e in raw["events"] if e["id"] == "e13")
    fork.update(forked_from="demo-10-review-premature-stop", fork_event="e13", content=words,
                decision="continue", replay_model="stub")
    return raw


def export(tmp_path, *extra):
    out = tmp_path / "groups.jsonl"
    code = main(["labels", "export", "--db", str(tmp_path / "orchviz.db"), "--traces",
                 str(tmp_path / "traces"), "--format", "decision-groups", "-o", str(out),
                 *extra])
    assert code == 0
    return out, [orjson.loads(x) for x in out.read_bytes().splitlines()]


def test_an_original_and_its_branches_are_one_group_with_their_labels_as_rewards(tmp_path):
    ws = make_workspace(tmp_path, traces=[premature(), branch("b1", "Wait for db_analyst."),
                                          branch("b2", "Wait a little, then stop.")])
    original, b1, b2 = ws.library.trace("demo-10-review-premature-stop"), ws.library.trace("b1"), ws.library.trace("b2")
    ws.labelling.save(original, "aggregation_quality", 1, "ann", "e12")  # before the fork
    ws.labelling.save_target(original, "e13", {"stopping_correctness": "premature",
                                            "stop_should_have_been": "e15"}, "ann")
    ws.labelling.save(original, "task_outcome", "failure", "ann")
    ws.labelling.save(b1, "task_outcome", "success", "ann")
    ws.labelling.save(b2, "task_outcome", "partial", "ann")
    out, rows = export(tmp_path)
    (row,) = rows
    assert tuple(row) == DECISION_GROUP_FIELDS
    assert row["members"] == ["demo-10-review-premature-stop", "b1", "b2"]
    assert row["original"] == [True, False, False] and row["fork_event"] == "e13"
    assert row["rewards"] == [-1.0, 1.0, 0.0]  # the merge's score is before the fork: not in
    assert abs(sum(row["advantages"])) < 1e-9 and row["advantages"][1] == 1.0
    assert row["completions"][0].startswith("stop: Two of three analysts agree")
    assert row["completions"][1].startswith("continue: Wait for db_analyst.")
    assert row["prompt"].endswith("Recommend rolling back v2.3.0.\n")  # up to the fork
    assert row["rewards_by_question"][0] == {"stopping_correctness": -1.0,
                                             "task_outcome": -1.0}
    back = {(r["trace_id"], r["question"]) for r in read_export("decision-groups", out)}
    assert ("b1", "task_outcome") in back and ("demo-10-review-premature-stop",
                                                "aggregation_quality") not in back


def test_a_fork_with_one_labelled_member_is_left_out_and_named(tmp_path, capsys):
    ws = make_workspace(tmp_path, traces=[premature(), branch("b1", "Wait for db_analyst.")])
    ws.labelling.save(ws.library.trace("b1"), "task_outcome", "success", "ann")
    _, rows = export(tmp_path)
    assert rows == []
    assert "fewer than two labelled members" in capsys.readouterr().err
