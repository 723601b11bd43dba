"""A suggestion: a producer's proposed answer to a rubric question on one target, with the
evidence behind it. Suggestions are kept apart from labels (their own table, their own export):
they point a reviewer at something, they are never a reviewer's answer. Pure: no SQL here (the
store is `viz_app.store.suggestions`)."""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Producer(BaseModel):
    """What made a suggestion: a detector (`rules`) or a judge model, and which version of it."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="`rules`, `judge`, or another producer's name.")
    version: str = Field(description="The producer's version: a new version may answer anew.")
    model: str = Field("", description="The language model a judge asked ('' for rules).")
    prompt_sha256: str = Field("", description="SHA-256 of a judge's prompt template ('' for "
                               "rules).")


class Suggestion(BaseModel):
    """One suggested answer on one target, and why."""

    model_config = ConfigDict(frozen=True)

    trace_id: str
    trace_sha256: str = Field(description="`Trace.sha256` of the trace it was made on.")
    event_id: str = Field(description="The event it is about; '' for the trace itself.")
    question: str = Field(description="The rubric question it answers.")
    value: Any = Field(description="The suggested answer, on the question's own scale.")
    confidence: float = Field(ge=0.0, le=1.0, description="How sure the producer is.")
    producer: Producer
    evidence: tuple[str, ...] = Field(default=(), description="Ids of the events that are its "
                                      "evidence, to be shown as links.")
    explanation: str = Field("", description="One sentence a reviewer reads: 'premature: e7 "
                             "returned after the stop'.")
    created_at: str = Field("", description="When it was stored (ISO 8601 UTC).")

    @property
    def suggestion_id(self) -> str:
        """Derived from the producer, the trace version, the target and the question, so one
        producer version run twice on one trace stores one row."""
        key = "\x1f".join((self.producer.name, self.producer.version, self.producer.model,
                           self.producer.prompt_sha256, self.trace_sha256, self.trace_id,
                           self.event_id, self.question))
        return hashlib.sha256(key.encode()).hexdigest()


class SuggestionFailure(BaseModel):
    """A producer that gave no suggestion on a target (a timeout, a refusal, an answer that does
    not fit the question): recorded, never turned into a suggestion."""

    model_config = ConfigDict(frozen=True)

    trace_id: str
    trace_sha256: str
    event_id: str
    question: str
    producer: Producer
    error: str = Field(description="What failed, in one sentence.")
    created_at: str = ""
