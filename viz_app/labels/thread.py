"""A dispute's thread: what was said on a disputed target of a campaign, in time order, so that
the reviewers' notes, the comments posted on the dispute and the lead's reason for the final
answer are read together (as Label Studio's and Argilla's comment threads are).

Three kinds of entry, each from where it is kept, none copied:

- `note`: a reviewer's note, given with their answers (`Label.comment`): one entry per save,
  whatever the number of questions it answered;
- `comment`: a comment posted on the dispute (`DisputeComment`, the `dispute_comments` table):
  appended, never edited; a lead may hide one (`CommentHiding`, a row of its own): its text is
  kept, and reviewers read "hidden by LEAD: reason" in its place (`for_reviewers`); a lead may
  show it again (another row, `shown`): a comment's latest row decides, and every row stays
  with it (`ThreadEntry.moderation`);
- `reason`: a lead's reason for the final answer (an adjudication label's comment).

Pure: no SQL; the store keeps comments (`viz_app.store.comments`), the Workspace puts the thread
together (`ws.disputes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from viz_app.errors import LabelError
from viz_app.labels.campaign import Disagreement
from viz_app.labels.label import Identity, LabelRecord

COMMENT_LIMIT = 4000
"""Characters a comment may hold: room for an argument, not for a pasted trace."""

REASON_LIMIT = 500
"""Characters a lead's reason for hiding a comment may hold."""

Part = Literal["reviewer", "lead"]
"""Who someone is in a dispute: one of the reviewers whose answers disagree, or a lead."""

EntryKind = Literal["note", "comment", "reason"]

Moderation = Literal["hidden", "shown"]
"""What a lead did to a comment: hid it, or showed it again."""

KIND_ORDER: dict[str, int] = {"note": 0, "comment": 1, "reason": 2}
"""At the same instant, a note reads before a comment, and a comment before a final reason."""


class DisputeComment(BaseModel):
    """A comment posted on a disputed target of a campaign, with its provenance."""

    model_config = ConfigDict(frozen=True)

    comment_id: str = Field(description="Unique id (random).")
    campaign: str = Field(description="The campaign whose target is disputed.")
    trace_id: str = Field(description="The trace of the disputed target.")
    event_id: str = Field(description="The disputed event; '' for the trace itself.")
    author: str = Field(description="Who wrote it (a name or e-mail, as labels name reviewers).")
    identified_by: Identity = Field(description="How the author was known (see "
                                    "`Label.identified_by`): `oidc` is verified.")
    role: Part = Field(description="The author's part: a reviewer of the dispute, or a lead.")
    text: str = Field(description="What they wrote: Markdown they mean, shown made safe.")
    trace_sha256: str = Field("", description="The trace version on screen when it was "
                              "written ('' when none was, as from the command line).")
    created_at: str = Field(description="When, as ISO 8601 UTC with microseconds.")


class CommentHiding(BaseModel):
    """A lead's hiding of a dispute comment, or their showing it again, with its provenance: a
    row of its own, appended; the comment and its text stay in the store as written, and the
    comment's latest row says whether it is hidden (`latest_hiding`)."""

    model_config = ConfigDict(frozen=True)

    hiding_id: str = Field(description="Unique id (random).")
    comment_id: str = Field(description="The comment hidden (or shown again).")
    campaign: str = Field(description="The campaign of the comment's dispute.")
    hidden_by: str = Field(description="The lead who hid it (for `shown`: who showed it "
                           "again).")
    identified_by: Identity = Field(description="How the lead was known (`oidc` is verified).")
    reason: str = Field(description="Why, as the lead wrote it: a hiding's is shown to the "
                        "reviewers in the comment's place; a showing's may be ''.")
    created_at: str = Field(description="When, as ISO 8601 UTC with microseconds.")
    action: Moderation = Field("hidden", description="`hidden`, or `shown` (shown again).")

    @property
    def line(self) -> str:
        """'hidden by lee: off topic', 'shown again by kim: misread' (unescaped: escape it for
        where it goes)."""
        if self.action == "shown":
            return f"shown again by {self.hidden_by}" + (f": {self.reason}" if self.reason
                                                         else "")
        return f"hidden by {self.hidden_by}: {self.reason}"

    @property
    def when(self) -> str:
        """'2026-12-06 21:40 UTC'."""
        return f"{self.created_at[:16].replace('T', ' ')} UTC"


def latest_hiding(rows: Sequence[CommentHiding]) -> CommentHiding | None:
    """Whether a comment is hidden, from its rows oldest first: its latest row when that is a
    hiding, else None (never hidden, or shown again since)."""
    return rows[-1] if rows and rows[-1].action == "hidden" else None


class ThreadEntry(BaseModel):
    """One entry of a dispute's thread."""

    model_config = ConfigDict(frozen=True)

    kind: EntryKind = Field(description="`note` (a reviewer's note with their answers), "
                            "`comment` (posted on the dispute) or `reason` (a lead's reason "
                            "for the final answer).")
    author: str
    role: Part
    identified_by: Identity = ""
    created_at: str
    text: str = Field(description="As written: escape it for where it goes (viz_app.text).")
    questions: list[str] = Field(default_factory=list, description="For a note or a reason: "
                                 "the questions answered with it.")
    source_id: str = Field(description="The comment's id, or the first label's id for a note "
                           "or a reason: where the entry is kept.")
    hidden: CommentHiding | None = Field(None, description="For a comment a lead hid: who, "
                                         "when and why. A lead reads `text` beside it; a "
                                         "reviewer reads '' (`for_reviewers`).")
    moderation: list[CommentHiding] = Field(default_factory=list, description="For a comment: "
                                            "every hiding and showing again, oldest first "
                                            "(the latest decides `hidden`).")

    @property
    def heading(self) -> str:
        """What the entry is, in a few plain words ('note with aggregation_quality', 'comment',
        'final answer's reason'), unescaped."""
        if self.kind == "comment":
            return "comment"
        what = "note" if self.kind == "note" else "reason for the final answer"
        return f"{what} ({', '.join(self.questions)})" if self.questions else what


def checked_comment(text: str) -> str:
    """A comment's text as stored (trimmed); LabelError, and nothing stored, when it is empty or
    longer than `COMMENT_LIMIT`."""
    found = (text or "").strip()
    if not found:
        raise LabelError("a comment needs some words; nothing was posted")
    if len(found) > COMMENT_LIMIT:
        raise LabelError(f"a comment holds at most {COMMENT_LIMIT} characters (this one "
                         f"{len(found)}); nothing was posted")
    return found


def checked_reason(text: str, action: Moderation = "hidden") -> str:
    """A reason for hiding a comment (or showing it again) as stored (trimmed); LabelError, and
    nothing changed, when it is longer than `REASON_LIMIT`, or empty for a hiding (the
    reviewers read it in the comment's place; showing again may say nothing)."""
    found = " ".join((text or "").split())
    if not found and action == "hidden":
        raise LabelError("say why the comment is hidden (the reviewers read it in its place); "
                         "nothing was hidden")
    if len(found) > REASON_LIMIT:
        raise LabelError(f"a reason for {'hiding' if action == 'hidden' else 'showing again'} "
                         f"holds at most {REASON_LIMIT} characters (this one {len(found)}); "
                         f"nothing was {'hidden' if action == 'hidden' else 'shown again'}")
    return found


def for_reviewers(entries: Iterable[ThreadEntry]) -> list[ThreadEntry]:
    """The thread as a reviewer (anyone not a lead) reads it: a hidden comment's text left out,
    its `hidden` line in its place."""
    return [e.model_copy(update={"text": ""}) if e.hidden is not None else e for e in entries]


def dispute_thread(labels: Iterable[LabelRecord], comments: Iterable[DisputeComment],
                   hidings: Mapping[str, Sequence[CommentHiding]] | None = None
                   ) -> list[ThreadEntry]:
    """The thread of one disputed target: the notes its reviewers gave with their answers (one
    per save), the comments posted, and the leads' reasons for a final answer, oldest first.
    `labels` are that target's labels in the campaign, every save kept (not only the current
    ones: a reviewer who changed their answer said why at each save); those with no note say
    nothing and are left out. `hidings` (by comment id: its hidings and showings again, oldest
    first) marks the comments a lead hid and has not shown again, their text kept: a page for
    reviewers shows the thread through `for_reviewers`."""
    hidings = hidings or {}
    saves: dict[tuple, list[Mapping]] = {}
    for record in labels:
        if not (record.get("comment") or "").strip():
            continue
        source = record.get("source", "human")
        if source not in ("human", "adjudication"):
            continue  # an imported label's comment is its origin's, not said in this dispute
        key = (record["reviewer"], source, record["created_at"], record["comment"])
        saves.setdefault(key, []).append(record)
    entries = [ThreadEntry(
        kind="reason" if source == "adjudication" else "note", author=reviewer,
        role="lead" if source == "adjudication" else "reviewer",
        identified_by=found[0].get("identified_by") or "", created_at=at, text=comment.strip(),
        questions=sorted({r["question"] for r in found}), source_id=found[0]["label_id"])
        for (reviewer, source, at, comment), found in saves.items()]
    entries += [ThreadEntry(kind="comment", author=c.author, role=c.role,
                            identified_by=c.identified_by, created_at=c.created_at, text=c.text,
                            source_id=c.comment_id,
                            hidden=latest_hiding(hidings.get(c.comment_id, ())),
                            moderation=list(hidings.get(c.comment_id, ())))
                for c in comments]
    return sorted(entries, key=lambda e: (e.created_at, KIND_ORDER[e.kind], e.source_id))


class DisputeThread(BaseModel):
    """A disputed target of a campaign, both sides of it and what was said on it."""

    campaign: str
    dispute: Disagreement = Field(description="The target, each reviewer's answers, the "
                                  "questions disputed and any adjudicated answer.")
    entries: list[ThreadEntry] = Field(description="The thread, oldest first.")

    @property
    def key(self) -> tuple[str, str, str]:
        """(campaign, trace id, event id or '' for the trace): what the thread is keyed by."""
        return self.campaign, self.dispute.trace_id, self.dispute.event_id or ""
