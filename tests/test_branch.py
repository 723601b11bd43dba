"""Continuing a trace from an edited decision (`viz_app.branch`, `ws.branches.continue_from`,
`orchviz replay`), against the local OpenAI-compatible stub: a usable reply makes a
schema-valid branch linked to its original; a timeout, a refusal or a malformed reply is one
sentence and never a trace."""

from __future__ import annotations

import json
import time

import pytest

from factories import PREMATURE, PREMATURE_ID, make_workspace, premature, reference_validator
from openai_stub import OpenAIStub, Reply
from viz_app.branch import (BranchError, Replacement, continue_from, conversation, fork_of)
from viz_app.analysis import analyze
from viz_app.cli import main
from viz_app.labels.label import Reviewer
from viz_app.settings import ModelEndpoint, ReplayLimits, Settings

pytest.importorskip("openai")

WAIT = Replacement(kind="continue", text="Wait for db_analyst's EXPLAIN before concluding.")
"""The correction of demo 10's premature stop at e13."""

GOOD = [Reply.turn("continue", "Waiting for db_analyst."),
        Reply.turn("aggregate", "Root cause: migration 0193 dropped the coupon index."),
        Reply.turn("stop", "Restore the index on coupon_redemptions.")]


def endpoint(stub: OpenAIStub, timeout: float = 5.0) -> ModelEndpoint:
    return ModelEndpoint(url=stub.url, model="stub-model", timeout=timeout)


def test_a_continuation_is_a_schema_valid_trace_linked_to_its_original():
    with OpenAIStub(script=list(GOOD)) as stub:
        branch = continue_from(premature(), "e13", WAIT, endpoint(stub))
    assert not list(reference_validator().iter_errors(branch.trace.to_dict()))
    edited = branch.trace.event("e13")
    assert (edited.extras["forked_from"], edited.extras["fork_event"]) == (PREMATURE_ID, "e13")
    assert (edited.decision, edited.content) == ("continue", WAIT.text)
    assert branch.trace.trace_id != PREMATURE_ID
    assert branch.trace.task_id == premature().task_id


def test_a_branch_keeps_every_event_before_the_fork_as_recorded_and_none_after():
    original = premature()
    with OpenAIStub(script=list(GOOD)) as stub:
        branch = continue_from(original, "e13", WAIT, endpoint(stub))
    before = [e for e in analyze(original).order if e.t < original.event("e13").t]
    assert [branch.trace.event(e.id) for e in before] == before
    assert "e15" not in branch.trace.events_by_id  # the late return of the original run


def test_the_models_turns_follow_the_edited_decision_until_it_stops():
    with OpenAIStub(script=list(GOOD)) as stub:
        branch = continue_from(premature(), "e13", WAIT, endpoint(stub),
                               ReplayLimits(turns=10))
    assert len(stub.received) == 3
    turns = [branch.trace.event(i) for i in branch.fork.replayed]
    assert [t.decision for t in turns] == ["continue", "aggregate", "stop"]
    assert all(t.extras["replayed"] is True and t.model == "stub-model" for t in turns)
    assert all(t.t >= 31.0 for t in turns)
    assert branch.fork.turn_limit_reached is False
    assert fork_of(branch.trace) == branch.fork


def test_the_model_is_sent_the_orchestrators_context_with_the_correction_in_place():
    with OpenAIStub(script=[Reply.turn("stop", "done")]) as stub:
        continue_from(premature(), "e13", WAIT, endpoint(stub))
    messages = stub.received[0].body["messages"]
    assert messages[0]["role"] == "system" and "orchestrator" in messages[0]["content"]
    sent = json.dumps(messages)
    assert "Slowness is on POST /checkout/confirm" in sent  # log_analyst's return (e11)
    assert "good enough. Stop" not in sent  # the decision it made at e13 is replaced
    assert "ROOT CAUSE: migration 0193" not in sent  # arrived after e13
    assert json.loads(messages[-2]["content"])["text"] == WAIT.text
    assert messages[-1]["role"] == "user"
    assert "nothing you ask for is run" in messages[-1]["content"]
    body = stub.received[0].body
    assert body["response_format"]["json_schema"]["strict"] is True
    assert body["max_completion_tokens"] == ReplayLimits().max_tokens


def test_what_a_turn_asks_for_is_recorded_as_requested_and_not_run():
    script = [Reply.turn("spawn", "Spawn an index auditor.", to="index_auditor"),
              Reply.turn("continue", "Check the slow-query log.", tool="sql.query"),
              Reply.turn("stop", "Restore the index.")]
    with OpenAIStub(script=script) as stub:
        branch = continue_from(premature(), "e13", WAIT, endpoint(stub))
    asked = [branch.trace.event(i) for i in branch.fork.requested]
    assert [(e.type, e.to or e.tool) for e in asked] == [("spawn", "index_auditor"),
                                                         ("tool_call", "sql.query")]
    assert all(e.extras["requested_not_run"] is True for e in asked)
    assert not any(e.agent == "index_auditor" or e.type == "tool_result" and e.t > 31
                   for e in branch.trace.events)


def test_a_continuation_stops_at_the_turn_limit_and_says_so():
    with OpenAIStub(script=[Reply.turn("continue", "Still waiting.")]) as stub:
        branch = continue_from(premature(), "e13", WAIT, endpoint(stub), ReplayLimits(turns=2))
    assert len(stub.received) == 2
    assert branch.fork.turn_limit_reached is True
    assert branch.trace.event(branch.fork.replayed[-1]).extras["turn_limit_reached"] is True


def test_an_edited_stop_ends_the_branch_without_asking_the_model():
    with OpenAIStub(script=list(GOOD)) as stub:
        branch = continue_from(premature(), "e12", Replacement(kind="stop", text="Stop here."),
                               endpoint(stub))
    assert stub.received == [] and branch.turns == 0
    assert branch.trace.event("e12").decision == "stop"


def test_an_edited_merge_stays_an_aggregate_with_the_new_text():
    merge = Replacement(kind="aggregate", text="Two causes: v2.3.0 and migration 0193.")
    with OpenAIStub(script=[Reply.turn("stop", "done")]) as stub:
        branch = continue_from(premature(), "e12", merge, endpoint(stub))
    edited = branch.trace.event("e12")
    assert (edited.type, edited.content) == ("aggregate", merge.text)


def test_a_sub_agents_event_cannot_be_continued():
    with pytest.raises(BranchError, match="sub-agent.*nothing was saved"):
        conversation(analyze(premature()), "e10")


@pytest.mark.parametrize("reply, says", [
    (Reply.turn("stop", "late", delay=3.0), "did not answer within 1 s"),
    (Reply(refusal="I can't help with that."), "the model refused"),
    (Reply(content="Sure! I would wait."), "not JSON"),
    (Reply(content=json.dumps({"decision": "pause", "text": "", "to": "", "tool": ""})),
     "does not fit the turn's format"),
    (Reply(content='{"decision": "stop"', finish_reason="length"), "token limit"),
    (Reply(status=500, content="overloaded"), "HTTP 500"),
    (Reply(content=""), "empty"),
    (Reply.turn("stop", "x" * 300_000), "over 262,144 bytes"),
    (Reply(html="<!doctype html><html><head><title>Sign in</title></head>"
                "<body><form>Sign in to the gateway</form></body></html>"), "answered HTTP 200 with an HTML page (“Sign in”), not a chat completion"),
], ids=["timeout", "refusal", "not-json", "off-format", "cut", "http-500", "empty", "too-big",
        "html-200"])
def test_a_failed_reply_is_one_sentence_and_never_a_trace(tmp_path, reply, says):
    ws = make_workspace(tmp_path, traces=[PREMATURE])
    with OpenAIStub(script=[reply]) as stub:
        with pytest.raises(BranchError) as failed:
            ws.branches.continue_from(ws.library.trace(PREMATURE_ID), "e13", WAIT, endpoint=endpoint(stub, 1.0))
    message = str(failed.value)
    assert says in message and message.endswith("nothing was saved")
    assert "\n" not in message and message.count(". ") == 0
    assert not (tmp_path / "uploads").exists()


def test_a_turn_naming_an_agent_the_trace_lacks_is_kept_with_a_warning():
    script = [Reply.turn("spawn", "a checker", to="checker"),
              Reply.turn("delegate", "check the index", to="checker"),
              Reply.turn("communicate", "anyone there?", to="ghost_agent"),
              Reply.turn("stop", "done")]
    with OpenAIStub(script=script) as stub:
        branch = continue_from(premature(), "e13", WAIT, endpoint(stub))
    (warning,) = branch.warnings  # the spawned checker is known from its spawn on
    assert warning == ("turn e13.r3 names 'ghost_agent', an agent the trace does not have "
                       "(kept as the model wrote it)")
    assert branch.trace.event("e13.r3").to == "ghost_agent"
    assert branch.trace.event("e13.r3").extras["unknown_agent"] is True


def test_orchviz_replay_prints_the_warning_of_an_unknown_agent(tmp_path, capsys):
    script = [Reply.turn("delegate", "over to you", to="ghost_agent"), Reply.turn("stop", "x")]
    with OpenAIStub(script=script) as stub:
        assert main(["replay", str(PREMATURE), "--event", "e13", "--kind", "continue",
                     "--decision", "wait", "--judge-url", stub.url, "--judge-model", "stub",
                     "-o", str(tmp_path / "branch.json")]) == 0
    err = capsys.readouterr().err
    assert "warning: turn e13.r1 delegates to 'ghost_agent', an agent the trace does not " \
           "have" in err


def test_a_failure_on_a_later_turn_saves_nothing_either(tmp_path):
    ws = make_workspace(tmp_path, traces=[PREMATURE])
    with OpenAIStub(script=[Reply.turn("continue", "waiting"), Reply(content="oops")]) as stub:
        with pytest.raises(BranchError, match="not JSON"):
            ws.branches.continue_from(ws.library.trace(PREMATURE_ID), "e13", WAIT, endpoint=endpoint(stub))
    assert not (tmp_path / "uploads").exists()


def test_the_whole_continuation_has_one_deadline():
    slow = Reply.turn("continue", "thinking", delay=0.6)
    started = time.monotonic()
    with OpenAIStub(script=[slow]) as stub:
        with pytest.raises(BranchError, match="deadline|did not answer"):
            continue_from(premature(), "e13", WAIT, endpoint(stub, timeout=30),
                          ReplayLimits(turns=20, deadline=1.5))
    assert time.monotonic() - started < 6


def test_the_workspace_saves_a_branch_where_its_library_lists_it(tmp_path):
    ws = make_workspace(tmp_path, traces=[PREMATURE])
    with OpenAIStub(script=list(GOOD)) as stub:
        branch, path = ws.branches.continue_from(ws.library.trace(PREMATURE_ID), "e13", WAIT,
                                        endpoint=endpoint(stub))
    assert path.parent == tmp_path / "uploads" / "branches"
    assert branch.trace.trace_id in {r.trace_id for r in ws.library.update_index().rows}
    assert fork_of(ws.library.trace(branch.trace.trace_id)).forked_from == PREMATURE_ID


def test_a_branch_can_be_labelled_and_judged_against_its_original(tmp_path):
    ws = make_workspace(tmp_path, traces=[PREMATURE])
    ann = Reviewer(name="ann", via="cli")
    with OpenAIStub(script=list(GOOD)) as stub:
        branch, _ = ws.branches.continue_from(ws.library.trace(PREMATURE_ID), "e13", WAIT,
                                     endpoint=endpoint(stub))
    saved = ws.library.trace(branch.trace.trace_id)
    stop = branch.fork.replayed[-1]
    assert stop in {t.event_id for t in ws.library.targets(saved)}
    ws.labelling.save_answers(saved, stop, {"stopping_correctness": "correct"}, ann)
    ws.labelling.save_preference(ws.library.trace(PREMATURE_ID), saved, saved.trace_id, ann, "waits for the DB")
    assert ws.labelling.judgement(PREMATURE_ID, saved.trace_id, "ann").chosen == saved.trace_id
    assert ws.labelling.current_records(trace_id=saved.trace_id, reviewer="ann")


def test_without_an_endpoint_the_workspace_says_how_to_configure_one(tmp_path):
    ws = make_workspace(tmp_path, traces=[PREMATURE])
    with pytest.raises(BranchError, match="--judge-url"):
        ws.branches.continue_from(ws.library.trace(PREMATURE_ID), "e13", WAIT)


def test_the_endpoint_and_limits_travel_to_the_app_through_the_environment(tmp_path,
                                                                           monkeypatch):
    settings = make_workspace(tmp_path).settings.model_copy(update={
        "endpoint": ModelEndpoint(url="http://127.0.0.1:9/v1", model="m", timeout=7),
        "replay": ReplayLimits(turns=3, deadline=30)})
    for name, value in settings.to_env().items():
        monkeypatch.setenv(name, value)
    back = Settings.from_env()
    assert (back.endpoint, back.replay) == (settings.endpoint, settings.replay)


def test_orchviz_replay_writes_the_branch(tmp_path, capsys):
    out = tmp_path / "branch.json"
    with OpenAIStub(script=list(GOOD)) as stub:
        code = main(["replay", str(PREMATURE), "--event", "e13", "--decision", WAIT.text,
                     "--kind", "continue", "-o", str(out), "--judge-url", stub.url,
                     "--judge-model", "stub-model", "--turns", "5"])
    assert code == 0
    written = json.loads(out.read_text("utf-8"))
    assert not list(reference_validator().iter_errors(written))
    assert "3 turns of stub-model after e13, ended at a stop" in capsys.readouterr().out


def test_orchviz_replay_says_what_failed_in_one_line_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "branch.json"
    with OpenAIStub(script=[Reply(refusal="no")]) as stub:
        code = main(["replay", str(PREMATURE), "--event", "e13", "--decision", "wait",
                     "--kind", "continue", "-o", str(out), "--judge-url", stub.url,
                     "--judge-model", "m"])
    err = capsys.readouterr().err
    assert code == 1 and not out.exists()
    assert err.count("\n") == 1 and "refused" in err and "Traceback" not in err


def test_orchviz_replay_has_help(capsys):
    with pytest.raises(SystemExit):
        main(["replay", "--help"])
    assert "requested, not run" in " ".join(capsys.readouterr().out.split())


def test_orchviz_replay_starts_from_a_reviewers_saved_correction(tmp_path, capsys):
    ws = make_workspace(tmp_path, traces=[PREMATURE])
    ws.labelling.save_answers(ws.library.trace(PREMATURE_ID), "e13", {"stopping_correctness": "premature",
                                                    "stop_should_have_been": "e15"},
                    Reviewer(name="ann", via="cli"))
    out = tmp_path / "branch.json"
    with OpenAIStub(script=list(GOOD)) as stub:
        code = main(["replay", str(PREMATURE), "--event", "e13", "--correction-by", "ann",
                     "--db", str(tmp_path / "orchviz.db"), "-o", str(out),
                     "--judge-url", stub.url, "--judge-model", "stub-model"])
    assert code == 0, capsys.readouterr().err
    edited = json.loads(out.read_text("utf-8"))["events"]
    [e13] = [e for e in edited if e["id"] == "e13"]
    # e15 is db_analyst's return: the decision says whom to wait for, in the canonical form
    assert e13["decision"] == "continue" and e13["content"] == "continue: wait for db_analyst"
    with OpenAIStub(script=list(GOOD)) as stub:
        code = main(["replay", str(PREMATURE), "--event", "e13", "--correction-by", "bob",
                     "--db", str(tmp_path / "orchviz.db"), "-o", str(tmp_path / "b2.json"),
                     "--judge-url", stub.url, "--judge-model", "stub-model"])
    assert code == 1 and "bob saved no correction at e13" in capsys.readouterr().err
