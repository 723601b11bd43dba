"""Small traces built to show one orchestration fault each (and one that shows none), for the
detector tests and the suggestion benchmark. Each returns a Trace; the docstring says which event
is the fault.

All are built with `viz_app.synth.TraceBuilder`, whose events are numbered e1.. in time order;
`event_at(trace, t)` finds an event by its time so tests do not hard-code numbering.
"""

from __future__ import annotations

from viz_app.io.native import trace_from_dict
from viz_app.model import Event, Trace
from viz_app.synth import TraceBuilder

FINAL = ("Answer: LFP cells cost about 95 dollars per kWh in 2024 and last 3000 to 6000 cycles; "
         "NMC cells cost about 120 dollars per kWh and last 1000 to 2000 cycles.")


def _builder(name: str, topology: str = "centralized") -> TraceBuilder:
    b = TraceBuilder(f"case-{name}", f"task-{name}", topology, system=f"detector case: {name}")
    b.model("orchestrator", "gpt-4o")
    return b


def _trace(b: TraceBuilder) -> Trace:
    return trace_from_dict(b.finalize({"team": 1.0}), f"<{b.trace_id}>")


def event_at(trace: Trace, t: float, type: str | None = None) -> Event:
    """The event at time t (of a type, when two share the time)."""
    return next(e for e in trace.events if e.t == t and (type is None or e.type == type))


def _two_researchers(b: TraceBuilder) -> tuple[int, int]:
    """An orchestrator spawns an LFP and an NMC researcher; each searches and returns."""
    b.decide("orchestrator", 0.0, 1.0, "spawn",
             "Compare LFP and NMC battery cells on cost and cycle life. Spawn two researchers.")
    b.spawn("orchestrator", "lfp_researcher", "researcher", 1.1, "Spawn lfp_researcher.")
    b.spawn("orchestrator", "nmc_researcher", "researcher", 1.2, "Spawn nmc_researcher.")
    b.tool("lfp_researcher", "web.search", 1.5, 2.0, "LFP cell price per kWh 2024 cycle life",
           "LFP packs about 95 dollars per kWh (BNEF 2024); 3000-6000 cycles.")
    b.tool("nmc_researcher", "web.search", 1.6, 2.0, "NMC cell price per kWh 2024 cycle life",
           "NMC packs about 120 dollars per kWh; 1000-2000 cycles.")
    lfp = b.ret("lfp_researcher", "orchestrator", 4.0, 0.5,
                "LFP cells cost about 95 dollars per kWh in 2024 and last 3000 to 6000 cycles.")
    nmc = b.ret("nmc_researcher", "orchestrator", 4.5, 0.5,
                "NMC cells cost about 120 dollars per kWh and last 1000 to 2000 cycles.")
    return lfp, nmc


def faithful() -> Trace:
    """Two researchers on different sub-tasks; the aggregate keeps both results; the stop comes
    after both returned. Nothing is wrong."""
    b = _builder("faithful")
    lfp, nmc = _two_researchers(b)
    b.aggregate("orchestrator", 6.0, 1.0, FINAL, [lfp, nmc])
    b.decide("orchestrator", 8.0, 0.5, "stop", "Both results are in; stop.")
    return _trace(b)


def stop_while_working() -> Trace:
    """The stop (t=8) comes while db_analyst still works (its tool call at t=9); it never
    returns."""
    b = _builder("stop-while-working")
    lfp, nmc = _two_researchers(b)
    b.spawn("orchestrator", "db_analyst", "analyst", 1.3, "Spawn db_analyst.")
    b.aggregate("orchestrator", 6.0, 1.0, FINAL, [lfp, nmc])
    b.decide("orchestrator", 8.0, 0.5, "stop", "Good enough; stop.")
    b.tool("db_analyst", "sql.query", 9.0, 3.0, "SELECT warranty claims by chemistry",
           "LFP warranty claims 0.4 percent; NMC 1.1 percent.")
    return _trace(b)


def late_return() -> Trace:
    """The stop is at t=8; safety_researcher returns at t=12 with a finding the final answer
    leaves out (thermal runaway)."""
    b = _builder("late-return")
    lfp, nmc = _two_researchers(b)
    b.spawn("orchestrator", "safety_researcher", "researcher", 1.3, "Spawn safety_researcher.")
    b.tool("safety_researcher", "web.search", 2.0, 8.0, "thermal runaway onset LFP NMC",
           "Thermal runaway onset about 270 C for LFP and about 210 C for NMC.")
    b.aggregate("orchestrator", 6.0, 1.0, FINAL, [lfp, nmc])
    b.decide("orchestrator", 8.0, 0.5, "stop", "Good enough; stop.")
    b.ret("safety_researcher", "orchestrator", 12.0, 0.5,
          "Safety differs sharply: thermal runaway starts near 270 C in LFP but 210 C in NMC, so "
          "NMC packs need more cooling.")
    return _trace(b)


def late_stop() -> Trace:
    """researcher returns the full answer at t=4 (e.g. e6); the orchestrator spawns two more
    rounds of checkers (t=10, t=20) that only confirm, and stops at t=40 with the same answer."""
    b = _builder("late-stop")
    b.decide("orchestrator", 0.0, 1.0, "spawn", "When was PostgreSQL 16 released? Spawn one "
             "researcher.")
    b.spawn("orchestrator", "researcher", "researcher", 1.0, "Spawn researcher.")
    b.tool("researcher", "web.fetch", 1.5, 1.5, "postgresql.org/about/news/postgresql-16",
           "PostgreSQL 16 Released! Posted on 2023-09-14.")
    first = b.ret("researcher", "orchestrator", 4.0, 0.5,
                  "PostgreSQL 16 was released on 14 September 2023, says the official "
                  "announcement.")
    merged = [first]
    for k, t in enumerate((10.0, 20.0)):
        b.decide("orchestrator", t, 0.5, "continue", "Double-check the date with one more agent.")
        name = f"checker_{k}"
        b.spawn("orchestrator", name, "researcher", t + 1, f"Spawn {name}.")
        b.tool(name, "web.search", t + 2, 2.0, f"PostgreSQL 16 release date source {k}",
               "September 14, 2023.")
        merged.append(b.ret(name, "orchestrator", t + 5, 0.5, "Confirmed: 14 September 2023."))
    b.aggregate("orchestrator", 36.0, 1.0, "PostgreSQL 16 was released on 14 September 2023.",
                merged)
    b.decide("orchestrator", 40.0, 0.5, "stop", "Everyone agrees; stop.")
    return _trace(b)


def conflicting_merge() -> Trace:
    """Two researchers give the population of Lagos as 15.4 and 21.0 million; the aggregate
    (t=6) repeats 21.0 without saying they disagree."""
    b = _builder("conflicting-merge")
    b.decide("orchestrator", 0.0, 1.0, "spawn", "Population of Lagos? Spawn a census reader and "
             "a news reader.")
    b.spawn("orchestrator", "census_reader", "researcher", 1.1, "Spawn census_reader.")
    b.spawn("orchestrator", "news_reader", "researcher", 1.2, "Spawn news_reader.")
    census = b.ret("census_reader", "orchestrator", 4.0, 0.5,
                   "The 2020 census projection puts the population of Lagos at 15.4 million "
                   "people (National Population Commission).")
    news = b.ret("news_reader", "orchestrator", 4.5, 0.5,
                 "A news article puts the population of Lagos at 21.0 million people, citing "
                 "the state government.")
    b.aggregate("orchestrator", 6.0, 1.0,
                "The population of Lagos is 21.0 million people.", [census, news])
    b.decide("orchestrator", 8.0, 0.5, "stop", "Answer ready; stop.")
    return _trace(b)


def dropped_merge() -> Trace:
    """The aggregate (t=6) repeats the LFP result word for word and leaves out the NMC result
    (returned at t=4.5)."""
    b = _builder("dropped-merge")
    b.decide("orchestrator", 0.0, 1.0, "spawn",
             "Compare LFP and NMC battery cells on cost and cycle life. Spawn two researchers.")
    b.spawn("orchestrator", "lfp_researcher", "researcher", 1.1, "Spawn lfp_researcher.")
    b.spawn("orchestrator", "nmc_researcher", "researcher", 1.2, "Spawn nmc_researcher.")
    lfp = b.ret("lfp_researcher", "orchestrator", 4.0, 0.5,
                "LFP cells cost about 95 dollars per kWh in 2024 and last 3000 to 6000 cycles.")
    nmc = b.ret("nmc_researcher", "orchestrator", 4.5, 0.5,
                "NMC: higher energy density (250 Wh/kg) makes it the choice for long-range "
                "vehicles, at a price premium of roughly a quarter.")
    b.aggregate("orchestrator", 6.0, 1.0,
                "Answer: LFP cells cost about 95 dollars per kWh in 2024 and last 3000 to 6000 "
                "cycles.", [lfp, nmc])
    b.decide("orchestrator", 8.0, 0.5, "stop", "Answer ready; stop.")
    return _trace(b)


def duplicate_children() -> Trace:
    """Three calculators spawned at t=1.1, 1.2, 1.3 run the same query; the second and third
    spawns are redundant."""
    b = _builder("duplicate-children")
    b.decide("orchestrator", 0.0, 1.0, "spawn", "What is 72 F in Celsius? Spawn calculators.")
    returns = []
    for k in range(3):
        name = f"calculator_{k + 1}"
        b.spawn("orchestrator", name, "calculator", 1.1 + k / 10, f"Spawn {name}.")
        b.tool(name, "python.exec", 2.0 + k / 10, 1.0, "(72 - 32) * 5 / 9", "22.2222")
        returns.append(b.ret(name, "orchestrator", 4.0 + k / 10, 0.3, "72 F is 22.2 C."))
    b.aggregate("orchestrator", 6.0, 1.0, "72 F is 22.2 C.", returns)
    b.decide("orchestrator", 8.0, 0.5, "stop", "Answer ready; stop.")
    return _trace(b)


def unused_child() -> Trace:
    """A trivia researcher (spawned at t=1.3) returns at t=5, but the aggregate at t=6 merges
    only the LFP and NMC results before the stop."""
    b = _builder("unused-child")
    lfp, nmc = _two_researchers(b)
    b.spawn("orchestrator", "trivia_researcher", "historian", 1.3, "Spawn trivia_researcher.")
    b.tool("trivia_researcher", "web.search", 2.0, 2.0, "history of lithium iron phosphate",
           "LFP was described by Padhi and Goodenough in 1997.")
    b.ret("trivia_researcher", "orchestrator", 5.0, 0.5,
          "LFP as a cathode was first described by Padhi and Goodenough in 1997.")
    b.aggregate("orchestrator", 6.0, 1.0, FINAL, [lfp, nmc])
    b.decide("orchestrator", 8.0, 0.5, "stop", "Both results are in; stop.")
    return _trace(b)


def repeated_message() -> Trace:
    """The planner sends the executor the same instruction twice (t=2 and t=5); the second is
    redundant. The executor acts on both."""
    b = _builder("repeated-message", "planner_executor_critic")
    b.decide("orchestrator", 0.0, 1.0, "spawn", "Spawn a planner and an executor.")
    b.spawn("orchestrator", "planner", "planner", 0.5, "Spawn planner.")
    b.spawn("orchestrator", "executor", "executor", 0.6, "Spawn executor.")
    b.message("planner", "executor", 2.0, 0.3,
              "Please run the monthly active users query for 2024 in the Chicago timezone.")
    b.tool("executor", "sql.query", 3.0, 1.0, "SELECT month, count(DISTINCT user_id) ...",
           "12 rows")
    b.message("planner", "executor", 5.0, 0.3,
              "Please run the monthly active users query for 2024 in the Chicago timezone, "
              "thanks.")
    b.tool("executor", "sql.query", 6.0, 1.0, "SELECT month, count(DISTINCT user_id) ...",
           "12 rows")
    done = b.ret("executor", "orchestrator", 8.0, 0.5, "Monthly active users for 2024: 12 rows.")
    b.ret("planner", "orchestrator", 8.5, 0.5, "Plan delivered.")
    b.aggregate("orchestrator", 9.0, 1.0, "Monthly active users for 2024: 12 rows.", [done])
    b.decide("orchestrator", 10.0, 0.5, "stop", "Done; stop.")
    return _trace(b)


def ignored_message() -> Trace:
    """The critic messages the executor at t=9, after the executor's last event: the executor
    never acts on it."""
    b = _builder("ignored-message", "planner_executor_critic")
    b.decide("orchestrator", 0.0, 1.0, "spawn", "Spawn an executor and a critic.")
    b.spawn("orchestrator", "executor", "executor", 0.5, "Spawn executor.")
    b.spawn("orchestrator", "critic", "critic", 0.6, "Spawn critic.")
    b.tool("executor", "sql.query", 1.0, 1.0, "SELECT month, count(DISTINCT user_id) ...",
           "12 rows")
    done = b.ret("executor", "orchestrator", 3.0, 0.5, "Monthly active users for 2024: 12 rows.")
    b.message("critic", "executor", 9.0, 0.3, "Consider also checking the timezone of the "
              "event timestamps.")
    b.ret("critic", "orchestrator", 9.5, 0.3, "Reviewed.")
    b.aggregate("orchestrator", 10.0, 1.0, "Monthly active users for 2024: 12 rows.", [done])
    b.decide("orchestrator", 11.0, 0.5, "stop", "Done; stop.")
    return _trace(b)


def redelegated_task() -> Trace:
    """The orchestrator delegates the SQL task to the writer (t=1), who answers it cannot run
    SQL; the same task then goes to the sql_agent (t=4). The first delegation went to the
    wrong agent."""
    b = _builder("redelegated-task")
    task = "Run the monthly active users query for 2024 on the events table and report the rows."
    b.delegate("orchestrator", "writer", 1.0, 0.5, task)
    b.ret("writer", "orchestrator", 2.5, 0.5, "I cannot run SQL; I only write prose.")
    b.delegate("orchestrator", "sql_agent", 4.0, 0.5, task)
    b.tool("sql_agent", "sql.query", 5.0, 1.0, "SELECT month, count(DISTINCT user_id) ...",
           "12 rows")
    done = b.ret("sql_agent", "orchestrator", 7.0, 0.5, "Monthly active users for 2024: 12 "
                 "rows, 47,988 in January to 55,340 in December.")
    b.aggregate("orchestrator", 8.0, 1.0, "Monthly active users for 2024: 12 rows, 47,988 in "
                "January to 55,340 in December.", [done])
    b.decide("orchestrator", 9.0, 0.5, "stop", "Done; stop.")
    return _trace(b)


def caveat_dropped(keep_caveat: bool = False) -> Trace:
    """The deploy analyst (t=4) says v2.3.0 only correlates with the regression; the aggregate
    (t=6) calls v2.3.0 the root cause, without the caveat (or, with `keep_caveat`, with it)."""
    b = _builder("caveat-kept" if keep_caveat else "caveat-dropped")
    b.decide("orchestrator", 0.0, 1.0, "spawn", "Why did checkout slow down? Spawn analysts.")
    b.spawn("orchestrator", "deploy_analyst", "analyst", 1.1, "Spawn deploy_analyst.")
    b.spawn("orchestrator", "log_analyst", "analyst", 1.2, "Spawn log_analyst.")
    deploy = b.ret("deploy_analyst", "orchestrator", 4.0, 0.5,
                   "Release v2.3.0 went out on Tuesday, the day the latency rose. Correlation "
                   "only; not yet confirmed.")
    logs = b.ret("log_analyst", "orchestrator", 4.5, 0.5,
                 "The slow requests are POST /checkout/confirm, 92 percent of them.")
    out = ("Release v2.3.0 may be the cause (correlation only, not yet confirmed); the slow "
           "requests are POST /checkout/confirm." if keep_caveat else
           "Root cause: release v2.3.0. Roll it back; the slow requests are POST "
           "/checkout/confirm.")
    b.aggregate("orchestrator", 6.0, 1.0, out, [deploy, logs])
    b.decide("orchestrator", 8.0, 0.5, "stop", "Answer ready; stop.")
    return _trace(b)
