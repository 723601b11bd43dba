"""`orchviz suggest agreement`: each producer against the blind human labels of a store, as a
table with intervals and confusion matrices, or as JSON."""

from __future__ import annotations

import json

from factories import make_workspace, premature
from viz_app.cli import main
from viz_app.labels.label import Reviewer

STOP = "stopping_correctness"


def labelled_store(tmp_path):
    """A store with the rules' suggestions on the premature-stop demo and two blind reviewers'
    answers on its stop, and one answer made with suggestions in view."""
    trace = premature()
    ws = make_workspace(tmp_path, [trace])
    ws.suggestions.run([trace])
    [stop] = [s for s in ws.suggestions.all(trace.trace_id, question=STOP)]
    answers = {"premature": {STOP: "premature", "stop_should_have_been": "e15"},
               "correct": {STOP: "correct"}}
    for name, value, visible in (("ann", stop.value, False), ("bob", "correct", False),
                                 ("cy", stop.value, True)):
        ws.labelling.save_answers(trace, stop.event_id, answers[value], Reviewer(name=name, via="cli"),
                        suggestions_visible=visible)
    return tmp_path / "orchviz.db", stop


def test_json_gives_each_producer_and_the_reviewers_with_the_visible_label_left_out(tmp_path,
                                                                                  capsys):
    db, stop = labelled_store(tmp_path)
    assert main(["suggest", "agreement", "--db", str(db), "--question", STOP, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    rows = {r["rater"]: r for r in report["rows"]}
    assert set(rows) == {"rules", "reviewers"}
    assert rows["rules"]["pairs"] == 2 and rows["reviewers"]["pairs"] == 1
    assert report["left_out_visible"] == 1
    assert sum(map(sum, rows["rules"]["confusion"])) == 2


def test_the_table_names_each_rater_with_alpha_and_kappa(tmp_path, capsys):
    db, _ = labelled_store(tmp_path)
    assert main(["suggest", "agreement", "--db", str(db), "--question", STOP]) == 0
    out = capsys.readouterr().out
    assert "stopping_correctness (nominal)" in out
    assert any(line.strip().startswith("rules v") and "alpha" in line and "kappa" in line
               for line in out.splitlines())
    assert "1 made with suggestions in view" in out


def test_an_unknown_question_is_one_line_and_exit_1(tmp_path, capsys):
    db, _ = labelled_store(tmp_path)
    assert main(["suggest", "agreement", "--db", str(db), "--question", "nope"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nope" in err
