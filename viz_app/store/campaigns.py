"""The campaign store: review campaigns, their targets, and the slots reviewers claim, with the
reservations enforced by the database.

Each target has `required` slots (K, or more for the share kept for agreement); a reviewer
claims one slot at a time. A claim is one transaction that picks the first open slot (or one
whose lease expired) of a target the reviewer holds no slot of and has not skipped, and leases
it to them: on PostgreSQL with `SELECT ... FOR UPDATE SKIP LOCKED`, so concurrent claimers
never wait on each other and never take the same slot; on SQLite under an immediate
transaction (the database's write lock, taken at the start). UNIQUE(target_id, reviewer) backs
it up: a reviewer never holds two slots of one target, whatever the number of app processes.
A submit is one transaction too: the slot must still be the reviewer's, then the labels go in
and the slot is done, so a target never gets more saved reviews than it has slots.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import orjson
from sqlalchemy import Connection, Engine, and_, case, exists, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from viz_app.errors import LabelError
from viz_app.labels.campaign import EXPIRED, Campaign, CampaignSpec, Claim, PlannedTarget
from viz_app.labels.label import Label, Reviewer, now
from viz_app.store.tables import (campaign_skips_table, campaign_slots_table,
                                  campaign_targets_table, campaigns_table, labels_table,
                                  suggestions_table)

CHUNK = 5000
"""Rows per INSERT batch when a campaign is created."""

RETRIES = 8
"""Times a claim is tried again when the database refuses it (a reviewer's two sessions
claiming one target at once: UNIQUE(target_id, reviewer))."""

CreateProgress = Callable[[int, int], None]
"""Called as `progress(done, total)` while a campaign's targets are written."""

slots = campaign_slots_table
targets = campaign_targets_table


class TargetRow:
    """A campaign target as the store reads it back (for status, gold and disagreements)."""

    __slots__ = ("target_id", "trace_id", "trace_sha256", "event_id", "questions", "required",
                 "gold", "gold_answers", "priority")

    def __init__(self, row: Any):
        m = row._mapping
        self.target_id: int = int(m["target_id"])
        self.trace_id: str = m["trace_id"]
        self.trace_sha256: str = m["trace_sha256"]
        self.event_id: str = m["event_id"]
        self.questions: list[str] = orjson.loads(m["questions"])
        self.required: int = int(m["required"])
        self.gold: bool = bool(m["gold"])
        self.gold_answers: dict[str, Any] | None = (orjson.loads(m["gold_answers"])
                                                    if m["gold_answers"] else None)
        self.priority: float = float(m["priority"])


def _campaign(row: Any, count: int = 0) -> Campaign:
    m = row._mapping
    spec = CampaignSpec.model_validate(orjson.loads(m["selection"]))
    return Campaign(campaign_id=m["campaign_id"], name=m["name"],
                    rubric_version=m["rubric_version"], rubric_sha256=m["rubric_sha256"],
                    questions=orjson.loads(m["questions"]), per_target=int(m["per_target"]),
                    spec=spec, assisted=bool(m["assisted"]), order=m["queue_order"],
                    lease_seconds=int(m["lease_seconds"]), created_by=m["created_by"],
                    created_at=m["created_at"], closed_at=m["closed_at"], targets=count)


class CampaignStore:
    """The campaigns of one database."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.postgres = engine.dialect.name == "postgresql"
        self.sqlite = engine.dialect.name == "sqlite"

    # -- transactions -------------------------------------------------------------------------

    @contextmanager
    def _writing(self) -> Iterator[Connection]:
        """A transaction that may decide on what it reads: SQLite's write lock is taken at its
        start (BEGIN IMMEDIATE), so no other writer changes a slot between the read and the
        update; on PostgreSQL the statements lock the rows they decide on."""
        with self.engine.connect() as conn:
            if self.sqlite:
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.commit()
            except BaseException:
                conn.rollback()
                raise

    # -- campaigns ----------------------------------------------------------------------------

    def create(self, spec: CampaignSpec, *, rubric_version: str, rubric_sha256: str,
               questions: Sequence[str], created_by: str, planned: Sequence[PlannedTarget],
               progress: CreateProgress | None = None) -> Campaign:
        """Store a campaign, its targets and their slots in one transaction (all or nothing);
        LabelError when the name is taken or there is no target."""
        if not planned:
            raise LabelError(f"campaign {spec.name!r} would have no target: the filter and "
                             "sample chose no trace with a target for its questions")
        campaign_id = uuid.uuid4().hex
        stamp = now()
        total = len(planned) * 2
        with self.engine.begin() as conn:
            if conn.execute(select(campaigns_table.c.name).where(
                    campaigns_table.c.name == spec.name)).first() is not None:
                raise LabelError(f"there is already a campaign named {spec.name!r}")
            conn.execute(insert(campaigns_table), [{
                "campaign_id": campaign_id, "name": spec.name, "rubric_version": rubric_version,
                "rubric_sha256": rubric_sha256,
                "questions": orjson.dumps(list(questions)).decode(),
                "per_target": spec.per_target,
                "selection": spec.model_dump_json(), "assisted": spec.assisted,
                "queue_order": spec.order, "lease_seconds": spec.lease_seconds,
                "created_by": created_by, "created_at": stamp, "closed_at": None}])
            for start in range(0, len(planned), CHUNK):
                conn.execute(insert(targets), [{
                    "campaign_id": campaign_id, "trace_id": t.trace_id,
                    "trace_sha256": t.trace_sha256, "event_id": t.event_id,
                    "questions": orjson.dumps(t.questions).decode(), "required": t.required,
                    "gold": t.gold,
                    "gold_answers": (orjson.dumps(t.gold_answers).decode()
                                     if t.gold_answers is not None else None),
                    "priority": t.priority} for t in planned[start:start + CHUNK]])
                if progress is not None:
                    progress(min(start + CHUNK, len(planned)), total)
            ids = conn.execute(select(targets.c.target_id, targets.c.trace_id,
                                      targets.c.event_id, targets.c.required,
                                      targets.c.priority)
                               .where(targets.c.campaign_id == campaign_id)
                               .order_by(targets.c.priority, targets.c.target_id)).all()
            rows = [{"campaign_id": campaign_id, "target_id": r.target_id, "slot": k,
                     "priority": r.priority, "state": "open"}
                    for r in ids for k in range(r.required)]
            for start in range(0, len(rows), CHUNK):
                conn.execute(insert(slots), rows[start:start + CHUNK])
                if progress is not None:
                    progress(len(planned) + round(len(planned) * min(start + CHUNK, len(rows))
                                                  / len(rows)), total)
        return self.get(spec.name)

    def get(self, name: str) -> Campaign:
        """The campaign of this name; LabelError when there is none."""
        with self.engine.connect() as conn:
            row = conn.execute(select(campaigns_table).where(
                campaigns_table.c.name == name)).first()
            if row is None:
                raise LabelError(f"there is no campaign named {name!r}")
            count = conn.execute(select(func.count()).select_from(targets).where(
                targets.c.campaign_id == row.campaign_id)).scalar_one()
        return _campaign(row, count)

    def all(self) -> list[Campaign]:
        """Every campaign, oldest first, with its number of targets."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(campaigns_table).order_by(
                campaigns_table.c.created_at, campaigns_table.c.name)).all()
            counts = dict(conn.execute(select(targets.c.campaign_id, func.count())
                                       .group_by(targets.c.campaign_id)).all())
        return [_campaign(r, counts.get(r.campaign_id, 0)) for r in rows]

    # -- claiming -----------------------------------------------------------------------------

    def claim_next(self, campaign: Campaign, reviewer: Reviewer,
                   at: float | None = None) -> Claim | None:
        """The slot reserved for this reviewer: the one they hold already (its lease renewed),
        else the first open or expired slot of a target they hold no slot of and have not
        skipped, leased to them now; None when nothing is left for them."""
        name = (reviewer.name or "").strip()
        if not name:
            raise LabelError("a claim needs a reviewer name")
        for attempt in range(RETRIES):
            try:
                return self._claim(campaign, reviewer, name, at)
            except IntegrityError:
                if attempt == RETRIES - 1:
                    raise
                time.sleep(0.005 * (attempt + 1))
        return None  # pragma: no cover

    def _claim(self, campaign: Campaign, reviewer: Reviewer, name: str,
               at: float | None) -> Claim | None:
        moment = time.time() if at is None else at
        until = moment + campaign.lease_seconds
        c = slots.c
        with self._writing() as conn:
            held = select(c.slot_id, c.target_id).where(
                c.campaign_id == campaign.campaign_id, c.reviewer == name,
                c.state == "leased").order_by(c.priority, c.slot_id).limit(1)
            if self.postgres:
                held = held.with_for_update()
            found = conn.execute(held).first()
            if found is None:
                found = self._free(conn, campaign.campaign_id, name, moment)
                if found is None:
                    return None
            conn.execute(update(slots).where(c.slot_id == found.slot_id).values(
                state="leased", reviewer=name, leased_until=until, claimed_at=now()))
            target = conn.execute(select(targets.c.trace_id, targets.c.event_id,
                                         targets.c.questions)
                                  .where(targets.c.target_id == found.target_id)).one()
        return Claim(campaign=campaign.name, slot_id=int(found.slot_id),
                     target_id=int(found.target_id), trace_id=target.trace_id,
                     event_id=target.event_id or None,
                     questions=orjson.loads(target.questions), leased_until=until,
                     reviewer=reviewer.model_copy(update={"name": name}),
                     assisted=campaign.assisted)

    def _free(self, conn: Connection, campaign_id: str, name: str, moment: float):
        """The first slot this reviewer may take: open, or leased with its lease expired, of a
        target they hold no slot of and have not skipped (lowest priority, then id)."""
        c = slots.c
        mine = slots.alias("mine")
        skipped = campaign_skips_table
        allowed = and_(
            c.campaign_id == campaign_id,
            ~exists().where(mine.c.target_id == c.target_id, mine.c.reviewer == name),
            ~exists().where(skipped.c.campaign_id == campaign_id,
                            skipped.c.reviewer == name,
                            skipped.c.target_id == c.target_id))
        found = []
        for state in (c.state == "open", and_(c.state == "leased", c.leased_until < moment)):
            query = (select(c.slot_id, c.target_id, c.priority).where(allowed, state)
                     .order_by(c.priority, c.slot_id).limit(1))
            if self.postgres:
                query = query.with_for_update(skip_locked=True, of=slots)
            row = conn.execute(query).first()
            if row is not None:
                found.append(row)
        return min(found, key=lambda r: (r.priority, r.slot_id)) if found else None

    def renew(self, claim: Claim, lease_seconds: int, at: float | None = None) -> Claim:
        """Extend a claim's lease from now; LabelError when the slot is no longer theirs."""
        until = (time.time() if at is None else at) + lease_seconds
        c = slots.c
        with self._writing() as conn:
            done = conn.execute(update(slots).where(
                c.slot_id == claim.slot_id, c.reviewer == claim.reviewer.name,
                c.state == "leased").values(leased_until=until))
            if not done.rowcount:
                raise LabelError(EXPIRED.replace("; nothing was saved", ""))
        return claim.model_copy(update={"leased_until": until})

    def skip(self, claim: Claim, campaign_id: str, reason: str) -> None:
        """Put a claimed slot back for others and remember that this reviewer skipped the
        target, with why (one transaction); LabelError without a reason or when the slot is
        no longer theirs."""
        reason = (reason or "").strip()
        if not reason:
            raise LabelError("say why you skip this target")
        c = slots.c
        with self._writing() as conn:
            done = conn.execute(update(slots).where(
                c.slot_id == claim.slot_id, c.reviewer == claim.reviewer.name,
                c.state == "leased").values(state="open", reviewer=None, leased_until=None,
                                            claimed_at=None))
            if not done.rowcount:
                raise LabelError(EXPIRED.replace("nothing was saved", "nothing was skipped"))
            conn.execute(insert(campaign_skips_table), [{
                "campaign_id": campaign_id, "target_id": claim.target_id,
                "reviewer": claim.reviewer.name, "reason": reason, "created_at": now()}])

    def submit(self, claim: Claim, labels: Sequence[Label]) -> list[Label]:
        """Save a claim's labels and mark its slot done, in one transaction; LabelError (and
        nothing saved) when the slot went to someone else or was saved already."""
        c = slots.c
        with self._writing() as conn:
            query = select(c.state, c.reviewer).where(c.slot_id == claim.slot_id)
            if self.postgres:
                query = query.with_for_update()
            row = conn.execute(query).first()
            if row is None or row.reviewer != claim.reviewer.name:
                raise LabelError(EXPIRED)
            if row.state == "done":
                raise LabelError("you saved this target already; nothing was saved again")
            if row.state != "leased":
                raise LabelError(EXPIRED)
            if labels:
                conn.execute(insert(labels_table), [label.to_row() for label in labels])
            conn.execute(update(slots).where(c.slot_id == claim.slot_id).values(
                state="done", leased_until=None, completed_at=now()))
        return list(labels)

    # -- reading ------------------------------------------------------------------------------

    def targets(self, campaign: Campaign, *, gold_only: bool = False) -> list[TargetRow]:
        """A campaign's targets (or its gold items), in queue order."""
        query = select(targets).where(targets.c.campaign_id == campaign.campaign_id)
        if gold_only:
            query = query.where(targets.c.gold.is_(True))
        with self.engine.connect() as conn:
            return [TargetRow(r) for r in conn.execute(
                query.order_by(targets.c.priority, targets.c.target_id))]

    def target(self, campaign: Campaign, trace_id: str, event_id: str | None) -> TargetRow:
        """One target of a campaign; LabelError when it has none there."""
        with self.engine.connect() as conn:
            row = conn.execute(select(targets).where(
                targets.c.campaign_id == campaign.campaign_id, targets.c.trace_id == trace_id,
                targets.c.event_id == (event_id or ""))).first()
        if row is None:
            raise LabelError(f"campaign {campaign.name!r} has no target "
                             f"{trace_id} {event_id or '(the trace)'}")
        return TargetRow(row)

    def progress(self, campaign: Campaign, at: float | None = None) -> dict[str, int]:
        """targets, complete, in_progress, slots and saved of a campaign (a lease that has
        expired counts as open)."""
        moment = time.time() if at is None else at
        c = slots.c
        done = func.sum(case((c.state == "done", 1), else_=0))
        held = func.sum(case((and_(c.state == "leased", c.leased_until >= moment), 1), else_=0))
        query = (select(c.target_id, func.count(), done, held)
                 .where(c.campaign_id == campaign.campaign_id).group_by(c.target_id))
        found = Counter()
        with self.engine.connect() as conn:
            for _, count, saved, leased in conn.execute(query):
                saved, leased = int(saved or 0), int(leased or 0)
                found["targets"] += 1
                found["slots"] += count
                found["saved"] += saved
                if saved >= count:
                    found["complete"] += 1
                elif saved or leased:
                    found["in_progress"] += 1
        return {k: found[k] for k in ("targets", "complete", "in_progress", "slots", "saved")}

    def reviewer_counts(self, campaign: Campaign,
                        at: float | None = None) -> dict[str, dict[str, int]]:
        """Reviewer -> saved, leased (unexpired) and skipped counts in a campaign."""
        moment = time.time() if at is None else at
        c = slots.c
        found: dict[str, dict[str, int]] = defaultdict(
            lambda: {"saved": 0, "leased": 0, "skipped": 0})
        with self.engine.connect() as conn:
            for reviewer, state, until in conn.execute(
                    select(c.reviewer, c.state, c.leased_until).where(
                        c.campaign_id == campaign.campaign_id, c.reviewer.is_not(None))):
                if state == "done":
                    found[reviewer]["saved"] += 1
                elif state == "leased" and until is not None and until >= moment:
                    found[reviewer]["leased"] += 1
            s = campaign_skips_table.c
            for reviewer, count in conn.execute(
                    select(s.reviewer, func.count()).where(
                        s.campaign_id == campaign.campaign_id).group_by(s.reviewer)):
                found[reviewer]["skipped"] += int(count)
        return dict(found)

    def suggestion_counts(self) -> dict[tuple[str, str], int]:
        """(trace id, event id or '') -> how many suggestions point at it (the `suggestions`
        queue order puts those first)."""
        c = suggestions_table.c
        with self.engine.connect() as conn:
            return {(t, e or ""): int(n) for t, e, n in conn.execute(
                select(c.trace_id, c.event_id, func.count()).group_by(c.trace_id, c.event_id))}

    def slot_rows(self, campaign: Campaign) -> list[dict[str, Any]]:
        """Every slot of a campaign as a dict (tests and the concurrency checks read them)."""
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(
                select(slots).where(slots.c.campaign_id == campaign.campaign_id)
                .order_by(slots.c.slot_id))]
