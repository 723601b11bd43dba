"""`orchviz campaign ...`: create a campaign over a folder of traces, list it, see where it
stands, export its labels in every labels format (everything, or adjudicated answers only),
and name its members; what it cannot do is one line with exit code 1."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from factories import copy_demos
from viz_app.cli import main
from viz_app.export import FORMATS
from viz_app.labels.label import Reviewer
from viz_app.workspace import Workspace

LEAD = Reviewer(name="lead", via="cli")


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def lib(tmp_path) -> Path:
    return copy_demos(tmp_path / "lib")


@pytest.fixture
def db(tmp_path) -> Path:
    return tmp_path / "orchviz.db"


def reviewed(db: Path, lib: Path, name: str, **per_reviewer) -> Workspace:
    """Each reviewer (keyword) saves every target they are offered with their answer to
    task_outcome."""
    ws = Workspace.open(db, traces=[lib])
    for reviewer, value in per_reviewer.items():
        me = Reviewer(name=reviewer, via="self-declared")
        while (claim := ws.campaigns.claim_next(name, me)) is not None:
            ws.campaigns.submit(claim, {"task_outcome": value})
    return ws


def test_create_samples_the_library_and_list_shows_the_campaign(capsys, lib, db):
    code, out, _ = run(capsys, "campaign", "create", "pilot", "--traces", lib, "--db", db,
                       "--sample", 4, "--seed", 2, "--questions", "task_outcome",
                       "--per-target", 2, "--lead", "lee")
    assert code == 0
    assert out.startswith("campaign pilot: 4 targets, 8 reviews to make (K=2), 0 gold")
    code, out, _ = run(capsys, "campaign", "list", "--db", db)
    assert code == 0 and out.startswith("pilot: 4 targets, K=2, 1 questions, by lee on ")


def test_create_without_questions_asks_the_required_ones_and_says_so(capsys, lib, db):
    code, out, _ = run(capsys, "campaign", "create", "plain", "--traces", lib, "--db", db,
                       "--lead", "lee")
    assert code == 0
    campaign = Workspace.open(db, traces=[lib]).campaigns.get("plain")
    assert not {"message_necessity", "spawn_necessity", "delegation_fit"} & set(
        campaign.questions)
    assert "task_outcome" in campaign.questions
    assert ("no --questions: the required questions are asked, with those on the same "
            "targets; message_necessity, spawn_necessity, delegation_fit, missed_decision "
            "(optional, on targets of their own) only when named with --questions") in out


def test_create_takes_filters_and_a_gold_file(capsys, lib, db, tmp_path):
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"trace_id": "demo-10-review-premature-stop", "event_id": "e13",
                                "question": "stopping_correctness",
                                "value": "premature"}) + "\n")
    code, out, _ = run(capsys, "campaign", "create", "stops", "--traces", lib, "--db", db,
                       "--filter", "topology=centralized", "--filter", "events>=14",
                       "--questions", "stopping_correctness", "--gold", gold)
    assert code == 0, out
    ws = Workspace.open(db, traces=[lib])
    found = ws.campaigns.targets(ws.campaigns.get("stops"))
    rows = {r.trace_id: r for r in ws.library.update_index().rows}
    assert found and all(rows[t.trace_id].topology == "centralized"
                         and rows[t.trace_id].events >= 14 for t in found)
    assert [t.trace_id for t in found if t.gold] == ["demo-10-review-premature-stop"]


def test_create_with_groups_takes_whole_task_groups(capsys, lib, db):
    code, out, _ = run(capsys, "campaign", "create", "g", "--traces", lib, "--db", db,
                       "--groups", "--sample", 2, "--questions", "task_outcome")
    assert code == 0 and out.startswith("campaign g: 2 targets")


def test_a_filter_it_cannot_read_is_one_line(capsys, lib, db):
    code, out, err = run(capsys, "campaign", "create", "x", "--traces", lib, "--db", db,
                         "--filter", "colour=red")
    assert code == 1 and out == ""
    assert err == "orchviz: --filter 'colour=red': no key 'colour' (keys: system, topology, " \
                  "task, format, folder, text, or a figure)\n"


def test_an_unknown_campaign_is_one_line(capsys, db):
    code, _, err = run(capsys, "campaign", "status", "nope", "--db", db)
    assert (code, err) == (1, "orchviz: there is no campaign named 'nope'\n")


def test_status_reports_progress_reviewers_gold_alpha_and_disagreements(capsys, lib, db,
                                                                         tmp_path):
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"trace_id": "demo-01-centralized-faithful", "event_id": None,
                                "question": "task_outcome", "value": "success"}) + "\n")
    assert run(capsys, "campaign", "create", "s", "--traces", lib, "--db", db,
               "--questions", "task_outcome", "--per-target", 2, "--gold", gold)[0] == 0
    reviewed(db, lib, "s", ann="success", bob="failure")
    code, out, _ = run(capsys, "campaign", "status", "s", "--db", db)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "campaign s: 12 targets, 12 complete, 0 in progress; 24 of 24 reviews " \
                       "saved; 1 gold"
    assert lines[1].split() == ["ann", "12", "saved,", "0", "reserved,", "0", "skipped;", "gold",
                                "1/1", "(100%)"]
    assert "gold 0/1 (0%)" in lines[2]
    assert any(line.strip().startswith("task_outcome") and "alpha" in line for line in lines)
    assert "12 disagreements without an adjudication (left unresolved, never averaged):" in out
    code, out, _ = run(capsys, "campaign", "status", "s", "--db", db, "--json")
    data = json.loads(out)
    assert (data["targets"], data["complete"], data["in_progress"]) == (12, 12, 0)
    assert {r["reviewer"]: r["accuracy"] for r in data["reviewers"]} == {"ann": 1.0, "bob": 0.0}
    assert "task_outcome" in data["alpha"] and len(data["unresolved"]) == 12


def test_status_escapes_what_it_prints(capsys, lib, db):
    assert run(capsys, "campaign", "create", "e", "--traces", lib, "--db", db,
               "--questions", "task_outcome")[0] == 0
    reviewed(db, lib, "e", **{"ann\x1b[31m": "success"})
    code, out, _ = run(capsys, "campaign", "status", "e", "--db", db)
    assert code == 0 and "\x1b" not in out and "ann\\x1b[31m" in out


def adjudicated_campaign(capsys, lib, db) -> Workspace:
    assert run(capsys, "campaign", "create", "a", "--traces", lib, "--db", db,
               "--questions", "task_outcome", "--per-target", 2, "--sample", 3)[0] == 0
    ws = reviewed(db, lib, "a", ann="success", bob="success")
    first = ws.campaigns.targets(ws.campaigns.get("a"))[0]
    labels = [r["label_id"] for r in ws.labelling.current_records(campaign="a")
              if r["reviewer"] == "bob" and r["trace_id"] == first.trace_id]
    ws.campaigns.retract(labels, LEAD, "trial run")
    me = Reviewer(name="cat", via="self-declared")
    while (claim := ws.campaigns.claim_next("a", me)) is not None:  # nothing: every target is complete
        ws.campaigns.submit(claim, {"task_outcome": "failure"})
    second = ws.campaigns.targets(ws.campaigns.get("a"))[1]
    ws.labelling.add(ws.labelling.checked(ws.library.trace(second.trace_id), None, {"task_outcome": "failure"},
                                    "cat", campaign="a", identified_by="cli"))
    ws.campaigns.adjudicate("a", first.trace_id, None, {"task_outcome": "partial"}, LEAD, "checked")
    return ws


def test_export_all_and_adjudicated_only(capsys, lib, db, tmp_path):
    ws = adjudicated_campaign(capsys, lib, db)
    out_all, out_adj = tmp_path / "all.jsonl", tmp_path / "adj.jsonl"
    code, _, err = run(capsys, "campaign", "export", "a", "--db", db, "--format", "jsonl",
                       "-o", out_all)
    assert code == 0
    every = [orjson.loads(x) for x in out_all.read_bytes().splitlines()]
    assert {r["campaign"] for r in every} == {"a"}
    assert len(every) == 3 + 3 - 1 + 1 + 1  # ann, bob less the retracted, cat, the lead
    assert "1 disagreement without an adjudication" in err
    code, _, _ = run(capsys, "campaign", "export", "a", "--db", db, "--format", "jsonl",
                     "--adjudicated-only", "-o", out_adj)
    only = [orjson.loads(x) for x in out_adj.read_bytes().splitlines()]
    assert code == 0 and [(r["source"], r["value"]) for r in only] == [
        ("adjudication", "partial")]


@pytest.mark.parametrize("format", [f for f, v in FORMATS.items() if v.reads == "labels"])
def test_export_writes_every_labels_format(format, capsys, lib, db, tmp_path):
    adjudicated_campaign(capsys, lib, db)
    target = tmp_path / f"out-{format}"
    code, out, err = run(capsys, "campaign", "export", "a", "--db", db, "--traces", lib,
                         "--format", format, "--adjudicated-only", "-o", target)
    assert code == 0, err
    written = [target] if target.exists() else list(tmp_path.glob(f"out-{format}*"))
    assert written and all(p.exists() for p in written)


def test_members_add_and_list(capsys, db):
    code, out, _ = run(capsys, "campaign", "members", "add", "Lee@Example.org", "--role", "lead",
                       "--db", db)
    assert (code, out) == (0, "lee@example.org is a lead\n")
    run(capsys, "campaign", "members", "add", "rev@example.org", "--role", "reviewer",
        "--db", db)
    code, out, _ = run(capsys, "campaign", "members", "list", "--db", db)
    assert [line.split()[:2] for line in out.splitlines()] == [
        ["lee@example.org", "lead"], ["rev@example.org", "reviewer"]]
    assert Workspace.open(db).campaigns.role("lee@example.org") == "lead"


def test_create_over_an_optional_question_then_close_and_status_says_closed(capsys, lib, db):
    code, out, _ = run(capsys, "campaign", "create", "spawns", "--traces", lib, "--db", db,
                       "--questions", "spawn_necessity", "--lead", "lee")
    assert code == 0 and out.startswith("campaign spawns: ")
    targets = int(out.split(": ")[1].split()[0])
    assert targets > 0
    ws = Workspace.open(db, traces=[lib])
    claim = ws.campaigns.claim_next("spawns", Reviewer(name="ann", via="cli"))
    assert claim.questions == ["spawn_necessity", "spawn_correction"]
    code, out, _ = run(capsys, "campaign", "close", "spawns", "--db", db, "--lead", "lee")
    assert (code, out) == (0, f"campaign spawns is closed: no more claims ({targets} targets)\n")
    assert ws.campaigns.claim_next("spawns", Reviewer(name="bob", via="cli")) is None
    code, out, _ = run(capsys, "campaign", "status", "spawns", "--db", db)
    assert code == 0 and "; closed 20" in out.splitlines()[0]
    code, out, _ = run(capsys, "campaign", "list", "--db", db)
    assert ", closed 20" in out


def test_closing_a_campaign_that_is_not_there_is_one_line(capsys, db):
    code, out, err = run(capsys, "campaign", "close", "nope", "--db", db)
    assert (code, out) == (1, "") and err.strip().endswith("there is no campaign named 'nope'")
    assert len(err.strip().splitlines()) == 1


def test_create_over_a_pool_samples_it_in_its_index(capsys, tmp_path, db):
    from test_library_pool import pool_workspace

    ws = pool_workspace(tmp_path)
    location = ws.library.pools[0]
    code, out, err = run(capsys, "campaign", "create", "pooled", "--traces", location, "--db",
                         ws.settings.db_url, "--sample", 5, "--seed", 11, "--questions",
                         "task_outcome")
    assert code == 0, err
    assert out.startswith("campaign pooled: 5 targets")
    again = Workspace.open(ws.settings.db_url, traces=[location])
    assert [t.trace_id for t in again.campaigns.targets(again.campaigns.get("pooled"))] == \
        again.library.sample_pool(5, seed=11)
    while (claim := again.campaigns.claim_next("pooled", Reviewer(name="ann", via="cli"))) is not None:
        again.campaigns.submit(claim, {"task_outcome": "success"})
    code, out, err = run(capsys, "campaign", "export", "pooled", "--traces", location, "--db",
                         ws.settings.db_url, "--format", "traces", "-o", tmp_path / "out")
    assert (code, err) == (0, "")
    assert sorted(p.stem for p in (tmp_path / "out").iterdir()) == sorted(
        again.library.sample_pool(5, seed=11))
