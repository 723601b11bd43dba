"""The disputes facet (`ws.disputes`): the comment thread of each disputed target of a
campaign, where the reviewers' notes, the comments posted on the dispute and the lead's reason
for the final answer are read together, in time order.

Who may read and post is decided here, not by a page: a reviewer on the disputes they are in
(their answers are one side of it: they saved theirs, so the campaign's seal is open for them
there), a lead (`ws.campaigns.may_lead`) on any target of the campaign. A comment is appended
and never edited; its author is named as labels name reviewers (`Reviewer`, with how they were
known). Only a lead may hide a comment (`hide`): a row of its own says who, when and why, the
comment's text stays in the store, and a lead still reads it; everyone else (a reviewer of the
dispute, a case-study report) reads "hidden by LEAD: reason" in its place. A lead may show it
again (`show`): another row, the hiding kept; the comment's latest row decides.
"""

from __future__ import annotations

from viz_app.errors import LabelError
from viz_app.labels import (CommentHiding, Disagreement, DisputeComment, DisputeThread, Label,
                            Part, Reviewer, ThreadEntry, dispute_thread, for_reviewers)
from viz_app.store import CampaignStore, CommentStore
from viz_app.workspace.campaigns import Campaigns
from viz_app.workspace.ground import Ground


class Disputes:
    """Threads on the disputed targets of campaigns."""

    def __init__(self, ground: Ground, campaigns: Campaigns):
        self._ground = ground
        self._campaigns = campaigns

    @property
    def _comments(self) -> CommentStore:
        return CommentStore(self._ground.engine)

    # -- who is who in a dispute --------------------------------------------------------------

    def dispute(self, name: str, trace_id: str, event_id: str | None) -> Disagreement | None:
        """The disagreement on a target of a campaign (settled or not), or None when its
        reviewers agree there; LabelError when the campaign or its target does not exist."""
        return self._campaigns.disagreement(name, trace_id, event_id)

    def part(self, name: str, trace_id: str, event_id: str | None,
             person: Reviewer) -> Part | None:
        """A person's part in the dispute on a target: `reviewer` when their answers are one of
        its sides, `lead` when they may lead (and are no side of it), else None (they may
        neither read its thread nor post on it). LabelError when the campaign has no such
        target."""
        found = self.dispute(name, trace_id, event_id)
        if found is not None and person.name in found.answers:
            return "reviewer"
        return "lead" if self._campaigns.may_lead(person) else None

    def waiting(self, reviewer: Reviewer) -> list[tuple[str, Disagreement]]:
        """The unsettled disputes a reviewer is one side of, (campaign, dispute) in campaign
        order: what the Review page counts to link the Disputes page (no thread is read)."""
        return [(c.name, d) for c in self._campaigns.all()
                for d in self._campaigns.disagreements(c.name)
                if reviewer.name in d.answers and not d.resolved]

    def _allowed(self, name: str, trace_id: str, event_id: str | None, person: Reviewer,
                 doing: str) -> Part:
        part = self.part(name, trace_id, event_id, person)
        if part is None:
            raise LabelError(f"{person.name} is neither a reviewer of the dispute on "
                             f"{trace_id} · {event_id or 'the whole trace'} in campaign "
                             f"{name!r} nor a lead, so cannot {doing}")
        return part

    # -- the thread ------------------------------------------------------------------------------

    def thread(self, name: str, trace_id: str, event_id: str | None,
               viewer: Reviewer) -> list[ThreadEntry]:
        """The thread of a target of a campaign, oldest first: each reviewer's notes from their
        labels (every save, retracted ones left out), the comments posted, and the leads'
        reasons for the final answer; a comment a lead hid is read whole by a lead (no side of
        the dispute), as its hidden line by its sides. LabelError when the viewer may not read
        it (`part`)."""
        part = self._allowed(name, trace_id, event_id, viewer, "read its thread")
        entries = self._entries(name, trace_id, event_id)
        return entries if part == "lead" else for_reviewers(entries)

    def _entries(self, name: str, trace_id: str, event_id: str | None,
                 comments: list[DisputeComment] | None = None, *,
                 retracted: set[str] | None = None, history: list[Label] | None = None,
                 hidings: dict[str, list[CommentHiding]] | None = None) -> list[ThreadEntry]:
        """The thread of one target; `retracted` and `history` (the trace's labels, every save)
        when the caller read them already for several targets."""
        labels = self._ground.labels
        if retracted is None:
            retracted = labels.retracted()
        if history is None:
            history = list(labels.all(trace_id))
        records = [x.to_record() for x in history
                   if x.campaign == name and x.event_id == (event_id or "")
                   and x.label_id not in retracted]
        if comments is None:
            comments = self._comments.thread(name, trace_id, event_id)
        if hidings is None:
            hidings = self._comments.moderation(name)
        return dispute_thread(records, comments, hidings)

    def comment(self, name: str, trace_id: str, event_id: str | None, text: str,
                author: Reviewer, *, trace_sha256: str = "") -> DisputeComment:
        """Post a comment on a target of a campaign (appended, never edited): a reviewer on a
        dispute they are in, a lead on any target. LabelError, and nothing posted, when the
        author may not, or the text is empty or too long."""
        part = self._allowed(name, trace_id, event_id, author, "comment on it")
        return self._comments.add(name, trace_id, event_id, author.name, author.via, part, text,
                                  trace_sha256=trace_sha256)

    def hide(self, name: str, trace_id: str, event_id: str | None, comment_id: str,
             reason: str, lead: Reviewer) -> CommentHiding:
        """Hide a comment of the thread on a target of a campaign, saying why: appended as a
        row of its own (who, how known, when, why); the comment and its text stay in the store.
        Only a lead who is no side of the dispute may. LabelError, and nothing hidden, for
        anyone else, for a comment not on that target, an empty reason, or a comment hidden
        now."""
        comment = self._moderated(name, trace_id, event_id, comment_id, lead, "hide a comment",
                                  "hidden")
        return self._comments.hide(comment, lead.name, lead.via, reason)

    def show(self, name: str, trace_id: str, event_id: str | None, comment_id: str,
             lead: Reviewer, reason: str = "") -> CommentHiding:
        """Show again a comment a lead hid, saying why if they like: appended as a row of its
        own (who, how known, when), the hiding kept beside it; the comment's latest row
        decides, so the reviewers read its text again. The same leads as `hide` may.
        LabelError, and nothing changed, for anyone else, for a comment not on that target, or
        one not hidden now."""
        comment = self._moderated(name, trace_id, event_id, comment_id, lead,
                                  "show a comment again", "changed")
        return self._comments.show(comment, lead.name, lead.via, reason)

    def _moderated(self, name: str, trace_id: str, event_id: str | None, comment_id: str,
                   lead: Reviewer, doing: str, undone: str) -> DisputeComment:
        """The comment a lead hides or shows again, once they may (a lead, no side of the
        dispute) and it is on that target; LabelError saying nothing was `undone` else."""
        if not self._campaigns.may_lead(lead):
            raise LabelError(f"{lead.name} is not a lead of this workspace, so cannot {doing}; "
                             f"nothing was {undone}")
        if self.part(name, trace_id, event_id, lead) != "lead":
            raise LabelError(f"{lead.name} is one side of the dispute on {trace_id} · "
                             f"{event_id or 'the whole trace'}, so cannot {doing} in its "
                             f"thread; nothing was {undone}")
        comment = self._comments.get(comment_id)
        if comment is None or (comment.campaign, comment.trace_id, comment.event_id) != (
                name, trace_id, event_id or ""):
            raise LabelError(f"the thread on {trace_id} · {event_id or 'the whole trace'} in "
                             f"campaign {name!r} has no comment {comment_id!r} (`orchviz "
                             f"campaign thread` names each comment's id); nothing was {undone}")
        return comment

    def mine(self, reviewer: Reviewer) -> list[DisputeThread]:
        """The disputes a reviewer is one side of, in every campaign, unsettled first, each
        with its thread as a reviewer reads it (a hidden comment as its hidden line): what
        their Disputes list shows."""
        found = []
        for campaign in self._campaigns.all():
            items = [d for d in self._campaigns.disagreements(campaign.name)
                     if reviewer.name in d.answers]
            found += self._threads(campaign.name, items, whole=False)
        return sorted(found, key=lambda t: t.dispute.resolved)

    def threads(self, name: str, lead: Reviewer, trace_id: str | None = None
                ) -> list[DisputeThread]:
        """Every dispute of a campaign (on one trace) with its thread, for a lead (LabelError
        for anyone else): what `orchviz campaign thread` and the case-study report read."""
        if not self._campaigns.may_lead(lead):
            raise LabelError(f"{lead.name} is not a lead of this workspace, so cannot read "
                             "every dispute's thread")
        items = [d for d in self._campaigns.disagreements(name)
                 if trace_id is None or d.trace_id == trace_id]
        return self._threads(name, items)

    def on_trace(self, trace_id: str, viewer: str | None = None, *, lead: bool = True
                 ) -> list[DisputeThread]:
        """The disputes on a trace, in every campaign, with their threads, as a case-study
        report shows them: every one for a lead (and the CLI), else those `viewer` is one side
        of (none for a viewer not identified), as `ws.bookmarks.case_study` decides labels. A
        report goes beyond the leads, so a hidden comment is in it as its hidden line only."""
        found = []
        for campaign in self._campaigns.all():
            items = [d for d in self._campaigns.disagreements(campaign.name)
                     if d.trace_id == trace_id and (lead or (viewer and viewer in d.answers))]
            found += self._threads(campaign.name, items, whole=False)
        return found

    def _threads(self, name: str, items: list[Disagreement], *,
                 whole: bool = True) -> list[DisputeThread]:
        """The threads of `items`; `whole` False: as a reviewer reads them (`for_reviewers`)."""
        if not items:
            return []
        hidings = self._comments.moderation(name)
        shown = (lambda entries: entries) if whole else for_reviewers
        by_target: dict[tuple[str, str], list[DisputeComment]] = {}
        for c in self._comments.of_campaign(name):
            by_target.setdefault((c.trace_id, c.event_id), []).append(c)
        labels = self._ground.labels
        retracted = labels.retracted()
        histories: dict[str, list[Label]] = {}
        for d in items:  # each trace's labels read once
            if d.trace_id not in histories:
                histories[d.trace_id] = list(labels.all(d.trace_id))
        return [DisputeThread(campaign=name, dispute=d, entries=shown(self._entries(
            name, d.trace_id, d.event_id, by_target.get((d.trace_id, d.event_id or ""), []),
            retracted=retracted, history=histories[d.trace_id], hidings=hidings)))
            for d in items]
