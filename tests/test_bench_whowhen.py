"""bench/bench_whowhen.py scores a producer's blame as the Who&When paper does: the agent acting
at the event it blames most confidently against the annotated agent, that event's step against
the annotated step; the judge is asked through its real client."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest
from importing import FIXTURES
from openai_stub import QUESTION, OpenAIStub, Reply

from viz_app.analysis import analyze
from viz_app.labels.rubric import default_rubric, targets
from viz_app.labels.suggestion import Producer, Suggestion

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import bench_whowhen as bench  # noqa: E402

RULES = Producer(name="rules", version="t")


@pytest.fixture
def folder(tmp_path):
    """A Who&When folder of two runs: the Magentic-One and the group-chat fixture."""
    for subset, fixture in (("Hand-Crafted", "whowhen_magentic.json"),
                            ("Algorithm-Generated", "whowhen_algorithm_generated.json")):
        (tmp_path / subset).mkdir()
        (tmp_path / subset / "1.json").write_bytes((FIXTURES / fixture).read_bytes())
    return tmp_path


def said(event_id: str, question: str, value, confidence: float) -> Suggestion:
    return Suggestion(trace_id="t", trace_sha256="", event_id=event_id, question=question,
                      value=value, confidence=confidence, producer=RULES)


def test_the_blame_is_the_most_confident_fault_and_never_a_fine_answer():
    found = [said("e4", "message_necessity", "necessary", 0.99),
             said("e5", "message_necessity", "redundant", 0.6),
             said("e7", "stopping_correctness", "premature", 0.8),
             said("", "task_outcome", "failure", 1.0)]
    assert bench.blamed_by(found) == "e7"
    assert bench.blamed_by(found[:1]) is None


def test_a_blame_on_the_annotated_step_is_right_on_agent_and_step_and_silence_is_wrong(folder):
    (_, chat) = bench.load(folder)
    blamed = analyze(chat.trace)  # the annotated step is history[1], DataAnalysis_Expert's
    at = next(e.id for e in blamed.order if bench.step_of(chat.trace, e.id) == chat.step)
    right, silent = bench.Tally(), bench.Tally()
    bench.score(chat, at, right)
    bench.score(chat, None, silent)
    assert (right.agent, right.step, right.silent) == (1, 1, 0)
    assert (silent.runs, silent.agent, silent.step, silent.silent) == (1, 0, 0, 1)


def test_the_judge_is_asked_every_event_question_and_its_blame_scored(folder):
    rubric = default_rubric()
    (_, chat) = bench.load(folder)
    messages = [t.key for t in targets(rubric, analyze(chat.trace))
                if "message_necessity" in t.questions]
    at = next(k for k in messages if bench.step_of(chat.trace, k) == chat.step)
    table = {("message_necessity", k): Reply.answer("harmful" if k == at else "necessary",
                                                    0.8 if k == at else 0.95)
             for k in messages}
    failures: Counter = Counter()
    with OpenAIStub(table) as stub:
        blame = bench.judge_blame(rubric, stub.url, "stub-model", "ORCHVIZ_NO_SUCH_KEY",
                                  failures)
        assert blame(chat) == at
    asked = {QUESTION.search(r.prompt).group(1) for r in stub.received}
    assert "message_necessity" in asked and asked <= set(bench.FAULTS)
    assert sum(failures.values()) == len(stub.received) - len(messages)


def test_without_an_endpoint_the_judge_is_skipped_and_says_so(folder, capsys):
    bench.main([str(folder), "--folds", "2"])
    out = capsys.readouterr().out
    assert "judge      skipped: no --endpoint URL given" in out
    assert "rules      Hand-Crafted" in out and "all-at-once (GPT-4o, with ground truth)" in out
    assert "last step  Hand-Crafted" in out and "after task Algorithm-Generated" in out


def test_the_positional_rules_blame_the_last_step_and_the_step_after_the_task(folder):
    for case in bench.load(folder):
        steps = bench.steps_of(case.trace)
        last = bench.positional_blame("last step")(case)
        after = bench.positional_blame("after task")(case)
        assert bench.step_of(case.trace, last) == max(steps)
        assert bench.step_of(case.trace, after) == min(s for s in steps if s > 0)
        tally = bench.Tally()
        bench.score(case, after, tally)  # scored as any producer's blame
        assert tally.runs == 1 and not tally.silent


def test_the_learned_producer_blames_held_out_runs_where_its_training_runs_put_faults(tmp_path):
    """Forty group chats whose blamed message is the long one: trained on the runs outside
    each fold, the models find it in the runs of the fold."""
    import json

    base = json.loads((FIXTURES / "whowhen_algorithm_generated.json").read_text())
    history = base["history"]
    (tmp_path / "Algorithm-Generated").mkdir()
    (tmp_path / "Hand-Crafted").mkdir()
    for i in range(40):
        step = (1, 1, 2)[i % 3]  # two of the messages (history[3] is the aggregate)
        steps = [dict(s) for s in history]
        steps[step]["content"] += " because" + " the yearly totals disagree" * 40
        run = {**base, "question_ID": f"q{i}", "history": steps, "mistake_step": str(step),
               "mistake_agent": steps[step]["name"]}
        (tmp_path / "Algorithm-Generated" / f"{i}.json").write_text(json.dumps(run))
    cases = bench.load(tmp_path)
    notes: list[str] = []
    blames = bench.learned_blames(cases, default_rubric(), 2, notes)
    tally = bench.attribute(cases, lambda c: blames[c.trace.trace_id])["Algorithm-Generated"]
    assert (tally.runs, tally.step, tally.agent) == (40, 40, 40)
    assert notes and all("delegation_fit" in n for n in notes)  # no delegations to learn
