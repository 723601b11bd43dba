"""A dispute's comment thread: comments on a disputed target of a campaign are appended with
their provenance and never edited; the thread reads the reviewers' notes (one per save), the
comments and the lead's reason for the final answer together, in time order; a reviewer posts
and reads only on the disputes they are one side of, a lead on any target; the command line
lists a thread; the case-study report carries it. A lead hides a comment by a row of its own,
its text kept: the reviewers read "hidden by LEAD: reason" in its place."""

from __future__ import annotations

import json
import re

import pytest

from factories import DROPPED, DROPPED_ID, PREMATURE, PREMATURE_ID, make_workspace
from viz_app.cli import main
from viz_app.errors import LabelError
from viz_app.labels import COMMENT_LIMIT, Reviewer
from viz_app.labels.campaign import CampaignSpec
from viz_app.store import CommentStore
from viz_app.workspace import Workspace

LEAD = Reviewer(name="lee", via="cli")
ANN = Reviewer(name="ann", via="cli")
BOB = Reviewer(name="bob", via="cli")
NAME = "stops"


def disputed(tmp_path, *, db: str | None = None) -> Workspace:
    """Demo 10 and demo 9 in a campaign on their stops, two reviewers per target; ann and bob
    agree on demo 9 and disagree on demo 10's stop e13 (premature against correct), each with
    a note."""
    ws = make_workspace(tmp_path, traces=[PREMATURE, DROPPED], **({"db": db} if db else {}))
    ws.library.update_index()
    ws.campaigns.create(CampaignSpec(name=NAME, questions=["stopping_correctness"],
                                     per_target=2), LEAD)
    for reviewer, on_demo_10 in ((ANN, "premature"), (BOB, "correct")):
        while (claim := ws.campaigns.claim_next(NAME, reviewer)) is not None:
            answer = on_demo_10 if claim.trace_id == PREMATURE_ID else "correct"
            where = {"stop_should_have_been": "e15"} if answer == "premature" else {}
            ws.campaigns.submit(claim, {"stopping_correctness": answer, **where},
                                comment=f"{reviewer.name} thinks {answer}")
    return ws


@pytest.fixture
def ws(tmp_path) -> Workspace:
    return disputed(tmp_path)


def target(ws: Workspace) -> tuple[str, str, str]:
    (found,) = ws.campaigns.disagreements(NAME)
    return NAME, found.trace_id, found.event_id or ""


# -- the store -----------------------------------------------------------------------------------


def test_a_comment_is_stored_with_its_provenance_and_read_back_in_order(ws):
    store = CommentStore(ws.engine)
    first = store.add(NAME, PREMATURE_ID, "e13", "ann", "oidc", "reviewer", "  the db_analyst "
                      "never returned  ", trace_sha256="abc")
    second = store.add(NAME, PREMATURE_ID, "e13", "lee", "cli", "lead", "why e15?")
    store.add(NAME, PREMATURE_ID, "", "lee", "cli", "lead", "on the trace itself")
    assert [(c.author, c.identified_by, c.role, c.text, c.trace_sha256)
            for c in store.thread(NAME, PREMATURE_ID, "e13")] == [
        ("ann", "oidc", "reviewer", "the db_analyst never returned", "abc"),
        ("lee", "cli", "lead", "why e15?", "")]
    assert first.created_at <= second.created_at and first.comment_id != second.comment_id
    assert [c.text for c in store.thread(NAME, PREMATURE_ID, None)] == ["on the trace itself"]
    assert len(store.of_campaign(NAME)) == 3 and store.of_campaign("other") == []


def test_the_store_has_no_way_to_edit_or_delete_a_comment():
    verbs = {n for n in dir(CommentStore) if not n.startswith("_")}
    assert verbs == {"add", "get", "thread", "of_campaign", "count", "hide", "show", "hidings",
                     "moderation"}


@pytest.mark.parametrize("text", ["", "   \n ", "x" * (COMMENT_LIMIT + 1)])
def test_an_empty_or_endless_comment_is_refused_and_nothing_stored(ws, text):
    with pytest.raises(LabelError, match="nothing was posted"):
        CommentStore(ws.engine).add(NAME, PREMATURE_ID, "e13", "ann", "cli", "reviewer", text)
    assert CommentStore(ws.engine).count() == 0


# -- the facet -----------------------------------------------------------------------------------


def test_the_thread_holds_both_notes_the_comments_and_the_reason_in_time_order(ws):
    name, trace_id, event_id = target(ws)
    ws.disputes.comment(name, trace_id, event_id, "e15 is db_analyst's return: it came", BOB)
    ws.disputes.comment(name, trace_id, event_id, "ann, which worker was still out?", LEAD)
    ws.disputes.comment(name, trace_id, event_id, "the **db_analyst** finding never reached "
                        "the aggregate", ANN)
    ws.campaigns.adjudicate(name, trace_id, event_id, {"stopping_correctness": "premature",
                                                       "stop_should_have_been": "e15"},
                            LEAD, "ann is right: the finding was dropped")
    thread = ws.disputes.thread(name, trace_id, event_id, LEAD)
    assert [(e.kind, e.author, e.role) for e in thread] == [
        ("note", "ann", "reviewer"), ("note", "bob", "reviewer"),
        ("comment", "bob", "reviewer"), ("comment", "lee", "lead"),
        ("comment", "ann", "reviewer"), ("reason", "lee", "lead")]
    assert thread[0].text == "ann thinks premature"
    # one note per save, whatever the number of questions it answered
    assert thread[0].questions == ["stop_should_have_been", "stopping_correctness"]
    assert thread[-1].text == "ann is right: the finding was dropped"
    assert [e.created_at for e in thread] == sorted(e.created_at for e in thread)


def test_a_reviewer_posts_and_reads_only_on_a_dispute_they_are_in(ws):
    name, trace_id, event_id = target(ws)
    carl = Reviewer(name="carl", via="oidc")  # signed in, no member: neither side nor lead
    with pytest.raises(LabelError, match="carl is neither a reviewer of the dispute"):
        ws.disputes.comment(name, trace_id, event_id, "I have views", carl)
    with pytest.raises(LabelError, match="cannot read its thread"):
        ws.disputes.thread(name, trace_id, event_id, carl)
    ann = Reviewer(name="ann", via="oidc")
    made = ws.disputes.comment(name, trace_id, event_id, "it stopped early", ann)
    assert (made.role, made.identified_by) == ("reviewer", "oidc")
    assert ws.disputes.part(name, DROPPED_ID, "e13", ann) is None  # they agree there
    with pytest.raises(LabelError):
        ws.disputes.comment(name, DROPPED_ID, "e13", "agreed, but", ann)
    assert CommentStore(ws.engine).count() == 1


def test_a_signed_in_lead_posts_on_any_target_and_a_signed_in_reviewer_is_no_lead(ws):
    ws.campaigns.add_member("lee@lab.org", "lead", LEAD)
    ws.campaigns.add_member("dan@lab.org", "reviewer", LEAD)
    lead = Reviewer(name="lee@lab.org", via="oidc")
    made = ws.disputes.comment(NAME, DROPPED_ID, "e13", "agreed: keep as gold?", lead)
    assert made.role == "lead"
    with pytest.raises(LabelError):
        ws.disputes.comment(NAME, DROPPED_ID, "e13", "me too",
                            Reviewer(name="dan@lab.org", via="oidc"))
    with pytest.raises(LabelError, match="has no target"):
        ws.disputes.comment(NAME, DROPPED_ID, "e999", "where?", lead)


def test_a_retracted_note_leaves_the_thread_and_a_changed_answer_keeps_both_notes(ws):
    name, trace_id, event_id = target(ws)
    bob = next(x for x in ws.labelling.current(trace_id, campaign=name) if x.reviewer == "bob")
    ws.campaigns.retract([bob.label_id], LEAD, "misread the rubric", campaign=name)
    # ann answers again (a new label, append-only), with a new note
    trace = ws.library.trace(trace_id)
    again = ws.labelling.checked(
        trace, event_id, {"stopping_correctness": "premature", "stop_should_have_been": "e15"},
        "ann", comment="still premature: see e15's timestamp", identified_by="cli",
        campaign=name)
    ws.labelling.add(again)
    notes = [(e.author, e.text) for e in ws.disputes.thread(name, trace_id, event_id, LEAD)]
    assert notes == [("ann", "ann thinks premature"),
                     ("ann", "still premature: see e15's timestamp")]


def test_a_reviewers_list_holds_the_disputes_they_are_in_with_their_threads(ws):
    name, trace_id, event_id = target(ws)
    ws.disputes.comment(name, trace_id, event_id, "see e15", BOB)
    (mine,) = ws.disputes.mine(ANN)
    assert mine.key == (NAME, PREMATURE_ID, event_id)
    assert set(mine.dispute.answers) == {"ann", "bob"}
    assert [e.kind for e in mine.entries] == ["note", "note", "comment"]
    assert ws.disputes.mine(Reviewer(name="carl", via="cli")) == []


def test_postgres_keeps_a_thread_as_sqlite_does(tmp_path, postgres_url):
    from test_migrations import postgres_database

    with postgres_database(postgres_url) as url:
        ws = disputed(tmp_path, db=url)
        name, trace_id, event_id = target(ws)
        ws.disputes.comment(name, trace_id, event_id, "é ✓ <b>not html</b>", ANN)
        thread = ws.disputes.thread(name, trace_id, event_id, LEAD)
        assert [(e.kind, e.text) for e in thread][-1] == ("comment", "é ✓ <b>not html</b>")
        ws.engine.dispose()


# -- the command line ----------------------------------------------------------------------------


def test_campaign_thread_lists_a_disputes_thread_in_time_order(ws, capsys):
    name, trace_id, event_id = target(ws)
    ws.disputes.comment(name, trace_id, event_id, "e15 came back\x1b[2J in time", BOB)
    db = str(ws.settings.db_url)
    assert main(["campaign", "thread", NAME, trace_id, event_id, "--db", db]) == 0
    out = capsys.readouterr().out
    assert "ann (reviewer) · note (stop_should_have_been, stopping_correctness)" in out
    assert out.index("ann thinks premature") < out.index("bob thinks correct") \
        < out.index("e15 came back")
    assert "\x1b" not in out  # terminal escapes shown, never run


def test_campaign_thread_of_a_whole_campaign_as_json(ws, capsys):
    name, trace_id, event_id = target(ws)
    ws.disputes.comment(name, trace_id, event_id, "see e15", BOB)
    assert main(["campaign", "thread", NAME, "--json", "--db", str(ws.settings.db_url)]) == 0
    (found,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (found["trace_id"], found["event_id"]) == (trace_id, event_id)
    assert found["answers"]["ann"]["stopping_correctness"] == "premature"
    assert [e["kind"] for e in found["thread"]] == ["note", "note", "comment"]


def test_campaign_comment_posts_from_the_command_line(ws, capsys):
    name, trace_id, event_id = target(ws)
    db = str(ws.settings.db_url)
    assert main(["campaign", "comment", NAME, trace_id, event_id, "--text", "look at e15",
                 "--as", "lee", "--db", db]) == 0
    assert [c.text for c in CommentStore(ws.engine).thread(name, trace_id, event_id)] == [
        "look at e15"]
    assert main(["campaign", "comment", NAME, trace_id, event_id, "--text", " ",
                 "--as", "lee", "--db", db]) == 1
    assert "nothing was posted" in capsys.readouterr().err


def test_campaign_thread_has_help(capsys):
    with pytest.raises(SystemExit):
        main(["campaign", "thread", "--help"])
    assert "thread" in capsys.readouterr().out


# -- the thread travels: the report and the export -----------------------------------------------


def settled(ws: Workspace) -> tuple[str, str, str]:
    """The dispute commented on by both sides, hostile text included, then settled."""
    name, trace_id, event_id = target(ws)
    ws.disputes.comment(name, trace_id, event_id, "e15 came back <script>alert(1)</script>", BOB)
    ws.disputes.comment(name, trace_id, event_id, "[proof](javascript:alert(1)) it was dropped",
                        ANN)
    ws.campaigns.adjudicate(name, trace_id, event_id, {"stopping_correctness": "premature",
                                                       "stop_should_have_been": "e15"},
                            LEAD, "ann is right: the finding was dropped")
    return name, trace_id, event_id


def test_the_html_report_carries_each_dispute_with_its_thread_escaped(ws, tmp_path):
    name, trace_id, event_id = settled(ws)
    trace = ws.library.trace(trace_id)
    out = tmp_path / "case.html"
    assert main(["report", str(PREMATURE), "--db", str(ws.settings.db_url), "-o", str(out)]) == 0
    page = out.read_text()
    section = page[page.index('<section id="disputes">'):]
    section = section[:section.index("</section>")]
    assert "Disputes and what was said (1)" in section
    assert f"{NAME} · {event_id} · disputed: stopping_correctness · settled" in section
    order = [section.index(s) for s in ("ann thinks premature", "bob thinks correct",
                                        "e15 came back", "it was dropped",
                                        "ann is right: the finding was dropped")]
    assert order == sorted(order)
    assert "<script>alert" not in page and "javascript:alert" not in page.replace(
        "&quot;", "")
    assert "final (adjudicated)" in section
    assert ws.disputes.on_trace(trace.trace_id, "carl", lead=False) == []
    assert len(ws.disputes.on_trace(trace.trace_id, "ann", lead=False)) == 1


def test_the_markdown_report_carries_the_thread(ws):
    from viz_app.export.report import report_markdown

    name, trace_id, _ = settled(ws)
    trace = ws.library.trace(trace_id)
    labels, bookmarks = ws.bookmarks.case_study(trace)
    text = report_markdown(trace, labels, bookmarks, threads=ws.disputes.on_trace(trace_id))
    part = text[text.index("## Disputes and what was said (1)"):]
    assert part.index("ann thinks premature") < part.index("ann is right")
    assert "<script>" not in part and "](javascript:" not in part


def test_the_adjudicated_export_carries_the_leads_reason(ws, tmp_path):
    settled(ws)
    out = tmp_path / "final.jsonl"
    assert main(["campaign", "export", NAME, "--format", "jsonl", "--adjudicated-only",
                 "-o", str(out), "--db", str(ws.settings.db_url)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {(r["question"], r["source"], r["comment"]) for r in rows} == {
        ("stopping_correctness", "adjudication", "ann is right: the finding was dropped"),
        ("stop_should_have_been", "adjudication", "ann is right: the finding was dropped")}


def test_one_targets_disagreement_is_the_one_the_campaigns_list_holds(ws):
    name, trace_id, event_id = target(ws)
    (listed,) = ws.campaigns.disagreements(NAME)
    assert ws.campaigns.disagreement(name, trace_id, event_id) == listed
    assert ws.campaigns.disagreement(name, DROPPED_ID, "e13") is None  # they agree there
    assert [(c, d.trace_id) for c, d in ws.disputes.waiting(ANN)] == [(NAME, trace_id)]
    ws.campaigns.adjudicate(name, trace_id, event_id, {"stopping_correctness": "correct"},
                            LEAD, "settled")
    assert ws.disputes.waiting(ANN) == []  # settled: nothing waits for her word


def test_campaign_thread_of_a_target_they_agree_on_says_there_is_no_dispute(ws, capsys):
    assert main(["campaign", "thread", NAME, DROPPED_ID, "e13",
                 "--db", str(ws.settings.db_url)]) == 1
    assert "agree: there is no dispute there" in capsys.readouterr().err


# -- a lead hides a comment ----------------------------------------------------------------------


def test_a_lead_hides_a_comment_as_a_row_of_its_own_and_its_text_is_kept(ws):
    name, trace_id, event_id = target(ws)
    made = ws.disputes.comment(name, trace_id, event_id, "bob never reads the trace", ANN)
    hiding = ws.disputes.hide(name, trace_id, event_id, made.comment_id, "  about a person, "
                              "not the trace ", LEAD)
    assert (hiding.comment_id, hiding.hidden_by, hiding.identified_by, hiding.reason) == (
        made.comment_id, "lee", "cli", "about a person, not the trace")
    assert hiding.created_at >= made.created_at
    store = CommentStore(ws.engine)
    assert store.get(made.comment_id) == made  # the comment's row and text as written
    assert store.hidings(name) == {made.comment_id: hiding}

    # a reviewer of the dispute reads who hid it and why, not the text
    (seen,) = [e for e in ws.disputes.thread(name, trace_id, event_id, BOB)
               if e.kind == "comment"]
    assert seen.text == "" and seen.hidden.line == "hidden by lee: about a person, not the trace"
    (mine,) = ws.disputes.mine(BOB)
    assert "bob never reads" not in json.dumps(mine.model_dump(mode="json"))
    (report,) = ws.disputes.on_trace(trace_id)  # a case-study report goes beyond the leads
    assert "bob never reads" not in json.dumps(report.model_dump(mode="json"))
    # a lead reads the text beside the hiding
    (lead_sees,) = [e for e in ws.disputes.thread(name, trace_id, event_id, LEAD)
                    if e.kind == "comment"]
    assert lead_sees.text == "bob never reads the trace" and lead_sees.hidden == hiding


def test_only_a_lead_hides_once_with_a_reason_on_that_target(ws):
    ws.campaigns.add_member("lee@lab.org", "lead", LEAD)
    name, trace_id, event_id = target(ws)
    made = ws.disputes.comment(name, trace_id, event_id, "off topic", BOB)
    store = CommentStore(ws.engine)
    with pytest.raises(LabelError, match="ann is not a lead.*nothing was hidden"):
        ws.disputes.hide(name, trace_id, event_id, made.comment_id, "mine to hide",
                         Reviewer(name="ann", via="oidc"))
    lead = Reviewer(name="lee@lab.org", via="oidc")
    with pytest.raises(LabelError, match="say why.*nothing was hidden"):
        ws.disputes.hide(name, trace_id, event_id, made.comment_id, "  ", lead)
    with pytest.raises(LabelError, match="has no comment.*nothing was hidden"):
        ws.disputes.hide(name, DROPPED_ID, "e13", made.comment_id, "wrong target", lead)
    assert store.hidings(name) == {}
    ws.disputes.hide(name, trace_id, event_id, made.comment_id, "off topic", lead)
    with pytest.raises(LabelError, match="lee@lab.org hid this comment already"):
        ws.disputes.hide(name, trace_id, event_id, made.comment_id, "again", LEAD)
    assert len(store.hidings(name)) == 1


def test_a_lead_shows_a_hidden_comment_again_as_a_row_of_its_own_and_the_latest_decides(ws):
    name, trace_id, event_id = target(ws)
    made = ws.disputes.comment(name, trace_id, event_id, "bob never reads the trace", ANN)
    hiding = ws.disputes.hide(name, trace_id, event_id, made.comment_id, "about a person", LEAD)
    ws.campaigns.add_member("kim", "lead", LEAD)
    kim = Reviewer(name="kim", via="oidc")
    shown = ws.disputes.show(name, trace_id, event_id, made.comment_id, kim, "  misread ")
    assert (shown.action, shown.comment_id, shown.hidden_by, shown.identified_by,
            shown.reason) == ("shown", made.comment_id, "kim", "oidc", "misread")
    assert shown.created_at > hiding.created_at
    store = CommentStore(ws.engine)
    assert store.moderation(name) == {made.comment_id: [hiding, shown]}  # the hiding is kept
    assert store.hidings(name) == {} and store.get(made.comment_id) == made

    # everyone reads the text again; the thread keeps who hid it and who showed it again
    (seen,) = [e for e in ws.disputes.thread(name, trace_id, event_id, BOB)
               if e.kind == "comment"]
    assert seen.text == "bob never reads the trace" and seen.hidden is None
    assert [r.line for r in seen.moderation] == ["hidden by lee: about a person",
                                                 "shown again by kim: misread"]
    (report,) = ws.disputes.on_trace(trace_id)
    assert "bob never reads the trace" in json.dumps(report.model_dump(mode="json"))

    # hidden again: the latest row decides, every row kept
    again = ws.disputes.hide(name, trace_id, event_id, made.comment_id, "on reflection", LEAD)
    assert store.hidings(name) == {made.comment_id: again}
    assert [r.action for r in store.moderation(name)[made.comment_id]] == [
        "hidden", "shown", "hidden"]
    (seen,) = [e for e in ws.disputes.thread(name, trace_id, event_id, BOB)
               if e.kind == "comment"]
    assert seen.text == "" and seen.hidden == again


def test_only_a_lead_shows_again_and_only_a_comment_hidden_now(ws):
    ws.campaigns.add_member("lee@lab.org", "lead", LEAD)
    name, trace_id, event_id = target(ws)
    made = ws.disputes.comment(name, trace_id, event_id, "off topic", BOB)
    lead = Reviewer(name="lee@lab.org", via="oidc")
    store = CommentStore(ws.engine)
    with pytest.raises(LabelError, match="not hidden.*nothing was changed"):
        ws.disputes.show(name, trace_id, event_id, made.comment_id, lead)
    ws.disputes.hide(name, trace_id, event_id, made.comment_id, "off topic", lead)
    with pytest.raises(LabelError, match="ann is not a lead.*cannot show a comment again.*nothing was "
                                         "changed"):
        ws.disputes.show(name, trace_id, event_id, made.comment_id,
                         Reviewer(name="ann", via="oidc"))
    with pytest.raises(LabelError, match="has no comment.*nothing was changed"):
        ws.disputes.show(name, DROPPED_ID, "e13", made.comment_id, lead)
    with pytest.raises(LabelError, match="at most 500 characters.*nothing was shown again"):
        ws.disputes.show(name, trace_id, event_id, made.comment_id, lead, "x" * 501)
    assert [r.action for r in store.moderation(name)[made.comment_id]] == ["hidden"]
    ws.disputes.show(name, trace_id, event_id, made.comment_id, lead)  # no reason needed
    with pytest.raises(LabelError, match="not hidden.*nothing was changed"):
        ws.disputes.show(name, trace_id, event_id, made.comment_id, lead)
    assert [r.action for r in store.moderation(name)[made.comment_id]] == ["hidden", "shown"]


def test_campaign_comment_show_and_the_thread_say_it_from_the_command_line(ws, capsys):
    name, trace_id, event_id = target(ws)
    made = ws.disputes.comment(name, trace_id, event_id, "bob never reads the trace", ANN)
    ws.disputes.hide(name, trace_id, event_id, made.comment_id, "about a person", LEAD)
    db = str(ws.settings.db_url)
    assert main(["campaign", "comment", NAME, trace_id, event_id, "--show", made.comment_id,
                 "--as", "bob", "--db", db]) == 1
    assert "bob is one side of the dispute" in capsys.readouterr().err
    assert main(["campaign", "comment", NAME, trace_id, event_id, "--show", made.comment_id,
                 "--reason", "misread", "--as", "lee", "--db", db]) == 0
    assert "shown again by lee: misread" in capsys.readouterr().out
    assert main(["campaign", "thread", NAME, trace_id, event_id, "--as", "bob", "--db",
                 db]) == 0
    out = capsys.readouterr().out
    assert "bob never reads the trace" in out
    assert re.search(r"\[hidden by lee: about a person \(\d{4}-\d\d-\d\d \d\d:\d\d UTC\)\]", out)
    assert re.search(r"\[shown again by lee: misread \(.* UTC\)\]", out)


def test_campaign_comment_hide_and_the_thread_say_it_from_the_command_line(ws, capsys):
    name, trace_id, event_id = target(ws)
    made = ws.disputes.comment(name, trace_id, event_id, "bob never reads the trace", ANN)
    db = str(ws.settings.db_url)
    assert main(["campaign", "thread", NAME, trace_id, event_id, "--db", db]) == 0
    assert f"comment {made.comment_id}" in capsys.readouterr().out  # the id a lead names
    assert main(["campaign", "comment", NAME, trace_id, event_id, "--hide", made.comment_id,
                 "--reason", "about a person", "--as", "bob", "--db", db]) == 1
    assert "bob is one side of the dispute" in capsys.readouterr().err
    assert main(["campaign", "comment", NAME, trace_id, event_id, "--hide", made.comment_id,
                 "--reason", "about a person", "--as", "lee", "--db", db]) == 0
    assert "hidden by lee" in capsys.readouterr().out
    assert main(["campaign", "thread", NAME, trace_id, event_id, "--as", "bob", "--db",
                 db]) == 0
    out = capsys.readouterr().out
    assert "[hidden by lee: about a person]" in out and "never reads" not in out
    assert main(["campaign", "thread", NAME, trace_id, event_id, "--as", "lee", "--db",
                 db]) == 0
    out = capsys.readouterr().out
    assert "[hidden by lee: about a person] its text, for leads only:" in out
    assert "bob never reads the trace" in out


def test_the_report_shows_a_hidden_comment_as_its_hidden_line(ws, tmp_path):
    from viz_app.export.report import report_markdown

    name, trace_id, event_id = target(ws)
    made = ws.disputes.comment(name, trace_id, event_id, "bob never reads the trace", ANN)
    ws.disputes.hide(name, trace_id, event_id, made.comment_id, "about a person", LEAD)
    out = tmp_path / "case.html"
    assert main(["report", str(PREMATURE), "--db", str(ws.settings.db_url), "-o", str(out)]) == 0
    page = out.read_text()
    assert "hidden by lee: about a person" in page and "never reads" not in page
    trace = ws.library.trace(trace_id)
    labels, bookmarks = ws.bookmarks.case_study(trace)
    text = report_markdown(trace, labels, bookmarks, threads=ws.disputes.on_trace(trace_id))
    assert "hidden by lee\\: about a person" in text and "never reads" not in text
