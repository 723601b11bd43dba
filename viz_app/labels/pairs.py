"""Pairwise judgements: which of two orchestrations is better, why, and by how much.

A judgement is a label like any other, kept in the label store (append-only, newest per reviewer
is current) under the question `pairwise_preference`. The pair is stored in a canonical order
(the smaller trace id is the label's trace, the other its `pair_trace_id`), so judging A against
B and later B against A is one judgement that changed. Its value is
`{"chosen": <trace id> | null, "strength": 1 | 2 | 3 | null}` (null chosen: about the same), and
its comment is the reason. It carries no scalar reward: reward exports leave it out, and the
`preference` export turns it into a (chosen, rejected, margin) row.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

import orjson
from pydantic import BaseModel, Field

from viz_app.errors import LabelError
from viz_app.labels.label import Identity, Label, LabelRecord, now
from viz_app.labels.rubric import Rubric
from viz_app.model import Trace

PAIRWISE_QUESTION = "pairwise_preference"
"""The question id a pairwise judgement is stored under."""

PAIRWISE_PROMPT = "Which orchestration is better, and why?"
"""The question as the reviewer reads it."""

STRENGTHS: dict[int, str] = {1: "slightly better", 2: "clearly better", 3: "much better"}
"""How much better the chosen orchestration is; optional."""


class Preference(BaseModel):
    """One reviewer's current judgement of one pair of traces."""

    first: str = Field(description="The pair's first trace id (the smaller).")
    second: str = Field(description="The pair's second trace id.")
    chosen: str | None = Field(description="The trace judged better; None for about the same.")
    strength: int | None = Field(description="1 slightly, 2 clearly, 3 much better; None if not "
                                 "given.")
    reason: str = Field(description="Why, in the reviewer's words.")
    reviewer: str = Field(description="Who judged.")
    created_at: str = Field(description="When.")

    @property
    def rejected(self) -> str | None:
        """The trace judged worse; None for a tie."""
        if self.chosen is None:
            return None
        return self.second if self.chosen == self.first else self.first

    @property
    def pair(self) -> tuple[str, str]:
        """The pair in canonical order."""
        return self.first, self.second


def pair_key(a: str, b: str) -> tuple[str, str]:
    """Two trace ids in the canonical order a judgement stores them."""
    return (a, b) if a <= b else (b, a)


def same_run(a: Trace, b: Trace) -> bool:
    """Whether two traces are one run: the same hash, or the same content under two ids."""
    if a.sha256 == b.sha256:
        return True
    if len(a.events) != len(b.events) or a.task_id != b.task_id:
        return False
    return _content(a) == _content(b)


def _content(trace: Trace) -> bytes:
    raw = trace.to_dict()
    raw.pop("trace_id", None)
    return orjson.dumps(raw, option=orjson.OPT_SORT_KEYS)


def judgement_label(rubric: Rubric, a: Trace, b: Trace, chosen: str | None, reviewer: str,
                    reason: str, strength: int | None = None, *,
                    identified_by: Identity = "cli") -> Label:
    """The label that records a judgement of traces a and b (not yet saved); LabelError when the
    two are one trace or one run twice (`same_run`: a preference between them would teach
    nothing, and a trainer would read chosen == rejected), `chosen` is neither, the strength is
    not 1-3, or the reason or reviewer is missing."""
    if a.trace_id == b.trace_id:
        raise LabelError("a pairwise judgement needs two different traces")
    if same_run(a, b):
        raise LabelError(f"{a.trace_id} and {b.trace_id} are identical runs: judge two runs "
                         "that differ")
    first, second = (a, b) if a.trace_id <= b.trace_id else (b, a)
    if chosen is not None and chosen not in (first.trace_id, second.trace_id):
        raise LabelError(f"the chosen trace {chosen!r} is not one of the pair")
    if strength is not None and strength not in STRENGTHS:
        raise LabelError(f"strength is one of {', '.join(map(str, STRENGTHS))} or none")
    if chosen is None and strength is not None:
        raise LabelError("a tie has no strength")
    reviewer = (reviewer or "").strip()
    if not reviewer:
        raise LabelError("a label needs a reviewer name")
    reason = (reason or "").strip()
    if not reason:
        raise LabelError("say why: a pairwise judgement needs a reason")
    return Label(
        label_id=uuid.uuid4().hex, trace_id=first.trace_id, trace_sha256=first.sha256,
        event_id="", question=PAIRWISE_QUESTION,
        value={"chosen": chosen, "strength": strength, "pair_sha256": second.sha256},
        reward=None, reviewer=reviewer, created_at=now(), rubric_version=rubric.version,
        rubric_sha256=rubric.sha256, comment=reason, seconds_spent=None, source="human",
        origin="", pair_trace_id=second.trace_id, identified_by=identified_by)


def preference_of(record: LabelRecord) -> Preference:
    """The judgement a label record holds (a record of question `pairwise_preference`)."""
    value: dict[str, Any] = record["value"] if isinstance(record["value"], dict) else {}
    return Preference(first=record["trace_id"], second=record["pair_trace_id"],
                      chosen=value.get("chosen"), strength=value.get("strength"),
                      reason=record.get("comment") or "", reviewer=record["reviewer"],
                      created_at=record["created_at"])


def preferences(records: Iterable[LabelRecord]) -> list[Preference]:
    """The pairwise judgements among current label records."""
    return [preference_of(r) for r in records
            if r["question"] == PAIRWISE_QUESTION and r.get("pair_trace_id")]


def judgement(records: Iterable[LabelRecord], a: str, b: str, reviewer: str) -> Preference | None:
    """A reviewer's current judgement of a pair of traces among current label records, if they
    gave one."""
    first, second = pair_key(a, b)
    for p in preferences(records):
        if p.reviewer == reviewer and (p.first, p.second) == (first, second):
            return p
    return None
