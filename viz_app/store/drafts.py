"""Drafts: what a reviewer has answered on a form and not saved yet, kept per reviewer and
form so that a reload, a closed tab or another browser brings it back. A draft is no label:
it is replaced whole at each change, dropped at the save, and nothing exports it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from sqlalchemy import Engine, delete, select

from viz_app.labels import now
from viz_app.store.tables import drafts_table

DRAFT_LIMIT = 400_000
"""Bytes a form's draft may hold (a long correction is kept; an endless paste is not)."""


class DraftStore:
    """The drafts of one database."""

    def __init__(self, engine: Engine):
        self.engine = engine

    def get(self, reviewer: str, form: str) -> dict[str, Any]:
        """The reviewer's draft of a form (widget key -> value), empty when there is none."""
        with self.engine.connect() as conn:
            found = conn.execute(select(drafts_table.c.answers).where(
                drafts_table.c.reviewer == reviewer, drafts_table.c.form == form)).scalar()
        return orjson.loads(found) if found else {}

    def keep(self, reviewer: str, form: str, answers: Mapping[str, Any]) -> bool:
        """Replace the reviewer's draft of a form (an empty one is dropped); False when it is
        too large to keep (the form still holds it for the session)."""
        kept = {k: v for k, v in answers.items() if v not in (None, "", [])}
        if not kept:
            self.drop(reviewer, form)
            return True
        data = orjson.dumps(kept).decode()
        if len(data) > DRAFT_LIMIT:
            return False
        with self.engine.begin() as conn:
            conn.execute(delete(drafts_table).where(drafts_table.c.reviewer == reviewer,
                                                    drafts_table.c.form == form))
            conn.execute(drafts_table.insert(), [{"reviewer": reviewer, "form": form,
                                                  "answers": data, "updated_at": now()}])
        return True

    def drop(self, reviewer: str, form: str) -> None:
        """Forget the reviewer's draft of a form."""
        with self.engine.begin() as conn:
            conn.execute(delete(drafts_table).where(drafts_table.c.reviewer == reviewer,
                                                    drafts_table.c.form == form))
