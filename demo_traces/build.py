"""Write the demo traces a new orchviz user sees first, as pretty JSON beside this script.

Run ``python demo_traces/build.py`` from anywhere. Every trace is hand-authored: the content of each
event says what the orchestrator decided and why, what the sub-agents found, what the tools were
asked and answered, and what the final merged answer was. The ``system`` field of each trace is a
one-line description of what a reviewer should look for.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from viz_app.synth import TraceBuilder  # noqa: E402

BIG = "claude-3-5-sonnet-20241022"
SMALL = "claude-3-5-haiku-20241022"
GPT = "gpt-4o"
MINI = "gpt-4o-mini"


def centralized_research_faithful() -> dict:
    """A lead researcher fans out three researchers and merges all their findings faithfully."""
    b = TraceBuilder("demo-01-centralized-faithful", "grid-storage-chemistry", "centralized",
                     "Centralized research run; the final answer faithfully keeps every sub-agent finding, "
                     "including the caveat on cold-climate performance.")
    o = "lead_researcher"
    b.model(o, BIG)
    d = b.decide(o, 0.0, 4.2, "spawn",
                 "Task: recommend LFP or NMC cells for a 40 MWh grid storage site in Minnesota. Three "
                 "independent questions: cycle life and energy density, cost per kWh, and cold-weather and "
                 "safety behaviour. I will spawn one researcher per question and merge.", role="orchestrator")
    briefs = [
        ("researcher_density", "Compare cycle life and energy density of LFP and NMC cells, with sources."),
        ("researcher_cost", "Find 2024 pack-level cost per kWh for LFP and NMC stationary storage."),
        ("researcher_safety", "Compare thermal-runaway risk and low-temperature performance of LFP vs NMC."),
    ]
    t = 4.5
    for name, brief in briefs:
        dd = b.delegate(o, name, t, 0.8, f"Delegate: {brief} Return numbers with a citation each.")
        b.spawn(o, name, "researcher", t + 0.9, f"Spawn {name} with brief: {brief}", model=SMALL, after=dd)
        t += 1.2
    b.tool("researcher_density", "web.search", 8.5, 2.1, "LFP vs NMC cycle life energy density Wh/kg 2024",
           "1. NREL battery storage review (2023): LFP 90-160 Wh/kg, 3000-6000 cycles to 80%; NMC 150-220 "
           "Wh/kg, 1000-2000 cycles. 2. Battery University BU-205 ... 3. IEA Batteries and Secure Energy "
           "Transitions (2024) ...")
    b.tool("researcher_density", "web.fetch", 11.2, 3.4, "https://www.nrel.gov/docs/fy23osti/85332.pdf",
           "Table 3: LFP cycle life 3,000-6,000 (80% DoD); NMC 1,000-2,000. Gravimetric energy density LFP "
           "90-160 Wh/kg, NMC 150-220 Wh/kg. Volumetric advantage to NMC of roughly 30%.")
    r1 = b.ret("researcher_density", o, 15.4, 3.0,
               "LFP: 90-160 Wh/kg, 3,000-6,000 cycles to 80% capacity. NMC: 150-220 Wh/kg, 1,000-2,000 "
               "cycles (NREL 2023, Table 3). For a stationary site, energy density matters little; cycle "
               "life favours LFP by about 3x.")
    b.tool("researcher_cost", "web.search", 9.1, 1.8, "BNEF 2024 battery pack price LFP NMC stationary",
           "BNEF Dec 2024: average pack price $115/kWh; LFP packs averaged $95/kWh, NMC about $128/kWh. "
           "Stationary storage packs the cheapest segment at $125/kWh system-level...")
    r2 = b.ret("researcher_cost", o, 11.8, 2.6,
               "2024 pack prices (BNEF, Dec 2024): LFP about $95/kWh, NMC about $128/kWh. LFP is about 25% "
               "cheaper per kWh at pack level.")
    b.tool("researcher_safety", "web.search", 9.8, 2.0, "LFP NMC thermal runaway onset temperature",
           "Sandia report SAND2021-xxxx: thermal-runaway onset LFP about 270 C, NMC about 210 C; LFP "
           "releases less heat and no oxygen from the cathode.")
    b.tool("researcher_safety", "web.search", 12.3, 2.2, "LFP low temperature capacity retention -20C",
           "Several studies: LFP retains 60-70% of capacity at -20 C versus 75-85% for NMC; charging below "
           "0 C risks lithium plating for both, worse for LFP without heating.")
    r3 = b.ret("researcher_safety", o, 15.0, 3.1,
               "Safety favours LFP (runaway onset about 270 C vs 210 C, no cathode oxygen release). Caveat: "
               "at -20 C LFP keeps only 60-70% capacity vs 75-85% for NMC, so a Minnesota site needs "
               "enclosure heating (adds 2-4% parasitic load).")
    a = b.aggregate(o, 18.9, 7.5,
                    "Recommendation: LFP. It has about 3x the cycle life (3,000-6,000 vs 1,000-2,000 cycles), "
                    "costs about 25% less per kWh ($95 vs $128, BNEF 2024) and is safer (runaway onset 270 C "
                    "vs 210 C). Energy density is lower but irrelevant for a stationary site. Caveat kept from "
                    "the safety researcher: at -20 C LFP keeps only 60-70% of capacity, so budget enclosure "
                    "heating at 2-4% parasitic load.", [r1, r2, r3])
    b.decide(o, 26.6, 1.2, "stop", "Every question is answered with a source and the caveat is carried into "
             "the answer; stopping.", role="orchestrator")
    b.edge(d, a, "causal")
    return b.finalize({"team": 1.0, "orchestration": 0.9, "process": 0.85, "tool": 0.8},
                      {"task_success": 1, "parallelism_efficiency": 0.78, "protocol_overhead": 0.12,
                       "error_amplification": 0, "faithfulness": 1.0})


def planner_executor_critic() -> dict:
    """A planner writes a plan, an executor runs SQL, a critic catches a timezone bug, the fix passes."""
    b = TraceBuilder("demo-02-pec-sql", "mau-query-timezone", "planner_executor_critic",
                     "Planner-executor-critic loop; watch the critic catch the UTC-vs-local bug and the "
                     "executor's second attempt pass review.")
    o = "orchestrator"
    b.model(o, GPT)
    b.decide(o, 0.0, 2.5, "spawn", "Task: monthly active users per month for 2024 in the America/Chicago "
             "timezone from the events table. Standard plan-execute-critique loop: spawn planner, executor "
             "and critic.", role="orchestrator")
    b.spawn(o, "planner", "planner", 2.6, "Spawn planner to write the query plan.", model=GPT)
    b.spawn(o, "executor", "executor", 2.8, "Spawn executor with read-only SQL access.", model=MINI)
    b.spawn(o, "critic", "critic", 3.0, "Spawn critic to review the query and its output.", model=GPT)
    b.message("planner", "executor", 3.5, 6.0,
              "Plan: 1) select user_id and event_ts from events where event_ts in 2024; 2) bucket by "
              "date_trunc('month', event_ts); 3) count distinct user_id per bucket; 4) sanity-check that "
              "January is not empty and totals are below the user-table size.")
    b.tool("executor", "sql.query", 10.2, 4.8,
           "SELECT date_trunc('month', event_ts) AS m, count(DISTINCT user_id) FROM events WHERE event_ts "
           ">= '2024-01-01' AND event_ts < '2025-01-01' GROUP BY 1 ORDER BY 1;",
           "12 rows: 2024-01 48,211 | 2024-02 47,930 | ... | 2024-12 55,102", result_agent="sql.query")
    b.message("executor", "critic", 15.6, 2.0,
              "Draft query and result attached: 12 monthly rows from 48,211 (Jan) to 55,102 (Dec).")
    b.message("critic", "executor", 18.0, 5.5,
              "Reject: event_ts is stored in UTC, so date_trunc buckets by UTC month. Events between 00:00 "
              "and 06:00 UTC on the 1st belong to the previous month in Chicago. Convert with event_ts AT "
              "TIME ZONE 'America/Chicago' before truncating, and shift the WHERE bounds too.")
    b.tool("executor", "sql.query", 24.1, 5.2,
           "SELECT date_trunc('month', event_ts AT TIME ZONE 'America/Chicago') AS m, count(DISTINCT "
           "user_id) FROM events WHERE event_ts >= '2024-01-01 06:00+00' AND event_ts < '2025-01-01 "
           "06:00+00' GROUP BY 1 ORDER BY 1;",
           "12 rows: 2024-01 47,988 | 2024-02 47,871 | ... | 2024-12 55,340", result_agent="sql.query")
    b.message("executor", "critic", 29.8, 1.5, "Revised query with the timezone conversion and shifted bounds.")
    b.message("critic", "executor", 31.6, 3.0, "Approved: buckets now follow Chicago months; January dropped "
              "223 users who were active only in the first UTC hours of Feb 1, as expected.")
    r1 = b.ret("executor", o, 35.0, 2.0, "Final query (timezone-correct) and the 12 monthly MAU figures, "
               "47,988 in January to 55,340 in December 2024.")
    r2 = b.ret("critic", o, 35.4, 1.5, "Review log: one rejection (UTC bucketing), then approval.")
    r3 = b.ret("planner", o, 10.0, 1.0, "Plan delivered to the executor; no further work.")
    b.aggregate(o, 37.5, 4.0, "Answer: the approved timezone-correct query and its table of monthly active "
                "users for 2024 (America/Chicago months), with the critic's note on the UTC pitfall.",
                [r3, r1, r2])
    b.decide(o, 41.7, 0.8, "stop", "The critic approved the output; stop.", role="orchestrator")
    return b.finalize({"team": 1.0, "process": 0.9, "critic": 1.0, "orchestration": 0.8},
                      {"task_success": 1, "protocol_overhead": 0.21, "error_amplification": 0,
                       "critic_catches": 1})


def debate_with_judge() -> dict:
    """Two debaters argue two rounds about a popular myth and a judge rules."""
    b = TraceBuilder("demo-03-debate-judge", "great-wall-visible-from-orbit", "debate",
                     "Debate with a judge; check that the judge's ruling follows the stronger, sourced "
                     "argument rather than the last word.")
    o = "moderator"
    b.model(o, GPT)
    b.decide(o, 0.0, 2.0, "spawn", "Question: is the Great Wall of China visible to the naked eye from low "
             "Earth orbit? Contested claim; run a two-round debate and let a judge decide.",
             role="orchestrator")
    b.spawn(o, "debater_pro", "debater", 2.1, "Spawn the debater arguing 'visible'.", model=BIG)
    b.spawn(o, "debater_con", "debater", 2.2, "Spawn the debater arguing 'not visible'.", model=GPT)
    b.spawn(o, "judge", "judge", 2.3, "Spawn the judge; it sees both sides and rules.", model="claude-3-opus-20240229")
    b.message("debater_pro", "debater_con", 3.0, 7.0,
              "Round 1 (pro): Astronauts have photographed the wall from the ISS; Leroy Chiao's 2004 photo "
              "appears to show it. At 400 km, long straight structures can be seen in low sun angles.")
    b.tool("debater_con", "web.search", 3.5, 2.2, "Great Wall visible from space naked eye astronaut Yang Liwei",
           "NASA Earth Observatory: the wall is 'difficult or impossible' to see with the naked eye from "
           "orbit; Yang Liwei (2003) said he could not see it. Chiao's photo used a 180 mm lens.")
    b.message("debater_con", "debater_pro", 10.5, 7.5,
              "Round 1 (con): The wall is at most about 9 m wide and similar in colour to its surroundings. "
              "Yang Liwei reported he could not see it; Chiao's image used a 180 mm telephoto lens, so it "
              "is not naked-eye evidence (NASA Earth Observatory).")
    b.message("debater_pro", "debater_con", 18.5, 6.0,
              "Round 2 (pro): Visibility depends on conditions; with snow cover some astronauts report "
              "seeing it.")
    b.message("debater_con", "debater_pro", 25.0, 6.5,
              "Round 2 (con): Those reports are unconfirmed, and highways and airports, far wider, are "
              "barely visible. Angular size of a 9 m object at 400 km is about 0.005 degrees, under the "
              "eye's resolution of about 0.02 degrees.")
    b.message("debater_con", "judge", 31.8, 1.0, "Closing summary with sources sent to the judge.")
    b.message("debater_pro", "judge", 32.0, 1.0, "Closing summary sent to the judge.")
    rj = b.ret("judge", o, 33.5, 9.0,
               "Ruling: not visible to the naked eye. The con side gave a source (NASA Earth Observatory), a "
               "first-hand report (Yang Liwei) and an angular-resolution argument; the pro side's photo was "
               "taken with a telephoto lens. Confidence: high.")
    rp = b.ret("debater_pro", o, 33.4, 0.5, "Pro concedes the photo was telephoto.")
    rc = b.ret("debater_con", o, 33.2, 0.5, "Con rests.")
    b.aggregate(o, 43.0, 3.0, "Final answer: No. The Great Wall is not visible to the naked eye from low "
                "Earth orbit; it is too narrow (about 9 m, roughly 0.005 degrees at 400 km) and matches its "
                "surroundings. Photos exist only with telephoto lenses.", [rj, rp, rc])
    b.decide(o, 46.2, 0.6, "stop", "Judge ruled with high confidence; stop.", role="orchestrator")
    return b.finalize({"team": 1.0, "debate": 0.9, "verifier": 1.0},
                      {"task_success": 1, "protocol_overhead": 0.35, "rounds": 2})


_MODULES = [
    ("api/auth.py", 2), ("api/billing.py", 0), ("api/orders.py", 3), ("api/search.py", 0),
    ("core/cache.py", 1), ("core/clock.py", 4), ("core/config.py", 0), ("core/events.py", 2),
    ("core/jobs.py", 5), ("core/locks.py", 0), ("db/migrations.py", 1), ("db/models.py", 2),
    ("db/session.py", 0), ("export/csv.py", 1), ("export/pdf.py", 0), ("export/s3.py", 1),
    ("ingest/kafka.py", 3), ("ingest/webhooks.py", 2), ("ingest/sftp.py", 0), ("metrics/prom.py", 1),
    ("metrics/statsd.py", 0), ("notify/email.py", 1), ("notify/sms.py", 0), ("notify/slack.py", 1),
    ("reports/daily.py", 6), ("reports/weekly.py", 2), ("scheduler/cron.py", 4), ("scheduler/retry.py", 1),
    ("security/tokens.py", 3), ("security/audit.py", 2), ("utils/dates.py", 7), ("workers/cleanup.py", 1),
    ("workers/reindex.py", 0), ("workers/thumbnails.py", 0),
]


def parallel_swarm() -> dict:
    """Thirty-four workers audit one module each in parallel; one aggregate merges all counts."""
    b = TraceBuilder("demo-04-swarm-audit", "audit-utcnow-deprecation", "swarm",
                     f"Parallel swarm of {len(_MODULES)} workers; see the wide spawn fan-out, the concurrent "
                     "lanes in the timeline and one aggregate with an edge from every return.")
    o = "orchestrator"
    b.model(o, GPT)
    b.decide(o, 0.0, 3.0, "spawn", f"Python 3.12 deprecates datetime.utcnow(). The repo has {len(_MODULES)} "
             "modules; the audit of each is independent, so spawn one worker per module in parallel and "
             "merge the counts.", role="orchestrator")
    returns = []
    for k, (path, hits) in enumerate(_MODULES):
        w = f"worker_{k:02d}"
        b.spawn(o, w, "auditor", 3.1 + 0.05 * k, f"Spawn {w} to audit {path}.", model=MINI)
        start = 3.6 + 0.05 * k
        dur = 1.5 + (k * 37 % 23) / 10
        found = (f"{hits} matches: " + ", ".join(f"line {40 + 17 * j}: datetime.utcnow()" for j in range(hits))
                 if hits else "0 matches")
        b.tool(w, "repo.grep", start, dur, f"grep -n 'utcnow\\|utcfromtimestamp' {path}", found,
               result_agent="repo.grep", trusted=True)
        work = 4.0 + (k * 53 % 41) / 10
        if hits:
            b.tool(w, "file.read", start + dur + 0.3, 1.1, f"{path} lines around each match",
                   f"Context for {hits} call sites; all compare against aware datetimes from the DB layer.",
                   result_agent="file.read", trusted=True)
            text = (f"{path}: {hits} call(s) to datetime.utcnow(). Replace with datetime.now(timezone.utc); "
                    f"{'two' if hits > 3 else 'one'} of them feed comparisons with aware timestamps and are "
                    "latent bugs today.")
        else:
            text = f"{path}: clean, no deprecated calls."
        returns.append(b.ret(w, o, start + dur + work, 1.2, text))
    total = sum(h for _, h in _MODULES)
    dirty = sum(1 for _, h in _MODULES if h)
    t = max(b.events[r]["end_t"] for r in returns) + 0.3
    b.aggregate(o, t, 9.0, f"Audit complete: {total} deprecated utcnow() calls in {dirty} of {len(_MODULES)} "
                "modules. Hot spots: utils/dates.py (7), reports/daily.py (6), core/jobs.py (5). Proposed fix: "
                "a codemod to datetime.now(timezone.utc), with the comparisons in core/clock.py and "
                "scheduler/cron.py reviewed by hand.", returns)
    b.decide(o, t + 9.2, 0.7, "stop", "All workers returned; stop.", role="orchestrator")
    return b.finalize({"team": 1.0, "orchestration": 0.95, "tool": 0.9},
                      {"task_success": 1, "parallelism_efficiency": 0.88, "protocol_overhead": 0.08,
                       "error_amplification": 0})


def hierarchical_three_levels() -> dict:
    """A director runs two leads, each with analysts; one analyst spawns a fetcher (three levels deep)."""
    b = TraceBuilder("demo-05-hierarchical-ebikes", "ebike-germany-brief", "hierarchical",
                     "Hierarchical run three levels deep; follow the spawn tree director -> leads -> analysts "
                     "-> fetcher and check each lead aggregates only its own team.")
    o = "director"
    b.model(o, "claude-3-opus-20240229")
    b.decide(o, 0.0, 5.0, "spawn", "Task: a two-page market-entry brief for selling e-bikes in Germany. Two "
             "workstreams: market (size, competitors) and regulation (type approval, import duties). Spawn "
             "a lead per workstream; they staff their own analysts.", role="orchestrator")
    for lead, brief in (("market_lead", "market size and competitors"),
                        ("regulation_lead", "type approval and import rules")):
        dd = b.delegate(o, lead, 5.2 if lead == "market_lead" else 6.3, 0.9, f"Own the {brief} workstream; "
                        "staff analysts as needed and return a one-paragraph summary.")
        b.spawn(o, lead, "lead", b.events[dd]["end_t"] + 0.1, f"Spawn {lead}.", model=BIG, after=dd)
    b.decide("market_lead", 7.0, 2.5, "spawn", "Two analysts: one on market size, one on competitors.")
    b.spawn("market_lead", "sizing_analyst", "analyst", 9.6, "Spawn sizing analyst.", model=SMALL)
    b.spawn("market_lead", "competitor_analyst", "analyst", 9.8, "Spawn competitor analyst.", model=SMALL)
    b.tool("sizing_analyst", "web.search", 10.5, 2.5, "ZIV Germany e-bike sales 2023",
           "ZIV annual report 2023: 2.1 million e-bikes sold in Germany, 53% of all bicycles; average price "
           "EUR 2,950.", result_agent="web.search")
    rs = b.ret("sizing_analyst", "market_lead", 13.6, 2.5, "Germany sold 2.1 M e-bikes in 2023 (ZIV), 53% "
               "of bicycle sales, average EUR 2,950: a market of about EUR 6.2 bn.")
    b.tool("competitor_analyst", "web.search", 10.7, 2.8, "largest e-bike brands Germany market share",
           "Trade press 2023: Accell group, Pon (Gazelle, Cervelo), Riese & Mueller, Cube, VanMoof "
           "(insolvent 2023) ...", result_agent="web.search")
    rc = b.ret("competitor_analyst", "market_lead", 14.0, 3.0, "Incumbents: Pon/Gazelle, Accell, Cube, "
               "Riese & Mueller. Direct-to-consumer gap after VanMoof's 2023 insolvency.")
    b.aggregate("market_lead", 17.5, 4.0, "Market summary: EUR 6.2 bn, 2.1 M units, fragmented among "
                     "four incumbents, a DTC gap after VanMoof.", [rs, rc])
    rm = b.ret("market_lead", o, 21.8, 1.5, "Market: EUR 6.2 bn (2.1 M units, 2023); incumbents Pon, Accell, "
               "Cube, Riese & Mueller; opening in direct-to-consumer.")
    b.decide("regulation_lead", 8.0, 2.0, "spawn", "One analyst for type approval, one for import duties.")
    b.spawn("regulation_lead", "approval_analyst", "analyst", 10.2, "Spawn approval analyst.", model=SMALL)
    b.spawn("regulation_lead", "duty_analyst", "analyst", 10.4, "Spawn duty analyst.", model=SMALL)
    b.decide("approval_analyst", 11.0, 1.5, "spawn", "The EN 15194 standard text is long; spawn a fetcher "
             "to extract the clauses on motor power and speed cut-off.")
    b.spawn("approval_analyst", "standards_fetcher", "fetcher", 12.6, "Spawn fetcher for EN 15194.",
            model=MINI)
    b.tool("standards_fetcher", "web.fetch", 13.0, 4.0, "EN 15194:2017+A1:2023 scope and requirements",
           "Scope: EPAC with continuous rated power <= 250 W, assistance cut-off at 25 km/h. Above that the "
           "vehicle is an L1e moped needing type approval under Regulation (EU) 168/2013.",
           result_agent="web.fetch")
    rf = b.ret("standards_fetcher", "approval_analyst", 17.5, 1.5, "EN 15194: <= 250 W and 25 km/h cut-off "
               "for a bicycle classification; otherwise L1e type approval (EU 168/2013).")
    b.aggregate("approval_analyst", 19.2, 1.5, "Merge the fetcher's clauses into an approval summary.", [rf])
    ra = b.ret("approval_analyst", "regulation_lead", 20.8, 1.0, "Stay at 250 W / 25 km/h (EN 15194) to "
               "avoid L1e type approval; speed pedelecs need insurance plates.")
    b.tool("duty_analyst", "web.search", 10.9, 2.4, "EU anti-dumping duty e-bikes China 2024",
           "EU extended anti-dumping (up to 79.3%) and countervailing duties on Chinese e-bikes to 2029.",
           result_agent="web.search")
    rd = b.ret("duty_analyst", "regulation_lead", 13.8, 2.0, "Chinese-built e-bikes face up to 79.3% "
               "anti-dumping plus countervailing duties until 2029; assemble in the EU or source from Taiwan.")
    b.aggregate("regulation_lead", 22.0, 3.5, "Regulation summary: design to EN 15194 limits; avoid "
                     "Chinese final assembly because of duties.", [ra, rd])
    rr = b.ret("regulation_lead", o, 25.8, 1.5, "Regulation: EN 15194 (250 W, 25 km/h) avoids type approval; "
               "anti-dumping duties up to 79.3% on Chinese e-bikes until 2029.")
    b.aggregate(o, 27.8, 8.0, "Brief: Germany is a EUR 6.2 bn e-bike market (2.1 M units) with a DTC gap "
                "after VanMoof. Enter with a 250 W / 25 km/h EN 15194 pedelec to avoid type approval, "
                "assembled in the EU or Taiwan to avoid duties of up to 79.3% on Chinese imports.", [rm, rr])
    b.decide(o, 36.0, 1.0, "stop", "Both workstreams returned and the brief is complete; stop.",
             role="orchestrator")
    return b.finalize({"team": 1.0, "orchestration": 0.85, "process": 0.8},
                      {"task_success": 1, "parallelism_efficiency": 0.7, "protocol_overhead": 0.17,
                       "spawn_depth": 3})


def harness_coding_agent() -> dict:
    """A Claude-Code-style harness fixes a failing test with an explorer and a test-runner sub-agent."""
    b = TraceBuilder("demo-06-harness-coding", "fix-test-parse-dates", "harness",
                     "Harness-style coding agent with sub-agents; look at the tool-call chain from the "
                     "failing test to the one-line fix and the passing re-run.")
    h = "harness"
    b.model(h, BIG)
    b.decide(h, 0.0, 3.0, "continue", "User: 'tests/test_dates.py::test_parse_iso_with_z fails on CI, fix "
             "it.' Start by reproducing the failure myself.", role="orchestrator")
    b.tool(h, "shell.run", 3.2, 6.5, "python -m pytest tests/test_dates.py::test_parse_iso_with_z -x -q",
           "FAILED tests/test_dates.py::test_parse_iso_with_z - ValueError: Invalid isoformat string: "
           "'2024-03-01T12:00:00Z'\n1 failed in 0.41s", result_agent="shell.run", trusted=True)
    d = b.decide(h, 10.0, 2.5, "spawn", "The parser rejects the 'Z' suffix. Before editing, spawn an "
                 "explorer to find every caller of parse_iso so the fix does not break them.")
    b.spawn(h, "explorer", "explorer", 12.6, "Spawn explorer: list callers of parse_iso and the inputs they "
            "pass.", model=SMALL, after=d)
    b.tool("explorer", "repo.grep", 13.2, 1.2, "grep -rn 'parse_iso(' src/", "src/app/dates.py:14 def "
           "parse_iso(s)\nsrc/app/ingest.py:88 parse_iso(row['ts'])\nsrc/app/api.py:41 parse_iso(q.since)",
           result_agent="repo.grep", trusted=True)
    b.tool("explorer", "file.read", 14.8, 0.9, "src/app/dates.py", "def parse_iso(s):\n    return "
           "datetime.fromisoformat(s)", result_agent="file.read", trusted=True)
    re_ = b.ret("explorer", h, 16.0, 3.0, "parse_iso is a bare datetime.fromisoformat; two callers, both "
                "pass API or feed strings that may end in 'Z'. CI runs Python 3.10, where fromisoformat does "
                "not accept 'Z' (accepted from 3.11).")
    b.aggregate(h, 19.2, 2.0, "Root cause: Python 3.10 fromisoformat rejects 'Z'. Fix: replace a trailing "
                "'Z' with '+00:00' before parsing.", [re_])
    b.tool(h, "file.edit", 21.5, 1.0, "src/app/dates.py: return datetime.fromisoformat(s[:-1] + '+00:00' if "
           "s.endswith('Z') else s)", "Applied 1 edit to src/app/dates.py", result_agent="file.edit",
           trusted=True)
    d2 = b.decide(h, 22.8, 1.2, "spawn", "Spawn a test runner for the full suite on Python 3.10 while I "
                  "write a regression test for the 'Z' case.")
    b.spawn(h, "test_runner", "test_runner", 24.1, "Spawn test runner (py3.10 tox env).", model=MINI,
            after=d2)
    b.tool("test_runner", "shell.run", 24.6, 38.0, "tox -e py310 -q", "212 passed in 37.2s",
           result_agent="shell.run", trusted=True)
    b.tool(h, "file.edit", 25.0, 2.0, "tests/test_dates.py: add test_parse_iso_with_z_and_offset",
           "Applied 1 edit to tests/test_dates.py", result_agent="file.edit", trusted=True)
    rt = b.ret("test_runner", h, 63.0, 1.0, "Full suite on py3.10: 212 passed, 0 failed.")
    b.aggregate(h, 64.5, 3.0, "Fixed: parse_iso now normalises a trailing 'Z' to '+00:00' (needed on Python "
                "3.10). Added a regression test; full suite passes on py3.10 (212 passed).", [rt])
    b.decide(h, 67.8, 0.5, "stop", "Fix verified by the full suite; report to the user and stop.")
    return b.finalize({"team": 1.0, "tool": 0.95, "process": 0.9},
                      {"task_success": 1, "tests_passed": 212, "protocol_overhead": 0.1})


def mixed_topology() -> dict:
    """A planner, a parallel prototype swarm and a debate with a judge, mixed in one run."""
    b = TraceBuilder("demo-07-mixed-cache-design", "choose-cache-design", "mixed",
                     "Mixed topology: a planner, three parallel prototypers and a debate with a judge; check "
                     "the judge used the benchmark numbers the prototypers returned.")
    o = "orchestrator"
    b.model(o, GPT)
    b.decide(o, 0.0, 2.5, "spawn", "Task: choose a cache design for the product-catalogue API (p99 target "
             "40 ms). First a planner lists candidates; then prototype them in parallel; then debate.",
             role="orchestrator")
    b.spawn(o, "planner", "planner", 2.6, "Spawn planner.", model=GPT)
    rp = b.ret("planner", o, 3.0, 8.0, "Candidates: (A) in-process LRU per pod, (B) Redis read-through, (C) "
               "CDN edge cache with 60 s TTL. Benchmark each with the replayed production trace.")
    designs = [("proto_lru", "A: in-process LRU", "p99 31 ms, hit rate 71%, stale reads after price updates "
                "for up to 5 min", 18.0),
               ("proto_redis", "B: Redis read-through", "p99 38 ms, hit rate 93%, invalidation on write "
                "works", 22.0),
               ("proto_cdn", "C: CDN edge cache", "p99 12 ms for anonymous users, but personalised prices "
                "bypass the cache: p99 for logged-in users 95 ms", 26.0)]
    rets = [rp]
    for k, (name, what, result, dur) in enumerate(designs):
        b.spawn(o, name, "prototyper", 11.3 + 0.2 * k, f"Spawn {name} to build and benchmark {what}.",
                model=MINI)
        b.tool(name, "shell.run", 12.0 + 0.2 * k, dur, f"./bench.sh --design {name[6:]} --replay prod-2024-11",
               result, result_agent="shell.run", trusted=True)
        rets.append(b.ret(name, o, 12.5 + 0.2 * k + dur, 1.5, f"{what}: {result}."))
    t = 41.0
    b.decide(o, t, 1.5, "communicate", "Numbers are in. A and B both meet the target; C fails for logged-in "
             "users. Run a short debate between A and B with a judge.")
    b.spawn(o, "advocate_lru", "debater", t + 1.6, "Spawn advocate for A.", model=SMALL)
    b.spawn(o, "advocate_redis", "debater", t + 1.7, "Spawn advocate for B.", model=SMALL)
    b.spawn(o, "judge", "judge", t + 1.8, "Spawn judge.", model=BIG)
    b.message("advocate_lru", "advocate_redis", t + 2.2, 5.0, "A is fastest (31 ms) and needs no new "
              "infrastructure.")
    b.message("advocate_redis", "advocate_lru", t + 7.5, 5.0, "A serves stale prices for up to 5 minutes "
              "after an update, a correctness bug for checkout; B invalidates on write and still meets 40 ms.")
    b.message("advocate_lru", "judge", t + 13.0, 1.0, "A's case.")
    b.message("advocate_redis", "judge", t + 13.2, 1.0, "B's case.")
    rj = b.ret("judge", o, t + 14.5, 7.0, "Ruling: B. Both meet the latency target; only B avoids stale "
               "prices, which the benchmark of A showed. C is out (95 ms for logged-in users).")
    rets.append(rj)
    b.aggregate(o, t + 22.0, 4.0, "Decision: Redis read-through cache (B): p99 38 ms, 93% hit rate, "
                "correct invalidation. In-process LRU rejected for stale prices; CDN rejected for "
                "personalised traffic (95 ms).", rets)
    b.decide(o, t + 26.3, 0.6, "stop", "Decision made with evidence; stop.", role="orchestrator")
    return b.finalize({"team": 1.0, "orchestration": 0.8, "debate": 0.9},
                      {"task_success": 1, "parallelism_efficiency": 0.66, "protocol_overhead": 0.26})


def unknown_without_stop() -> dict:
    """An imported run of an unknown framework with no explicit stop decision, so orchviz infers it."""
    b = TraceBuilder("demo-08-unknown-no-stop", "summarise-incident-ticket", "unknown",
                     "Unknown topology from an unlabelled framework, with NO explicit stop decision: orchviz "
                     "has to infer where the run ended (the last aggregate).")
    b.model("agent_a", MINI)
    b.model("agent_b", MINI)
    b.decide("agent_a", 0.0, 1.5, "delegate", "Ticket INC-4471 is 80 messages long; ask agent_b to pull "
             "the timeline while I draft the impact section.", to="agent_b")
    b.tool("agent_b", "sql.query", 2.0, 1.8, "SELECT ts, author, body FROM ticket_messages WHERE "
           "ticket='INC-4471' ORDER BY ts", "80 rows; first 2024-06-03 09:12 'Checkout 500s spiking', last "
           "2024-06-03 11:47 'Rolled back, error rate normal'", result_agent="sql.query")
    b.message("agent_b", "agent_a", 4.2, 3.5, "Timeline: 09:12 alert on checkout 500s; 09:40 linked to "
              "deploy 2024.06.03-1; 11:31 rollback started; 11:47 recovered. 2 h 35 min of impact.")
    b.tool("agent_a", "sql.query", 2.2, 2.5, "SELECT count(*) FROM orders_failed WHERE ts BETWEEN "
           "'2024-06-03 09:12' AND '2024-06-03 11:47'", "1,318", result_agent="sql.query")
    r = b.ret("agent_b", "agent_a", 8.0, 1.0, "Timeline done.")
    b.aggregate("agent_a", 9.5, 4.0, "Summary: a bad deploy (2024.06.03-1) caused checkout 500s from 09:12 "
                "to 11:47 (2 h 35 min); 1,318 orders failed; resolved by rollback.", [r])
    return b.finalize({"team": 1.0}, {"task_success": 1})


def dropped_finding() -> dict:
    """Two researchers disagree; the aggregate keeps the wrong claim and drops the correct, sourced one."""
    b = TraceBuilder("demo-09-review-dropped-finding", "python-gil-optional", "centralized",
                     "REVIEW CASE, unfaithful aggregation: researcher_pep found the correct answer (free-"
                     "threaded build is experimental in 3.13), the final answer drops it and repeats the "
                     "blog's wrong '3.12 removed the GIL'.")
    o = "orchestrator"
    b.model(o, MINI)
    b.decide(o, 0.0, 2.0, "spawn", "Question: in which Python version did the GIL become optional, and is "
             "it the default? Spawn two researchers: one on the PEP record, one on news coverage.",
             role="orchestrator")
    b.spawn(o, "researcher_pep", "researcher", 2.1, "Spawn researcher for PEPs and release notes.", model=SMALL)
    b.spawn(o, "researcher_news", "researcher", 2.2, "Spawn researcher for news coverage.", model=SMALL)
    b.tool("researcher_pep", "web.fetch", 3.0, 2.5, "https://peps.python.org/pep-0703/",
           "PEP 703 - Making the Global Interpreter Lock Optional in CPython. Status: Accepted (2023). The "
           "free-threaded build is available as an experimental option starting with Python 3.13.",
           result_agent="web.fetch")
    b.tool("researcher_pep", "web.fetch", 6.0, 2.0, "https://docs.python.org/3.13/whatsnew/3.13.html",
           "What's New in Python 3.13: 'CPython now has experimental support for running in a free-threaded "
           "mode, with the GIL disabled... a separate executable (python3.13t).' The default build keeps "
           "the GIL.", result_agent="web.fetch")
    rp = b.ret("researcher_pep", o, 8.5, 2.5, "Correct answer, two primary sources: the GIL became optional "
               "in Python 3.13 (Oct 2024) as an EXPERIMENTAL free-threaded build (python3.13t); the default "
               "build still has the GIL (PEP 703, What's New in 3.13).")
    b.tool("researcher_news", "web.search", 3.1, 1.8, "python removes GIL",
           "'Python 3.12 finally removes the GIL' - techblog.example (July 2023) ...",
           result_agent="web.search")
    rn = b.ret("researcher_news", o, 5.2, 1.5, "A tech blog says Python 3.12 removed the GIL (July 2023). "
               "Single source, not checked.")
    b.aggregate(o, 11.2, 3.0, "Final answer: Python 3.12 removed the GIL, so Python code now runs truly in "
                "parallel by default.", [rn, rp])
    b.decide(o, 14.4, 0.5, "stop", "Answer ready; stop.", role="orchestrator")
    return b.finalize({"team": 0.0, "orchestration": -0.5, "faithfulness": 0.0},
                      {"task_success": 0, "error_amplification": 1, "dropped_findings": 1})


def premature_stop() -> dict:
    """The orchestrator stops before the database analyst returns the actual root cause."""
    b = TraceBuilder("demo-10-review-premature-stop", "checkout-latency-regression", "centralized",
                     "REVIEW CASE, premature stop: the orchestrator stops at t=31 while db_analyst is still "
                     "running; its return at t=50 holds the real root cause (missing index).")
    o = "orchestrator"
    b.model(o, GPT)
    b.decide(o, 0.0, 2.5, "spawn", "Checkout p99 rose from 180 ms to 1.4 s on Tuesday. Spawn three analysts "
             "in parallel: logs, deploys, database.", role="orchestrator")
    for k, name in enumerate(("log_analyst", "deploy_analyst", "db_analyst")):
        b.spawn(o, name, "analyst", 2.6 + 0.1 * k, f"Spawn {name}.", model=MINI)
    b.tool("log_analyst", "web.search", 3.2, 4.0, "service:checkout latency>1s last 7d group by endpoint",
           "POST /checkout/confirm dominates the slow requests (92%).", result_agent="log.search")
    rl = b.ret("log_analyst", o, 8.0, 2.0, "Slowness is on POST /checkout/confirm (92% of slow requests).")
    b.tool("deploy_analyst", "shell.run", 3.4, 3.0, "deployctl history checkout --since 7d",
           "Tue 10:02 checkout v2.3.0 (adds coupon validation); Wed 14:10 v2.3.1", result_agent="shell.run")
    rd = b.ret("deploy_analyst", o, 7.5, 2.0, "v2.3.0 deployed Tue 10:02, same day as the regression. "
               "Correlation only; not yet confirmed.")
    b.tool("db_analyst", "sql.query", 3.6, 46.0, "EXPLAIN ANALYZE the top 20 queries of /checkout/confirm "
           "from pg_stat_statements", "coupon_redemptions lookup does a Seq Scan on 41 M rows (1.1 s); no "
           "index on (user_id, coupon_id) since migration 0193 dropped it on Tue 09:55.",
           result_agent="sql.query")
    b.aggregate(o, 24.0, 5.0, "Root cause: the v2.3.0 deploy. Recommend rolling back v2.3.0.", [rl, rd])
    b.decide(o, 31.0, 1.0, "stop", "Two of three analysts agree on the timing of v2.3.0; good enough. "
             "Stopping without waiting for db_analyst.", role="orchestrator")
    b.ret("db_analyst", o, 50.2, 3.0, "ROOT CAUSE: migration 0193 (Tue 09:55) dropped the index on "
          "coupon_redemptions(user_id, coupon_id); the confirm endpoint now seq-scans 41 M rows. Fix: "
          "recreate the index. Rolling back v2.3.0 will NOT fix it, since the migration is not reverted.")
    return b.finalize({"team": 0.0, "orchestration": -0.8},
                      {"task_success": 0, "wasted_subagent_results": 1, "parallelism_efficiency": 0.4})


def late_stop() -> dict:
    """The answer is found and verified at t=14, yet the orchestrator keeps spawning for two more rounds."""
    b = TraceBuilder("demo-11-review-late-stop", "postgres-16-release-date", "centralized",
                     "REVIEW CASE, late stop: researcher_1 returns the verified answer at t=14; the "
                     "orchestrator continues with two more rounds of agents that only confirm it, stopping "
                     "at t=91.")
    o = "orchestrator"
    b.model(o, GPT)
    b.decide(o, 0.0, 1.5, "spawn", "Question: when was PostgreSQL 16 released? Spawn one researcher.",
             role="orchestrator")
    b.spawn(o, "researcher_1", "researcher", 1.6, "Spawn researcher_1.", model=MINI)
    b.tool("researcher_1", "web.fetch", 2.2, 2.0, "https://www.postgresql.org/about/news/postgresql-16-"
           "released-2715/", "PostgreSQL 16 Released! Posted on 2023-09-14 by PostgreSQL Global "
           "Development Group", result_agent="web.fetch", trusted=True)
    b.tool("researcher_1", "web.fetch", 5.0, 2.0, "https://www.postgresql.org/support/versioning/",
           "Version 16: first release September 14, 2023.", result_agent="web.fetch", trusted=True)
    rets = [b.ret("researcher_1", o, 8.0, 6.0, "PostgreSQL 16 was released on 14 September 2023 "
                  "(official announcement and versioning page agree). Confidence: high.")]
    t = 15.0
    for rnd, n in ((2, 3), (3, 4)):
        b.decide(o, t, 2.0, "continue", f"Round {rnd}: spawn {n} more researchers to double-check the date "
                 "across more sources before answering.")
        t += 2.2
        for k in range(n):
            name = f"researcher_r{rnd}_{k}"
            b.spawn(o, name, "researcher", t + 0.1 * k, f"Spawn {name}.", model=MINI)
            b.tool(name, "web.search", t + 0.5 + 0.1 * k, 3.0 + k, "PostgreSQL 16 release date",
                   "September 14, 2023 (multiple sources)", result_agent="web.search")
            rets.append(b.ret(name, o, t + 5.0 + 1.5 * k, 12.0 + 2 * k, "Confirmed: 14 September 2023."))
        t += 35.0
    b.aggregate(o, t - 2.0, 3.0, "PostgreSQL 16 was released on 14 September 2023.", rets)
    b.decide(o, t + 1.5, 0.5, "stop", "Eight agents agree; stop.", role="orchestrator")
    return b.finalize({"team": 1.0, "orchestration": -0.6},
                      {"task_success": 1, "time_to_first_correct_s": 14.0, "agents_after_answer": 7,
                       "protocol_overhead": 0.81})


def over_spawning() -> dict:
    """Twelve agents are spawned to convert 72 degrees Fahrenheit to Celsius."""
    b = TraceBuilder("demo-12-review-over-spawning", "convert-72f-to-c", "centralized",
                     "REVIEW CASE, over-spawning: 12 sub-agents for a one-line unit conversion that one "
                     "calculator call answers; compare tokens and cost with the trivial task.")
    o = "orchestrator"
    b.model(o, "claude-3-opus-20240229")
    b.decide(o, 0.0, 6.0, "spawn", "Question: what is 72 F in Celsius? To be thorough I will assemble a full "
             "team: a planner, three researchers for the formula, two calculators, two verifiers, a critic, "
             "a unit-standards expert, a formatter and a summariser.", role="orchestrator")
    team = [("planner", "planner"), ("researcher_1", "researcher"), ("researcher_2", "researcher"),
            ("researcher_3", "researcher"), ("calculator_1", "calculator"), ("calculator_2", "calculator"),
            ("verifier_1", "verifier"), ("verifier_2", "verifier"), ("critic", "critic"),
            ("units_expert", "expert"), ("formatter", "formatter"), ("summariser", "summariser")]
    answers = {
        "planner": "Plan: look up the formula, compute, verify twice, critique, format, summarise.",
        "researcher_1": "Formula: C = (F - 32) x 5/9 (NIST SP 811).",
        "researcher_2": "Formula confirmed: C = (F - 32) / 1.8.",
        "researcher_3": "Formula confirmed via Wikipedia 'Fahrenheit'.",
        "calculator_1": "(72 - 32) x 5/9 = 22.22 C.",
        "calculator_2": "(72 - 32) / 1.8 = 22.22 C.",
        "verifier_1": "Verified 22.22 C.",
        "verifier_2": "Verified 22.2 C (rounded).",
        "critic": "No issues; suggest one decimal place.",
        "units_expert": "Degrees Celsius is the SI-accepted unit; 22.2 C.",
        "formatter": "Formatted: 72 F = 22.2 C.",
        "summariser": "Summary: 72 F is about 22.2 C.",
    }
    rets = []
    for k, (name, role) in enumerate(team):
        b.spawn(o, name, role, 6.2 + 0.3 * k, f"Spawn {name} ({role}).", model=SMALL if k % 2 else MINI)
        if role == "calculator":
            b.tool(name, "calculator", 7.0 + 0.3 * k, 0.4, "(72-32)*5/9", "22.2222222", result_agent="calculator",
                   trusted=True)
        rets.append(b.ret(name, o, 8.0 + 0.9 * k, 3.5, answers[name]))
        if k and k % 4 == 0:
            b.message(name, "critic", 9.0 + 0.9 * k, 2.0, f"{name} shares its result with the critic.")
    b.aggregate(o, 22.0, 5.0, "72 F = 22.2 C.", rets)
    b.decide(o, 27.2, 0.5, "stop", "All twelve agents agree; stop.", role="orchestrator")
    return b.finalize({"team": 1.0, "orchestration": -0.9},
                      {"task_success": 1, "agents_spawned": 12, "agents_needed": 0, "protocol_overhead": 0.95})


DEMOS: dict[str, Callable[[], dict]] = {
    "01_centralized_research_faithful.json": centralized_research_faithful,
    "02_planner_executor_critic_sql.json": planner_executor_critic,
    "03_debate_with_judge.json": debate_with_judge,
    "04_swarm_parallel_audit.json": parallel_swarm,
    "05_hierarchical_three_levels.json": hierarchical_three_levels,
    "06_harness_coding_agent.json": harness_coding_agent,
    "07_mixed_cache_design.json": mixed_topology,
    "08_unknown_no_explicit_stop.json": unknown_without_stop,
    "09_review_dropped_finding.json": dropped_finding,
    "10_review_premature_stop.json": premature_stop,
    "11_review_late_stop.json": late_stop,
    "12_review_over_spawning.json": over_spawning,
}
"""Output file name -> function building that demo trace."""


def build(out_dir: Path = HERE) -> list[Path]:
    """Write every demo trace into ``out_dir`` as 2-space-indented JSON; return the paths written."""
    written = []
    for name, make in DEMOS.items():
        path = out_dir / name
        path.write_text(json.dumps(make(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for written in build():
        print(f"wrote {written.relative_to(HERE.parent)} ({written.stat().st_size // 1024} KB)")
