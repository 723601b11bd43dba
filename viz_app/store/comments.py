"""The comments posted on disputed targets of campaigns (`dispute_comments`): appended, never
edited nor deleted, read back per disputed target or per campaign, oldest first; and the leads'
hidings of them and their showings again (`dispute_comment_hidings`), each a row of its own, the
comment's text kept, the latest row deciding.
Who may post and hide where is the Workspace's rule (`ws.disputes`), not this store's."""

from __future__ import annotations

import uuid

from sqlalchemy import Engine, func, insert, select

from viz_app.errors import LabelError
from viz_app.labels import (CommentHiding, DisputeComment, Identity, Moderation, Part,
                            checked_comment, checked_reason, latest_hiding, now, now_after)
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
        nothing hidden, when the reason is empty or too long, or the comment is hidden now
        (checked in the transaction that appends: two leads at once hide it once)."""
        return self._moderate(comment, "hidden", hidden_by, identified_by, reason)

    def show(self, comment: DisputeComment, shown_by: str, identified_by: Identity,
             reason: str = "") -> CommentHiding:
        """Append a showing again of a hidden `comment`: a row of its own beside the hiding,
        which stays (who hid it, when and why). LabelError, and nothing changed, when the
        comment is not hidden now or the reason is too long."""
        return self._moderate(comment, "shown", shown_by, identified_by, reason)

    def _moderate(self, comment: DisputeComment, action: Moderation, by: str,
                  identified_by: Identity, reason: str) -> CommentHiding:
        """Append one row of `action` when the comment's latest row allows it: a hiding over a
        comment shown (never hidden, or shown again), a showing over a hidden one."""
        done = "hidden" if action == "hidden" else "shown again"
        if not (by or "").strip():
            raise LabelError(f"a {'hiding' if action == 'hidden' else 'showing'} needs the "
                             f"lead's name; nothing was {done}")
        reason = checked_reason(reason, action)
        with self.engine.begin() as conn:
            rows = self._rows(conn, comment.campaign, comment.comment_id)
            hidden = latest_hiding(rows.get(comment.comment_id, []))
            if action == "hidden" and hidden is not None:
                raise LabelError(f"{hidden.hidden_by} hid this comment already ({hidden.when});"
                                 " nothing was hidden again")
            if action == "shown" and hidden is None:
                raise LabelError("this comment is not hidden, so there is nothing to show "
                                 "again; nothing was changed")
            last = rows[comment.comment_id][-1].created_at if comment.comment_id in rows else ""
            made = CommentHiding(hiding_id=uuid.uuid4().hex, comment_id=comment.comment_id,
                                 campaign=comment.campaign, hidden_by=by.strip(),
                                 identified_by=identified_by, reason=reason,
                                 created_at=now_after(last), action=action)  # reads as latest
            conn.execute(insert(dispute_comment_hidings_table), [made.model_dump()])
        return made

    def hidings(self, campaign: str) -> dict[str, CommentHiding]:
        """The comments of a campaign hidden now, by comment id: each one's latest row, when
        it is a hiding (a comment shown again is not listed)."""
        return {comment_id: found for comment_id, rows in self.moderation(campaign).items()
                if (found := latest_hiding(rows)) is not None}

    def moderation(self, campaign: str) -> dict[str, list[CommentHiding]]:
        """Every hiding and showing again of a campaign's comments, by comment id, oldest
        first: the latest decides whether the comment is hidden."""
        with self.engine.connect() as conn:
            return self._rows(conn, campaign)

    @staticmethod
    def _rows(conn, campaign: str, comment_id: str | None = None
              ) -> dict[str, list[CommentHiding]]:
        query = select(dispute_comment_hidings_table).where(_h.campaign == campaign)
        if comment_id is not None:
            query = query.where(_h.comment_id == comment_id)
        found: dict[str, list[CommentHiding]] = {}
        for row in conn.execute(query.order_by(_h.created_at, _h.hiding_id)):
            found.setdefault(row.comment_id, []).append(CommentHiding(**row._mapping))
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

