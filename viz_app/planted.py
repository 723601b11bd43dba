"""Traces with planted orchestration faults and faithful controls, each with its ground truth:
the fault detectors' test and benchmark set, built apart from the demos they were written on.

Four fault kinds, each in several shapes, and controls that look like them but are sound:

- `premature_stop`: the stop comes with results in flight at depth 1, 2 or 3 (a return after
  the stop; an agent still working; a helper's helper still working or returning to a lead
  that never answers; a lead that sent an interim result while its helper still worked).
- `late_stop`: the final answer was already stated, in an aggregate, a return or a message,
  and the run went on with new spawns, or only with more rounds of messages, returns and
  aggregates with agents that already existed.
- `dropped_result`: an aggregate leaves out one sender's result while keeping the others, the
  results written plainly (sharing the trace's common words), paraphrased, long, or split over
  several returns, or naming the dropped result's subject without what it found ("named").
- `over_spawning`: a sub-task given twice (word for word, paraphrased, in a burst, or under a
  numbered name with the same tool calls); the checkers a late stop's `new-spawns` shape
  spawns with the answer already in hand are over-spawning too.

Each in four topologies (centralized, hierarchical, debate, swarm) and three sizes, on facts
from six domains. `cases(split)` builds a split: "tuning" (seeds from 0, domains 0-3: the rules'
thresholds were chosen on it) or "held-out" (seeds from 200,000, all six domains, two of them
never seen in tuning: nothing was fitted on it). `bench/bench_detectors.py` uses 2 seeds per
cell (tuning seeds 0-695, held-out 200,000-200,695). Everything comes from a seeded
`random.Random`: the same arguments give the same traces. Every trace validates against the
reference schema (built with `viz_app.synth.TraceBuilder`).

A `Case` carries its trace (a plain dict, as a file holds it) and its `Fault`s: the target
event, the rubric question and the answer a reviewer would give. Every other target of the
trace is sound for the four kinds' questions.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from viz_app.synth import TraceBuilder

KINDS = ("premature_stop", "late_stop", "dropped_result", "over_spawning")
"""The fault kinds planted."""

SHAPES: dict[str, tuple[str, ...]] = {
    "premature_stop": ("late-return", "still-working", "helper-in-flight", "interim-return",
                       "depth-3"),
    "late_stop": ("new-spawns", "stated-in-return", "stated-in-message", "re-aggregate"),
    "dropped_result": ("plain", "paraphrased", "long", "split", "named"),
    "over_spawning": ("verbatim", "paraphrased", "burst", "numbered"),
}
"""Each kind's fault shapes."""

CONTROLS: dict[str, tuple[str, ...]] = {
    "premature_stop": ("all-in", "helper-returned"),
    "late_stop": ("single-round", "revision", "progressive"),
    "dropped_result": ("plain", "paraphrased", "long", "split"),
    "over_spawning": ("sharded", "aspects"),
}
"""Each kind's faithful controls: the same traces with nothing wrong."""

TOPOLOGY_NAMES = ("centralized", "hierarchical", "debate", "swarm")
SIZES = {"small": (2, 3), "medium": (4, 6), "large": (8, 12)}
"""Facts (workers) per trace, by size."""

SPLITS = {"tuning": (0, 4), "held-out": (200_000, 6)}
"""Per split: the first seed, how many domains it draws from (held-out adds two unseen)."""

QUESTION = {"premature_stop": ("stopping_correctness", "premature"),
            "late_stop": ("stopping_correctness", "late"),
            "dropped_result": ("aggregation_quality", 2),
            "over_spawning": ("spawn_necessity", "redundant")}
"""The rubric question each kind is judged on, and a faulty target's answer."""


@dataclass(frozen=True)
class Fault:
    """One faulty target of a case."""

    event_id: str
    kind: str
    question: str
    value: Any


@dataclass
class Case:
    """One generated trace and its ground truth."""

    name: str
    kind: str
    shape: str
    control: bool
    topology: str
    size: str
    seed: int
    split: str
    trace: dict
    faults: list[Fault] = field(default_factory=list)


# -- facts ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Attribute:
    name: str
    synonym: str
    unit: str
    low: float
    high: float
    decimals: int = 0


@dataclass(frozen=True)
class Domain:
    name: str
    topic: str
    entities: tuple[str, ...]
    attributes: tuple[Attribute, ...]


DOMAINS = (
    Domain("batteries", "battery cell chemistries",
           ("LFP", "NMC", "NCA", "LMO", "LTO", "sodium-ion", "LCO", "LMFP", "solid-state",
            "zinc-air", "nickel-iron", "vanadium-flow"),
           (Attribute("price per kWh", "cost for each kilowatt-hour", "dollars", 60, 180),
            Attribute("cycle life", "number of full charge cycles it survives", "cycles",
                      800, 7000),
            Attribute("energy density", "stored energy for each kilogram", "Wh/kg", 90, 290))),
    Domain("cities", "fast-growing cities",
           ("Lagos", "Jakarta", "Lima", "Dhaka", "Nairobi", "Manila", "Bogota", "Karachi",
            "Kinshasa", "Luanda", "Hanoi", "Accra"),
           (Attribute("population", "headcount of residents", "million people", 3, 25, 1),
            Attribute("annual rainfall", "yearly precipitation", "millimetres", 300, 2600),
            Attribute("median rent", "typical monthly rent", "dollars a month", 120, 950))),
    Domain("databases", "database engines under the checkout workload",
           ("PostgreSQL", "MySQL", "SQLite", "Redis", "Cassandra", "MongoDB", "CockroachDB",
            "ClickHouse", "DuckDB", "MariaDB", "ScyllaDB", "Neo4j"),
           (Attribute("write throughput", "rate of committed writes", "thousand rows per second",
                      5, 400),
            Attribute("p99 latency", "tail response time", "milliseconds", 2, 90, 1),
            Attribute("memory footprint", "resident memory use", "megabytes", 20, 900))),
    Domain("drugs", "common drugs in adults",
           ("caffeine", "ibuprofen", "melatonin", "metformin", "warfarin", "amoxicillin",
            "sertraline", "omeprazole", "atorvastatin", "lisinopril", "naproxen", "diazepam"),
           (Attribute("half-life", "elimination time by half", "hours", 1, 40, 1),
            Attribute("peak plasma time", "delay to the highest blood level", "minutes",
                      20, 240),
            Attribute("oral bioavailability", "share absorbed when swallowed", "percent",
                      10, 99))),
    Domain("rivers", "major rivers",
           ("Danube", "Mekong", "Niger", "Volga", "Parana", "Yukon", "Zambezi", "Orinoco",
            "Irrawaddy", "Mackenzie", "Ob", "Murray"),
           (Attribute("length", "distance from source to mouth", "kilometres", 1500, 7000),
            Attribute("mean discharge", "average flow at the mouth",
                      "cubic metres per second", 800, 30000),
            Attribute("basin area", "drained land surface", "thousand square kilometres",
                      200, 3000))),
    Domain("chips", "mobile processors",
           ("Tensor", "Exynos", "Dimensity", "Kirin", "Helio", "Bionic", "Unisoc", "Spreadtrum",
            "Rockchip", "Allwinner", "Amlogic", "Sitara"),
           (Attribute("single-core score", "one-thread benchmark result", "points", 800, 3200),
            Attribute("power draw", "electrical consumption under load", "watts", 2, 14, 1),
            Attribute("transistor count", "number of transistors on the die",
                      "billion transistors", 4, 25, 1))),
)
"""Facts are drawn from these; the held-out split adds the last two."""

SOURCES = ("BNEF", "the vendor datasheet", "Reuters", "the official changelog", "Wikipedia",
           "an IEA report", "the national statistics office", "PubMed", "a 2024 survey",
           "the project's benchmark page", "an Ember dataset", "the manufacturer's whitepaper")

FILLER = ("I searched three sources and kept the most recent figure.",
          "Older figures from before the last revision were discarded.",
          "The two secondary sources agree within a few percent.",
          "Methodology notes were checked for the measurement conditions.",
          "One mirror of the page was stale, so the original was used.",
          "No conflicting numbers turned up in the archive.",
          "The figure was cross-checked against the previous edition.",
          "A preprint reported a similar number under lab conditions.")


@dataclass(frozen=True)
class Fact:
    entity: str
    attribute: Attribute
    value: str
    source: str

    def plain(self) -> str:
        return (f"{self.entity} {self.attribute.name} is {self.value} {self.attribute.unit}, "
                f"according to {self.source}.")

    def paraphrase(self) -> str:
        return (f"Per {self.source}, the {self.attribute.synonym} of {self.entity} comes to "
                f"roughly {self.value} {self.attribute.unit}.")

    def long(self, rng: random.Random) -> str:
        filler = rng.sample(FILLER, 3)
        return (f"{filler[0]} {self.plain()} {filler[1]} {filler[2]}")

    def task(self) -> str:
        return f"Find the {self.attribute.name} of {self.entity} and cite the source."

    def task_paraphrase(self) -> str:
        return f"Look up {self.entity}: what is its {self.attribute.synonym}? Give a reference."


def _value(rng: random.Random, a: Attribute) -> str:
    x = rng.uniform(a.low, a.high)
    return f"{x:.{a.decimals}f}" if a.decimals else str(int(round(x)))


def _facts(rng: random.Random, domain: Domain, n: int, same_entity: bool = False,
           avoid: str = "") -> list[Fact]:
    """n facts on distinct entities (or, `same_entity`, the attributes of one entity first,
    then other entities)."""
    if same_entity:
        entity = rng.choice(domain.entities)
        attrs = list(domain.attributes)
        rng.shuffle(attrs)
        facts = [Fact(entity, a, _value(rng, a), rng.choice(SOURCES)) for a in attrs][:n]
        return facts + _facts(rng, domain, n - len(facts), avoid=entity) if len(facts) < n \
            else facts
    attribute = rng.choice(domain.attributes)
    entities = rng.sample([e for e in domain.entities if e != avoid], n)
    return [Fact(e, attribute, _value(rng, attribute), rng.choice(SOURCES)) for e in entities]


def _answer(facts: list[Fact], paraphrased: bool = False) -> str:
    said = " ".join(f.paraphrase() if paraphrased else f.plain() for f in facts)
    return f"Answer: {said}"


# -- the run: a builder with a clock ------------------------------------------------------------


class _Run:
    """A TraceBuilder, a clock, the topology's roles and the ground truth being written."""

    ROOT = {"centralized": "orchestrator", "hierarchical": "orchestrator", "debate": "judge",
            "swarm": "coordinator"}
    ROLE = {"centralized": "researcher", "hierarchical": "researcher", "debate": "debater",
            "swarm": "worker"}

    def __init__(self, name: str, topology: str, rng: random.Random, domain: Domain):
        self.b = TraceBuilder(name, f"planted-{domain.name}", topology,
                              system=f"planted faults: {name}")
        self.rng, self.topology, self.domain = rng, topology, domain
        self.root = self.ROOT[topology]
        self.role = self.ROLE[topology]
        self.t = 0.0
        self.faults: list[tuple[int, str]] = []
        self.b.model(self.root, "gpt-4o")
        self.names = 0

    def tick(self, dt: float = 1.0) -> float:
        self.t = round(self.t + dt * (0.6 + 0.8 * self.rng.random()), 3)
        return self.t

    def name(self, stem: str) -> str:
        self.names += 1
        return f"{stem}_{self.names}"

    def fault(self, handle: int, kind: str) -> None:
        self.faults.append((handle, kind))

    def plan(self, facts: list[Fact]) -> None:
        entities = ", ".join(dict.fromkeys(f.entity for f in facts))
        attrs = " and ".join(dict.fromkeys(f.attribute.name for f in facts))
        self.b.decide(self.root, self.tick(0.2), 0.5, "spawn",
                      f"Task: report the {attrs} of {entities} ({self.domain.topic}). "
                      f"Split it into sub-tasks and merge the findings.")

    def spawn(self, parent: str, role: str, task: str, *, message: bool = True,
              spawn_text: str | None = None, name: str | None = None) -> tuple[str, int]:
        """Spawn a child; give it its task by message (or only in the spawn's text)."""
        child = name or self.name(role)
        self.b.model(child, self.rng.choice(["gpt-4o-mini", "claude-3-5-haiku-20241022"]))
        text = spawn_text.format(child=child) if spawn_text else (
            f"Spawn {child}." if message else f"Spawn {child}: {task}")
        handle = self.b.spawn(parent, child, role, self.tick(0.2), text)
        if message:
            self.b.message(parent, child, self.tick(0.1), 0.1, task)
        return child, handle

    def work(self, agent: str, query: str, result: str, calls: int = 1) -> None:
        for k in range(calls):
            self.b.tool(agent, self.rng.choice(["web.search", "web.fetch", "sql.query"]),
                        self.tick(0.3), 0.5, query if k == 0 else f"{query} (check {k})",
                        result)

    def ret(self, agent: str, to: str, text: str) -> int:
        return self.b.ret(agent, to, self.tick(0.4), 0.2, text)

    def aggregate(self, agent: str, text: str, merges: list[int]) -> int:
        return self.b.aggregate(agent, self.tick(0.5), 0.5, text, merges)

    def stop(self, text: str = "All results are in; stop.") -> int:
        return self.b.decide(self.root, self.tick(0.3), 0.2, "stop", text)

    def finish(self, case: Case) -> Case:
        trace = self.b.finalize({"task_success": 1.0})
        for handle, kind in self.faults:
            question, value = QUESTION[kind]
            case.faults.append(Fault(self.b.events[handle]["id"], kind, question, value))
        case.trace = trace
        return case


def _worker(run: _Run, parent: str, fact: Fact, result: str | None = None,
            task: str | None = None, message: bool = True) -> tuple[str, int]:
    """A child that takes one fact's sub-task, works and is ready to return (not yet)."""
    child, spawn = run.spawn(parent, run.role if parent == run.root else "researcher",
                             task or fact.task(), message=message)
    run.work(child, f"{fact.entity} {fact.attribute.name}", result or fact.plain())
    return child, spawn


def _team(run: _Run, facts: list[Fact], text=lambda f, rng: f.plain(),
          parent: str | None = None) -> list[tuple[str, int, Fact]]:
    """Spawn one worker per fact under `parent` (the root) as the topology does it, let them
    work (a swarm hands off by message, a debate argues by message); no returns yet.
    -> (child, spawn handle, fact)."""
    parent = parent or run.root
    team = []
    for fact in facts:
        child, spawn = _worker(run, parent, fact)
        team.append((child, spawn, fact))
    if run.topology == "swarm" and len(team) > 1:
        for (a, _, fa), (b, _, fb) in zip(team, team[1:]):
            run.b.message(a, b, run.tick(0.1), 0.1,
                          f"Handoff from {a}: my shard was {fa.entity}; yours is "
                          f"{fb.entity}, no overlap.")
            run.work(b, f"{fb.entity} {fb.attribute.name} second source", fb.plain())
    if run.topology == "debate" and len(team) > 1:
        for (a, _, fa), (b, _, fb) in zip(team, team[1:] + team[:1]):
            run.b.message(a, b, run.tick(0.1), 0.1,
                          f"Opening position of {a}: {fa.entity} leads on "
                          f"{fa.attribute.name}; challenge it if you can.")
        for child, _, fact in team:
            run.work(child, f"rebuttal evidence {fact.entity}", fact.plain())
    return team


def _returns(run: _Run, team, text=lambda f, rng: f.plain(), to: str | None = None,
             skip: set[str] = frozenset()) -> list[int]:
    to = to or run.root
    return [run.ret(c, to, text(f, run.rng)) for c, _, f in team if c not in skip]


def _hierarchy(run: _Run, facts: list[Fact]) -> list[tuple[str, int, list]]:
    """Leads under the root, each with workers: -> (lead, spawn, [(worker, spawn, fact)])."""
    leads = []
    groups = max(2, min(3, len(facts) // 2))
    parts = [facts[k::groups] for k in range(groups)]
    for part in parts:
        if not part:
            continue
        names = ", ".join(f.entity for f in part)
        lead, spawn = run.spawn(run.root, "lead",
                                f"Lead the sub-team on {names}: spawn researchers, merge "
                                f"what they find and report back.")
        team = [(_worker(run, lead, f) + (f,)) for f in part]
        leads.append((lead, spawn, team))
    return leads


# -- the kinds ------------------------------------------------------------------------------


def _send(run: _Run, child: str, to: str, fact: Fact, shape: str) -> list[int]:
    """A worker's result as the shape writes it: plain, long, or split over three returns."""
    if shape == "long":
        return [run.ret(child, to, fact.long(run.rng))]
    if shape == "split":
        parts = [fact.plain(), f"Source for {fact.entity}: {fact.source}, checked twice.",
                 f"{fact.entity} caveat: none; the {fact.attribute.name} figure is final."]
        return [run.ret(child, to, f"Part {k + 1} of 3: {p}") for k, p in enumerate(parts)]
    return [run.ret(child, to, fact.plain())]


def _dropped(run: _Run, shape: str, control: bool, facts: list[Fact]) -> None:
    """One merge leaves out one sender's result (at a lead, in a hierarchy, when a lead has
    two workers or more); the output paraphrases what it keeps for paraphrased and long
    results."""
    rng = run.rng
    out = (lambda fs: _answer(fs, paraphrased=True)) if shape in ("paraphrased", "long") \
        else _answer
    run.plan(facts)
    if run.topology == "hierarchical":
        leads = _hierarchy(run, facts)
        wide = [k for k, (_, _, team) in enumerate(leads) if len(team) > 1]
        target = rng.choice(wide) if wide else None
        lead_returns, kept_all = [], []
        for k, (lead, _, team) in enumerate(leads):
            got = [h for c, _, f in team for h in _send(run, c, lead, f, shape)]
            kept = [f for _, _, f in team]
            text = out(kept)
            if not control and k == target:
                gone = kept.pop(rng.randrange(len(kept)))
                text = out(kept) + (f" {gone.entity} was looked at as well." if shape == "named"
                                    else "")
            merged = run.aggregate(lead, text, got)
            if not control and k == target:
                run.fault(merged, "dropped_result")
            kept_all.append(kept)
            lead_returns.append(run.ret(lead, run.root, out(kept)[len("Answer: "):]))
        if not control and target is None:  # one worker a lead: the root drops a lead
            drop = rng.randrange(len(leads))
            kept = [f for k, fs in enumerate(kept_all) if k != drop for f in fs]
            run.fault(run.aggregate(run.root, out(kept), lead_returns), "dropped_result")
        else:
            run.aggregate(run.root, out([f for fs in kept_all for f in fs]), lead_returns)
        run.stop()
        return
    team = _team(run, facts)
    got = [h for c, _, f in team for h in _send(run, c, run.root, f, shape)]
    lost = rng.randrange(len(facts))
    kept = facts if control else [f for j, f in enumerate(facts) if j != lost]
    text = out(kept)
    if shape == "named" and not control:
        text += f" {facts[lost].entity} was looked at as well."
    merged = run.aggregate(run.root, text, got)
    if not control:
        run.fault(merged, "dropped_result")
    run.stop()


def _premature(run: _Run, shape: str, control: bool, facts: list[Fact]) -> None:
    """The root stops with work in flight: flat (a late return, a worker still working) or
    below a lead (a worker still working and returning to a lead that never answers; a lead
    that sent an interim result; a worker's helper, depth 3)."""
    rng = run.rng
    run.plan(facts)
    deep = shape in ("helper-in-flight", "interim-return", "depth-3", "helper-returned")
    if not deep and run.topology != "hierarchical":
        team = _team(run, facts)
        late = rng.randrange(len(team))
        got = _returns(run, team, skip=set() if control else {team[late][0]})
        known = facts if control else [f for j, f in enumerate(facts) if j != late]
        run.aggregate(run.root, _answer(known), got)
        stop = run.stop("Enough to answer; stop.")
        if control:
            return
        run.fault(stop, "premature_stop")
        child, _, fact = team[late]
        run.work(child, f"{fact.entity} {fact.attribute.name} confirm", fact.plain(), calls=2)
        if shape == "late-return":
            run.ret(child, run.root, fact.plain() + " This changes the comparison.")
        return
    leads = _hierarchy(run, facts)
    late = rng.randrange(len(leads))
    before, known = [], []
    helper = ""
    for k, (lead, _, team) in enumerate(leads):
        if k == late and not control:
            if shape == "interim-return" and len(team) > 1:
                _returns(run, team[:1], to=lead)
                before.append(run.ret(lead, run.root, "Interim: " + team[0][2].plain() +
                                      " More results still to come."))
                known.append(team[0][2])
            elif shape == "depth-3":
                helper, _ = run.spawn(team[-1][0], "helper",
                                      f"Verify in a second source: {team[-1][2].task()}")
                run.work(helper, "second source", team[-1][2].plain())
            continue
        if k == late and shape == "helper-returned":
            helper, _ = run.spawn(team[-1][0], "helper",
                                  f"Verify in a second source: {team[-1][2].task()}")
            run.work(helper, "second source", team[-1][2].plain())
            run.ret(helper, team[-1][0], "Second source agrees: " + team[-1][2].plain())
        got = _returns(run, team, to=lead)
        run.aggregate(lead, _answer([f for _, _, f in team]), got)
        before.append(run.ret(lead, run.root, " ".join(f.plain() for _, _, f in team)))
        known += [f for _, _, f in team]
    run.aggregate(run.root, _answer(known), before)
    stop = run.stop("Enough to answer; stop.")
    if control:
        return
    run.fault(stop, "premature_stop")
    lead, _, team = leads[late]
    worker, _, fact = team[-1]
    if shape == "depth-3":
        run.work(helper, "second source, page 2", fact.plain())
        run.ret(helper, worker, "Second source agrees: " + fact.plain())
    elif shape == "still-working":
        run.work(worker, "one more source", fact.plain(), calls=2)
    else:
        run.work(worker, "one more source", fact.plain())
        run.ret(worker, lead, fact.plain())
        if shape == "late-return":
            run.ret(lead, run.root, " ".join(f.plain() for _, _, f in team))


def _lead(run: _Run) -> str:
    """In a hierarchy the pattern runs under a lead: the root hands it the whole task and the
    lead becomes the run's root until `_close`. -> the real root."""
    real = run.root
    if run.topology == "hierarchical":
        lead, _ = run.spawn(real, "lead", "Run the whole sub-task and report the merged answer.")
        run.root = lead
    return real


def _close(run: _Run, real: str, answer: str, stop_text: str = "All results are in; stop.",
           late: bool = False) -> None:
    """The lead answers the root, which merges and stops (the stop is the late one when the
    lead's team ran late)."""
    if run.root != real:
        lead = run.root
        back = run.ret(lead, real, answer[len("Answer: "):])
        run.root = real
        run.aggregate(real, answer, [back])
    stop = run.stop(stop_text)
    if late:
        run.fault(stop, "late_stop")


def _late(run: _Run, shape: str, control: bool, facts: list[Fact]) -> None:
    """The answer was stated (in an aggregate, a return, a message) and the run went on: new
    spawns, or rounds of messages and returns with the same workers. Controls: one round; a
    second round that corrects a figure; a second round that brings the last fact."""
    rng = run.rng
    run.plan(facts)
    real = _lead(run)
    team = _team(run, facts)
    answer = _answer(facts)
    # half the time the final answer rewords what was stated before (the same figures)
    final = _answer(facts, paraphrased=True) if rng.random() < 0.5 else answer
    if control:
        if shape == "single-round":
            got = _returns(run, team)
            run.aggregate(run.root, answer, got)
        elif shape == "revision":
            wrong = rng.randrange(len(facts))
            good = facts[wrong]
            bad = Fact(good.entity, good.attribute, _value(rng, good.attribute), good.source)
            while bad.value == good.value:
                bad = Fact(good.entity, good.attribute, _value(rng, good.attribute), good.source)
            draft = [bad if j == wrong else f for j, f in enumerate(facts)]
            got = _returns(run, team, text=lambda f, r: (bad if f is good else f).plain())
            run.aggregate(run.root, _answer(draft), got)
            child = team[wrong][0]
            run.b.message(run.root, child, run.tick(0.2), 0.1,
                          f"Your {bad.attribute.name} for {bad.entity} looks off; recheck it.")
            run.work(child, f"{bad.entity} {bad.attribute.name} recheck", good.plain())
            fixed = run.ret(child, run.root, "Corrected: " + good.plain())
            run.aggregate(run.root, final, [*got, fixed])
        else:  # progressive: the last fact comes in a second round
            got = _returns(run, team[:-1])
            run.aggregate(run.root, _answer(facts[:-1]), got)
            child, _, fact = team[-1]
            run.b.message(run.root, child, run.tick(0.2), 0.1,
                          f"Now finish {fact.entity}; it is the last missing piece.")
            run.work(child, f"{fact.entity} last piece", fact.plain())
            last = run.ret(child, run.root, fact.plain())
            run.aggregate(run.root, final, [*got, last])
        _close(run, real, final)
        return
    if shape == "new-spawns":
        got = _returns(run, team)
        run.aggregate(run.root, answer, got)
        more = []
        for _ in range(rng.randint(1, 3)):
            fact = rng.choice(facts)
            child, spawn = run.spawn(run.root, "checker", f"Double-check: {fact.task()}")
            run.work(child, f"{fact.entity} recheck", fact.plain())
            more.append(run.ret(child, run.root, "Confirmed: " + fact.plain()))
            run.fault(spawn, "over_spawning")  # spawned with the answer already in hand
        run.aggregate(run.root, final, got + more)
    elif shape in ("stated-in-return", "stated-in-message"):
        first, rest = team[0], team[1:]
        final = "final " + answer[0].lower() + answer[1:]
        if shape == "stated-in-return":
            run.ret(first[0], run.root, final[0].upper() + final[1:])
        else:
            to = rest[0][0] if run.topology in ("debate", "swarm") and rest else run.root
            run.b.message(first[0], to, run.tick(0.1), 0.1, "My " + final)
            if to != run.root:
                run.work(to, "read the peer's final answer", "noted")
            run.ret(first[0], run.root, first[2].plain())
        got = _returns(run, rest)
        for child, _, fact in team:
            run.b.message(run.root, child, run.tick(0.1), 0.1,
                          f"Round {rng.randint(2, 4)}: cross-check your figure once more.")
            run.work(child, f"{fact.entity} cross-check", fact.plain())
            got.append(run.ret(child, run.root, "Still: " + fact.plain()))
        run.aggregate(run.root, final, got)
    else:  # re-aggregate
        got = _returns(run, team)
        run.aggregate(run.root, answer, got)
        again = []
        for child, _, fact in team:
            run.b.message(run.root, child, run.tick(0.1), 0.1,
                          "Another round please: confirm your figure.")
            run.work(child, f"{fact.entity} again", fact.plain())
            again.append(run.ret(child, run.root, "Confirmed again: " + fact.plain()))
        run.aggregate(run.root, final, again)
    _close(run, real, final, "Everyone agrees; stop.", late=True)


def _over_spawning(run: _Run, shape: str, control: bool, facts: list[Fact]) -> None:
    """One sub-task spawned twice (or, in a burst, three to five times): word for word,
    paraphrased, or under numbered names with only the tool calls to tell the task. Controls:
    sub-tasks from one template on different entities (sharded), or on different attributes
    of one entity (aspects), their task given by message or only by the tool calls."""
    rng = run.rng
    run.plan(facts)
    real = _lead(run)
    numbered = shape == "numbered" or (control and rng.random() < 0.5)
    team: list[tuple[str, int, Fact]] = []
    twins: set[str] = set()

    def child_for(fact: Fact, task: str, result: str) -> int:
        child, spawn = run.spawn(run.root, run.role, task, message=not numbered,
                                 spawn_text="Spawn {child}." if numbered else None)
        run.work(child, f"{fact.entity} {fact.attribute.name}", result)
        team.append((child, spawn, fact))
        return spawn

    for fact in facts:
        child_for(fact, fact.task(), fact.plain())
    if not control:
        fact = facts[rng.randrange(len(facts))]
        for _ in range(rng.randint(2, 4) if shape == "burst" else 1):
            paraphrased = shape == "paraphrased"
            spawn = child_for(fact, fact.task_paraphrase() if paraphrased else fact.task(),
                              fact.paraphrase() if paraphrased else fact.plain())
            twins.add(team[-1][0])
            run.fault(spawn, "over_spawning")
    got = [run.ret(c, run.root, f.paraphrase() if shape == "paraphrased" and c in twins
                   else f.plain()) for c, _, f in team]
    answer = _answer(facts)
    run.aggregate(run.root, answer, got)
    _close(run, real, answer)


BUILD = {"premature_stop": _premature, "late_stop": _late, "dropped_result": _dropped,
         "over_spawning": _over_spawning}


def case(kind: str, shape: str, control: bool, topology: str, size: str, seed: int,
         split: str = "tuning", domains: int = 4) -> Case:
    """One generated case (see the module's docstring)."""
    rng = random.Random(f"{kind}/{shape}/{control}/{topology}/{size}/{seed}")
    domain = DOMAINS[rng.randrange(domains)]
    low, high = SIZES[size]
    n = rng.randint(low, high)
    if kind == "over_spawning" and control and shape == "aspects":
        facts = _facts(rng, domain, n, same_entity=True)
    else:
        facts = _facts(rng, domain, n)
    name = f"planted-{split}-{kind}-{'control' if control else 'fault'}-{shape}-{topology}-" \
           f"{size}-{seed}"
    run = _Run(name, topology, rng, domain)
    made = Case(name, kind, shape, control, topology, size, seed, split, {})
    BUILD[kind](run, shape, control, facts)
    return run.finish(made)


def cases(split: str = "tuning", per_cell: int = 1) -> list[Case]:
    """Every kind x shape (faults and controls) x topology x size, `per_cell` seeds each,
    seeds from the split's first (`SPLITS`)."""
    first, domains = SPLITS[split]
    made = []
    seed = first
    for kind in KINDS:
        for control, shapes in ((False, SHAPES[kind]), (True, CONTROLS[kind])):
            for shape in shapes:
                for topology in TOPOLOGY_NAMES:
                    for size in SIZES:
                        for _ in range(per_cell):
                            made.append(case(kind, shape, control, topology, size, seed,
                                             split, domains))
                            seed += 1
    return made


# -- scoring ---------------------------------------------------------------------------------

RULES = {"premature_stop": ("premature_stop",), "late_stop": ("late_stop",),
         "dropped_result": ("dropped_result", "unfaithful_merge"),
         "over_spawning": ("over_spawning",)}
"""The rules of `viz_app.suggest.rules` that answer for each kind: a dropped result is the
"dropped or unfaithful merge" detector's (an output that repeats one result's figure and drops
another's that names the same thing reads as a conflict left unresolved, value 1)."""


@dataclass
class Score:
    """One detector's counts over some cases: a target it flagged that the ground truth calls
    faulty with its kind is a true positive; any other it flagged, a false positive; a faulty
    target it did not flag, a miss."""

    kind: str
    tp: int = 0
    fp: int = 0
    fn: int = 0
    missed: list[str] = field(default_factory=list)
    """'shape/topology/size' of each miss."""
    wrong: list[str] = field(default_factory=list)
    """'kind shape (control|fault)/topology/size' of each false positive."""

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None


def score(made: list[Case], flagged) -> dict[str, Score]:
    """Each kind's detector scored on cases. `flagged(case)` returns the (rule, event id) pairs
    the detectors fired on for that case's trace (a rule firing several answers on one target
    counts once)."""
    scores = {kind: Score(kind) for kind in KINDS}
    for c in made:
        fired = set(flagged(c))
        where = f"{c.shape}/{c.topology}/{c.size}"
        for kind in KINDS:
            truth = {f.event_id for f in c.faults if f.kind == kind}
            said = {event_id for rule, event_id in fired if rule in RULES[kind]}
            s = scores[kind]
            s.tp += len(truth & said)
            s.fp += len(said - truth)
            s.fn += len(truth - said)
            s.missed += [where] * len(truth - said)
            s.wrong += [f"{c.kind} {c.shape} ({'control' if c.control else 'fault'})/"
                        f"{c.topology}/{c.size}"] * len(said - truth)
    return scores
