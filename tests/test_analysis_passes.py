"""The analysis finds its structure and figures in few passes over the events (what indexing a
pool spends most of its time on): each fused pass gives exactly what the plain passes it
replaced gave, written out here as the specification, on the demos, synthetic traces and
traces of odd structure (results matching no call, agents spawned twice or in a cycle, returns
to no agent, events before their agent's spawn), read as models and as records."""

from __future__ import annotations

import copy
import random
from collections import Counter, defaultdict, deque

import orjson
import pytest

from factories import demo_paths
from viz_app.analysis import analyze
from viz_app.io.native import trace_from_dict, trace_from_json
from viz_app.labels.rubric import default_rubric, required_questions
from viz_app.model import TOPOLOGIES
from viz_app.summary import search_text
from viz_app.synth import synth_trace


def odd(raw: dict, seed: int) -> dict:
    """A synthetic trace given odd but legal structure, differently for each seed."""
    pick = random.Random(seed)
    raw = copy.deepcopy(raw)
    events = raw["events"]
    for e in pick.sample(events, min(len(events), 8)):
        change = pick.randrange(6)
        if change == 0 and e["type"] == "tool_result":
            e["tool"] = "no-such-tool"  # matches no call
        elif change == 1:
            e["t"] = pick.choice([0, e["t"] * 2])  # out of order, maybe before its spawn
        elif change == 2 and e["type"] in ("return", "message"):
            e["to"] = "ghost"
        elif change == 3:
            e["end_t"] = e["t"] + pick.random() * 3
        elif change == 4:
            e.pop("content", None)
            e["content_ref"] = "ref:" + e["id"]
        elif change == 5:
            e["tokens"], e["cost_usd"] = pick.choice([(5, 0.01), (-1, -2), (1e20, 0)])
    spawns = [e for e in events if e["type"] == "spawn"]
    if spawns and seed % 3 == 0:
        events.append({**spawns[0], "id": "again", "t": spawns[0]["t"] + 0.5})
    if spawns and seed % 4 == 1:
        events.append({**spawns[-1], "id": "cycle", "agent": spawns[-1]["to"],
                       "to": spawns[0]["agent"]})
    if seed % 5 == 2:
        events.append({"id": "stray", "t": 1.0, "type": "tool_result", "agent": "lonely",
                       "tool": "search"})
    if seed % 2 == 0:
        events.append({"id": "stop", "t": max(e["t"] for e in events),
                       "type": "orchestrator_decision", "agent": events[0]["agent"],
                       "decision": "stop"})
    return raw


def corpus() -> list[tuple[str, bytes]]:
    found = [(p.stem, p.read_bytes()) for p in demo_paths()]
    for i in range(24):
        raw = synth_trace(2 + i % 9, 20 + i * 37 % 300, TOPOLOGIES[i % len(TOPOLOGIES)], seed=i)
        found += [(f"synthetic-{i}", orjson.dumps(raw)), (f"odd-{i}", orjson.dumps(odd(raw, i)))]
    return found


CORPUS = corpus()


# -- the plain passes, one fact each, as they were written before they were fused ---------------


def plain_structure(a) -> dict:
    """Actors (results matched to calls), spawn tree, events per agent and the warnings."""
    events = a.trace.events_by_id
    linked = {}
    for edge in a.trace.edges:
        src, dst = events[edge.src], events[edge.dst]
        if src.type == "tool_call" and dst.type == "tool_result" and dst.id not in linked:
            linked[dst.id] = src.id
    waiting, answered, matched = defaultdict(deque), set(), set(linked.values())
    actor, call_of, warnings = {}, {}, []
    for e in a.order:
        if e.type == "tool_call" and e.id not in matched:
            waiting[(None, e.tool)].append(e)
            waiting[(e.agent, e.tool)].append(e)
        if e.type != "tool_result":
            actor[e.id] = e.agent
            continue
        call = events[linked[e.id]] if e.id in linked else None
        keys = ([(e.agent, e.tool)] if e.agent in a.agent_names else []) + [(None, e.tool)]
        for key in keys if call is None else ():
            while call is None and waiting.get(key):
                candidate = waiting[key].popleft()
                if candidate.id not in answered:
                    call = candidate
        if call is None:
            actor[e.id] = e.agent
            warnings.append(("unmatched_tool_result", e.id))
        else:
            call_of[e.id] = call.id
            answered.add(call.id)
            actor[e.id] = call.agent
    parent, spawn_event = {}, {}

    def ancestors(agent):
        while agent in parent:
            agent = parent[agent]
            yield agent

    for e in a.order:
        if e.type != "spawn" or not e.to:
            continue
        child, by = e.to, actor[e.id]
        if child in parent or child in spawn_event:
            warnings.append(("spawned_twice", e.id))
        elif child == by or child in ancestors(by):
            warnings.append(("spawn_cycle", e.id))
            spawn_event[child] = e
        else:
            parent[child], spawn_event[child] = by, e
    events_of = defaultdict(list)
    for e in a.order:
        events_of[actor[e.id]].append(e)
    for e in a.order:
        if e.type == "return" and e.to and e.to not in a.agent_names:
            warnings.append(("return_to_unknown_agent", e.id))
    for child, spawn in spawn_event.items():
        if child in events_of and events_of[child][0].t < spawn.t:
            warnings.append(("event_before_spawn", events_of[child][0].id))
    return {"actor": actor, "call_of_result": call_of, "parent": parent,
            "spawn_event": {child: e.id for child, e in spawn_event.items()},
            "events_of": {agent: [e.id for e in es] for agent, es in events_of.items()},
            "warnings": warnings}


def plain_work(a) -> tuple[dict, dict]:
    """Each event's work time and when it ended."""
    result_of = {call: result for result, call in a.call_of_result.items()}
    spans = {}
    for e in a.order:
        span = e.end_t - e.t if e.end_t is not None else 0.0
        if span == 0 and e.type == "tool_call" and e.id in result_of:
            span = max(0.0, a.trace.event(result_of[e.id]).t - e.t)
        spans[e.id] = span
    return spans, {e.id: e.t + spans[e.id] for e in a.order}


def plain_words(trace, limit: int) -> str:
    a = analyze(trace)
    head = [trace.trace_id, trace.task_id, trace.system or "", trace.topology or "",
            trace.source_format, *a.agents, *sorted({a.role_of(x) for x in a.agents}),
            *sorted({e.tool for e in trace.events if e.tool})]
    text = "\n".join(head)
    budget, parts = max(0, limit - len(text)), []
    for event in a.order:
        if budget <= 0:
            break
        parts.append(event.text[:budget])
        budget -= len(parts[-1]) + 1
    return (text + "\n" + "\n".join(parts)).lower()


def general(data: bytes, name: str):
    """The trace the general path builds (pydantic validates the parsed object, msgspec builds)."""
    return trace_from_dict(orjson.loads(data), name)


READERS = {"compiled": trace_from_json, "general": general}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("name,data", CORPUS, ids=[name for name, _ in CORPUS])
def test_the_fused_passes_find_what_the_plain_passes_find(name, data, reader):
    a = analyze(READERS[reader](data, name))
    plain = plain_structure(a)
    assert a.actor == plain["actor"] and a.call_of_result == plain["call_of_result"]
    assert a.parent == plain["parent"]
    assert {child: e.id for child, e in a.spawn_event.items()} == plain["spawn_event"]
    assert {agent: [e.id for e in es] for agent, es in a.events_of.items()} == \
        plain["events_of"]
    assert [(w.code, w.event_id) for w in a.structural] == plain["warnings"]
    assert (a.duration, a._ends) == plain_work(a)
    assert a.type_counts == Counter(e.type for e in a.order)
    assert {kind: [e.id for e in es] for kind, es in a.of_type.items()} == {
        kind: [e.id for e in a.order if e.type == kind] for kind in a.type_counts}


@pytest.mark.parametrize("name,data", CORPUS, ids=[name for name, _ in CORPUS])
def test_the_index_finds_the_targets_without_the_aggregates_inputs(name, data):
    rubric = default_rubric()
    a = analyze(trace_from_json(data, name))
    assert [(s.event_id, s.inferred) for s in a.stops] == [
        (e.id, a.stop_events[1]) for e in a.stop_events[0]]
    from viz_app.labels.rubric import counted, targets

    assert required_questions(rubric, a) == {t.key: t.required for t in targets(rubric, a)
                                             if counted(t)}


@pytest.mark.parametrize("limit", [0, 40, 300, 200_000])
@pytest.mark.parametrize("name,data", CORPUS[::5], ids=[name for name, _ in CORPUS[::5]])
def test_the_words_are_the_plain_passes_words_whatever_the_limit(name, data, limit):
    trace = trace_from_json(data, name)
    assert search_text(trace, limit) == plain_words(trace, limit)
