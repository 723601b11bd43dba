"""The comments posted on disputed targets of campaigns (`dispute_comments`): appended, never
edited nor deleted, read back per disputed target or per campaign, oldest first; and the leads'
hidings of them (`dispute_comment_hidings`), each a row of its own, the comment's text kept.
Who may post and hide where is the Workspace's rule (`ws.disputes`), not this store's."""

from __future__ import annotations

import uuid

from sqlalchemy import Engine, func, insert, select

from viz_app.errors import LabelError
from viz_app.labels import (CommentHiding, DisputeComment, Identity, Part, checked_comment,
                            checked_reason, now)
from viz_app.store.tables import dispute_comment_hidings_table, dispute_comments_table

_c = dispute_comments_table.c
_h = dispute_comment_hidings_table.c


class CommentStore:
    """The dispute comments of one database."""

    def __init__(self, engine: Engine):
        self.engine = engine

    def add(self, campaign: str, trace_id: str, event_id: str | None, author: str,
            identified_by: Identity, role: Part, text: str, *,
            trace_sha256: str = "") -> DisputeComment:
        """Append a comment (its text trimmed; LabelError, nothing stored, when it is empty or
        too long, or names no author)."""
        if not (author or "").strip():
            raise LabelError("a comment needs its author's name; nothing was posted")
        made = DisputeComment(comment_id=uuid.uuid4().hex, campaign=campaign, trace_id=trace_id,
                              event_id=event_id or "", author=author.strip(),
                              identified_by=identified_by, role=role,
                              text=checked_comment(text), trace_sha256=trace_sha256 or "",
                              created_at=now())
        with self.engine.begin() as conn:
            conn.execute(insert(dispute_comments_table), [made.model_dump()])
        return made

    def thread(self, campaign: str, trace_id: str, event_id: str | None) -> list[DisputeComment]:
        """The comments on one target of a campaign, oldest first."""
        query = select(dispute_comments_table).where(
            _c.campaign == campaign, _c.trace_id == trace_id, _c.event_id == (event_id or ""))
        return self._read(query)

    def of_campaign(self, campaign: str, trace_id: str | None = None) -> list[DisputeComment]:
        """Every comment on a campaign's targets (of one trace), oldest first."""
        query = select(dispute_comments_table).where(_c.campaign == campaign)
        if trace_id is not None:
            query = query.where(_c.trace_id == trace_id)
        return self._read(query)

    def get(self, comment_id: str) -> DisputeComment | None:
        """One comment by its id, or None."""
        found = self._read(select(dispute_comments_table).where(_c.comment_id == comment_id))
        return found[0] if found else None

    def hide(self, comment: DisputeComment, hidden_by: str, identified_by: Identity,
             reason: str) -> CommentHiding:
        """Append a hiding of `comment` (the comment's row is left as it is). LabelError, and
        nothing hidden, when the reason is empty or too long, or the comment is hidden already
        (checked in the transaction that appends: two leads at once hide it once)."""
        if not (hidden_by or "").strip():
            raise LabelError("a hiding needs the lead's name; nothing was hidden")
        made = CommentHiding(hiding_id=uuid.uuid4().hex, comment_id=comment.comment_id,
                             campaign=comment.campaign, hidden_by=hidden_by.strip(),
                             identified_by=identified_by, reason=checked_reason(reason),
                             created_at=now())
        with self.engine.begin() as conn:
            before = conn.execute(select(dispute_comment_hidings_table).where(
                _h.campaign == comment.campaign, _h.comment_id == comment.comment_id)
                .order_by(_h.created_at, _h.hiding_id).limit(1)).first()
            if before is not None:
                raise LabelError(f"{before.hidden_by} hid this comment already "
                                 f"({before.created_at[:16].replace('T', ' ')} UTC); nothing "
                                 "was hidden again")
            conn.execute(insert(dispute_comment_hidings_table), [made.model_dump()])
        return made

    def hidings(self, campaign: str) -> dict[str, CommentHiding]:
        """The comments of a campaign a lead hid, by comment id: each one's first hiding."""
        query = select(dispute_comment_hidings_table).where(_h.campaign == campaign) \
            .order_by(_h.created_at, _h.hiding_id)
        found: dict[str, CommentHiding] = {}
        with self.engine.connect() as conn:
            for row in conn.execute(query):
                found.setdefault(row.comment_id, CommentHiding(**row._mapping))
        return found

    def count(self) -> int:
        """How many comments are stored."""
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(
                dispute_comments_table)).scalar_one())

    def _read(self, query) -> list[DisputeComment]:
        query = query.order_by(_c.created_at, _c.comment_id)
        with self.engine.connect() as conn:
            return [DisputeComment(**row._mapping) for row in conn.execute(query)]
