"""The rules as one producer of suggestions: every detector by name, the context they share on
one analysis, what they find in a trace and the suggestions that makes for a rubric."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from viz_app.analysis import Analysis, analyze
from viz_app.labels import Producer, Rubric, Suggestion, targets
from viz_app.model import Trace
from viz_app.suggest.rules.aggregation import unfaithful_merge
from viz_app.suggest.rules.delegation import wrong_delegate
from viz_app.suggest.rules.facts import Context, Finding
from viz_app.suggest.rules.messages import redundant_message
from viz_app.suggest.rules.spawning import over_spawning
from viz_app.suggest.rules.stopping import late_stop, premature_stop

VERSION = "3"
"""The rules' version: change it when a rule or threshold changes, so stored suggestions of the
old rules stay apart from the new ones."""

PRODUCER = Producer(name="rules", version=VERSION)

FINE: dict[str, Any] = {
    "stopping_correctness": "correct",
    "aggregation_quality": 5,
    "aggregation_issues": [],
    "spawn_necessity": "necessary",
    "delegation_fit": "right_agent",
    "message_necessity": "necessary",
}
"""The answer a detector's silence stands for, per question it answers."""


DETECTORS: dict[str, Callable[[Context], list[Finding]]] = {
    "premature_stop": premature_stop,
    "late_stop": late_stop,
    "unfaithful_merge": unfaithful_merge,
    "over_spawning": over_spawning,
    "redundant_message": redundant_message,
    "wrong_delegate": wrong_delegate,
}
"""Every detector by name, in the order they run."""



def context(analysis: Analysis) -> Context:
    """The detectors' shared facts on one analysis, built once per analysis (kept on it, so
    they go when it goes)."""
    ctx = analysis.__dict__.get("_rules_context")
    if ctx is None:
        ctx = analysis.__dict__["_rules_context"] = Context(analysis, DETECTORS)
    return ctx



# -- findings to suggestions ----------------------------------------------------------------


def findings(trace: Trace, names: Iterable[str] | None = None) -> list[Finding]:
    """What the detectors (all, or those named) find in one trace; where two findings answer
    the same question on the same target, the more confident one."""
    ctx = context(analyze(trace))
    best: dict[tuple[str, str], Finding] = {}
    for name in names if names is not None else DETECTORS:
        for f in ctx.findings_of(name):
            key = (f.event_id, f.question)
            if key not in best or f.confidence > best[key].confidence:
                best[key] = f
    return list(best.values())


def suggest(trace: Trace, rubric: Rubric) -> list[Suggestion]:
    """The rules' suggestions on one trace, for the questions the rubric asks about each target
    (a finding whose question or answer the rubric does not have is left out)."""
    asked: dict[str, set[str]] = defaultdict(set)
    for target in targets(rubric, analyze(trace)):
        for question in target.questions:
            asked[question].add(target.key)
    made: list[Suggestion] = []
    sha256 = trace.sha256
    for f in findings(trace):
        if f.event_id not in asked.get(f.question, ()):
            continue
        question = rubric.questions_by_id[f.question]
        values = f.value if question.kind == "tags" else [f.value]
        if any(question.choice(v) is None for v in values):
            continue
        made.append(Suggestion(
            trace_id=trace.trace_id, trace_sha256=sha256, event_id=f.event_id,
            question=f.question, value=f.value, confidence=f.confidence, producer=PRODUCER,
            evidence=f.evidence, explanation=f.explanation))
    return made
