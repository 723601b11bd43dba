"""Synthetic orchestration traces in the reference schema, for tests, benchmarks and demos.

Every function here returns a plain ``dict`` that validates against ``trace_schema.json``, built
without the models that read it, so tests can feed it to the loader as any file would. All randomness comes from a seeded ``random.Random``, so a call with the same
arguments always returns the same trace.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Iterable

from viz_app.model import TOPOLOGIES

HOSTILE_MARKER = "__pwned"
"""The ``window`` property that any script smuggled in by :func:`hostile_trace` would set."""


PRICE_PER_MTOK_USD = {
    "gpt-4o": 5.0,
    "gpt-4o-mini": 0.3,
    "o3-mini": 2.2,
    "claude-3-5-sonnet-20241022": 6.0,
    "claude-3-5-haiku-20241022": 1.6,
    "claude-3-opus-20240229": 30.0,
    "llama-3.1-70b-instruct": 0.9,
    "qwen2.5-72b-instruct": 0.8,
}
"""Blended (input and output) list prices used to fill ``cost_usd`` on LLM events."""


def _approx_tokens(text: str | None) -> int:
    """Estimate a token count from text length (about four characters a token)."""
    return max(8, len(text or "") // 4)


class TraceBuilder:
    """Builds a reference-schema trace event by event and derives the edges orchviz expects.

    Methods return an integer handle for the event they add; pass handles to later calls (for
    example the returns an aggregate merges). :meth:`finalize` sorts events by time, numbers them
    ``e1..eN`` in that order and adds the edges that follow from the semantics: a ``spawn`` edge
    from each spawn to the child's first event, ``causal`` edges along each agent's own timeline
    (typed ``return`` into a return event), a ``message`` edge from each message to the
    recipient's next event, and a ``tool_dependency`` edge from each call to its result.
    """

    def __init__(self, trace_id: str, task_id: str, topology: str, system: str = "") -> None:
        """Start an empty trace with its identifying fields."""
        self.trace_id = trace_id
        self.task_id = task_id
        self.topology = topology
        self.system = system
        self.events: list[dict] = []
        self.owners: list[str] = []
        self.edges: list[tuple[int, int, str]] = []
        self.models: dict[str, str] = {}
        self._pending_spawn: dict[str, int] = {}

    def model(self, agent: str, model: str) -> None:
        """Record the model an agent runs, stamped on each of its LLM events."""
        self.models[agent] = model

    def add(
        self,
        type: str,
        agent: str,
        t: float,
        dur: float | None = None,
        *,
        owner: str | None = None,
        tokens: float | None = None,
        llm: bool = True,
        **fields: object,
    ) -> int:
        """Add one event; ``dur`` sets ``end_t``; ``frm`` stands for the ``from`` key."""
        event: dict = {"type": type, "agent": agent, "t": round(t, 3)}
        if dur is not None:
            event["end_t"] = round(t + dur, 3)
        for key, value in fields.items():
            if value is not None:
                event["from" if key == "frm" else key] = value
        if tokens is None:
            tokens = _approx_tokens(event.get("content")) + (300 if llm else 0)
        event["tokens"] = int(tokens)
        who = owner or agent
        model = self.models.get(who)
        if llm and model and "model" not in event:
            event["model"] = model
        if "model" in event and event["model"] in PRICE_PER_MTOK_USD:
            event["cost_usd"] = round(event["tokens"] * PRICE_PER_MTOK_USD[event["model"]] / 1e6, 6)
        index = len(self.events)
        self.events.append(event)
        self.owners.append(who)
        spawn = self._pending_spawn.pop(who, None)
        if spawn is not None:
            self.edges.append((spawn, index, "spawn"))
        return index

    def edge(self, src: int, dst: int, type: str) -> None:
        """Add an explicit edge between two event handles."""
        self.edges.append((src, dst, type))

    def decide(self, agent: str, t: float, dur: float, decision: str, content: str, **fields: object) -> int:
        """Add an ``orchestrator_decision`` with an explicit ``decision`` key."""
        return self.add("orchestrator_decision", agent, t, dur, decision=decision, content=content, **fields)

    def spawn(self, parent: str, child: str, role: str, t: float, content: str, *, model: str | None = None,
              after: int | None = None, **fields: object) -> int:
        """Add a spawn of ``child`` by ``parent``; its spawn edge goes to the child's first event."""
        if model:
            self.model(child, model)
        index = self.add("spawn", parent, t, 0.2, to=child, role=role, content=content, tokens=40, llm=False,
                         **fields)
        self._pending_spawn[child] = index
        if after is not None:
            self.edge(after, index, "causal")
        return index

    def delegate(self, parent: str, child: str, t: float, dur: float, content: str, **fields: object) -> int:
        """Add a delegation decision from ``parent`` to ``child``."""
        return self.decide(parent, t, dur, "delegate", content, to=child, **fields)

    def message(self, frm: str, to: str, t: float, dur: float, content: str, **fields: object) -> int:
        """Add a message from one agent to another."""
        return self.add("message", frm, t, dur, frm=frm, to=to, content=content, **fields)

    def tool(self, agent: str, tool: str, t: float, dur: float, query: str, result: str, *,
             result_agent: str | None = None, trusted: bool = False, call_tokens: int | None = None,
             result_tokens: int | None = None, **fields: object) -> tuple[int, int]:
        """Add a tool call and its result ``dur`` seconds later, linked by a ``tool_dependency`` edge."""
        call = self.add("tool_call", agent, t, dur, tool=tool, content=query,
                        tokens=call_tokens or _approx_tokens(query) + 60, **fields)
        res = self.add("tool_result", result_agent or tool, t + dur, 0.05, owner=agent, tool=tool,
                       content=result, trusted=trusted, llm=False, tokens=result_tokens)
        self.edge(call, res, "tool_dependency")
        return call, res

    def ret(self, agent: str, to: str, t: float, dur: float, content: str, **fields: object) -> int:
        """Add a return of results from ``agent`` to the agent that spawned or delegated it."""
        return self.add("return", agent, t, dur, frm=agent, to=to, content=content, **fields)

    def aggregate(self, agent: str, t: float, dur: float, content: str, merges: Iterable[int],
                  **fields: object) -> int:
        """Add an aggregate with an ``aggregate`` edge from every return it merges."""
        index = self.add("aggregate", agent, t, dur, content=content, **fields)
        for src in merges:
            self.edge(src, index, "aggregate")
        return index

    def finalize(self, rewards: dict[str, float], metrics: dict[str, float] | None = None,
                 costs: dict[str, float] | None = None) -> dict:
        """Sort, number and link the events and return the finished trace dict."""
        events, owners = self.events, self.owners
        order = sorted(range(len(events)), key=lambda i: (events[i]["t"], i))
        ids = [""] * len(events)
        for rank, i in enumerate(order, 1):
            ids[i] = f"e{rank}"
        linked = {(s, d) for s, d, _ in self.edges}
        edges = list(self.edges)
        timeline: dict[str, list[int]] = {}
        for i in order:
            timeline.setdefault(owners[i], []).append(i)
        for seq in timeline.values():
            for prev, nxt in zip(seq, seq[1:]):
                if (prev, nxt) not in linked:
                    edges.append((prev, nxt, "return" if events[nxt]["type"] == "return" else "causal"))
        starts = {who: [events[i]["t"] for i in seq] for who, seq in timeline.items()}
        for i in order:
            event = events[i]
            if event["type"] != "message" or event.get("to") not in timeline:
                continue
            seq = timeline[event["to"]]
            at = bisect.bisect_right(starts[event["to"]], event["t"])
            if at < len(seq):
                edges.append((i, seq[at], "message"))
        sorted_events = []
        for i in order:
            event = events[i]
            event["id"] = ids[i]
            sorted_events.append(event)
        totals = {
            "tokens": sum(e["tokens"] for e in events),
            "wall_clock_s": round(max(e.get("end_t", e["t"]) for e in events), 3),
            "tool_calls": sum(1 for e in events if e["type"] == "tool_call"),
            "messages": sum(1 for e in events if e["type"] == "message"),
            "cost_usd": round(sum(e.get("cost_usd", 0.0) for e in events), 4),
        }
        totals.update(costs or {})
        trace = {
            "trace_id": self.trace_id,
            "task_id": self.task_id,
            "system": self.system,
            "topology": self.topology,
            "events": sorted_events,
            "edges": [{"src": ids[s], "dst": ids[d], "type": k} for s, d, k in edges],
            "rewards": dict(rewards),
            "costs": totals,
        }
        if metrics is not None:
            trace["metrics"] = dict(metrics)
        return trace


_SUBJECTS = [
    "the 2023 EU battery regulation", "CVE-2024-3094 in xz-utils", "the Q3 revenue of the retail segment",
    "the median latency of the checkout service", "the half-life of caffeine in adults",
    "the migration from Python 3.8 to 3.11", "the flaky test in test_scheduler.py",
    "the licensing terms of the dataset", "the boiling point of ethanol at 0.5 atm",
    "the causes of the 2021 Texas grid failure", "the memory leak in the websocket handler",
    "the population of Lagos in 2020", "the patent filing date for the lithium anode",
    "the API rate limits of the billing provider", "the regression in the nightly benchmark",
]
_SOURCES = ["arxiv.org", "the vendor changelog", "Wikipedia", "the internal wiki", "the GitHub issue tracker",
            "a 2022 Reuters article", "the official docs", "the CI logs", "the SEC 10-Q filing", "PubMed"]
_TOOLS = ["web.search", "web.fetch", "python.exec", "shell.run", "repo.grep", "sql.query", "file.read",
          "calculator", "vector_store.search", "browser.click"]
_MODELS_BIG = ["gpt-4o", "claude-3-5-sonnet-20241022", "claude-3-opus-20240229"]
_MODELS_SMALL = ["gpt-4o-mini", "claude-3-5-haiku-20241022", "llama-3.1-70b-instruct", "qwen2.5-72b-instruct",
                 "o3-mini"]
_ROLES = {
    "centralized": ["researcher", "analyst", "fact_checker"],
    "planner_executor_critic": ["planner", "executor", "critic"],
    "debate": ["debater_pro", "debater_con", "judge"],
    "swarm": ["worker"],
    "hierarchical": ["researcher", "coder", "reviewer", "analyst"],
    "harness": ["coder", "test_runner", "explorer"],
    "mixed": ["researcher", "critic", "coder", "debater"],
    "unknown": ["agent"],
}
_LEADS = ["team_lead", "sub_orchestrator", "manager"]


def _content_pools(rng: random.Random) -> dict[str, list[str]]:
    """Pre-render a few hundred realistic texts per event kind, to pick from cheaply."""
    def subject() -> str:
        return rng.choice(_SUBJECTS)

    def source() -> str:
        return rng.choice(_SOURCES)

    n = 160
    pools = {
        "plan": [f"The task splits into independent parts. I will spawn sub-agents for {subject()} and "
                 f"{subject()}, give each a narrow brief, and merge their findings once all have returned. "
                 f"Budget: {rng.randint(4, 40)}k tokens." for _ in range(n)],
        "delegate": [f"Delegating {subject()} to this agent because it owns the {rng.choice(_TOOLS)} tool and "
                     f"the context from the previous step. Expect a cited answer within {rng.randint(2, 9)} "
                     f"tool calls." for _ in range(n)],
        "spawn": [f"Spawn a worker focused on {subject()}." for _ in range(n)],
        "query": [f"{subject()} site:{source().replace(' ', '')}" if k % 2 else
                  f"Look up {subject()} and report the exact figure with its date." for k in range(n)],
        "result": [f"Top result from {source()}: a {rng.randint(2015, 2024)} summary stating that {subject()} "
                   f"was revised after review. Snippet: \"...the revised figure is {rng.randint(3, 990)}."
                   f"{rng.randint(0, 9)} with a margin of {rng.randint(1, 9)}%...\" {rng.randint(2, 14)} more "
                   f"results omitted." for _ in range(n)],
        "message": [f"Heads up: my reading of {source()} conflicts with yours on {subject()}. I found "
                    f"{rng.randint(2, 99)} in the primary source; can you check whether you used the "
                    f"preliminary number?" if k % 3 else
                    f"Sharing an intermediate result: {subject()} looks settled, so you can skip it." for k in
                    range(n)],
        "return": [f"Finding: {subject()} is {rng.randint(2, 990)} per {source()} (checked against a second "
                   f"source). Confidence {rng.choice(['high', 'medium', 'low'])}. Open question: whether "
                   f"{subject()} affects this." for _ in range(n)],
        "aggregate": [f"Merged {rng.randint(2, 9)} sub-agent reports. They agree on {subject()}; one disagrees "
                      f"on {subject()}, where I keep the better-sourced value from {source()}. Draft answer "
                      f"assembled with citations." for _ in range(n)],
        "stop": ["All sub-agents have returned and the merged answer covers every part of the task; stopping "
                 "and returning the final answer." for _ in range(4)],
    }
    return pools


def _spawn_tree(agents: int, topology: str) -> list[int]:
    """Return the parent index of each agent (root first, parent -1) for a topology's tree shape."""
    if agents <= 1:
        return [-1][:agents]
    workers = agents - 1
    if topology in ("swarm", "centralized", "debate"):
        fanout = workers
    elif topology in ("planner_executor_critic", "harness"):
        fanout = max(2, round(workers ** 0.5))
    else:
        fanout = max(2, round(workers ** (1 / 3)) + 1)
    return [-1] + [(i - 1) // fanout for i in range(1, agents)]


def synth_trace(agents: int, events: int, topology: str = "hierarchical", seed: int = 0) -> dict:
    """Build a large realistic trace with exactly ``agents`` agents and about ``events`` events.

    The orchestrator plans, then every agent with children delegates to and spawns each child; children
    run concurrently, do tool calls and exchange messages, and return; each parent aggregates its
    children's returns, and the root ends with a ``stop`` decision. The tree is wide for swarm,
    centralized and debate, two levels for planner-executor-critic and harness, and several levels
    otherwise. Tool results carry the calling agent as ``agent``, so every distinct ``agent`` value
    is one of the ``agents`` agents. The event count is exact whenever ``events`` exceeds the structural minimum (about
    four events per agent); below that the minimum is produced.
    """
    if topology not in TOPOLOGIES:
        raise ValueError(f"unknown topology {topology!r}")
    agents = max(1, agents)
    rng = random.Random(seed)
    pools = _content_pools(rng)
    parents = _spawn_tree(agents, topology)
    children: list[list[int]] = [[] for _ in range(agents)]
    for i, p in enumerate(parents):
        if p >= 0:
            children[p].append(i)
    roles = _ROLES[topology]
    names = ["orchestrator"] + [
        f"{(rng.choice(_LEADS) if children[i] else roles[i % len(roles)])}_{i}" for i in range(1, agents)
    ]
    nonleaf = sum(1 for c in children if c)
    base = 2 + 3 * (agents - 1) + max(nonleaf, 1)
    budget = max(0, events - base)
    weights = [rng.uniform(0.5, 1.5) for _ in range(agents)]
    weights[0] = 0.2 if agents > 1 else 1.0
    total_w = sum(weights)
    quotas = [int(budget * w / total_w) for w in weights]
    for k in range(budget - sum(quotas)):
        quotas[k % agents] += 1

    b = TraceBuilder(f"synth-{topology}-{agents}a-{events}e-s{seed}", f"synth-task-{seed}", topology,
                     f"synthetic {topology} trace: {agents} agents, about {events} events")
    for i, name in enumerate(names):
        b.model(name, rng.choice(_MODELS_BIG) if i == 0 or children[i] else rng.choice(_MODELS_SMALL))
    tools_by_agent = [rng.sample(_TOOLS, 3) for _ in range(agents)]
    pick = rng.choice
    uniform = rng.uniform
    randint = rng.randint

    def work(i: int, t: float, quota: int) -> float:
        """Emit an agent's own tool calls and messages from time ``t``; return when it finishes."""
        name = names[i]
        neighbours = [parents[i]] + children[parents[i]] if parents[i] >= 0 else children[i]
        while quota > 0:
            if quota >= 2 and (quota % 5 or not neighbours):
                dur = uniform(0.3, 6.0)
                b.tool(name, pick(tools_by_agent[i]), t, dur, pick(pools["query"]), pick(pools["result"]),
                       result_agent=name, call_tokens=randint(40, 300),
                       result_tokens=randint(200, 4000))
                t += dur + uniform(0.05, 1.5)
                quota -= 2
            else:
                other = pick(neighbours) if neighbours else i
                dur = uniform(0.5, 4.0)
                b.message(name, names[other], t, dur, pick(pools["message"]), tokens=randint(150, 1500))
                t += dur + uniform(0.05, 0.8)
                quota -= 1
        return t

    def run(i: int, t: float) -> tuple[float, int | None]:
        """Run agent ``i`` from ``t``: its work, its subtree and its return; give end time and return id."""
        name = names[i]
        if i == 0:
            dur = uniform(1.0, 4.0)
            b.decide(name, t, dur, "spawn" if children[i] else "continue", pick(pools["plan"]),
                     role="orchestrator", tokens=randint(300, 2000))
            t += dur
        t = work(i, t, quotas[i])
        merged = []
        if children[i]:
            latest = t
            for c in children[i]:
                dur = uniform(0.2, 1.2)
                decision = b.delegate(name, names[c], t, dur, pick(pools["delegate"]), tokens=randint(150, 800))
                t += dur
                b.spawn(name, names[c], names[c].rsplit("_", 1)[0], t, pick(pools["spawn"]), after=decision)
                t += uniform(0.01, 0.15)
                end, ret = run(c, t + uniform(0.1, 1.0))
                latest = max(latest, end)
                merged.append(ret)
            t = latest + uniform(0.1, 1.0)
        if children[i] or i == 0:
            dur = uniform(2.0, 9.0)
            b.aggregate(name, t, dur, pick(pools["aggregate"]), merged, tokens=randint(1000, 6000))
            t += dur + uniform(0.05, 0.5)
        if i == 0:
            b.decide(name, t, uniform(0.5, 2.0), "stop", pick(pools["stop"]), role="orchestrator",
                     tokens=randint(100, 400))
            return t, None
        dur = uniform(0.5, 3.0)
        ret = b.ret(name, names[parents[i]], t, dur, pick(pools["return"]), tokens=randint(300, 2000))
        return t + dur, ret

    run(0, 0.0)
    success = rng.random() < 0.7
    return b.finalize(
        rewards={"team": 1.0 if success else 0.0, "orchestration": round(rng.uniform(-0.5, 1.0), 3),
                 "tool": round(rng.uniform(0.0, 1.0), 3)},
        metrics={"task_success": 1.0 if success else 0.0,
                 "parallelism_efficiency": round(rng.uniform(0.2, 0.9), 3),
                 "protocol_overhead": round(rng.uniform(0.05, 0.4), 3),
                 "error_amplification": round(rng.uniform(0.0, 0.3), 3)},
    )


def tree_trace(depth: int, fanout: int) -> dict:
    """Build a complete spawn tree of ``depth`` levels below the root, ``fanout`` children per node.

    Each leaf does one tool call and returns to its parent; each non-leaf aggregates its children's
    returns and returns in turn; the root aggregates and stops. By construction the trace has
    ``sum(fanout**i for i in range(depth + 1))`` agents, spawn depth ``depth`` and max fan-out
    ``fanout``.
    """
    b = TraceBuilder(f"tree-d{depth}-f{fanout}", f"tree-task-d{depth}-f{fanout}", "hierarchical",
                     f"complete spawn tree, depth {depth}, fan-out {fanout}")
    b.model("orchestrator", "gpt-4o")

    def run(name: str, level: int, t: float, parent: str | None) -> tuple[float, int | None]:
        """Run the subtree rooted at ``name`` from ``t``; return its end time and return handle."""
        if parent is None:
            b.decide(name, t, 1.0, "spawn" if depth > 0 and fanout > 0 else "continue",
                     f"Split the task into {fanout} parts per level, {depth} levels deep.", role="orchestrator")
            t += 1.0
        merged, latest = [], t
        if level < depth:
            for k in range(fanout):
                child = f"{name}.{k}" if parent is not None else f"a{k}"
                b.spawn(name, child, "lead" if level + 1 < depth else "worker", t,
                        f"Spawn {child} for part {k} of {name}'s task.", model="gpt-4o-mini")
                t += 0.1
                end, ret = run(child, level + 1, t + 0.1, name)
                merged.append(ret)
                latest = max(latest, end)
            t = latest + 0.5
            b.aggregate(name, t, 2.0, f"{name} merges the {fanout} results of its children.", merged)
            t += 2.0
        else:
            b.tool(name, "web.search", t, 2.0, f"Query for {name}'s part of the task.",
                   f"Result for {name}: the figure is {len(name) * 7}.", result_agent=name)
            t += 2.5
            if parent is None:
                b.aggregate(name, t, 1.0, "The root worked alone and has its answer.", [])
                t += 1.0
        if parent is None:
            b.decide(name, t, 0.5, "stop", "Every subtree has returned; stop.", role="orchestrator")
            return t + 0.5, None
        ret = b.ret(name, parent, t, 0.5, f"{name} returns its result to {parent}.")
        return t + 0.5, ret

    run("orchestrator", 0, 0.0, None)
    return b.finalize(rewards={"team": 1.0}, metrics={"task_success": 1.0})


def chain_trace(depth: int) -> dict:
    """Build a chain of ``depth`` spawns: each agent spawns the next, the last does one tool call,
    then each returns to its parent in turn, deepest first, and the root stops.

    The deepest spawn tree a trace of its size can have (``depth + 1`` agents, spawn depth
    ``depth``), built without recursion so that any depth can be made.
    """
    b = TraceBuilder(f"chain-d{depth}", f"chain-task-d{depth}", "hierarchical",
                     f"a chain of {depth} spawns")
    names = ["orchestrator"] + [f"a{k}" for k in range(1, depth + 1)]
    b.decide(names[0], 0.0, 0.5, "spawn" if depth else "continue", "Hand the task down the chain.",
             role="orchestrator")
    t = 0.5
    for k in range(depth):
        b.spawn(names[k], names[k + 1], "worker", t, f"Spawn {names[k + 1]}.")
        t += 0.25
    b.tool(names[-1], "web.search", t, 1.0, "The query at the end of the chain.",
           "The answer at the end of the chain.", result_agent=names[-1])
    t += 1.5
    for k in range(depth, 0, -1):
        b.ret(names[k], names[k - 1], t, 0.1, f"{names[k]} returns to {names[k - 1]}.")
        t += 0.25
    b.decide(names[0], t, 0.2, "stop", "The chain has returned; stop.", role="orchestrator")
    return b.finalize(rewards={"team": 1.0}, metrics={"task_success": 1.0})


def lean_trace(events: int, agents: int = 1000) -> dict:
    """Build a trace of ``events`` events that carry only the keys the schema requires (about 60
    bytes each, a million make 60 MB): an orchestrator spawns ``agents`` agents, which then take
    turns, each turn a message, a tool call and its result. The most memory per byte of file a
    trace can take, for benchmarks of loading.
    """
    names = [f"a{k}" for k in range(agents)]
    out = [{"id": "e0", "t": 0, "type": "orchestrator_decision", "agent": "orchestrator"}]
    out += [{"id": f"s{k}", "t": 0.5, "type": "spawn", "agent": "orchestrator", "to": name}
            for k, name in enumerate(names)]
    kinds = ("message", "tool_call", "tool_result")
    out += [{"id": f"e{i}", "t": round(1 + i * 0.001, 3), "type": kinds[i % 3],
             "agent": names[(i // 3) % agents]} for i in range(1, max(1, events - len(out) + 1))]
    return {"trace_id": f"lean-{events}e", "task_id": "lean", "events": out, "edges": [],
            "rewards": {}, "costs": {"tokens": 0, "wall_clock_s": round(1 + len(out) * 0.001, 3)}}


def swarm_trace(width: int) -> dict:
    """Build one orchestrator spawning ``width`` workers at nearly the same time, then merging them.

    Each worker works about ten seconds concurrently (a tool call with ``end_t``), then returns; one
    aggregate has an ``aggregate`` edge from every return, followed by a ``stop`` decision.
    """
    b = TraceBuilder(f"swarm-w{width}", f"swarm-task-w{width}", "swarm",
                     f"parallel swarm of {width} workers, one aggregate")
    b.model("orchestrator", "gpt-4o")
    b.decide("orchestrator", 0.0, 1.0, "spawn", f"Fan the {width} shards out to one worker each.",
             role="orchestrator")
    workers = [f"worker_{k}" for k in range(width)]
    for k, w in enumerate(workers):
        b.spawn("orchestrator", w, "worker", 1.0 + 0.01 * k, f"Spawn {w} for shard {k}.", model="gpt-4o-mini")
    returns = []
    for k, w in enumerate(workers):
        start = 1.2 + 0.01 * k
        dur = 9.5 + (k * 7 % 10) / 10
        b.tool(w, "python.exec", start, dur, f"process_shard({k})", f"shard {k}: 1000 rows processed, 0 errors",
               result_agent=w)
        returns.append(b.ret(w, "orchestrator", start + dur + 0.1, 0.4, f"Shard {k} done: 1000 rows, 0 errors."))
    t = max(b.events[r]["end_t"] for r in returns) + 0.2 if returns else 2.0
    b.aggregate("orchestrator", t, 3.0, f"Merged {width} shard reports: all succeeded.", returns)
    b.decide("orchestrator", t + 3.1, 0.5, "stop", "All shards are merged; stop.", role="orchestrator")
    return b.finalize(rewards={"team": 1.0}, metrics={"task_success": 1.0, "parallelism_efficiency": 0.9})


_PAYLOADS = [
    "<script>window.__pwned=1</script>",
    '<img src=x onerror="window.__pwned=1">',
    '"><svg onload=window.__pwned=1>',
    "javascript:window.__pwned=1",
    "[click me](javascript:window.__pwned=1) ![x](x\" onerror=\"window.__pwned=1)",
    "</script><script>window.__pwned=1</script>",
    "<iframe srcdoc=\"<script>parent.window.__pwned=1</script>\"></iframe>",
    "{{7*7}} ${7*7} {% raw %}<%= 7*7 %>",
    "'; window.__pwned=1; //",
    "<style>body{display:none}</style><b>bold</b> **bold** `code` | table | cell |",
    "\u202egnp.exe\u202c \u200b\u200c\u200d\u2066isolate\u2069 \u05e9\u05dc\u05d5\u05dd \ufeff",
    "<a href=\"javascript:window.__pwned=1\">link</a><details open ontoggle=window.__pwned=1>",
]


def _hostile(k: int, prefix: str = "") -> str:
    """Return a text mixing a plain prefix with the ``k``-th payload (cycling through all of them).

    Payloads that cannot run a script on their own (template syntax, RTL tricks) get a script-bearing
    one appended, so every hostile text carries :data:`HOSTILE_MARKER`.
    """
    payload = _PAYLOADS[k % len(_PAYLOADS)]
    if HOSTILE_MARKER not in payload:
        payload += " " + _PAYLOADS[(k + 1) % 2]
    return f"{prefix}{payload}"


def hostile_trace() -> dict:
    """Build a valid trace whose every text field carries an XSS or rendering payload.

    Agent names, roles, tools, content, content_ref, models, extra keys and reward and metric names
    all hold script and markup injections, template expressions, very long strings and RTL or
    zero-width characters. The trace is still structurally complete (spawn, message, tool call and
    result, return, aggregate, stop) so that every view renders it. ``trace_id`` stays URL-safe.
    A script that ran would set ``window.__pwned`` (see :data:`HOSTILE_MARKER`).
    """
    root = 'orch<script>window.__pwned=1</script>'
    child = 'worker"><svg onload=window.__pwned=1>'
    critic = "critic<img src=x onerror=\"window.__pwned=1\">\u202e"
    tool = "javascript:window.__pwned=1"
    long_text = ("A" * 5000) + _PAYLOADS[0] + ("\u200b" * 500) + ("B" * 5000)
    b = TraceBuilder("hostile-xss", "task" + _PAYLOADS[1] + _PAYLOADS[7], "mixed", "system" + _PAYLOADS[2])
    b.model(root, "gpt-4o" + _PAYLOADS[0])
    b.model(child, "model" + _PAYLOADS[1])
    b.model(critic, "model" + _PAYLOADS[6])
    extra = {"note<script>window.__pwned=1</script>": _PAYLOADS[5], "x-html": _PAYLOADS[11]}
    d = b.decide(root, 0.0, 1.0, "spawn", _hostile(0, "Plan: "), role="lead" + _PAYLOADS[2],
                 content_ref=_PAYLOADS[3], **extra)
    b.spawn(root, child, "role" + _PAYLOADS[1], 1.0, _hostile(1, "spawn "), content_ref=_PAYLOADS[4], after=d)
    b.spawn(root, critic, "role" + _PAYLOADS[9], 1.1, _hostile(2, "spawn "), content_ref=_PAYLOADS[10])
    b.delegate(root, child, 1.2, 0.5, _hostile(3, "delegate "), content_ref=_PAYLOADS[6])
    b.message(child, critic, 2.0, 1.0, long_text, content_ref=_PAYLOADS[0], role=_PAYLOADS[10], **extra)
    b.message(critic, child, 3.2, 1.0, "\n".join(_PAYLOADS), content_ref=_PAYLOADS[8], trusted=False)
    b.tool(child, tool, 4.5, 2.0, _hostile(7, "query "), "\n\n".join(_PAYLOADS) + long_text, result_agent=tool,
           content_ref=_PAYLOADS[5])
    r1 = b.ret(child, root, 7.0, 1.0, _hostile(4, "# Heading\n\n> quote\n\n"), content_ref=_PAYLOADS[11],
               **{_PAYLOADS[1]: _PAYLOADS[0]})
    r2 = b.ret(critic, root, 7.5, 1.0, _hostile(9, "| a | b |\n|---|---|\n| "), content_ref=_PAYLOADS[2])
    b.aggregate(root, 9.0, 2.0, _hostile(6, "Final: "), [r1, r2], content_ref=_PAYLOADS[7])
    b.add("safety_event", root, 11.2, 0.1, content=_hostile(8, "flag "), role=_PAYLOADS[3], trusted=False)
    b.add("human_intervention", "human" + _PAYLOADS[0], 11.5, 0.5, content=_hostile(10), llm=False)
    b.decide(root, 12.2, 0.5, "stop", _hostile(11, "stop "), content_ref=_PAYLOADS[9])
    rewards = {f"team{p}": 0.5 for p in _PAYLOADS[:4]}
    rewards["team"] = 1.0
    metrics = {f"metric{p}": 1.0 for p in _PAYLOADS[4:8]}
    metrics["task_success"] = 0.0
    trace = b.finalize(rewards, metrics, costs={_PAYLOADS[0]: 1.0})
    return trace
