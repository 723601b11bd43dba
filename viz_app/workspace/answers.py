"""The rules of a save (`answers_to_save`) and how label records are read from a file: the ties
that labelling and campaigns both need, kept below both so neither imports the other for them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from viz_app.analysis import Analysis
from viz_app.errors import LabelError
from viz_app.io.records import json_values
from viz_app.labels import LabelTarget, Rubric, asked, pointer_optional

ANSWER_FIRST = "Nothing was saved: pick an answer first: "
"""How a save that lacks a required answer begins its sentence (the questions follow)."""


def answers_to_save(rubric: Rubric, target: LabelTarget,
                    values: Mapping[str, Any], analysis: Analysis | None = None
                    ) -> dict[str, Any]:
    """The answers a save of `values` on a target stores, by the rules of a save: every
    required question has an answer (empty answers count as none), tags are saved even when
    empty, and a follow-up question is kept only when the answer it follows asks it (and then
    it must be answered, unless it points later than the trace's last event: `pointer_optional`,
    given the trace's `analysis`). LabelError says what is missing."""
    questions = [rubric.question(q) for q in target.questions]
    answers = {q.id: values[q.id] for q in questions if q.kind != "tags"
               and values.get(q.id) not in (None, "")}
    missing = [q.prompt for q in questions if q.id in target.required and q.id not in answers]
    if missing:
        raise LabelError(ANSWER_FIRST + "; ".join(missing))
    for q in questions:
        if q.kind == "tags" and q.id in values:
            answers[q.id] = list(values[q.id] or [])
    for q in questions:
        if q.ask_when is None:
            continue
        if not asked(q, answers):
            answers.pop(q.id, None)
        elif q.id not in answers and not (q.optional or pointer_optional(
                rubric, q, answers, analysis, target.event_id)):
            raise LabelError(ANSWER_FIRST + q.prompt)
    return answers


def read_label_records(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Label records from a file in the jsonl export's shape (JSON Lines, or a JSON array):
    what a campaign's gold answers are read from; TraceError naming the line that is not JSON,
    LabelError when a record is not an object."""
    values = json_values(Path(path).read_bytes(), str(path))
    if len(values) == 1 and isinstance(values[0][1], list):
        values = [(1, v) for v in values[0][1]]
    for line, value in values:
        if not isinstance(value, dict):
            raise LabelError(f"{path}: line {line}: a label record is a JSON object")
    return [v for _, v in values]
