"""What a trace means as an orchestration: agents, spawn tree, communication, event DAG, figures.

`analyze(trace)` returns one `Analysis` per trace (kept on the trace, so every view and verb
shares it). The cheap structural pass runs at once, because loading reports its warnings; graphs,
the critical path and the figures are built on first use. Each figure is a property computed
here and nowhere else: `Figures` (the trace page, `orchviz inspect`) and `summary.Summary` (a
row of the library and of the pool index) read the same properties. The networkx graphs
(`spawn_tree`, `communication`, `event_dag`) are built, and networkx imported, only when a view
or an export asks for them: a summary needs none.

Longer than 800 lines because `Analysis` is one object whose lazily built properties read each
other (the structural pass's maps, lanes, roots, the critical path, the figures): split across
modules they would pass that shared state around or compute it twice, and "each figure is
computed here and nowhere else" is the promise the pages and the pool index rely on.
"""

from __future__ import annotations

import math

from bisect import bisect_right
from collections import Counter, defaultdict, deque
from collections.abc import Iterable
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from viz_app.model import Event, Trace, TraceWarning, paused_gc

if TYPE_CHECKING:
    import networkx as nx


class cached_property:  # noqa: N801  (it stands for functools.cached_property)
    """`functools.cached_property` without the lock Python 3.11 takes on every first read (3.12
    dropped it): the index reads a dozen of them on each of a million traces. The value is
    kept in the instance's dict, which every later read finds first."""

    def __init__(self, func):
        self.func, self.__doc__, self.attrname = func, func.__doc__, func.__name__

    def __set_name__(self, owner, name: str) -> None:
        self.attrname = name

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        value = instance.__dict__[self.attrname] = self.func(instance)
        return value


_T, _ID = attrgetter("t"), attrgetter("id")
_END_T, _TOKENS, _COST = attrgetter("end_t"), attrgetter("tokens"), attrgetter("cost_usd")

COMMUNICATION_KINDS = ("spawn", "delegate", "message", "return")
"""The kinds of agent-to-agent link the communication graph counts."""


class AgentStats(BaseModel):
    """What one agent did."""

    name: str = Field(description="The agent's name as the trace gives it.")
    role: str = Field(description="Its role: from its spawn, else its own events, else 'agent'.")
    parent: str | None = Field(description="The agent that spawned it; None for a root.")
    depth: int = Field(description="Its depth in the spawn tree; roots are 0.")
    children: list[str] = Field(description="The agents it spawned, in spawn order.")
    spawned_at: float | None = Field(description="Time of its spawn event, if it was spawned.")
    first_t: float = Field(description="When it began: its spawn, else its first event.")
    last_t: float = Field(description="When its last event's work ended.")
    lifetime_s: float = Field(description="From spawn (or first event) to its last event's end.")
    active_s: float = Field(description="Time covered by its own events' work (union).")
    events: int = Field(description="Events that belong to it, tool results included.")
    tool_calls: int = Field(description="Tool calls it made.")
    messages_sent: int = Field(description="Messages it sent.")
    tokens: float = Field(description="Tokens its events consumed.")
    cost_usd: float = Field(description="What its events cost.")


class AggregatePoint(BaseModel):
    """An aggregate event and the results it merged: a point where a reviewer judges fan-in."""

    event_id: str = Field(description="The aggregate event.")
    agent: str = Field(description="The agent that aggregated.")
    t: float = Field(description="When it aggregated.")
    inputs: list[str] = Field(description="Ids of the returns and messages it merged.")
    inputs_from: str = Field(description="'edges' when aggregate edges name the inputs, else "
                             "'returns since the previous aggregate'.")


class StopPoint(BaseModel):
    """A decision to stop: a point where a reviewer judges whether stopping was right."""

    event_id: str = Field(description="The stop decision, or the event inferred to be the stop.")
    agent: str = Field(description="The agent that stopped.")
    t: float = Field(description="When it stopped.")
    inferred: bool = Field(description="True when no explicit stop decision exists and this is the "
                           "root orchestrator's last event.")


class Figures(BaseModel):
    """The orchestration figures of one trace, as `orchviz inspect --json` prints them."""

    trace_id: str
    events: int = Field(description="Number of events.")
    agents: int = Field(description="Number of agents (tools are not agents).")
    depth: int = Field(description="Depth of the spawn tree; a lone root is 0.")
    max_fanout: int = Field(description="Most children any agent spawned.")
    mean_fanout: float = Field(description="Mean children over the agents that spawned any.")
    messages: int = Field(description="Number of message events.")
    tool_calls: int = Field(description="Number of tool_call events.")
    makespan_s: float = Field(description="From the first event to the end of the last.")
    parallelism: float = Field(description="Sum of agent lifetimes over the makespan.")
    critical_path_s: float = Field(description="Work along the longest dependent chain of events.")
    critical_path: list[str] = Field(description="The event ids on that chain, in order.")
    tokens: float = Field(description="Tokens: the events' sum, else the trace's costs.tokens.")
    cost_usd: float = Field(description="Dollars: the events' sum, else 0.")
    aggregates: list[AggregatePoint] = Field(description="Every aggregate event with its inputs.")
    stops: list[StopPoint] = Field(description="Every stop decision (or the inferred stop).")
    warnings: list[TraceWarning] = Field(description="Odd but legal structure.")


def analyze(trace: Trace) -> Analysis:
    """The analysis of a trace, built once and kept on it."""
    if trace._analysis is None:
        with paused_gc():
            trace._analysis = Analysis(trace)
    return trace._analysis


def forget(trace: Trace) -> None:
    """Drop the analysis kept on a trace. A trace and its analysis point at each other, so
    without this they wait for the cyclic garbage collector: a loop over many traces that is
    done with each calls it to free them at once."""
    trace._analysis = None


def figures(trace: Trace) -> Figures:
    """The trace's orchestration figures."""
    return analyze(trace).figures


FigureKind = Literal["count", "seconds", "ratio", "dollars"]

FIGURES: dict[str, FigureKind] = {
    "agents": "count", "events": "count", "depth": "count", "fan-out": "count",
    "messages": "count", "tool calls": "count", "makespan": "seconds", "parallelism": "ratio",
    "critical path": "seconds", "tokens": "count", "cost": "dollars", "aggregates": "count",
    "stops": "count", "warnings": "count",
}
"""Every figure of a trace that people read, by the name every view gives it, in the order the
views show them, with the kind of number it is (which says how it is written)."""


class FigureRow(BaseModel):
    """One figure of a trace as people read it: the trace page, the report, the compare page,
    presentation mode and `orchviz inspect` each lay these rows out their own way."""

    name: str = Field(description="The figure's name, a key of `FIGURES`.")
    value: str = Field(description="Its value as text (`figure_text`).")
    help: str = Field("", description="What it means or what stands behind it, if anything.")


def figure_numbers(f: Figures) -> dict[str, float]:
    """The number of each figure in `FIGURES`, by name."""
    return {"agents": f.agents, "events": f.events, "depth": f.depth, "fan-out": f.max_fanout,
            "messages": f.messages, "tool calls": f.tool_calls, "makespan": f.makespan_s,
            "parallelism": f.parallelism, "critical path": f.critical_path_s,
            "tokens": f.tokens, "cost": f.cost_usd, "aggregates": len(f.aggregates),
            "stops": len(f.stops), "warnings": len(f.warnings)}


LONG_NUMBER = 1e15
"""From here a figure is written with an exponent: its digits would only be noise."""


def figure_text(name: str, value: float) -> str:
    """A figure's value (or a difference of two) as text: counts with thousands separators,
    seconds to a tenth, ratios to a hundredth, dollars to a tenth of a cent below $10 and to
    the dollar from there. A number too long to read that way (from 1e15) is written with an
    exponent (`1.7e+308s`), and a sum past the largest float (two events of 1e308 tokens) says
    so, rather than `inf`."""
    kind = FIGURES[name]
    if not math.isfinite(value) or abs(value) >= LONG_NUMBER:
        text = f"{abs(value):.3g}" if math.isfinite(value) else "1.8e+308"
        text = {"seconds": f"{text}s", "dollars": f"${text}"}.get(kind, text)
        if value != value:
            return "unknown"
        return ("-" if value < 0 else "") + (text if math.isfinite(value) else f"more than {text}")
    if kind == "seconds":
        return f"{value:,.1f}s"
    if kind == "ratio":
        return f"{value:.2f}"
    if kind == "dollars":
        sign, value = ("-" if value < 0 else ""), abs(value)
        return f"{sign}${value:,.3f}" if value < 10 else f"{sign}${value:,.0f}"
    return f"{value:,.0f}"


def figure_rows(f: Figures, names: Iterable[str] = FIGURES) -> list[FigureRow]:
    """The figures named (all of them by default), in that order, as rows to lay out."""
    numbers = figure_numbers(f)
    inferred = any(s.inferred for s in f.stops)
    helps = {
        "events": f"{f.messages:,} messages, {f.tool_calls:,} tool calls",
        "fan-out": f"most children of one agent; mean {f.mean_fanout:.1f} over agents that spawn",
        "parallelism": "sum of agent lifetimes over the makespan",
        "critical path": f"work along the longest dependent chain: {len(f.critical_path)} events",
        "stops": "inferred: no explicit stop decision" if inferred else "",
    }
    return [FigureRow(name=n, value=figure_text(n, numbers[n]), help=helps.get(n, ""))
            for n in names]


class Analysis:
    """Everything orchviz derives from one trace. Build it with `analyze(trace)`."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self._events = trace.events_by_id
        self.structural: list[TraceWarning] = []
        """Odd but legal structure found here (see `warnings` for every warning)."""
        self.order: list[Event] = sorted(trace.events, key=_T)
        """The events in time order (stable: ties keep file order)."""
        self.position = {e.id: i for i, e in enumerate(self.order)}
        self.agent_names = self._agent_names()
        self.call_of_result: dict[str, str] = {}
        """For each tool_result, the id of the tool_call it answers."""
        self.actor: dict[str, str] = {}
        """For each event id, the agent it belongs to (a tool's result belongs to its caller)."""
        self.parent: dict[str, str] = {}
        self.spawn_event: dict[str, Event] = {}
        self.events_of: dict[str, list[Event]] = {}
        """Each agent's events in time order (tool results under their caller)."""
        self._structure()

    @property
    def warnings(self) -> list[TraceWarning]:
        """Every warning of the trace: what its reader noted, then the odd but legal structure
        found here."""
        return [*self.trace.reader_warnings, *self.structural]

    # -- the structural pass -------------------------------------------------------------

    def _agent_names(self) -> set[str]:
        names: set[str] = set()
        add = names.add
        for e in self.order:
            kind = e.type
            if kind == "tool_result":
                continue
            add(e.agent)
            if kind == "spawn":
                if e.to:
                    add(e.to)
            elif kind == "message":
                sender, recipient = e.from_, e.to
                if sender:
                    add(sender)
                if recipient:
                    add(recipient)
        return names

    def _structure(self) -> None:
        """One pass over the events in time order: each event's actor (a tool's result is
        matched to its call, `_match_call`), the agents' events (`events_of`), the spawn tree
        (`_spawn_link`), and the warnings of odd structure, in the order of their kinds:
        unmatched results, spawns twice or in a cycle, returns to no agent, events before
        their agent's spawn."""
        by_edge = self._calls_linked_by_edges()
        self._answered: set[str] = set()
        waiting: dict[tuple[str | None, str | None], deque[Event]] = defaultdict(deque)
        matched: set[str] = set(by_edge.values())
        actor, names = self.actor, self.agent_names
        grouped: dict[str, list[Event]] = {}
        unmatched: list[TraceWarning] = []
        spawns: list[TraceWarning] = []
        returns: list[TraceWarning] = []
        tree: dict[str, str] = {}  # union-find: agents of one spawn tree share a representative
        for e in self.order:
            kind = e.type
            if kind == "tool_result":
                call = self._match_call(e, by_edge, waiting)
                if call is None:
                    who = e.agent
                    unmatched.append(TraceWarning(
                        code="unmatched_tool_result", event_id=e.id,
                        message=f"tool_result {e.id} matches no earlier tool_call"
                                + (f" of {e.tool!r}" if e.tool else "")))
                else:
                    self.call_of_result[e.id] = call.id
                    self._answered.add(call.id)
                    who = call.agent
            else:
                who = e.agent
                if kind == "tool_call":
                    if e.id not in matched:
                        waiting[(None, e.tool)].append(e)
                        waiting[(who, e.tool)].append(e)
                elif kind == "spawn":
                    if e.to:
                        self._spawn_link(e, who, tree, spawns)
                elif kind == "return" and e.to and e.to not in names:
                    returns.append(TraceWarning(
                        code="return_to_unknown_agent", event_id=e.id,
                        message=f"return {e.id} goes to {e.to!r}, an agent that never appears"))
            actor[e.id] = who
            events = grouped.get(who)
            if events is None:
                grouped[who] = [e]
            else:
                events.append(e)
        self.events_of = grouped
        early: list[TraceWarning] = []
        for child, spawn in self.spawn_event.items():
            first = grouped[child][0] if child in grouped else None
            if first is not None and first.t < spawn.t:
                early.append(TraceWarning(
                    code="event_before_spawn", event_id=first.id,
                    message=f"{child!r} has event {first.id} at t={first.t:g}, before its spawn "
                            f"at t={spawn.t:g}"))
        self.structural += unmatched + spawns + returns + early

    def _calls_linked_by_edges(self) -> dict[str, str]:
        events = self._events
        linked: dict[str, str] = {}
        for edge in self.trace.edges:
            src, dst = events[edge.src], events[edge.dst]
            if src.type == "tool_call" and dst.type == "tool_result" and dst.id not in linked:
                linked[dst.id] = src.id
        return linked

    def _match_call(self, result: Event, by_edge: dict[str, str],
                    waiting: dict[tuple[str | None, str | None], deque[Event]]) -> Event | None:
        if result.id in by_edge:
            return self._events[by_edge[result.id]]
        keys = [(result.agent, result.tool)] if result.agent in self.agent_names else []
        keys.append((None, result.tool))
        for key in keys:
            queue = waiting.get(key)
            while queue:  # a call waits in two queues: answered, it is skipped in the other
                call = queue.popleft()
                if call.id not in self._answered:
                    return call
        return None

    def _spawn_link(self, e: Event, parent: str, tree: dict[str, str],
                    warnings: list[TraceWarning]) -> None:
        """Link the child a spawn names to its parent, unless it was spawned before or the link
        would close a cycle (`tree`: a union-find of the agents of each spawn tree so far)."""

        def find(agent: str) -> str:
            top = agent
            while top in tree:
                top = tree[top]
            while agent != top:  # path compression keeps every later find short
                tree[agent], agent = top, tree[agent]
            return top

        child = e.to
        if child in self.parent or child in self.spawn_event:
            warnings.append(TraceWarning(
                code="spawned_twice", event_id=e.id,
                message=f"{child!r} is spawned again by {parent!r} (first spawned by "
                        f"{self.parent.get(child, '?')!r} at event {self.spawn_event[child].id})"))
            return
        # the child has no parent yet, so it is the root of its own tree: it is an ancestor
        # of the parent exactly when both are in one tree
        if child == parent or find(child) == find(parent):
            warnings.append(TraceWarning(
                code="spawn_cycle", event_id=e.id,
                message=f"spawning {child!r} from {parent!r} would close a cycle in the spawn "
                        "tree; the link is ignored"))
            self.spawn_event[child] = e
            return
        self.parent[child] = parent
        self.spawn_event[child] = e
        tree[find(child)] = find(parent)

    # -- agents and the spawn tree ------------------------------------------------------------

    @cached_property
    def agents(self) -> list[str]:
        """Agent names in tree order: each root, then its subtree depth-first in spawn order."""
        children = self.children
        starts = {a: self._start(a) for a in self.agent_names}
        roots = sorted((a for a in self.agent_names if a not in self.parent),
                       key=lambda a: (starts[a], a))
        ordered: list[str] = []
        stack = list(reversed(roots))
        while stack:
            agent = stack.pop()
            ordered.append(agent)
            stack.extend(reversed(children.get(agent, [])))
        seen = set(ordered)
        ordered.extend(sorted(a for a in self.agent_names if a not in seen))
        return ordered

    @cached_property
    def lanes(self) -> list[str]:
        """Who the timeline gives a lane: the agents in tree order, then any tool whose result
        matched no call (it has no caller to belong to)."""
        agents = set(self.agents)
        strays = sorted({who for who in self.actor.values() if who not in agents})
        return [*self.agents, *strays]

    @cached_property
    def children(self) -> dict[str, list[str]]:
        """Each agent's spawned children, in spawn order."""
        kids: dict[str, list[str]] = defaultdict(list)
        for child, parent in sorted(self.parent.items(),
                                    key=lambda kv: self.position[self.spawn_event[kv[0]].id]):
            kids[parent].append(child)
        return dict(kids)

    @cached_property
    def depth_of(self) -> dict[str, int]:
        """Each agent's depth in the spawn tree (roots are 0)."""
        depth: dict[str, int] = {}
        for agent in self.agents:
            parent = self.parent.get(agent)
            depth[agent] = depth.get(parent, -1) + 1 if parent is not None else 0
        return depth

    @cached_property
    def root(self) -> str:
        """The root orchestrator: the root with the largest subtree, earliest on ties."""
        sizes = Counter(self._roots.values())
        roots = [a for a in self.agents if a not in self.parent]
        return max(roots, key=lambda r: (sizes[r], -self._start(r)))

    def root_of(self, agent: str) -> str:
        """The root of the subtree an agent belongs to."""
        return self._roots.get(agent, agent)

    @cached_property
    def _roots(self) -> dict[str, str]:
        roots: dict[str, str] = {}
        for agent in self.agents:  # tree order: every parent comes before its children
            parent = self.parent.get(agent)
            roots[agent] = roots.get(parent, parent) if parent is not None else agent
        return roots

    def role_of(self, agent: str) -> str:
        """An agent's role: from its spawn event, else the first role its events give."""
        spawn = self.spawn_event.get(agent)
        if spawn is not None and spawn.role:
            return spawn.role
        for e in self.events_of[agent] if agent in self.events_of else ():
            if e.role and e.type != "spawn":
                return e.role
        return "orchestrator" if agent == self.root and self.children.get(agent) else "agent"

    def _start(self, agent: str) -> float:
        spawn = self.spawn_event.get(agent)
        if spawn is not None:
            return float(spawn.t)
        events = self.events_of.get(agent)
        return float(events[0].t) if events else 0.0

    @cached_property
    def spawn_tree(self) -> nx.DiGraph:
        """Agents as nodes (with role and depth), parent -> child edges with the spawn event."""
        import networkx as nx

        tree = nx.DiGraph()
        for agent in self.agents:
            tree.add_node(agent, role=self.role_of(agent), depth=self.depth_of[agent])
        for child, parent in self.parent.items():
            tree.add_edge(parent, child, event=self.spawn_event[child].id)
        return tree

    # -- events per agent, durations -----------------------------------------------------------

    @cached_property
    def duration(self) -> dict[str, float]:
        """Work time of each event: `end_t - t`, or for a tool call the wait for its result."""
        return self._work[0]

    @cached_property
    def _ends(self) -> dict[str, float]:
        """When each event's work ended: its `t` plus its `duration`."""
        return self._work[1]

    @cached_property
    def _work(self) -> tuple[dict[str, float], dict[str, float]]:
        """Each event's `duration` and `_ends`, in one pass in time order."""
        result_of = {call: result for result, call in self.call_of_result.items()}
        events = self.trace.events_by_id
        spans: dict[str, float] = {}
        ends: dict[str, float] = {}
        for e, end in zip(self.order, map(_END_T, self.order)):
            t, key = e.t, e.id
            span = end - t if end is not None else 0.0
            if span == 0 and key in result_of and e.type == "tool_call":
                span = max(0.0, events[result_of[key]].t - t)
            spans[key] = span
            ends[key] = t + span
        return spans, ends

    @cached_property
    def _event_numbers(self) -> tuple[list[float | None], list[float | None]]:
        """Each event's tokens and cost (None where it gives none), in time order: read once."""
        return list(map(_TOKENS, self.order)), list(map(_COST, self.order))

    @cached_property
    def _lifespans(self) -> dict[str, tuple[float, float]]:
        """Each agent's (start, end), in tree order: its spawn (else its first event), and the
        end of its last event's work (its start when it has none)."""
        spans: dict[str, tuple[float, float]] = {}
        end, events_of = self._ends.__getitem__, self.events_of
        for agent in self.agents:
            start = self._start(agent)
            spans[agent] = (start, max(map(end, map(_ID, events_of.get(agent, ()))),
                                       default=start))
        return spans

    @cached_property
    def agent_stats(self) -> dict[str, AgentStats]:
        """Figures of every agent, keyed by name, in tree order."""
        tokens, costs = self._event_numbers
        position, duration = self.position, self.duration
        stats: dict[str, AgentStats] = {}
        for agent, (start, last) in self._lifespans.items():
            events = self.events_of.get(agent, [])
            at = [position[e.id] for e in events]
            spawn = self.spawn_event.get(agent)
            stats[agent] = AgentStats(
                name=agent, role=self.role_of(agent), parent=self.parent.get(agent),
                depth=self.depth_of[agent], children=self.children.get(agent, []),
                spawned_at=float(spawn.t) if spawn is not None else None, first_t=start,
                last_t=last, lifetime_s=max(0.0, last - start),
                active_s=_union_length((e.t, e.t + duration[e.id]) for e in events),
                events=len(events), tool_calls=sum(e.type == "tool_call" for e in events),
                messages_sent=sum(e.type == "message" for e in events),
                tokens=sum(tokens[i] or 0 for i in at),
                cost_usd=sum(costs[i] or 0 for i in at))
        return stats

    # -- communication --------------------------------------------------------------------------

    @cached_property
    def communication(self) -> nx.DiGraph:
        """Who spawned, delegated to, messaged and returned to whom: edge attributes count each
        kind, and `weight` counts them all."""
        import networkx as nx

        graph = nx.DiGraph()
        graph.add_nodes_from(self.agents)
        for e in self.order:
            link = self.link_of(e)
            if link is None:
                continue
            kind, sender, recipient = link
            if not graph.has_edge(sender, recipient):
                graph.add_edge(sender, recipient, weight=0, events=[],
                               **{k: 0 for k in COMMUNICATION_KINDS})
            data = graph[sender][recipient]
            data[kind] += 1
            data["weight"] += 1
            data["events"].append(e.id)
        return graph

    def link_of(self, e: Event) -> tuple[str, str, str] | None:
        """(kind, sender, recipient) when an event links two agents, else None. Both are
        agents of the trace: a `from` that names no agent (the schema allows any text) is
        read as the event's own agent, a `to` that names none links nothing."""
        if e.type == "spawn" and e.to and self.parent.get(e.to) == self.actor[e.id] \
                and self.spawn_event.get(e.to) is e:
            return "spawn", self.actor[e.id], e.to
        if e.type == "orchestrator_decision" and e.decision == "delegate" and e.to \
                and e.to in self.agent_names:
            return "delegate", self.actor[e.id], e.to
        if e.type in ("message", "return") and e.to and e.to in self.agent_names:
            sender = e.from_ if e.from_ in self.agent_names else self.actor[e.id]
            if sender != e.to:
                return e.type, sender, e.to
        return None

    # -- the event DAG and its critical path ---------------------------------------------------

    @cached_property
    def dependencies(self) -> list[tuple[str, str, str]]:
        """(src, dst, kind) for every dependency between events, each running forward in time:
        the trace's own edges that do, then the order of each agent's events, tool call -> its
        result, spawn -> the child's next event, and a message or return -> the recipient's
        next event, wherever the trace's edges do not already say so."""
        pos = self.position
        found: dict[tuple[str, str], str] = {}
        for edge in self.trace.edges:
            if pos[edge.src] < pos[edge.dst]:
                found.setdefault((edge.src, edge.dst), edge.type)
        for events in self.events_of.values():
            for before, after in zip(events, events[1:]):
                found.setdefault((before.id, after.id), "sequence")
        for result, call in self.call_of_result.items():
            if pos[call] < pos[result]:
                found.setdefault((call, result), "tool_dependency")
        for e in self.order:
            link = self.link_of(e)
            if link is not None:
                nxt = self._next_event_of(link[2], pos[e.id])
                if nxt is not None:
                    found.setdefault((e.id, nxt.id), link[0])
        return [(src, dst, kind) for (src, dst), kind in found.items()]

    @cached_property
    def event_dag(self) -> nx.DiGraph:
        """The event DAG: events as nodes, `dependencies` as edges with their `type`."""
        import networkx as nx

        dag = nx.DiGraph()
        dag.add_nodes_from(self.position)
        dag.add_edges_from((src, dst, {"type": kind}) for src, dst, kind in self.dependencies)
        return dag

    def _next_event_of(self, agent: str, after: int) -> Event | None:
        events = self.events_of.get(agent, [])
        i = bisect_right(self._positions_of.get(agent, []), after)
        return events[i] if i < len(events) else None

    @cached_property
    def _positions_of(self) -> dict[str, list[int]]:
        return {a: [self.position[e.id] for e in evs] for a, evs in self.events_of.items()}

    @cached_property
    def critical(self) -> tuple[float, list[str]]:
        """(time covered by the work along the heaviest chain of dependent events, its ids).

        An event's work is its `duration` (from `t` to `end_t`, or a tool call's wait for its
        result). An event that gives no `end_t` (a point in time, as most imported traces give
        every event) marks where work ended that began when the last of its dependencies
        ended, since it could not begin before (a tool call's work then runs on to its
        result). Work that overlaps along the chain counts once (a chain's length is the union
        of its events' work intervals), so the critical path never exceeds the makespan."""
        order, pos, duration = self.order, self.position, self.duration
        preds: dict[int, list[int]] = defaultdict(list)  # by position: lists, not dicts, below
        for src, dst, _ in self.dependencies:
            preds[pos[dst]].append(pos[src])
        ends = [e.t + duration[e.id] for e in order]
        best = [end - e.t for end, e in zip(ends, order)]  # an event's own work, by itself
        reach = list(ends)  # where the work along its heaviest chain ends
        via = [-1] * len(order)
        no_end = [e.end_t is None for e in order] if preds else ()
        for i, before in sorted(preds.items()):  # in time order, which is topological
            finish, start = ends[i], float(order[i].t)
            if no_end[i]:  # no stated start of work: since its inputs
                latest = max([ends[u] for u in before])
                if latest < start:
                    start = latest
            prior, length = -1, finish - start
            for u in before:  # every dependency runs forward in time: u < i
                lower = reach[u]
                gain = finish - (start if start > lower else lower)
                candidate = best[u] + gain if gain > 0 else best[u]
                if candidate > length or prior < 0 and candidate >= length:
                    prior, length = u, candidate
            best[i] = length
            if prior >= 0:
                reach[i] = reach[prior] if reach[prior] > finish else finish
                via[i] = prior
        end = max(range(len(order) - 1, -1, -1), key=best.__getitem__)  # latest of the heaviest
        chain: list[str] = []
        node = end
        while node >= 0:
            chain.append(order[node].id)
            node = via[node]
        return best[end], chain[::-1]

    # -- decision points ------------------------------------------------------------------

    @cached_property
    def aggregates(self) -> list[AggregatePoint]:
        """Every aggregate event with the returns and messages it merged."""
        fed: dict[str, list[str]] = defaultdict(list)
        for edge in self.trace.edges:
            if edge.type == "aggregate":
                fed[edge.dst].append(edge.src)
        points: list[AggregatePoint] = []
        waiting: dict[str, list[str]] = defaultdict(list)  # returns since each agent aggregated
        for e in self.order:
            if e.type == "return" and e.to:
                waiting[e.to].append(e.id)
            if e.type != "aggregate":
                continue
            agent = self.actor[e.id]
            since = waiting.pop(agent, [])
            if fed.get(e.id):
                inputs, basis = sorted(fed[e.id], key=self.position.__getitem__), "edges"
            else:
                inputs, basis = since, "returns since the previous aggregate"
            points.append(AggregatePoint(event_id=e.id, agent=agent, t=e.t, inputs=inputs,
                                         inputs_from=basis))
        return points

    @cached_property
    def stops(self) -> list[StopPoint]:
        """Every explicit stop decision; else the root orchestrator's last event, inferred."""
        events, inferred = self.stop_events
        return [StopPoint(event_id=e.id, agent=self.actor[e.id], t=e.t, inferred=inferred)
                for e in events]

    @cached_property
    def stop_events(self) -> tuple[list[Event], bool]:
        """The events of `stops`, and whether they are inferred: every explicit stop decision,
        else the root orchestrator's last event."""
        explicit = [e for e in self.of_type.get("orchestrator_decision", ())
                    if e.decision == "stop"]
        if explicit:
            return explicit, False
        last = self.events_of[self.root][-1] if self.root in self.events_of else self.order[-1]
        return [last], True

    # -- the figures --------------------------------------------------------------------------

    @cached_property
    def makespan(self) -> float:
        """From the first event to the end of the last event's work."""
        return max(self._ends.values()) - self.order[0].t

    @cached_property
    def depth(self) -> int:
        """Depth of the spawn tree; a lone root is 0."""
        return max(self.depth_of.values(), default=0)

    @cached_property
    def parallelism(self) -> float:
        """Sum of agent lifetimes over the makespan (0 when the makespan is)."""
        lifetimes = sum(max(0.0, last - start) for start, last in self._lifespans.values())
        return lifetimes / self.makespan if self.makespan > 0 else 0.0

    @cached_property
    def tokens(self) -> float:
        """Tokens: the events' sum, else the trace's costs.tokens."""
        given = [n for n in self._event_numbers[0] if n is not None]
        return sum(given) if given else float(self.trace.costs.tokens)

    @cached_property
    def cost_usd(self) -> float:
        """Dollars: the events' sum, else 0."""
        return float(sum(n for n in self._event_numbers[1] if n is not None))

    @cached_property
    def fanouts(self) -> list[int]:
        """How many children each agent that spawned any spawned, in tree order."""
        return [len(kids) for kids in self.children.values() if kids]

    @cached_property
    def type_counts(self) -> Counter[str]:
        """How many events of each type the trace has."""
        return Counter({kind: len(events) for kind, events in self.of_type.items()})

    @cached_property
    def of_type(self) -> dict[str, list[Event]]:
        """The events of each type, in time order (a type no event has is no key)."""
        found: dict[str, list[Event]] = {}
        for e in self.order:
            events = found.get(e.type)
            if events is None:
                found[e.type] = [e]
            else:
                events.append(e)
        return found

    @cached_property
    def figures(self) -> Figures:
        """The trace's orchestration figures."""
        with paused_gc():
            return self._figures()

    def _figures(self) -> Figures:
        numbers = self.numbers()
        return Figures(trace_id=self.trace.trace_id, **numbers, aggregates=self.aggregates,
                       stops=self.stops, warnings=self.warnings)

    def numbers(self, critical_path: bool = True) -> dict[str, Any]:
        """The trace's figures that are numbers, by their `Figures` names: the one function
        both `figures` (the trace page, `orchviz inspect`) and `summary.summarise` (a row of
        the library and of the pool index) take them from. `critical_path=False` leaves out
        the critical path (`critical_path_s` and `critical_path` None), the dearest figure."""
        fanouts, types = self.fanouts, self.type_counts
        critical_s, chain = self.critical if critical_path else (None, None)
        return {
            "events": len(self.order), "agents": len(self.agents), "depth": self.depth,
            "max_fanout": max(fanouts, default=0),
            "mean_fanout": sum(fanouts) / len(fanouts) if fanouts else 0.0,
            "messages": types["message"], "tool_calls": types["tool_call"],
            "makespan_s": self.makespan, "parallelism": self.parallelism,
            "critical_path_s": critical_s, "critical_path": chain, "tokens": self.tokens,
            "cost_usd": self.cost_usd}


def _union_length(intervals) -> float:
    """Total length covered by a set of [start, end] intervals."""
    total, reach = 0.0, None
    for start, end in sorted(intervals):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


ONLY_TASK_ID = "(the trace records only the task's id)"
"""What `task_text` adds to a task id when the trace holds no words of the task."""


def task_text(trace: Trace) -> str:
    """The task in the trace's own words: the root orchestrator's first instruction (its first
    decision with words, or the first message or human intervention addressed to it from
    outside the team, such as a Who&When question, whichever comes first), on one line; else the task id, saying that is all the trace records. The one
    place that says what the task was (prompts' `Task:` line, the trace header)."""
    analysis = analyze(trace)
    root = analysis.root
    for e in analysis.order:
        words = " ".join(e.text.split())
        asked = e.to == root or (e.to is None and e.type == "human_intervention"
                                 and analysis.actor[e.id] == root)
        if e.type in ("message", "human_intervention") and asked and words \
                and (e.from_ or "") not in analysis.agent_names:
            return words
        if analysis.actor[e.id] == root and e.type == "orchestrator_decision":
            if words:
                return words
            break  # its first decision says nothing: what follows is no longer the task
    return f"{trace.task_id} {ONLY_TASK_ID}"


def task_words(trace: Trace) -> str | None:
    """The task's words when the trace holds them (`task_text`), else None: what a header shows
    in bold, its id beside it."""
    text = task_text(trace)
    return None if text.endswith(ONLY_TASK_ID) else text
