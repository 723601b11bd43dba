"""The learned producer: `orchviz suggest train` fits a calibrated model on the team's blind
labels of one question (adjudications first, never suggestions or imported labels), reports its
held-out agreement, stores it under its training set's hash, and `--producer learned` suggests
with calibrated confidence and its top features as evidence."""

from __future__ import annotations

import json
import sys

import pytest
import yaml

from factories import DEMO_DIR, REPO, make_workspace
from viz_app.analysis import analyze
from viz_app.cli import main
from viz_app.labels.rubric import targets
from viz_app.suggest.learned import MIN_PER_ANSWER, MIN_TARGETS, LearnError

pytest.importorskip("sklearn", reason="the learned producer is the `agreement` extra")

SPAWN = "spawn_necessity"
EXPECTED = yaml.safe_load((REPO / "tests" / "fixtures" / "demo_expected_suggestions.yaml")
                          .read_text("utf-8"))
"""The demos' expected answers, written by a person reading the traces: the labels here."""


def spawn_targets(ws):
    """(trace, spawn event id, the expected answer) for every spawn of the demos."""
    found = []
    for trace in ws.library.read_traces().traces.values():
        for t in targets(ws.rubric, analyze(trace)):
            if SPAWN in t.questions:
                answer = EXPECTED.get(trace.trace_id, {}).get(t.key, {}).get(SPAWN, "necessary")
                found.append((trace, t.key, answer))
    return found


def labelled(tmp_path, limit=None, db=None):
    """A workspace of the demos whose spawns a reviewer labelled blind (84 spawns: 66
    necessary, 18 redundant), the first `limit` of them when given; on SQLite in tmp_path, or
    on the database `db` names."""
    ws = make_workspace(tmp_path, traces=[DEMO_DIR], db=db)
    spawns = spawn_targets(ws)[:limit]
    ws.labelling.add([label for trace, key, answer in spawns
                   for label in ws.labelling.checked(trace, key, {SPAWN: answer}, "ann",
                                                  suggestions_visible=False)])
    return ws, spawns


def learnable(tmp_path):
    """A workspace of the demos whose 84 spawns a reviewer labelled blind by a rule the
    features can learn (a child with few events was a redundant spawn: 35 necessary, 49
    redundant), so its model agrees with the team above chance on held-out traces. The
    demos' expected answers (`labelled`) are not learnable from these features on so few
    traces: that model is worse than chance on its own folds, and is refused."""
    from viz_app.suggest.features import question_rows

    ws = make_workspace(tmp_path, traces=[DEMO_DIR])
    spawns = []
    for trace, key, _ in spawn_targets(ws):
        few = question_rows(trace, ws.rubric, SPAWN)[key]["child_events"].value < 1.5
        spawns.append((trace, key, "redundant" if few else "necessary"))
    ws.labelling.add([label for trace, key, answer in spawns
                   for label in ws.labelling.checked(trace, key, {SPAWN: answer}, "ann",
                                                  suggestions_visible=False)])
    return ws, spawns


def train(ws, **kw):
    return ws.suggestions.train(SPAWN, resamples=50, **kw)


def test_too_few_labels_is_refused_in_one_sentence_saying_how_many_are_needed(tmp_path):
    ws, _ = labelled(tmp_path, limit=12)
    with pytest.raises(LearnError) as refused:
        train(ws)
    said = str(refused.value)
    assert "has 12 usable labelled targets" in said and f"at least {MIN_TARGETS}" in said
    assert f"at least {MIN_PER_ANSWER} of each" in said and "\n" not in said
    assert ws.suggestions.models() == []


def test_a_model_learns_from_the_blind_labels_and_reports_held_out_agreement(tmp_path):
    ws, spawns = labelled(tmp_path)
    model, added = train(ws)
    report = model.report
    assert added and report.targets == len(spawns) == 84
    assert report.answers == {"necessary": 66, "redundant": 18}
    assert report.folds >= 2 and report.learned.pairs == 84
    assert report.learned.alpha.value is not None and report.learned.kappa.value is not None
    assert report.learned.alpha.low <= report.learned.alpha.value <= report.learned.alpha.high
    assert 0.0 <= report.accuracy <= 1.0 and 0.0 <= report.mean_confidence <= 1.0


def test_the_same_training_set_gives_the_same_hash_and_is_stored_once(tmp_path):
    ws, _ = labelled(tmp_path)
    first, added = train(ws)
    again, added_again = train(ws, seed=7)
    assert again.model_id == first.model_id and added and not added_again
    assert [m.model_id for m in ws.suggestions.models()] == [first.model_id]


def test_one_more_label_gives_a_new_hash_even_when_it_agrees(tmp_path):
    ws, spawns = labelled(tmp_path)
    first, _ = train(ws)
    trace, key, answer = spawns[0]
    ws.labelling.save_target(trace, key, {SPAWN: answer}, "bob", suggestions_visible=False)
    second, added = train(ws)
    assert added and second.model_id != first.model_id
    assert sorted(m.model_id for m in ws.suggestions.models()) == sorted(
        [first.model_id, second.model_id])


def test_suggestions_imported_labels_and_labels_made_with_suggestions_in_view_are_not_learnt(
        tmp_path):
    ws, spawns = labelled(tmp_path)
    first, _ = train(ws)
    ws.suggestions.run(ws.library.read_traces().traces)  # the rules' suggestions, stored
    trace, key, answer = spawns[1]
    other = "harmful"
    ws.labelling.add(ws.labelling.checked(trace, key, {SPAWN: other}, "importer", source="import"))
    ws.labelling.add(ws.labelling.checked(trace, key, {SPAWN: other}, "cy",
                                    suggestions_visible=True))
    second, added = train(ws)
    assert second.model_id == first.model_id and not added
    assert second.report.left_out.imported == 1 and second.report.left_out.visible == 1
    learnt = {i for row in second.rows for i in row.label_ids}
    sources = {r["label_id"]: (r["source"], r["suggestions_visible"])
               for r in ws.labelling.current_records()}
    assert {sources[i] for i in learnt} == {("human", False)}


def test_a_disputed_target_is_left_out_and_an_adjudicated_one_takes_the_adjudication(tmp_path):
    ws, spawns = labelled(tmp_path)
    (t1, k1, a1), (t2, k2, a2) = spawns[0], spawns[1]
    flip = {"necessary": "redundant", "redundant": "necessary"}
    for trace, key, answer in ((t1, k1, a1), (t2, k2, a2)):
        ws.labelling.save_target(trace, key, {SPAWN: flip[answer]}, "bob",
                              suggestions_visible=False)
    ws.labelling.add(ws.labelling.checked(t2, k2, {SPAWN: flip[a2]}, "lead", source="adjudication"))
    model, _ = train(ws)
    rows = {(r.trace_id, r.event_id): r for r in model.rows}
    assert model.report.left_out.disputed == 1 and (t1.trace_id, k1) not in rows
    settled = rows[(t2.trace_id, k2)]
    assert settled.basis == "adjudication" and settled.value == flip[a2]


def test_learned_suggestions_carry_calibrated_confidence_evidence_and_the_model_version(
        tmp_path):
    ws, spawns = learnable(tmp_path)
    model, _ = train(ws)
    labels_before = len(ws.labelling.current_records())
    report = ws.suggestions.run(ws.library.read_traces().traces, producer="learned")
    made = [s for trace in {t.trace_id for t, _, _ in spawns}
            for s in ws.suggestions.all(trace, producer="learned")]
    assert report.suggestions == len(made) == len(spawns)
    assert len(ws.labelling.current_records()) == labels_before  # kept apart from the answers
    for s in made:
        assert 0.0 <= s.confidence <= 1.0
        assert s.producer.version == model.version and s.question == SPAWN
        assert s.evidence and s.evidence[0] == s.event_id
        assert s.explanation.startswith(f"{s.value}: ") and "(weight " in s.explanation


def test_a_model_read_back_from_the_store_suggests_exactly_what_it_did_when_trained(tmp_path):
    ws, _ = learnable(tmp_path)
    trained, _ = train(ws)
    [stored] = ws.suggestions.models()
    trace = ws.library.read_traces().traces["demo-12-review-over-spawning"]
    from viz_app.suggest.learned import LearnedProducer

    fresh, _ = LearnedProducer([trained]).produce(trace, ws.rubric)
    again, _ = LearnedProducer([stored]).produce(trace, ws.rubric)
    assert [(s.event_id, s.value, s.confidence, s.explanation) for s in fresh] == \
        [(s.event_id, s.value, s.confidence, s.explanation) for s in again]


def test_a_model_is_stored_and_read_back_on_postgresql(tmp_path, postgres_url):
    from test_migrations import postgres_database

    with postgres_database(postgres_url) as url:
        ws, _ = labelled(tmp_path, db=url)
        trained, added = train(ws)
        [stored] = ws.suggestions.models()
        assert added and stored.model_id == trained.model_id
        assert stored.x == trained.x and stored.rows == trained.rows
        assert stored.report == trained.report
        assert ws.suggestions.model(trained.version).model_id == trained.model_id


def test_a_tags_question_is_refused_in_one_sentence(tmp_path):
    ws, _ = labelled(tmp_path, limit=1)
    with pytest.raises(LearnError, match="aggregation_issues is a tags question"):
        ws.suggestions.train("aggregation_issues")


def test_without_scikit_learn_the_extra_to_install_is_named(tmp_path, monkeypatch):
    ws, _ = labelled(tmp_path, limit=1)
    monkeypatch.setitem(sys.modules, "sklearn", None)
    with pytest.raises(LearnError, match=r"scikit-learn: pip install 'orchviz\[agreement\]'"):
        train(ws)


# -- the command -----------------------------------------------------------------------------


def test_train_has_help(capsys):
    with pytest.raises(SystemExit) as done:
        main(["suggest", "train", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "--question Q" in out and "--campaign C" in out and "blind" in out


def test_train_prints_the_version_and_held_out_alpha_and_suggest_uses_it(tmp_path, capsys):
    ws, _ = learnable(tmp_path)
    db = str(tmp_path / "orchviz.db")
    assert main(["suggest", "train", "--db", db, "--traces", str(DEMO_DIR), "--question", SPAWN,
                 "--resamples", "50"]) == 0
    out = capsys.readouterr().out
    [model] = ws.suggestions.models()
    assert f"version {model.version}" in out and "alpha" in out and "kappa" in out
    assert main(["suggest", "--db", db, "--traces", str(DEMO_DIR), "--producer", "learned"]) == 0
    assert "learned: 12 traces, 84 suggestions (84 new)" in capsys.readouterr().out


def test_train_json_is_the_report(tmp_path, capsys):
    labelled(tmp_path)
    assert main(["suggest", "train", "--db", str(tmp_path / "orchviz.db"), "--traces",
                 str(DEMO_DIR), "--question", SPAWN, "--resamples", "20", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["report"]["targets"] == 84 and len(found["model_id"]) == 64


def test_train_says_when_the_labelled_traces_are_not_found(tmp_path, capsys):
    labelled(tmp_path)
    assert main(["suggest", "train", "--db", str(tmp_path / "orchviz.db"), "--question",
                 SPAWN]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "84 whose trace is not found" in err


def test_train_with_too_few_labels_is_one_line_and_exit_1(tmp_path, capsys):
    labelled(tmp_path, limit=5)
    assert main(["suggest", "train", "--db", str(tmp_path / "orchviz.db"), "--question",
                 SPAWN]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"at least {MIN_TARGETS}" in err


def test_suggest_learned_without_a_model_says_what_to_run(tmp_path, capsys):
    make_workspace(tmp_path, traces=[DEMO_DIR])
    assert main(["suggest", "--db", str(tmp_path / "orchviz.db"), "--traces", str(DEMO_DIR),
                 "--producer", "learned"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "orchviz suggest train --question Q" in err


# -- a campaign's labels -----------------------------------------------------------------------


def test_a_campaign_s_model_learns_from_its_claims_and_its_lead_s_adjudication_only(tmp_path):
    from viz_app.labels.campaign import CampaignSpec, Sample
    from viz_app.labels.label import Reviewer

    ws, spawns = labelled(tmp_path)  # ann's labels outside any campaign
    lead = Reviewer(name="lead", via="cli")
    campaign = ws.campaigns.create(CampaignSpec(name="spawns", questions=[SPAWN],
                                               sample=Sample(n=12), per_target=2), lead)
    expected = {(t.trace_id, k): a for t, k, a in spawns}
    flip = {"necessary": "redundant", "redundant": "necessary"}
    disputed = None
    for who in ("bea", "cal"):
        person = Reviewer(name=who, via="self-declared")
        while (claim := ws.campaigns.claim_next(campaign.name, person)) is not None:
            answer = expected[(claim.trace_id, claim.event_id or "")]
            if who == "cal" and disputed is None:
                disputed, answer = (claim.trace_id, claim.event_id), flip[answer]
            ws.campaigns.submit(claim, {SPAWN: answer})
    ws.campaigns.adjudicate(campaign.name, *disputed, {SPAWN: flip[expected[disputed]]}, lead,
                  "the task was given twice")
    model, _ = train(ws, campaign=campaign.name)
    learnt = {i for row in model.rows for i in row.label_ids}
    in_campaign = {r["label_id"] for r in ws.labelling.current_records(campaign=campaign.name)}
    assert model.campaign == campaign.name and learnt <= in_campaign
    assert len(model.rows) == len(spawns)
    settled = next(r for r in model.rows if (r.trace_id, r.event_id) == disputed)
    assert settled.basis == "adjudication" and settled.value == flip[expected[disputed]]
    assert model.model_id != train(ws)[0].model_id


def test_an_explanation_holds_no_text_of_the_trace(tmp_path):
    from viz_app.io.native import trace_from_dict
    from viz_app.suggest.learned import LearnedProducer
    from viz_app.synth import hostile_trace

    ws, _ = learnable(tmp_path)
    model, _ = train(ws)
    hostile = trace_from_dict(hostile_trace(), "hostile.json")
    made, _ = LearnedProducer([model]).produce(hostile, ws.rubric)
    assert made
    texts = {x for e in hostile.events for x in (e.text, e.agent, e.to or "") if len(x) >= 6}
    for s in made:
        assert s.explanation.isascii() and not any(t in s.explanation for t in texts)
        assert "<" not in s.explanation and "\x1b" not in s.explanation


def test_a_model_fitted_on_other_features_is_refused_not_misread(tmp_path):
    from viz_app.suggest.learned import LearnedProducer

    ws, _ = labelled(tmp_path)
    model, _ = train(ws)
    stale = model.model_copy(update={"features_version": "1/rules-2"})
    with pytest.raises(LearnError, match=r"features version 1/rules-2.*train it again"):
        LearnedProducer([stale])


def test_models_lists_each_stored_model_and_marks_the_one_in_use(tmp_path, capsys):
    ws, spawns = learnable(tmp_path)
    first, _ = train(ws)
    trace, key, answer = spawns[0]
    ws.labelling.save_target(trace, key, {SPAWN: answer}, "bob", suggestions_visible=False)
    second, _ = train(ws)
    assert main(["suggest", "models", "--db", str(tmp_path / "orchviz.db")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(second.version) and lines[0].endswith("(in use)")
    assert lines[1].startswith(first.version) and "held-out alpha" in lines[1]


# -- a stored model is checked before use (issue 39, item 6) --------------------------------------


def edit_stored(ws, change) -> None:
    """Edit the stored model's row as someone with the database file could: `change(training)`
    returns the new text of its `training` column (given the column's JSON as a dict)."""
    from sqlalchemy import update

    from viz_app.store.tables import learned_models_table as table

    with ws.engine.begin() as conn:
        (text,) = conn.execute(table.select().with_only_columns(table.c.training)).one()
        conn.execute(update(table).values(training=change(json.loads(text))))


@pytest.mark.parametrize("change, says", [
    (lambda t: json.dumps({**t, "answers": t["answers"][::-1]}), "the stored answers were edited"),
    (lambda t: json.dumps({**t, "answers": ["<script>x</script>", "'; DROP TABLE labels; --"]}),
     "the stored answers were edited"),
    (lambda t: json.dumps({**t, "rows": [{**r, "value": "redundant"} for r in t["rows"]]}),
     "do not give the hash that names it"),
    (lambda t: json.dumps(t)[:-40], "its JSON is broken"),
    (lambda t: json.dumps({**t, "x": "DROP TABLE"}), "does not hold a model's fields"),
], ids=["answers-flipped", "script-and-drop-table", "rows-edited", "broken-json", "not-a-model"])
def test_an_edited_stored_model_is_refused_in_one_sentence_and_suggests_nothing(
        tmp_path, capsys, change, says):
    ws, _ = learnable(tmp_path)
    train(ws)
    edit_stored(ws, change)
    with pytest.raises(LearnError) as refused:
        ws.suggestions.learned_producer()
    assert says in str(refused.value) and "train it again" in str(refused.value)
    db = str(tmp_path / "orchviz.db")
    assert main(["suggest", "--producer", "learned", "--db", db, "--traces", str(DEMO_DIR)]) == 1
    captured = capsys.readouterr()
    (line,) = captured.err.strip().splitlines()
    assert says in line and "Traceback" not in captured.err
    assert ws.suggestions.all("demo-12-review-over-spawning", producer="learned") == []
    assert main(["suggest", "models", "--db", db]) == 0  # listed, marked, never a traceback
    (listed,) = capsys.readouterr().out.strip().splitlines()
    assert says in listed and ("REFUSED" in listed or "NOT USED" in listed)


def test_training_again_replaces_a_stored_model_whose_row_was_edited(tmp_path):
    ws, _ = learnable(tmp_path)
    model, _ = train(ws)
    edit_stored(ws, lambda t: json.dumps(t)[:-40])
    again, added = train(ws)
    assert added and again.model_id == model.model_id
    assert [m.model_id for m in ws.suggestions.models()] == [model.model_id]
    ws.suggestions.learned_producer()  # usable again


def test_a_model_worse_than_chance_on_its_own_held_out_folds_is_refused(tmp_path):
    from viz_app.suggest.learned import LearnedProducer

    ws, _ = learnable(tmp_path)
    model, _ = train(ws)
    report = model.report.model_copy(update={
        "accuracy": 0.35, "mean_confidence": 0.93,
        "learned": model.report.learned.model_copy(update={
            "alpha": model.report.learned.alpha.model_copy(update={"value": -0.48})})})
    worse = model.model_copy(update={"report": report})
    with pytest.raises(LearnError, match=r"worse than chance on its own held-out folds \(alpha "
                                         r"-0\.48, accuracy 0\.35 at a mean confidence of 0\.93\)"):
        LearnedProducer([worse], ws.rubric)


def test_the_demos_expected_answers_give_a_model_worse_than_chance_said_and_refused(
        tmp_path, capsys):
    """The issue's model: held-out alpha about -0.5, accuracy 0.35, confidence 0.93."""
    labelled(tmp_path)
    db = str(tmp_path / "orchviz.db")
    assert main(["suggest", "train", "--db", db, "--traces", str(DEMO_DIR), "--question", SPAWN,
                 "--resamples", "20"]) == 0
    (warning,) = capsys.readouterr().err.strip().splitlines()[-1:]
    assert warning.startswith("WARNING: this model agrees with the team worse than chance")
    assert main(["suggest", "--db", db, "--traces", str(DEMO_DIR), "--producer", "learned"]) == 1
    assert "worse than chance" in capsys.readouterr().err
    assert main(["suggest", "models", "--db", db]) == 0
    assert "NOT USED: agrees with the team worse than chance" in capsys.readouterr().out
