"""A reviewer's saves in a campaign beyond one claim at a time: completing a claim (and, with it,
the targets of the same kind they chose to answer alike), and finding the targets they saved, to
go back to one and change their answer.

A mixin of `CampaignStore` (`viz_app.store.campaigns`), whose transactions (`_writing`) and
claim checks (`_held`) it uses: every write here is one transaction that verifies, inside it,
that each slot it completes is free to the reviewer, so a target never has more saved reviews
than slots, however many targets one save answers.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import orjson
from pydantic import BaseModel, Field
from sqlalchemy import and_, exists, insert, or_, select, update

from viz_app.errors import ClaimError, LabelError
from viz_app.labels import EXPIRED, AlikeTarget, Campaign, Claim, Label, now
from viz_app.store.tables import (campaign_skips_table, campaign_slots_table,
                                  campaign_targets_table, campaigns_table, labels_table)

if TYPE_CHECKING:
    from sqlalchemy import Connection

slots = campaign_slots_table
targets = campaign_targets_table


class SavedTarget(BaseModel):
    """A target a reviewer saved in a campaign: where they can go back to change their answer."""

    campaign: str
    slot_id: int
    target_id: int
    trace_id: str
    event_id: str | None = Field(description="None for the trace itself.")
    questions: list[str]
    completed_at: str = Field(description="When the reviewer first saved it (ISO 8601 UTC).")

    @property
    def key(self) -> str:
        """The target's event id, or '' for the trace (as labels store it)."""
        return self.event_id or ""


class CampaignMoves:
    """Saving a claim, alone or with targets of its kind, and a reviewer's saved targets."""

    engine: object

    # -- completing a claim -------------------------------------------------------------------

    def submit(self, claim: Claim, labels: Sequence[Label], *,
               raise_to: float | None = None) -> list[Label]:
        """Save a claim's labels and mark its slot done, in one transaction; ClaimError for a
        claim the store did not issue, or labels off its target or campaign; LabelError (and
        nothing saved) when the slot went to someone else or was saved already. `raise_to`
        moves the target's other slots not done yet up the queue to that priority (the
        `contested` order, after a first reviewer at odds with a producer)."""
        return self.submit_alike(claim, labels, {}, raise_to=raise_to)[0]

    def submit_alike(self, claim: Claim, labels: Sequence[Label],
                     alike: Mapping[int, Sequence[Label]], *,
                     raise_to: float | None = None) -> tuple[list[Label], list[int]]:
        """Save a claim's labels and, in the same transaction, labels on other targets of its
        campaign (target id -> its labels: the targets of the claim's kind its reviewer chose
        to answer alike), completing a slot of each that is free to the reviewer (open, or
        whose lease ran out, or theirs; never a target they skipped or saved before). The
        labels saved, and the target ids of `alike` left unsaved because no slot of theirs is
        free any more (another reviewer took it meanwhile). The claim itself must still be
        held: LabelError, and nothing saved, when it is not."""
        c = slots.c
        who = claim.reviewer.name
        with self._writing() as conn:  # type: ignore[attr-defined]
            held = self._held(conn, claim, lock=True)  # type: ignore[attr-defined]
            if held.state == "done":
                raise LabelError("you saved this target already; nothing was saved again")
            if held.state != "leased":
                raise LabelError(EXPIRED)
            _own(labels, held.trace_id, held.event_id, held.questions, held.campaign, who)
            picked = self._free_slots(conn, held.campaign_id, who, list(alike))
            taken = [t for t in alike if t not in picked]
            rows = {r.target_id: r for r in conn.execute(
                select(targets.c.target_id, targets.c.trace_id, targets.c.event_id,
                       targets.c.questions).where(targets.c.target_id.in_(list(picked))))}
            for target_id in picked:
                row = rows[target_id]
                _own(alike[target_id], row.trace_id, row.event_id or "",
                     orjson.loads(row.questions), held.campaign, who)
            every = [*labels, *(x for t in picked for x in alike[t])]
            if every:
                conn.execute(insert(labels_table), [label.to_row() for label in every])
            stamp = now()
            conn.execute(update(slots).where(c.slot_id == claim.slot_id).values(
                state="done", leased_until=None, completed_at=stamp))
            for slot_id in picked.values():
                conn.execute(update(slots).where(c.slot_id == slot_id).values(
                    state="done", reviewer=who, leased_until=None, claimed_at=stamp,
                    completed_at=stamp, token=None))
            if raise_to is not None:
                conn.execute(update(slots).where(
                    c.target_id == held.target_id, c.slot_id != claim.slot_id,
                    c.state != "done", c.priority > raise_to).values(priority=raise_to))
        return every, taken

    def _free_slots(self, conn: Connection, campaign_id: str, who: str,
                    target_ids: Sequence[int], at: float | None = None) -> dict[int, int]:
        """Target id -> a slot of it the reviewer may complete now: one they lease, else an
        open one or one whose lease ran out; none for a target they hold a done slot of or
        skipped. On PostgreSQL the slots are locked until the transaction ends."""
        if not target_ids:
            return {}
        moment = time.time() if at is None else at
        c, k = slots.c, campaign_skips_table.c
        mine = slots.alias("mine")
        query = (select(c.slot_id, c.target_id, c.reviewer)
                 .where(c.campaign_id == campaign_id, c.target_id.in_(list(target_ids)),
                        or_(c.state == "open",
                            and_(c.state == "leased",
                                 or_(c.reviewer == who, c.leased_until < moment))),
                        ~exists().where(mine.c.target_id == c.target_id,
                                        mine.c.reviewer == who, mine.c.state == "done"),
                        ~exists().where(k.campaign_id == campaign_id, k.reviewer == who,
                                        k.target_id == c.target_id))
                 .order_by(c.priority, c.slot_id))
        if getattr(self, "postgres", False):
            query = query.with_for_update(of=slots, skip_locked=True)
        found: dict[int, int] = {}
        for row in conn.execute(query):
            if row.reviewer == who or row.target_id not in found:
                found[row.target_id] = row.slot_id  # the reviewer's own lease first
        return found

    @staticmethod
    def _events(conn: Connection, target_ids: Sequence[int]) -> list[str]:
        return list(conn.execute(select(targets.c.event_id).where(
            targets.c.target_id.in_(list(target_ids))).order_by(targets.c.target_id)).scalars())

    # -- what a reviewer may answer alike, and what they saved ---------------------------------

    def alike(self, claim: Claim, at: float | None = None,
              limit: int = 500) -> list[AlikeTarget]:
        """The other targets of a claim's campaign, on any of its traces, that ask its very
        questions (a target of the same kind: every spawn of a fan-out, every stop) and have a
        slot free to the claim's reviewer now: those on the claim's trace first, then the
        others, each in queue order; `limit` at most. Nothing is reserved."""
        moment = time.time() if at is None else at
        t = targets.c
        with self.engine.connect() as conn:  # type: ignore[attr-defined]
            row = conn.execute(select(t.campaign_id, t.questions).where(
                t.target_id == claim.target_id)).first()
            if row is None:
                raise ClaimError(f"there is no target {claim.target_id} in any campaign")
            closed = conn.execute(select(campaigns_table.c.closed_at).where(
                campaigns_table.c.campaign_id == row.campaign_id)).scalar_one()
            if closed is not None:
                return []
            same = {r.target_id: r for r in conn.execute(
                select(t.target_id, t.trace_id, t.event_id).where(
                    t.campaign_id == row.campaign_id, t.questions == row.questions,
                    t.target_id != claim.target_id)
                .order_by((t.trace_id != claim.trace_id), t.priority, t.target_id))}
            free = self._free_slots(conn, row.campaign_id, claim.reviewer.name, list(same),
                                    moment)
        found = [AlikeTarget(target_id=r.target_id, trace_id=r.trace_id,
                             event_id=r.event_id or None)
                 for target_id, r in same.items() if target_id in free]
        return found[:max(0, int(limit))]

    def saved_targets(self, campaign: Campaign, reviewer: str) -> list[SavedTarget]:
        """The targets a reviewer saved in a campaign, in the order they saved them."""
        c, t = slots.c, targets.c
        with self.engine.connect() as conn:  # type: ignore[attr-defined]
            rows = conn.execute(
                select(c.slot_id, c.target_id, c.completed_at, t.trace_id, t.event_id,
                       t.questions)
                .join(targets, t.target_id == c.target_id)
                .where(c.campaign_id == campaign.campaign_id, c.reviewer == reviewer,
                       c.state == "done")
                .order_by(c.completed_at, c.slot_id)).all()
        return [SavedTarget(campaign=campaign.name, slot_id=r.slot_id, target_id=r.target_id,
                            trace_id=r.trace_id, event_id=r.event_id or None,
                            questions=orjson.loads(r.questions),
                            completed_at=r.completed_at or "") for r in rows]

    def saved_in(self, trace_id: str, event_id: str | None, reviewer: str
                 ) -> list[tuple[str, str, list[str]]]:
        """The campaigns in which a reviewer saved this target: (campaign, its rubric's
        SHA-256, the questions it asks there), the latest save first. A change of their answer
        made anywhere belongs to these campaigns too, so the newest answer counts in them."""
        c, t, k = slots.c, targets.c, campaigns_table.c
        with self.engine.connect() as conn:  # type: ignore[attr-defined]
            rows = conn.execute(
                select(k.name, k.rubric_sha256, t.questions)
                .select_from(slots.join(targets, t.target_id == c.target_id)
                             .join(campaigns_table, k.campaign_id == c.campaign_id))
                .where(t.trace_id == trace_id, t.event_id == (event_id or ""),
                       c.reviewer == reviewer, c.state == "done")
                .order_by(c.completed_at.desc(), c.slot_id.desc())).all()
        return [(r.name, r.rubric_sha256, orjson.loads(r.questions)) for r in rows]

    def saved_target(self, campaign: Campaign, reviewer: str, slot_id: int) -> SavedTarget:
        """One target a reviewer saved in a campaign, by its slot; LabelError when the slot is
        not one they saved there."""
        for found in self.saved_targets(campaign, reviewer):
            if found.slot_id == slot_id:
                return found
        raise LabelError(f"{reviewer} saved no target of campaign {campaign.name!r} in slot "
                         f"{slot_id}; nothing was saved")


def _own(labels: Sequence[Label], trace_id: str, event_id: str, questions: Sequence[str],
         campaign: str, reviewer: str) -> None:
    """ClaimError unless every label is on this target of this campaign, by this reviewer, on a
    question it asks."""
    for label in labels:
        if (label.trace_id, label.event_id or "", label.campaign, label.reviewer) != (
                trace_id, event_id, campaign, reviewer) or label.question not in questions:
            raise ClaimError(f"a label on {label.trace_id} {label.event_id or '(the trace)'} "
                             f"{label.question} is not one of this save's targets; nothing "
                             "was saved")
