"""A followed pool joins a rollout with its spans whichever comes first.

A pool is written once: a trace that went in cannot be joined later. So `orchviz pool follow`
lets the first of the two wait a while for the other (`JoinWait`), and the two go into the pool
as one trace (`rollouts.join`, the rule every path follows):

- **Spans before their rollout.** Agent Lightning writes a rollout's spans while it runs and the
  trainer its line after the reward. A span trace that names a rollout id in an attribute and
  that no rollout read so far joined waits up to `join_wait` seconds (`--join-wait`).
- **A rollout before its spans.** An OpenTelemetry batch span processor exports every few
  seconds, so spans often land after the trainer's line. Once the run has shown that it writes
  spans naming rollouts (one was read: `Positions.spans`, kept), a rollout with an id that no
  span trace named yet waits up to `span_wait` seconds (`--span-wait`). A run that writes no
  such spans never waits.

A wait is counted from when the trace was written, as far as the follower can tell: its file's
last change when it was read, or when it was first read if that is earlier (a follower catching
up on an old run adds at once what waited long enough already).

What comes too late for its partner is added alone: the pool holds the two apart, and the later
one says so, naming the other (its first event keeps `APART_KEY`, read back as the warning
`rollout_pooled_apart`; the follower prints it too). It is not added joined as a second trace:
the joined trace has the spans' id and events, so the rollout's step, group and reward would
count twice in the pool; and a pool's row is never rewritten, so the rollout's own trace, and
any label saved on it, stays as it was. `orchviz pool write` of the run's folder makes a pool
with the two joined. To tell a late partner, and to add nothing twice when a file is read
again, the follower remembers what it pooled for each rollout id (`Pooled`: the newest
`POOLED_KEPT`; before the run has shown spans, those of the last `RECENT_S` seconds).

Nothing waiting is lost when the follower stops: the positions it keeps put each file that holds
a waiting trace back where it was before the look that read it (`positions`), and when each
began waiting is kept (`Positions.held`), so a follower started again (or the next `--once` of a
cron line) reads them again and goes on waiting from where the last one was.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from viz_app.io.follow import Pooled, Positions, Tail
from viz_app.io.otlp import SPAN_ROLLOUT_KEY
from viz_app.io.rollouts import (ROLLOUT_KEY, SPAN_FORMATS, JoinKeys, elsewhere_noted, join,
                                 join_keys, rollout_of, span_rollout_ids)
from viz_app.model import Event, Trace, TraceWarning

JOIN_WAIT = 120.0
"""Seconds spans that name a rollout wait for its line (`--join-wait`): a rollout's spans are
written while it runs, its line after its reward."""

SPAN_WAIT = 10.0
"""Seconds a rollout waits for its spans once the run has shown it writes them (`--span-wait`):
OpenTelemetry's batch span processor exports every 5 s (`OTEL_BSP_SCHEDULE_DELAY`), a
collector's file exporter flushes about every second, and a look comes every 2 s."""

POOLED_KEPT = 10_000
"""Rollout ids whose pooled traces the follower remembers (the newest), once the run has shown
spans: a file read again after a restart goes back at most as far as its oldest waiting trace,
`span_wait` seconds of rollouts, and a late partner is told apart within that many."""

RECENT_S = 30.0
"""Before the run has shown spans, the rollouts pooled in the last this many seconds are
remembered: spans of the run's first rollouts, coming after them, are then said apart."""

APART = "rollout_pooled_apart"
"""The warning a trace added apart from its partner carries."""

APART_KEY = "rollout_apart"
"""The key of the first event of a trace a followed pool holds apart from its partner: the rollout
id and the trace id of the partner (`apart_noted`)."""


def apart_noted(trace: Trace, rollout_id: str, partner: str) -> Trace:
    """A trace a followed pool holds apart from its partner, which came too late to be joined
    (`JoinWait`): the rollout's spans, or the rollout of spans, which the pool holds
    as trace `partner`. Its first event says so (`APART_KEY`, kept in the pool, which keeps no
    reader's warnings), and so does the warning `rollout_pooled_apart` (`apart_note`)."""
    events = sorted(trace.events, key=lambda e: e.t)
    first = events[0].to_dict()
    first[APART_KEY] = {"rollout_id": rollout_id, "trace_id": partner}
    by_id = {e.id: e for e in trace.events}
    by_id[events[0].id] = Event.of(**first)
    kept = Trace(trace_id=trace.trace_id, task_id=trace.task_id, system=trace.system,
                 topology=trace.topology, events=[by_id[e.id] for e in trace.events],
                 edges=trace.edges, rewards=trace.rewards, costs_=trace.costs_,
                 metrics=trace.metrics)
    kept._source = trace.source
    kept._source_format = trace.source_format
    kept._warnings = trace.reader_warnings
    note = apart_note(kept)
    if note is not None:
        kept._warnings = [*kept.reader_warnings, note]
    return kept


def apart_note(trace: Trace) -> TraceWarning | None:
    """The warning a trace held apart from its partner carries (`apart_noted`), from what its
    first event says; None for another trace."""
    if not trace.events:
        return None
    first = min(trace.events, key=lambda e: e.t)
    apart = (first.other or {}).get(APART_KEY)
    if not isinstance(apart, dict):
        return None
    rollout_id, partner = apart.get("rollout_id"), apart.get("trace_id")
    if trace.source_format in SPAN_FORMATS or (first.other or {}).get(ROLLOUT_KEY) is None:
        message = (f"kept apart from its rollout {rollout_id}, trace {partner} of this pool: "
                   "the rollout was added alone before these spans came, its --span-wait "
                   "over; `orchviz pool write` of the run's folder joins them")
    else:
        message = (f"kept apart from its spans, trace {partner} of this pool: they were added "
                   f"alone before this rollout ({rollout_id}) came, their --join-wait over; "
                   "`orchviz pool write` of the run's folder joins them")
    return TraceWarning(code=APART, message=message)


class _Rewind(msgspec.Struct, frozen=True):
    """Where a waiting trace's file was before the look that read it."""

    look: int
    source: str
    seen: tuple[int, int] | None
    tail: Tail | None


class JoinWait:
    """The traces a follower reads, given to the pool joined: each look's `ready` says which to
    add now and keeps the others waiting (see the module's docstring)."""

    def __init__(self, join_wait: float = JOIN_WAIT, span_wait: float = SPAN_WAIT,
                 kept: Positions | None = None):
        self.join_wait = join_wait
        self.span_wait = span_wait
        kept = kept if kept is not None else Positions()
        self.since: dict[str, float] = dict(kept.held)
        self.spans = kept.spans
        self.pooled: dict[str, Pooled] = dict(kept.pooled)
        self.waiting: list[Trace] = []
        self._rewinds: dict[str, _Rewind] = {}
        self._look = 0
        self._ids: dict[int, str | None] = {}

    @property
    def rollouts_waiting(self) -> int:
        """Rollouts waiting for their spans."""
        return sum(1 for t in self.waiting if t.source_format not in SPAN_FORMATS)

    def ready(self, fresh: Sequence[Trace], now: float, *, before: Positions | None = None,
              written: Callable[[str], float | None] | None = None) -> list[Trace]:
        """The traces to add now: `fresh` (a look's) and the waiting ones, joined, but for
        those that wait longer. `before`: the follower's positions before the look (where a
        file that holds a waiting trace goes back to); `written`: when a trace's file last
        changed (seconds since the epoch), which a wait is counted from when earlier."""
        self._look += 1
        self._ids = {}
        fresh = [t for t in fresh if not self._again(t)]
        if not self.spans and any(_named(t) is not None for t in fresh):
            self.spans = True  # the run writes spans naming its rollouts: rollouts wait now
        batch = {t.trace_id: t for t in self.waiting}
        batch.update((t.trace_id, t) for t in fresh)  # a file read again: its newer version
        traces = list(batch.values())
        keys = [join_keys(t) if t.source_format in SPAN_FORMATS
                else JoinKeys(rollout_id=self._rollout_id(t)) for t in traces]
        firsts: dict[str, str] = {}  # rollout id -> its first rollout's trace (join's rule)
        for trace, key in zip(traces, keys):
            if key.rollout_id:
                firsts.setdefault(key.rollout_id, trace.trace_id)
        ready: list[Trace] = []
        waiting: list[Trace] = []
        for trace in join(traces, keys):
            kept, wait = self._judged(trace, now, written)
            if wait:
                waiting.append(kept)
            else:
                self._pooled(kept, now, firsts)
                ready.append(kept)
        self.waiting = waiting
        ids = {t.trace_id for t in waiting}
        self.since = {k: v for k, v in self.since.items() if k in ids}
        self._rewinds = {k: v for k, v in self._rewinds.items() if k in ids}
        for trace in waiting:
            if trace.trace_id not in self._rewinds:
                source = trace.source
                self._rewinds[trace.trace_id] = _Rewind(
                    look=self._look, source=source,
                    seen=(before.seen.get(source) if before is not None else None),
                    tail=(before.tails.get(source) if before is not None else None))
        self._forget(now)
        self._ids = {}
        return ready

    def positions(self, positions: Positions) -> Positions:
        """Positions to keep: each file that holds a waiting trace put back where it was before
        the earliest look that read one (read again after a stop), when each began waiting,
        whether the run writes spans and what was pooled for each rollout id."""
        seen = dict(positions.seen)
        tails = dict(positions.tails)
        earliest: dict[str, _Rewind] = {}
        for rewind in self._rewinds.values():
            if rewind.source not in earliest or rewind.look < earliest[rewind.source].look:
                earliest[rewind.source] = rewind
        for source, rewind in earliest.items():
            if rewind.seen is None:
                seen.pop(source, None)
            else:
                seen[source] = rewind.seen
            if rewind.tail is None:
                tails.pop(source, None)
            else:
                tails[source] = rewind.tail
        return Positions(seen=seen, tails=tails, held=dict(self.since), spans=self.spans,
                         pooled=dict(self.pooled))

    # -- one trace's turn ------------------------------------------------------------------------

    def _judged(self, trace: Trace, now: float,
                written: Callable[[str], float | None] | None) -> tuple[Trace, bool]:
        """The trace as it goes on, and whether it waits."""
        if trace.source_format in SPAN_FORMATS:
            named = _named(trace)
            if named is None or self._rollout_id(trace) or _elsewhere(trace):
                return trace, False  # names no rollout, is joined, or its rollout was taken
            earlier = next((self.pooled[k] for k in span_rollout_ids(trace)
                            if k in self.pooled), None)
            if earlier is None:
                return trace, self._waits(trace, self.join_wait, now, written)
            if earlier.form == "joined":
                return elsewhere_noted(trace, named, earlier.trace_id), False
            if earlier.form == "rollout":
                return apart_noted(trace, named, earlier.trace_id), False
            return trace, False  # spans of this rollout went alone before: no rollout to wait for
        rollout_id = self._rollout_id(trace)
        if not rollout_id or not self.spans:
            return trace, False
        earlier = self.pooled.get(rollout_id)
        if earlier is None:
            return trace, self._waits(trace, self.span_wait, now, written)
        if earlier.form == "spans":
            return apart_noted(trace, rollout_id, earlier.trace_id), False
        return trace, False  # another rollout of this id went first: nothing to wait for

    def _waits(self, trace: Trace, wait: float, now: float,
               written: Callable[[str], float | None] | None) -> bool:
        start = (written(trace.source) if written is not None and trace.source else None)
        since = self.since.setdefault(trace.trace_id,
                                      min(now, start) if start is not None else now)
        return now - since < wait

    def _again(self, trace: Trace) -> bool:
        """Whether the trace was pooled already (its file read again): a span trace, or a
        rollout alone, by its id; a rollout taken into a joined trace by that trace's record."""
        if trace.source_format in SPAN_FORMATS:
            return any(self.pooled[k].trace_id == trace.trace_id
                       for k in span_rollout_ids(trace) if k in self.pooled)
        rollout_id = self._rollout_id(trace)
        earlier = self.pooled.get(rollout_id) if rollout_id else None
        return earlier is not None and trace.trace_id in (earlier.trace_id, earlier.rollout)

    def _pooled(self, trace: Trace, now: float, firsts: dict[str, str]) -> None:
        """Remember what goes into the pool for its rollout id."""
        rollout_id = self._rollout_id(trace)
        if trace.source_format in SPAN_FORMATS:
            if rollout_id:
                self.pooled[rollout_id] = Pooled(trace.trace_id, "joined", now,
                                                 rollout=firsts.get(rollout_id, ""))
            elif (named := _named(trace)) is not None and not _elsewhere(trace):
                self.pooled.setdefault(named, Pooled(trace.trace_id, "spans", now))
        elif rollout_id:
            self.pooled.setdefault(rollout_id, Pooled(trace.trace_id, "rollout", now))

    def _rollout_id(self, trace: Trace) -> str | None:
        """The id of the rollout a trace carries (a rollout's, or a joined trace's), read once
        a look (`rollout_of` finds the first event)."""
        key = id(trace)  # the look's traces live until it ends, when the memo is dropped
        if key not in self._ids:
            found = rollout_of(trace)
            self._ids[key] = found.rollout_id if found is not None and found.rollout_id else None
        return self._ids[key]

    def _forget(self, now: float) -> None:
        """Keep the newest POOLED_KEPT records, or, before the run has shown spans, the last
        RECENT_S seconds of them."""
        if not self.spans:
            if any(p.at < now - RECENT_S for p in self.pooled.values()):
                self.pooled = {k: p for k, p in self.pooled.items() if p.at >= now - RECENT_S}
        elif len(self.pooled) > POOLED_KEPT:
            newest = sorted(self.pooled.items(), key=lambda kv: kv[1].at)[-POOLED_KEPT:]
            self.pooled = dict(newest)


def _named(trace: Trace) -> str | None:
    """The rollout id a span trace names in an attribute (None for another trace)."""
    if trace.source_format not in SPAN_FORMATS or not trace.events:
        return None
    first = min(trace.events, key=lambda e: e.t)
    named = (first.other or {}).get(SPAN_ROLLOUT_KEY)
    return named if isinstance(named, str) and named else None


def _elsewhere(trace: Trace) -> bool:
    return any(w.code == "rollout_joined_elsewhere" for w in trace.reader_warnings)
