"""The campaign store: review campaigns, their targets, and the slots reviewers claim, with the
reservations enforced by the database.

Each target has `required` slots (K, or more for the share kept for agreement); a reviewer
claims one slot at a time. A claim is one transaction that picks the slot the reviewer holds,
else the first slot whose lease expired, else the first open one, of a target the reviewer
holds no slot of and has not skipped, and leases it to them: on PostgreSQL with
`SELECT ... FOR UPDATE SKIP LOCKED`, so concurrent claimers
never wait on each other and never take the same slot; on SQLite under an immediate
transaction (the database's write lock, taken at the start). UNIQUE(target_id, reviewer) backs
it up: a reviewer never holds two slots of one target, whatever the number of app processes.
A submit is one transaction too: the slot must still be the reviewer's, then the labels go in
and the slot is done, so a target never gets more saved reviews than it has slots.

A claim carries a secret token the store issued with it (kept on the slot; the same one while
the same reviewer holds it). A submit, skip or renewal is accepted only for a claim that
matches the store's own record, its slot, target, trace, event, questions and campaign, and
brings that token back, compared in constant time: a Claim made or edited through the Python
API is refused in one sentence (`ClaimError`), never trusted.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import orjson
from pydantic import BaseModel, Field, ValidationError
from sqlalchemy import (
    Connection,
    Engine,
    and_,
    bindparam,
    case,
    exists,
    func,
    insert,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.exc import IntegrityError

from viz_app.errors import ClaimError, LabelError
from viz_app.labels import (
    EXPIRED,
    Campaign,
    CampaignSpec,
    Claim,
    PlannedTarget,
    Reviewer,
    now,
    spec_error,
)
from viz_app.store.campaign_moves import CampaignMoves
from viz_app.store.tables import (
    campaign_skips_table,
    campaign_slots_table,
    campaign_targets_table,
    campaigns_table,
    suggestions_table,
)

CHUNK = 5000
"""Rows per INSERT batch when a campaign is created."""

RETRIES = 8
"""Times a claim is tried again when the database refuses it (a reviewer's two sessions
claiming one target at once: UNIQUE(target_id, reviewer))."""

TARGET_COLUMNS = ("campaign_id", "trace_id", "trace_sha256", "event_id", "questions", "required",
                  "gold", "gold_answers", "priority")
SLOT_COLUMNS = ("campaign_id", "target_id", "slot", "priority", "state")

CreateProgress = Callable[[int, int], None]
"""Called as `progress(done, total)` while a campaign's targets are written."""

slots = campaign_slots_table
targets = campaign_targets_table


def _statements():
    """The statements of a claim on SQLite (PostgreSQL's is `PG_CLAIM`), built once with bound
    parameters, so each claim reuses their compiled form (building them anew cost a claim more
    than running them). Each picks a slot with its target's trace, event and questions."""
    c = slots.c
    t = targets.c
    mine = slots.alias("mine")
    skipped = campaign_skips_table.c
    columns = (c.slot_id, c.target_id, c.priority, c.reviewer, c.token, t.trace_id, t.event_id,
               t.questions)
    joined = slots.join(targets, t.target_id == c.target_id)
    allowed = and_(
        ~exists().where(mine.c.target_id == c.target_id, mine.c.reviewer == bindparam("who")),
        ~exists().where(skipped.campaign_id == bindparam("cid"),
                        skipped.reviewer == bindparam("who"),
                        skipped.target_id == c.target_id))
    held_first = case((c.reviewer == bindparam("who"), 0), else_=1)
    leased = (select(*columns).select_from(joined)
              .where(c.campaign_id == bindparam("cid"), c.state == "leased",
                     or_(c.reviewer == bindparam("who"),
                         and_(c.leased_until < bindparam("moment"), allowed)))
              .order_by(held_first, c.priority, c.slot_id).limit(1))
    free = (select(*columns).select_from(joined)
            .where(c.campaign_id == bindparam("cid"), c.state == "open", allowed)
            .order_by(c.priority, c.slot_id).limit(1))
    lease = (update(slots).where(c.slot_id == bindparam("sid"))
             .values(state="leased", reviewer=bindparam("who"),
                     leased_until=bindparam("until"), claimed_at=bindparam("at"),
                     token=bindparam("token")))
    campaign = (select(campaigns_table.c.campaign_id, campaigns_table.c.lease_seconds,
                       campaigns_table.c.assisted, campaigns_table.c.closed_at)
                .where(campaigns_table.c.name == bindparam("name")))
    return leased, free, lease, campaign


(_LEASED, _OPEN, _LEASE, _CAMPAIGN) = _statements()

_FREE_TO = """NOT EXISTS (SELECT 1 FROM campaign_slots m
                  WHERE m.target_id = s.target_id AND m.reviewer = :who)
       AND NOT EXISTS (SELECT 1 FROM campaign_skips k WHERE k.campaign_id = s.campaign_id
                       AND k.reviewer = :who AND k.target_id = s.target_id)"""

PG_CLAIM = text(f"""
WITH camp AS (
  SELECT campaign_id, lease_seconds, assisted FROM campaigns
   WHERE name = :name AND closed_at IS NULL
), pick AS (
  SELECT COALESCE(
    (SELECT s.slot_id FROM campaign_slots s
      WHERE s.campaign_id = (SELECT campaign_id FROM camp) AND s.state = 'leased'
        AND (s.reviewer = :who OR (s.leased_until < :moment AND {_FREE_TO}))
      ORDER BY CASE WHEN s.reviewer = :who THEN 0 ELSE 1 END, s.priority, s.slot_id
      LIMIT 1 FOR UPDATE OF s SKIP LOCKED),
    (SELECT s.slot_id FROM campaign_slots s
      WHERE s.campaign_id = (SELECT campaign_id FROM camp) AND s.state = 'open'
        AND {_FREE_TO}
      ORDER BY s.priority, s.slot_id
      LIMIT 1 FOR UPDATE OF s SKIP LOCKED)) AS slot_id
)
UPDATE campaign_slots AS u
   SET state = 'leased', reviewer = :who, leased_until = :moment + camp.lease_seconds,
       claimed_at = :at,
       token = CASE WHEN u.reviewer = :who AND u.token IS NOT NULL THEN u.token ELSE :token END
  FROM pick, camp, campaign_targets t
 WHERE u.slot_id = pick.slot_id AND t.target_id = u.target_id
RETURNING u.slot_id, u.target_id, u.leased_until, u.token, t.trace_id, t.event_id, t.questions,
          camp.assisted
""")
"""A claim on PostgreSQL in one statement (one round trip instead of five): the campaign, the
slot the reviewer holds or the first expired one, else the first open one, each taken with
FOR UPDATE SKIP LOCKED, leased and returned with its target and token (the one it had when the
reviewer held it already, else a new one). The same choice as `_claim`'s statements make on
SQLite, where a statement cannot lock rows."""

KEPT_FROM = ("kept from this reviewer by the contested order: they answered it before, and its "
             "coming early would tell them another answer differs from theirs")
"""The reason of a skip row the store writes when a campaign is created, for a target never to
be offered to a reviewer (`PlannedTarget.kept_from`); not counted as a skip of theirs."""

NOT_ISSUED = ("this claim is not one the campaign store issued (its slot, target, trace, event, "
              "questions, campaign or token differ from the reservation's); nothing was saved")
"""What a claim made or changed outside the store is told."""


def _token() -> str:
    """A new claim's secret: 256 random bits, URL-safe text."""
    return secrets.token_urlsafe(32)


_writers: dict[str, threading.Lock] = {}
_writers_lock = threading.Lock()


def _writer(engine: Engine) -> threading.Lock:
    """The lock the threads of this process take before writing campaign slots to a SQLite
    file (one per database)."""
    key = str(engine.url)
    with _writers_lock:
        return _writers.setdefault(key, threading.Lock())


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


class HeldSlot:
    """A reservation as the store records it: what a claim is checked against."""

    __slots__ = ("state", "target_id", "campaign_id", "campaign", "trace_id", "event_id",
                 "questions", "lease_seconds")

    def __init__(self, row: Any):
        self.state: str = row.state
        self.target_id: int = int(row.target_id)
        self.campaign_id: str = row.campaign_id
        self.campaign: str = row.name
        self.trace_id: str = row.trace_id
        self.event_id: str = row.event_id or ""
        self.questions: list[str] = orjson.loads(row.questions)
        self.lease_seconds: int = int(row.lease_seconds)


def _campaign(row: Any, count: int = 0) -> Campaign:
    m = row._mapping
    spec = CampaignSpec.model_validate(orjson.loads(m["selection"]))
    return Campaign(campaign_id=m["campaign_id"], name=m["name"],
                    rubric_version=m["rubric_version"], rubric_sha256=m["rubric_sha256"],
                    questions=orjson.loads(m["questions"]), per_target=int(m["per_target"]),
                    spec=spec, assisted=bool(m["assisted"]), order=m["queue_order"],
                    lease_seconds=int(m["lease_seconds"]), created_by=m["created_by"],
                    created_at=m["created_at"], closed_at=m["closed_at"], targets=count)


class Reservation(BaseModel):
    """A target a reviewer holds now, and when the reservation ends unless renewed."""

    slot_id: int
    reviewer: str
    trace_id: str
    event_id: str | None
    ends: float = Field(description="Seconds since the epoch.")


class CampaignStore(CampaignMoves):
    """The campaigns of one database (a claim's save, alone or with targets of its kind, and a
    reviewer's saved targets: `viz_app.store.campaign_moves`)."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.postgres = engine.dialect.name == "postgresql"
        self.sqlite = engine.dialect.name == "sqlite"

    # -- transactions -------------------------------------------------------------------------

    @contextmanager
    def _writing(self) -> Iterator[Connection]:
        """A transaction that may decide on what it reads: SQLite's write lock is taken at its
        start (BEGIN IMMEDIATE), so no other writer changes a slot between the read and the
        update; on PostgreSQL the statements lock the rows they decide on. The threads of one
        process take turns before asking SQLite (`_writer`): waiting in SQLite's busy handler
        sleeps in steps of up to 100 ms, waiting on a lock wakes at once."""
        if not self.sqlite:
            with self.engine.begin() as conn:
                yield conn
            return
        with _writer(self.engine), self.engine.connect() as conn:
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
        total = len(planned) + sum(t.required for t in planned)
        try:
            self._create(spec, campaign_id, stamp, total, rubric_version, rubric_sha256,
                         questions, created_by, planned, progress)
        except IntegrityError:  # another lead created one of this name a moment ago
            raise LabelError(f"there is already a campaign named {spec.name!r}") from None
        return self.get(spec.name)

    def _create(self, spec: CampaignSpec, campaign_id: str, stamp: str, total: int,
                rubric_version: str, rubric_sha256: str, questions: Sequence[str],
                created_by: str, planned: Sequence[PlannedTarget],
                progress: CreateProgress | None) -> None:
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
            target_rows = ((campaign_id, t.trace_id, t.trace_sha256, t.event_id,
                            orjson.dumps(t.questions).decode(), t.required, t.gold,
                            orjson.dumps(t.gold_answers).decode()
                            if t.gold_answers is not None else None, t.priority)
                           for t in planned)
            self._insert_many(conn, targets, TARGET_COLUMNS, target_rows,
                              lambda done: progress(done, total) if progress else None)
            ids = conn.execute(select(targets.c.target_id, targets.c.required,
                                      targets.c.priority)
                               .where(targets.c.campaign_id == campaign_id)).all()
            slot_rows = ((campaign_id, r.target_id, k, r.priority, "open")
                         for r in ids for k in range(r.required))
            self._insert_many(conn, slots, SLOT_COLUMNS, slot_rows, lambda done: progress(
                len(planned) + done, total) if progress else None)
            kept = [t for t in planned if t.kept_from]
            if kept:  # the claim's own rule keeps a skipped target from its reviewer
                place = {(r.trace_id, r.event_id): r.target_id for r in conn.execute(
                    select(targets.c.target_id, targets.c.trace_id, targets.c.event_id)
                    .where(targets.c.campaign_id == campaign_id))}
                conn.execute(insert(campaign_skips_table), [
                    {"campaign_id": campaign_id,
                     "target_id": place[(t.trace_id, t.event_id)], "reviewer": who,
                     "reason": KEPT_FROM, "created_at": stamp}
                    for t in kept for who in t.kept_from])

    def add_targets(self, campaign: Campaign, planned: Sequence[PlannedTarget]) -> int:
        """Add targets (with their slots) to an open campaign, in one transaction: those of
        traces that arrived after it was created (a per-step sample topped up as a trainer's
        steps come). A target the campaign holds already is not added again. Returns how many
        were added. Two sessions topping up at once take turns (SQLite's write lock at the
        start, the campaign's row locked on PostgreSQL), so the second sees what the first
        added rather than failing on the campaign's unique target."""
        if not planned:
            return 0
        with self._writing() as conn:
            if self.postgres:
                conn.execute(select(campaigns_table.c.campaign_id).where(
                    campaigns_table.c.campaign_id == campaign.campaign_id).with_for_update())
            held = {(r.trace_id, r.event_id) for r in conn.execute(
                select(targets.c.trace_id, targets.c.event_id)
                .where(targets.c.campaign_id == campaign.campaign_id))}
            fresh = [t for t in planned if (t.trace_id, t.event_id) not in held]
            if not fresh:
                return 0
            before = set(conn.execute(select(targets.c.target_id).where(
                targets.c.campaign_id == campaign.campaign_id)).scalars())
            self._insert_many(conn, targets, TARGET_COLUMNS, (
                (campaign.campaign_id, t.trace_id, t.trace_sha256, t.event_id,
                 orjson.dumps(t.questions).decode(), t.required, t.gold,
                 orjson.dumps(t.gold_answers).decode() if t.gold_answers is not None else None,
                 t.priority) for t in fresh), lambda done: None)
            ids = [r for r in conn.execute(select(targets.c.target_id, targets.c.required,
                                                  targets.c.priority)
                                           .where(targets.c.campaign_id == campaign.campaign_id))
                   if r.target_id not in before]
            self._insert_many(conn, slots, SLOT_COLUMNS,
                              ((campaign.campaign_id, r.target_id, k, r.priority, "open")
                               for r in ids for k in range(r.required)), lambda done: None)
        return len(fresh)

    def get(self, name: str, *, count: bool = True) -> Campaign:
        """The campaign of this name (with its number of targets unless `count` is False: a
        claim does not need it); LabelError when there is none."""
        with self.engine.connect() as conn:
            row = conn.execute(select(campaigns_table).where(
                campaigns_table.c.name == name)).first()
            if row is None:
                raise LabelError(f"there is no campaign named {name!r}")
            found = conn.execute(select(func.count()).select_from(targets).where(
                targets.c.campaign_id == row.campaign_id)).scalar_one() if count else 0
        return _campaign(row, found)

    def close(self, name: str) -> Campaign:
        """Close a campaign: no reviewer claims a target of it any more (a target held now may
        still be saved until its lease ends). Closing a closed campaign changes nothing.
        LabelError when there is none of this name."""
        self.get(name, count=False)
        with self.engine.begin() as conn:
            conn.execute(update(campaigns_table).where(campaigns_table.c.name == name,
                                                       campaigns_table.c.closed_at.is_(None))
                         .values(closed_at=now()))
        return self.get(name)

    def reopen(self, name: str) -> Campaign:
        """Open a closed campaign again: its open targets are claimed again. Reopening an open
        campaign changes nothing. LabelError when there is none of this name."""
        self.get(name, count=False)
        with self.engine.begin() as conn:
            conn.execute(update(campaigns_table).where(campaigns_table.c.name == name)
                         .values(closed_at=None))
        return self.get(name)

    def set_instructions(self, name: str, instructions: str) -> Campaign:
        """Change what a campaign tells its reviewers (kept in its spec). LabelError when there
        is none of this name or the text is past `INSTRUCTIONS_LIMIT`."""
        found = self.get(name, count=False)
        try:
            spec = CampaignSpec.model_validate({**found.spec.model_dump(),
                                                "instructions": instructions})
        except ValidationError as err:
            raise spec_error(err) from None
        with self.engine.begin() as conn:
            conn.execute(update(campaigns_table).where(campaigns_table.c.name == name)
                         .values(selection=spec.model_dump_json()))
        return self.get(name)

    def all(self) -> list[Campaign]:
        """Every campaign, oldest first, with its number of targets."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(campaigns_table).order_by(
                campaigns_table.c.created_at, campaigns_table.c.name)).all()
            counts = dict(conn.execute(select(targets.c.campaign_id, func.count())
                                       .group_by(targets.c.campaign_id)).all())
        return [_campaign(r, counts.get(r.campaign_id, 0)) for r in rows]

    def _insert_many(self, conn: Connection, table, columns: Sequence[str], rows,
                     progress: Callable[[int], None]) -> None:
        """Insert tuples of `columns` a chunk at a time through the driver's executemany:
        100,000 rows in a second or two, where building a dict and bind processing per row
        took ten."""
        if self.postgres:
            self._copy(conn, table, columns, rows, progress)
            return
        mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
        sql = (f"INSERT INTO {table.name} ({', '.join(columns)}) "
               f"VALUES ({', '.join([mark] * len(columns))})")
        chunk: list[tuple] = []
        done = 0
        for row in rows:
            chunk.append(row)
            if len(chunk) == CHUNK:
                conn.exec_driver_sql(sql, chunk)
                done += len(chunk)
                chunk = []
                progress(done)
        if chunk:
            conn.exec_driver_sql(sql, chunk)
            progress(done + len(chunk))

    @staticmethod
    def _copy(conn: Connection, table, columns: Sequence[str], rows,
              progress: Callable[[int], None]) -> None:
        """PostgreSQL's COPY FROM STDIN, in the transaction of `conn`."""
        cursor = conn.connection.dbapi_connection.cursor()
        done = 0
        with cursor.copy(f"COPY {table.name} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
                done += 1
                if done % CHUNK == 0:
                    progress(done)
        progress(done)

    # -- claiming -----------------------------------------------------------------------------

    def claim_next(self, campaign: str, reviewer: Reviewer,
                   at: float | None = None) -> Claim | None:
        """The slot reserved for this reviewer in the named campaign: the one they hold
        already (its lease renewed), else the first slot whose lease expired, else the first
        open slot (lowest priority, then id), of a target they hold no slot of and have not
        skipped, leased to them now; None when nothing is left for them or the campaign is
        closed. LabelError when there is no such campaign."""
        name = (reviewer.name or "").strip()
        if not name:
            raise LabelError("a claim needs a reviewer name")
        for attempt in range(RETRIES):
            try:
                return self._claim(campaign, reviewer.model_copy(update={"name": name}), at)
            except IntegrityError:
                if attempt == RETRIES - 1:
                    raise
                time.sleep(0.005 * (attempt + 1))
        return None  # pragma: no cover

    def _claim(self, campaign: str, reviewer: Reviewer, at: float | None) -> Claim | None:
        """One claim, one transaction: the campaign, a slot (expired leases go first: work
        begun and abandoned is finished before new work starts), the lease."""
        moment = time.time() if at is None else at
        if self.postgres:
            return self._claim_postgres(campaign, reviewer, moment)
        with self._writing() as conn:
            found_campaign = conn.execute(_CAMPAIGN, {"name": campaign}).first()
            if found_campaign is None:
                raise LabelError(f"there is no campaign named {campaign!r}")
            if found_campaign.closed_at is not None:
                return None
            asked = {"cid": found_campaign.campaign_id, "who": reviewer.name, "moment": moment}
            found = conn.execute(_LEASED, asked).first()
            if found is None:
                found = conn.execute(_OPEN, asked).first()
                if found is None:
                    return None
            until = moment + found_campaign.lease_seconds
            token = found.token if found.reviewer == reviewer.name and found.token \
                else _token()  # the reviewer's other session keeps the same claim
            conn.execute(_LEASE, {"sid": found.slot_id, "who": reviewer.name, "until": until,
                                  "at": now(), "token": token})
        return Claim(campaign=campaign, slot_id=int(found.slot_id),
                     target_id=int(found.target_id), trace_id=found.trace_id,
                     event_id=found.event_id or None,
                     questions=orjson.loads(found.questions), leased_until=until,
                     reviewer=reviewer, assisted=bool(found_campaign.assisted), token=token)

    def _claim_postgres(self, campaign: str, reviewer: Reviewer, moment: float) -> Claim | None:
        with self.engine.begin() as conn:
            found = conn.execute(PG_CLAIM, {"name": campaign, "who": reviewer.name,
                                            "moment": moment, "at": now(),
                                            "token": _token()}).first()
        if found is None:
            self.get(campaign, count=False)  # LabelError when there is no such campaign
            return None
        return Claim(campaign=campaign, slot_id=int(found.slot_id),
                     target_id=int(found.target_id), trace_id=found.trace_id,
                     event_id=found.event_id or None,
                     questions=orjson.loads(found.questions),
                     leased_until=float(found.leased_until), reviewer=reviewer,
                     assisted=bool(found.assisted), token=found.token)

    def upcoming(self, campaign: str, reviewer: str) -> str | None:
        """The trace of the target a claim would most likely give this reviewer after the one
        they hold (the first open slot free to them), read only: nothing is leased, and others
        may claim it first. What the review page reads ahead; None when there is none."""
        with self.engine.connect() as conn:
            found = conn.execute(_CAMPAIGN, {"name": campaign}).first()
            if found is None or found.closed_at is not None:
                return None
            row = conn.execute(_OPEN, {"cid": found.campaign_id, "who": reviewer}).first()
        return row.trace_id if row is not None else None

    def check(self, claim: Claim) -> HeldSlot:
        """The store's own record of the reservation a claim names, read outside any write:
        ClaimError when the claim is not one the store issued as it is given, LabelError
        (EXPIRED) when the slot went to someone else. Submit, skip and renew check the same
        again inside their transaction."""
        with self.engine.connect() as conn:
            return self._held(conn, claim)

    def _held(self, conn: Connection, claim: Claim, *, lock: bool = False) -> HeldSlot:
        """The slot a claim names with its target and campaign, matched against the claim;
        on PostgreSQL locked (`lock`) until the transaction ends."""
        c, t, k = slots.c, targets.c, campaigns_table.c
        query = (select(c.state, c.reviewer, c.token, c.target_id, c.campaign_id, t.trace_id,
                        t.event_id, t.questions, k.name, k.lease_seconds)
                 .select_from(slots.join(targets, t.target_id == c.target_id)
                              .join(campaigns_table, k.campaign_id == c.campaign_id))
                 .where(c.slot_id == claim.slot_id))
        if lock and self.postgres:
            query = query.with_for_update(of=slots)
        row = conn.execute(query).first()
        if row is None or (row.name, int(row.target_id), row.trace_id, row.event_id or None,
                           orjson.loads(row.questions)) != (
                claim.campaign, claim.target_id, claim.trace_id, claim.event_id,
                list(claim.questions)):
            raise ClaimError(NOT_ISSUED)
        if row.reviewer != claim.reviewer.name:
            raise LabelError(EXPIRED)
        if not row.token or not hmac.compare_digest(row.token.encode(), claim.token.encode()):
            raise ClaimError(NOT_ISSUED)
        return HeldSlot(row)

    def renew(self, claim: Claim, lease_seconds: int | None = None,
              at: float | None = None) -> Claim:
        """Extend a claim's lease from now (by the campaign's lease unless given); ClaimError
        for a claim the store did not issue, LabelError when the slot is no longer theirs."""
        c = slots.c
        with self._writing() as conn:
            held = self._held(conn, claim, lock=True)
            seconds = held.lease_seconds if lease_seconds is None else lease_seconds
            until = (time.time() if at is None else at) + seconds
            done = conn.execute(update(slots).where(
                c.slot_id == claim.slot_id, c.reviewer == claim.reviewer.name,
                c.state == "leased").values(leased_until=until))
            if not done.rowcount:
                raise LabelError(EXPIRED.replace("; nothing was saved", ""))
        return claim.model_copy(update={"leased_until": until})

    def skip(self, claim: Claim, reason: str) -> None:
        """Put a claimed slot back for others and remember that this reviewer skipped the
        target, with why (one transaction); LabelError without a reason or when the slot is
        no longer theirs, ClaimError for a claim the store did not issue."""
        reason = (reason or "").strip()
        if not reason:
            raise LabelError("say why you skip this target")
        c = slots.c
        with self._writing() as conn:
            held = self._held(conn, claim, lock=True)
            done = conn.execute(update(slots).where(
                c.slot_id == claim.slot_id, c.reviewer == claim.reviewer.name,
                c.state == "leased").values(state="open", reviewer=None, leased_until=None,
                                            claimed_at=None, token=None))
            if not done.rowcount:
                raise LabelError(EXPIRED.replace("nothing was saved", "nothing was skipped"))
            conn.execute(insert(campaign_skips_table), [{
                "campaign_id": held.campaign_id, "target_id": held.target_id,
                "reviewer": claim.reviewer.name, "reason": reason, "created_at": now()}])

    def release(self, claim: Claim) -> bool:
        """Put a claimed slot back for others at once, as if its lease had run out (the
        reviewer may be offered it again); False when it was no longer theirs, ClaimError for
        a claim the store did not issue."""
        c = slots.c
        with self._writing() as conn:
            try:
                self._held(conn, claim, lock=True)
            except ClaimError:
                raise
            except LabelError:  # expired and taken, or saved: nothing to give back
                return False
            done = conn.execute(update(slots).where(
                c.slot_id == claim.slot_id, c.reviewer == claim.reviewer.name,
                c.state == "leased").values(state="open", reviewer=None, leased_until=None,
                                            claimed_at=None, token=None))
        return bool(done.rowcount)

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

    def target_keys(self, trace_id: str) -> set[str]:
        """The targets of a trace (event id, '' for the trace) that any campaign holds: where
        answers stay sealed until a reviewer's own save in a campaign."""
        with self.engine.connect() as conn:
            return {e or "" for e in conn.execute(select(targets.c.event_id).where(
                targets.c.trace_id == trace_id).distinct()).scalars()}

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

    def reviewer_counts(self, campaign: Campaign, at: float | None = None,
                        only: str | None = None) -> dict[str, dict[str, int]]:
        """Reviewer -> saved, leased (unexpired) and skipped counts in a campaign (of one
        reviewer, with `only`)."""
        moment = time.time() if at is None else at
        c = slots.c
        s = campaign_skips_table.c
        found: dict[str, dict[str, int]] = defaultdict(
            lambda: {"saved": 0, "leased": 0, "skipped": 0})
        with self.engine.connect() as conn:
            query = select(c.reviewer, c.state, c.leased_until).where(
                c.campaign_id == campaign.campaign_id, c.reviewer.is_not(None))
            skips = select(s.reviewer, func.count()).where(
                s.campaign_id == campaign.campaign_id, s.reason != KEPT_FROM
            ).group_by(s.reviewer)
            if only is not None:
                query = query.where(c.reviewer == only)
                skips = skips.where(s.reviewer == only)
            for reviewer, state, until in conn.execute(query):
                if state == "done":
                    found[reviewer]["saved"] += 1
                elif state == "leased" and until is not None and until >= moment:
                    found[reviewer]["leased"] += 1
            for reviewer, count in conn.execute(skips):
                found[reviewer]["skipped"] += int(count)
        return dict(found)

    def suggestion_counts(self) -> dict[tuple[str, str], int]:
        """(trace id, event id or '') -> how many suggestions point at it (the `suggestions`
        queue order puts those first)."""
        c = suggestions_table.c
        with self.engine.connect() as conn:
            return {(t, e or ""): int(n) for t, e, n in conn.execute(
                select(c.trace_id, c.event_id, func.count()).group_by(c.trace_id, c.event_id))}

    def reservations(self, campaign: Campaign, at: float | None = None) -> list[Reservation]:
        """The targets reviewers hold now, soonest to end first: who holds which target, and
        when the reservation ends unless renewed (what a lead sees before releasing one)."""
        moment = time.time() if at is None else at
        c, t = slots.c, targets.c
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(c.slot_id, c.reviewer, c.leased_until, t.trace_id, t.event_id)
                .join(targets, t.target_id == c.target_id)
                .where(c.campaign_id == campaign.campaign_id, c.state == "leased",
                       c.leased_until >= moment)
                .order_by(c.leased_until, c.slot_id)).all()
        return [Reservation(slot_id=r.slot_id, reviewer=r.reviewer, trace_id=r.trace_id,
                            event_id=r.event_id, ends=float(r.leased_until)) for r in rows]

    def release_slot(self, campaign: Campaign, slot_id: int) -> bool:
        """A lead puts a reserved target back for everyone at once (the reviewer who held it
        is told at their save that it is no longer theirs); False when it was not reserved."""
        c = slots.c
        with self._writing() as conn:
            done = conn.execute(update(slots).where(
                c.campaign_id == campaign.campaign_id, c.slot_id == slot_id,
                c.state == "leased").values(state="open", reviewer=None, leased_until=None,
                                            claimed_at=None, token=None))
        return bool(done.rowcount)

    def slot_rows(self, campaign: Campaign) -> list[dict[str, Any]]:
        """Every slot of a campaign as a dict (tests and the concurrency checks read them)."""
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(
                select(slots).where(slots.c.campaign_id == campaign.campaign_id)
                .order_by(slots.c.slot_id))]
