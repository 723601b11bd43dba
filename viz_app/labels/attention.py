"""Where a campaign's queue asks first, pure: how unsure the learned producer is on a target (the
`uncertain` order) and how far the producers and a first reviewer disagree there (the
`contested` order). Each gives a target an *urgency*, higher first; a target with none goes after
every target with one, in the sample's order (`labels.campaign_plan.prioritise`).

Both look only at suggestions made on the target's own trace version (`trace_sha256`) and only
at the campaign's questions asked there. Neither urgency depends on *which* answer anyone gave or
suggested, only on how sure or how split they are, so a reviewer who notices that a target came
early learns that it is hard, never what was suggested (docs/campaigns.md, Queue orders and
blind review).

    urgency = uncertainty(planned, suggestions)            # {(trace id, event id): 0..1}
    urgency = contests(rubric, planned, suggestions, first_answers(labels), silence=FINES)
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Protocol

from viz_app.labels.disagreement import disputed
from viz_app.labels.label import LabelRecord
from viz_app.labels.rubric import Rubric
from viz_app.labels.suggestion import Suggestion

LEARNED = "learned"
"""The learned producer's name (`orchviz suggest --producer learned`)."""

Key = tuple[str, str]
"""(trace id, event id or '' for the trace itself): a campaign target."""


class Target(Protocol):
    """What these functions read of a campaign target (`PlannedTarget`, the store's row)."""

    trace_id: str
    trace_sha256: str
    event_id: str
    questions: list[str]


def producer_name(suggestion: Suggestion) -> str:
    """A producer as a rater: its name, with the model a judge asked (two judge models are two
    producers; two versions of one producer are one, its newest answer counting)."""
    p = suggestion.producer
    return f"{p.name} ({p.model})" if p.model else p.name


def latest_version(suggestions: Iterable[Suggestion], producer: str = LEARNED,
                   question: str | None = None) -> str | None:
    """The version of a producer (on one question, or any) whose newest suggestion was stored
    last (a learned producer's version is the hash of its training set, one model per question,
    so only the time orders them); None when the producer has made none."""
    newest: dict[str, str] = {}
    for s in suggestions:
        if s.producer.name == producer and (question is None or s.question == question):
            newest[s.producer.version] = max(newest.get(s.producer.version, ""), s.created_at)
    if not newest:
        return None
    return max(newest, key=lambda v: (newest[v], v))


def doubt(confidence: float) -> float:
    """How unsure a suggestion is: 1 - its confidence. The learned producer's confidence is the
    calibrated probability of the answer it suggests, its most probable one, so on a yes/no
    question it is 0.5 or more and the nearest to 0.5 is the least certain; with three answers
    0.34 is less certain than 0.5, which a distance from 0.5 would get wrong. It says how sure,
    never which answer. Rounded to 9 places (a float's last bit must not order two targets)."""
    return round(1.0 - confidence, 9)


def uncertainty(targets: Iterable[Target], suggestions: Iterable[Suggestion],
                producer: str = LEARNED) -> dict[Key, float]:
    """Per target, the `doubt` of the producer's (default: the learned one's) latest version
    of each question's (its model of that question) on it: of its least certain suggestion
    among the target's questions, on the target's trace version. Targets it made no such
    suggestion on are left out."""
    suggestions = [s for s in suggestions if s.producer.name == producer]
    latest = {q: latest_version(suggestions, producer, q) for q in {s.question
                                                                      for s in suggestions}}
    confidence: dict[tuple[str, str, str, str], float] = {}
    for s in suggestions:
        if s.producer.version == latest[s.question]:
            confidence[(s.trace_id, s.trace_sha256, s.event_id, s.question)] = s.confidence
    found: dict[Key, float] = {}
    for t in targets:
        doubts = [doubt(c) for q in t.questions
                  if (c := confidence.get((t.trace_id, t.trace_sha256, t.event_id, q)))
                  is not None]
        if doubts:
            found[(t.trace_id, t.event_id)] = max(doubts)
    return found


def first_answers(labels: Iterable[LabelRecord]) -> dict[tuple[str, str, str, str], Any]:
    """The first reviewer's answer per (trace id, trace version, event id, question): the
    earliest current answer of a reviewer's own (`source` human: neither imported nor an
    adjudication, which is made after reading a dispute)."""
    first: dict[tuple[str, str, str, str], tuple[str, Any]] = {}
    for label in labels:
        if label.get("source", "human") != "human":
            continue
        key = (label["trace_id"], label.get("trace_sha256", ""), label["event_id"] or "",
               label["question"])
        at = label.get("created_at") or ""
        if key not in first or at < first[key][0]:
            first[key] = (at, label["value"])
    return {k: v for k, (_, v) in first.items()}


def earlier_reviewers(labels: Iterable[LabelRecord]) -> dict[tuple[str, str, str], set[str]]:
    """Per (trace id, trace version, event id), the reviewers with a current answer of their own
    there (`source` human), any question: who would learn something from a contested target
    coming early, since they know their own answer."""
    found: dict[tuple[str, str, str], set[str]] = {}
    for label in labels:
        if label.get("source", "human") == "human":
            key = (label["trace_id"], label.get("trace_sha256", ""), label["event_id"] or "")
            found.setdefault(key, set()).add(label["reviewer"])
    return found


def opinions(target: Target, question: str, suggestions: Sequence[Suggestion],
             first: Mapping[tuple[str, str, str, str], Any],
             silence: Mapping[str, Mapping[str, Any]] | None = None,
             ran_on: Collection[tuple[str, str, str]] = ()) -> dict[str, Any]:
    """Who holds which answer to one question on one target: each producer's newest suggestion
    there (on the target's trace version); a producer named in `silence` that made a suggestion
    on this trace version (one given, or (producer, trace id, trace version) in `ran_on`: the
    suggestions given may be of the campaign's questions only) but none here, the answer its
    silence stands for (the rules suggest only faults: `rules.FINE`); and the first reviewer's
    answer, as `reviewer`."""
    newest: dict[str, Suggestion] = {}
    ran: set[str] = {name for name in (silence or {})
                     if (name, target.trace_id, target.trace_sha256) in ran_on}
    for s in suggestions:
        if s.trace_id != target.trace_id or s.trace_sha256 != target.trace_sha256:
            continue
        name = producer_name(s)
        ran.add(name)
        if s.event_id != target.event_id or s.question != question:
            continue
        held = newest.get(name)
        if held is None or (s.created_at, s.producer.version) >= (held.created_at,
                                                                  held.producer.version):
            newest[name] = s
    held_by = {name: s.value for name, s in newest.items()}
    for name, answers in (silence or {}).items():
        if name in ran and name not in held_by and question in answers:
            held_by[name] = answers[question]
    key = (target.trace_id, target.trace_sha256, target.event_id, question)
    if key in first:
        held_by["reviewer"] = first[key]
    return held_by


def contest(rubric: Rubric, target: Target, suggestions: Sequence[Suggestion],
            first: Mapping[tuple[str, str, str, str], Any],
            silence: Mapping[str, Mapping[str, Any]] | None = None,
            ran_on: Collection[tuple[str, str, str]] = ()) -> float | None:
    """How contested a target is: over its questions, the largest spread of the `opinions`
    (two producers, or a producer and the first reviewer) where they disagree
    (`labels.disagreement.disputed`, the one rule: any difference on a category, a yes/no or
    an event; more than a quarter of the span on a scale); None where they all agree or fewer than two hold one."""
    spreads = []
    for q in target.questions:
        held = opinions(target, q, suggestions, first, silence, ran_on)
        found = disputed(rubric.question(q), list(held.values()))
        if found is not None:
            spreads.append(found)
    return max(spreads) if spreads else None


def contests(rubric: Rubric, targets: Iterable[Target], suggestions: Iterable[Suggestion],
             first: Mapping[tuple[str, str, str, str], Any],
             silence: Mapping[str, Mapping[str, Any]] | None = None,
             ran_on: Collection[tuple[str, str, str]] = ()) -> dict[Key, float]:
    """`contest` of every target that is contested."""
    by_trace: dict[str, list[Suggestion]] = {}
    for s in suggestions:
        by_trace.setdefault(s.trace_id, []).append(s)
    found: dict[Key, float] = {}
    for t in targets:
        spread = contest(rubric, t, by_trace.get(t.trace_id, []), first, silence, ran_on)
        if spread is not None:
            found[(t.trace_id, t.event_id)] = spread
    return found
