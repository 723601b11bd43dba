"""Round trips over generated traces and labels (and pairwise judgements), for every training
shape: the export is written (as a file and as a `datasets` folder), read back into orchviz's own
label records by the shape's reader, and nothing is lost: every label comes back field for field,
or its target (or pair) was left out and reported, or the shape has no place for it and says
so. Disputes never become confident rows by default, a pair's chosen never equals its rejected,
and every bool a trainer reads is the reward against the threshold.
"""

from __future__ import annotations

import json
import random
import re
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from viz_app.export import FORMATS, TRAINING, ExportInput, write_export
from viz_app.export.consensus import ExportOptions, select
from viz_app.export.readers import read_export
from viz_app.export.steps import all_trace_steps
from viz_app.io.native import trace_from_dict
from viz_app.labels.label import FIELDS
from viz_app.labels.rubric import default_rubric, reward_of, targets
from viz_app.synth import TOPOLOGIES, synth_trace

RUBRIC = default_rubric()
REVIEWERS = ("ann", "bob", "cy")


def generated_trace(seed: int, agents: int, events: int, topology: str, calls: bool):
    """A synthetic orchestration; with `calls`, some events carry LLM call ids and tokens."""
    raw = synth_trace(agents, events, topology, seed)
    raw["trace_id"] = f"gen-{seed}-{agents}-{events}-{topology}"
    raw["task_id"] = f"task-{seed % 3}"
    if calls:
        for i, event in enumerate(raw["events"]):
            if i % 3 == 0:
                event["response_id"] = f"resp-{seed}-{i}"
                event["llm_call_id"] = f"call-{i}"
                event["prompt_token_ids"] = [i, i + 1]
                event["response_token_ids"] = [i + 2]
    return trace_from_dict(raw, raw["trace_id"])


def record(trace, event_id, question, value, reviewer, source="human"):
    """A current label record as the store gives it."""
    found = {name: None for name in FIELDS}
    found.update(
        label_id=uuid.uuid4().hex, trace_id=trace.trace_id, trace_sha256=trace.sha256,
        event_id=event_id, question=question, value=value,
        reward=reward_of(RUBRIC.question(question), value), reviewer=reviewer,
        created_at="2026-01-02T03:04:05.000000Z", rubric_version=RUBRIC.version,
        rubric_sha256=RUBRIC.sha256, comment=f"{reviewer} on {question}", seconds_spent=1.5,
        source=source, origin="judge-x" if source == "import" else "",
        identified_by="import" if source == "import" else "cli",
        campaign="" if source == "import" else f"campaign-{reviewer}",
        suggestions_visible=None if source == "import" else reviewer == "bob")
    return found


def answers_of(rng: random.Random, trace, target, question_id: str, analysis) -> list:
    """(question, value) answers one reviewer gives on a target: the question, and for a stop
    answered premature or late a pointer where one can point."""
    question = RUBRIC.question(question_id)
    if question.kind == "tags":
        return [(question_id, sorted(rng.sample([c.value for c in question.choices],
                                                rng.randint(0, 2))))]
    if question.kind in ("event", "text", "correction") or question.ask_when is not None:
        return []
    value = rng.choice([c.value for c in question.choices])
    found = [(question_id, value)]
    if question_id == "stopping_correctness" and value in ("premature", "late"):
        here = analysis.position[target.event_id]
        pool = analysis.order[here + 1:] if value == "premature" else analysis.order[:here]
        if pool:
            found.append(("stop_should_have_been", rng.choice(pool).id))
        else:
            found = [(question_id, "correct")]
    return found


def generated_labels(traces, seed: int, agree: float, adjudicate: float) -> list[dict]:
    """Current label records on the traces' targets: one to three reviewers each, agreeing
    with the first one with probability `agree`; now and then an adjudicated or imported
    label."""
    from viz_app.analysis import analyze

    rng = random.Random(seed)
    labels = []
    for trace in traces:
        analysis = analyze(trace)
        for target in targets(RUBRIC, analysis):
            if rng.random() < 0.3:
                continue
            reviewers = rng.sample(REVIEWERS, rng.randint(1, 3))
            first = None
            for question_id in target.questions:
                for n, reviewer in enumerate(reviewers):
                    if first is not None and n and rng.random() < agree:
                        answers = first.get(question_id, [])
                    else:
                        answers = answers_of(rng, trace, target, question_id, analysis)
                    first = first or {}
                    first.setdefault(question_id, answers)
                    source = "import" if rng.random() < 0.1 else "human"
                    labels += [record(trace, target.event_id, q, v, reviewer, source)
                               for q, v in answers]
            if rng.random() < adjudicate and target.questions:
                labels += [record(trace, target.event_id, q, v, "adj", "adjudication")
                           for q, v in answers_of(rng, trace, target, target.questions[0],
                                                  analysis)]
    return _current(labels)


def _current(labels: list[dict]) -> list[dict]:
    """One label per reviewer, target and question (the last given), as the store keeps it."""
    newest = {}
    for label in labels:
        newest[(label["reviewer"], label["trace_id"], label["event_id"], label["question"])] = label
    return sorted(newest.values(), key=lambda r: (r["trace_id"], r["event_id"] or "",
                                                  r["question"], r["reviewer"]))


scenario = st.fixed_dictionaries({
    "seed": st.integers(0, 10_000),
    "traces": st.integers(1, 3),
    "agents": st.integers(2, 6),
    "events": st.integers(20, 70),
    "topology": st.sampled_from(sorted(TOPOLOGIES)),
    "calls": st.booleans(),
    "agree": st.floats(0, 1),
    "adjudicate": st.sampled_from([0.0, 0.3]),
    "disputed": st.sampled_from(["drop", "mean", "adjudicated"]),
    "min_reviewers": st.integers(1, 2),
    "threshold": st.sampled_from([0.0, -0.25, 0.5]),
})


def build(case):
    traces = [generated_trace(case["seed"] + i, case["agents"], case["events"],
                              case["topology"], case["calls"]) for i in range(case["traces"])]
    labels = generated_labels(traces, case["seed"], case["agree"], case["adjudicate"])
    options = ExportOptions(disputed=case["disputed"], min_reviewers=case["min_reviewers"],
                            threshold=case["threshold"])
    return {t.trace_id: t for t in traces}, labels, options


def shape_has_no_place(format: str, label: dict, keys_in_steps: set, traces_with_rows: set,
                       judged: set) -> bool:
    """Whether a shape by its nature has no row for a label (and says so in its notes)."""
    key = (label["trace_id"], label["event_id"] or "", label["question"])
    if format == "verl":
        return key not in judged
    if format in ("unpaired", "agent-lightning"):
        return key not in keys_in_steps
    if format in ("stepwise", "openrlhf-prm"):
        return label["trace_id"] not in traces_with_rows
    return False


@pytest.mark.parametrize("format", [f for f in TRAINING if f not in (
    "preference", "openrlhf-rm", "decision-pairs", "openrlhf-decision-pairs",
    "decision-groups")])  # pairs and groups (which need replays): their own tests
@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=scenario)
def test_every_label_comes_back_or_is_accounted_for(format, case, tmp_path_factory):
    traces, labels, options = build(case)
    out = tmp_path_factory.mktemp(format.replace("-", "_")) / FORMATS[format].file_name
    written = write_export(format, ExportInput(labels=labels, traces=traces, rubric=RUBRIC,
                                               options=options), out)
    back = read_export(format, out)
    by_id = {r["label_id"]: r for r in labels}
    assert all(by_id[r["label_id"]] == r for r in back), "a label came back changed"

    selection = select(labels, RUBRIC, options)
    dropped = set(selection.dropped)
    steps = all_trace_steps(traces, selection.by_trace(), RUBRIC)
    in_steps = {a.key for ts in steps for s in ts.steps for a in s.answers}
    with_rows = {ts.trace.trace_id for ts in steps if ts.steps}
    judged = {a.key for a in selection.answers if a.value is not None
              and RUBRIC.questions_by_id[a.question].kind != "text"}
    came_back = {r["label_id"] for r in back}
    by_nature = False
    for label in labels:
        key = (label["trace_id"], label["event_id"] or "", label["question"])
        if label["label_id"] in came_back or key in dropped:
            continue
        assert shape_has_no_place(format, label, in_steps, with_rows, judged), \
            f"{key} {label['reviewer']} was lost"
        by_nature = True
    if dropped:
        assert written.left_out, "targets were left out without a word"
    if by_nature and format != "verl":
        assert written.notes, "the shape had no place for labels and did not say so"


@settings(max_examples=12, deadline=None)
@given(case=scenario)
def test_by_default_no_row_rests_on_a_disagreement_and_bools_follow_the_threshold(case):
    traces, labels, options = build(case)
    options = ExportOptions(threshold=case["threshold"])
    given_ = ExportInput(labels=labels, traces=traces, rubric=RUBRIC, options=options)
    for row in FORMATS["unpaired"].rows(given_).rows:
        assert not any(a["disputed"] for a in row["answers"])
        assert row["label"] is (row["reward"] > case["threshold"])
    for row in FORMATS["stepwise"].rows(given_).rows:
        assert row["labels"] == [r > case["threshold"] for r in row["rewards"]]
        assert len(row["completions"]) == len(row["labels"]) == len(row["event_ids"])
        assert all(c for c in row["completions"])
    for row in FORMATS["openrlhf-prm"].rows(given_).rows:
        assert row["input"].count(" ки\n") == len(row["label"]) == len(row["rewards"])


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=scenario)
def test_a_datasets_folder_reads_back_like_the_file(case, tmp_path_factory):
    traces, labels, options = build(case)
    given_ = ExportInput(labels=labels, traces=traces, rubric=RUBRIC, options=options)
    for format in ("stepwise", "rllm", "agent-lightning", "verl", "agent-rewards"):
        folder = tmp_path_factory.mktemp("hf")
        write_export(format, given_, folder / "file" / FORMATS[format].file_name)
        write_export(format, given_, folder / "hf", hf_dataset=True)
        assert read_export(None, folder / "hf") == read_export(
            format, folder / "file" / FORMATS[format].file_name)


def judgements(traces, seed: int) -> list[dict]:
    """Pairwise judgements between traces of one task: one to three judges a pair, who now and
    then disagree or call it a tie."""
    from viz_app.labels.pairs import PAIRWISE_QUESTION

    rng = random.Random(seed)
    found = []
    ordered = sorted(traces.values(), key=lambda t: t.trace_id)
    for i, first in enumerate(ordered):
        for second in ordered[i + 1:]:
            for reviewer in rng.sample(REVIEWERS, rng.randint(1, 3)):
                chosen = rng.choice([first.trace_id, second.trace_id, None])
                label = record(first, None, "task_outcome", "success", reviewer)
                label.update(question=PAIRWISE_QUESTION, reward=None,
                             value={"chosen": chosen, "strength": rng.choice([1, 2, 3])
                                    if chosen else None, "pair_sha256": second.sha256},
                             pair_trace_id=second.trace_id, comment="because")
                found.append(label)
    return found


@pytest.mark.parametrize("format", ["preference", "openrlhf-rm"])
@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=scenario.filter(lambda c: c["traces"] > 1), from_scores=st.booleans())
def test_every_judged_pair_is_a_row_or_accounted_for(format, case, from_scores,
                                                     tmp_path_factory):
    traces, labels, options = build(case)
    raw = {}
    for trace in traces.values():  # runs that differ: each names itself in its first event
        found = trace.to_dict()
        found["events"][0]["content"] = f"run {trace.trace_id}"
        raw[trace.trace_id] = trace_from_dict(found, trace.trace_id)
    traces = raw
    pairs = judgements(traces, case["seed"])
    out = tmp_path_factory.mktemp(format.replace("-", "_")) / FORMATS[format].file_name
    written = write_export(format, ExportInput(labels=[*labels, *pairs], traces=traces,
                                               rubric=RUBRIC, options=options,
                                               from_scores=from_scores), out)
    back = read_export(format, out)
    by_id = {r["label_id"]: r for r in [*labels, *pairs]}
    assert all(by_id[r["label_id"]] == r for r in back)
    judged = {(p["trace_id"], p["pair_trace_id"]) for p in pairs}
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    judged_rows = [r for r in rows if r["source"] == "judged"]
    counted = sum(int(re.match(r"(\d+) ", s).group(1)) for s in [*written.left_out,
                                                                 *written.notes]
                  if "pairs" in s.split(":")[0])
    assert len(judged_rows) + counted >= len(judged)
    assert all(r["chosen"] != r["rejected"] for r in rows)
    if options.disputed == "drop":
        assert not any(r["disputed"] for r in rows)
