"""Campaigns over a pool (`orchviz app --traces POOL`): a campaign is filtered and sampled in the
pool's index (the same draw as `ws.library.sample_pool`), reviewed, saved and exported end to end;
and every page that opens a trace by id (Review, Adjudicate, Compare) opens a pool's trace
(AppTest)."""

from __future__ import annotations

import orjson
import pytest
from streamlit.testing.v1 import AppTest

from factories import APP, app_env, charts_drawn
from test_library_pool import pool_workspace
from viz_app.errors import LabelError
from viz_app.labels.campaign import CampaignSpec, Filter, Sample
from viz_app.labels.label import Reviewer
from viz_app.text import markdown_literal
from viz_app.workspace import Workspace

LEAD = Reviewer(name="lee", via="cli")
ANN = Reviewer(name="ann", via="self-declared")
BOB = Reviewer(name="bob", via="self-declared")


@pytest.fixture
def ws(tmp_path) -> Workspace:
    """A workspace whose only traces are a pool of 120 rollouts (30 tasks of 4, four
    topologies), indexed."""
    return pool_workspace(tmp_path)


def create(ws: Workspace, name: str = "pilot", **spec) -> str:
    spec.setdefault("questions", ["task_outcome"])
    return ws.campaigns.create(CampaignSpec(name=name, **spec), LEAD).name


def traces_of(ws: Workspace, name: str) -> list[str]:
    return [t.trace_id for t in ws.campaigns.targets(ws.campaigns.get(name))]


# -- through the Workspace ----------------------------------------------------------------------


def test_a_pool_campaign_is_sampled_claimed_saved_and_exported_end_to_end(ws, tmp_path):
    drawn = ws.library.sample_pool(8, seed=3, stratify="topology")
    name = create(ws, sample=Sample(kind="stratified", n=8, seed=3, field="topology"))
    assert traces_of(ws, name) == drawn  # the library's sample, in its order
    saved = 0
    while (claim := ws.campaigns.claim_next(name, ANN)) is not None:
        ws.campaigns.submit(claim, {"task_outcome": "success" if saved % 2 else "failure"})
        saved += 1
    status = ws.campaigns.status(name)
    assert (saved, status.complete, status.targets) == (8, 8, 8)
    out = tmp_path / "pilot.jsonl"
    ws.exports.write("jsonl", out, campaign=name)
    records = [orjson.loads(x) for x in out.read_bytes().splitlines()]
    assert sorted(r["trace_id"] for r in records) == sorted(drawn)
    hashes = {r.trace_id: r.sha256 for r in ws.library.pool_index().page(limit=200)}
    assert all(r["trace_sha256"] == hashes[r["trace_id"]] and r["campaign"] == name
               for r in records)


def test_a_training_export_of_a_pool_campaign_reads_only_its_labelled_traces(ws, tmp_path):
    name = create(ws, sample=Sample(kind="random", n=3, seed=6))
    while (claim := ws.campaigns.claim_next(name, ANN)) is not None:
        ws.campaigns.submit(claim, {"task_outcome": "success"})
    result = ws.exports.write("traces", tmp_path / "labelled", campaign=name)
    assert result.left_out == []
    written = [orjson.loads(path.read_bytes()) for path in result.written]
    assert sorted(r["trace_id"] for r in written) == sorted(ws.library.sample_pool(3, seed=6))


def test_a_random_pool_sample_is_the_libraries_draw_for_the_seed(ws):
    name = create(ws, sample=Sample(kind="random", n=10, seed=7))
    assert traces_of(ws, name) == ws.library.sample_pool(10, seed=7)


def test_a_pool_campaign_filters_in_the_index(ws):
    name = create(ws, filter=Filter(topologies=["swarm"], text="rollout-00"))
    assert traces_of(ws, name) == [f"rollout-{i:04d}" for i in range(2, 100, 4)]


def test_a_pool_campaign_of_whole_groups_takes_every_rollout_of_each_task(ws):
    name = create(ws, sample=Sample(kind="groups", n=3, seed=1))
    found = traces_of(ws, name)
    tasks = [int(t[-4:]) // 4 for t in found]
    assert len(found) == 12 and len(set(tasks)) == 3
    assert all(tasks[i] == tasks[i - i % 4] for i in range(12))  # a group's rollouts together


def test_a_pool_campaign_of_an_optional_question_reads_its_traces_targets(ws):
    name = create(ws, questions=["spawn_necessity"], sample=Sample(kind="random", n=3, seed=2))
    targets = ws.campaigns.targets(ws.campaigns.get(name))
    trace = ws.library.trace(targets[0].trace_id)
    spawns = [t.key for t in ws.library.targets(trace) if "spawn_necessity" in t.questions]
    assert len(targets) == 3 * len(spawns) and spawns
    claim = ws.campaigns.claim_next(name, ANN)
    assert ws.campaigns.submit(claim, {"spawn_necessity": "necessary"})[0].event_id == claim.event_id


def test_a_pool_campaign_takes_gold_from_the_pool(ws):
    gold = [{"trace_id": "rollout-0005", "event_id": None, "question": "task_outcome",
             "value": "success"}]
    campaign = ws.campaigns.create(
        CampaignSpec(name="gold", questions=["task_outcome"],
                     sample=Sample(kind="random", n=4, seed=9)), LEAD, gold_records=gold)
    rows = ws.campaigns.targets(campaign, gold_only=True)
    assert [(r.trace_id, r.gold_answers) for r in rows] == [
        ("rollout-0005", {"task_outcome": "success"})]


def test_a_pool_campaign_refuses_a_folder_filter_and_an_unknown_pool(ws):
    with pytest.raises(LabelError, match="no folder filter"):
        create(ws, filter=Filter(folders=["/somewhere"]))
    with pytest.raises(LabelError, match="lists no pool '/elsewhere'"):
        create(ws, pool="/elsewhere")


# -- the pages, in AppTest ----------------------------------------------------------------------


@pytest.fixture
def app(ws, monkeypatch) -> Workspace:
    ws = app_env(monkeypatch, ws)
    ws.library.pool_index().close()  # the app's own Workspace opens the index (one process here)
    return ws


def page(path: str | None, reviewer: str = "ann", **params) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["reviewer"] = reviewer  # typed before, kept for the session
    for key, value in params.items():
        at.query_params[key] = value
    if path:
        at.switch_page(path)
    return at.run()


def test_the_review_page_opens_a_pool_campaigns_target_and_saves_it(app):
    name = create(app, sample=Sample(kind="random", n=2, seed=4))
    at = page(None, campaign=name)
    at.button(key="review:start").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    claim = at.session_state["_review"]["claim"]
    assert claim.trace_id in app.library.sample_pool(2, seed=4)
    assert any(markdown_literal(claim.trace_id) in c.value for c in at.caption)
    assert charts_drawn(at) >= 2  # the pool trace's tree and timeline
    next(r for r in at.radio if r.key.endswith(":task_outcome")).set_value("partial")
    next(b for b in at.button if ":save:" in b.key).click().run()
    assert not at.exception, at.exception
    saved = app.labelling.current(claim.trace_id, campaign=name)
    assert [(x.question, x.value) for x in saved] == [("task_outcome", "partial")]


def test_the_adjudicate_page_opens_a_pool_traces_disagreement(app):
    name = create(app, per_target=2, sample=Sample(kind="random", n=1, seed=5))
    for reviewer, value in ((ANN, "success"), (BOB, "failure")):
        claim = app.campaigns.claim_next(name, reviewer)
        app.campaigns.submit(claim, {"task_outcome": value})
    app.library.pool_index().close()
    at = page("app_pages/adjudicate.py", reviewer="lee", campaign=name)
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    trace_id = app.library.sample_pool(1, seed=5)[0]
    assert any("Disagreement 1 of 1" in c.value and markdown_literal(trace_id) in c.value
               for c in at.caption)
    assert charts_drawn(at) >= 2


def test_the_compare_page_opens_two_rollouts_of_a_pool(app):
    at = page("app_pages/compare.py", a="rollout-0040", b="rollout-0041")
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert at.selectbox(key="compare:a").value == "rollout-0040"
    assert at.selectbox(key="compare:b").value == "rollout-0041"
    assert any("rollout-0043" in o for o in at.selectbox(key="compare:b").options)  # group
    assert len(at.get("plotly_chart")) >= 3  # two trees and the shared timeline


def test_the_compare_page_over_a_pool_alone_opens_on_its_first_traces(app):
    at = page("app_pages/compare.py")
    assert not at.exception, at.exception
    assert not at.info and at.selectbox(key="compare:a").value == "rollout-0000"


def test_the_review_page_says_a_closed_campaign_hands_out_nothing(app):
    name = create(app, sample=Sample(kind="random", n=2, seed=4))
    app.campaigns.close(name, LEAD)
    at = page(None, campaign=name)
    assert not at.exception, at.exception
    assert any("was closed by a lead" in i.value for i in at.info)
    assert not any(b.key == "review:start" for b in at.button)


def test_a_pool_campaign_of_traces_ticked_by_hand_takes_those_traces_only(ws):
    ticked = [r.trace_id for r in ws.library.pool_index().page(limit=200)][5:8]
    name = create(ws, name="ticked", filter=Filter(trace_ids=ticked))
    assert sorted(traces_of(ws, name)) == sorted(ticked)


def test_the_campaigns_page_makes_a_campaign_of_rows_ticked_in_the_pools_table(ws, monkeypatch):
    app_env(monkeypatch, ws)
    ticked = [r.trace_id for r in ws.library.pool_index().page(limit=200)][:2]
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["reviewer"] = "lee"
    at.session_state["_library_filter"] = {"picked": ticked, "pool": ws.library.pools[0]}
    at.switch_page("app_pages/campaigns.py")
    at = at.run()
    assert at.radio(key="camp:source").value == "ticked"
    at.text_input(key="camp:name").input("ticked")
    at.multiselect(key="camp:questions").set_value(["task_outcome"])
    at = at.button[[b.label for b in at.button].index("Make the campaign")].click().run()
    assert not at.exception, at.exception
    assert sorted(traces_of(ws, "ticked")) == sorted(ticked)
    assert ws.campaigns.get("ticked").spec.pool == ws.library.pools[0]
