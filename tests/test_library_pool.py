"""The library page over a pool: pages, sorts, filters, counts, histograms and samples come from
the pool's index (AppTest), and a reviewer browses it in Chromium (`orchviz app --traces POOL`)."""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from conftest import shot, wait_for_streamlit
from factories import APP, app_env, example_trace, make_workspace
from viz_app.analysis import task_text
from viz_app.io import pool
from viz_app.labels import Filter
from viz_app.query import Condition
from viz_app.workspace import Workspace

TOPOLOGIES = ["centralized", "debate", "swarm", "hierarchical"]
COUNT = 120


def rollouts(count: int = COUNT):
    """Rollouts of 30 tasks (GRPO groups of 4), topologies and a team reward that vary."""
    return [example_trace(f"rollout-{i:04d}", task_id=f"task-{i // 4:02d}",
                          topology=TOPOLOGIES[i % 4],
                          rewards={"team": round((i * 37 % 100) / 100, 2), "tool": 0.5})
            for i in range(count)]


def pool_workspace(tmp_path, bad_shard: bool = False) -> Workspace:
    location = tmp_path / "pool"
    pool.write_pool(rollouts(), str(location), shard_rows=40, row_group_rows=8)
    if bad_shard:  # a shard the manifest does not know is not read; a bare folder's would be
        (location / "part-00001.parquet").write_bytes(b"PAR1 cut short")
    workspace = make_workspace(tmp_path, traces=[location])
    workspace.library.update_pool_index(workers=1)
    workspace.library.pool_index().close()  # so that an app server (another process) may open it
    return workspace


@pytest.fixture
def pool_env(tmp_path, monkeypatch) -> Workspace:
    return app_env(monkeypatch, pool_workspace(tmp_path))


def run(trace: str | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    if trace:
        at.query_params["trace"] = trace
    return at.run()


def listed(at: AppTest) -> list[str]:
    return at.dataframe[0].value["trace id"].tolist()


def captions(at: AppTest) -> str:
    return " ".join(c.value for c in at.caption)


def test_the_first_page_shows_fifty_of_the_pools_traces(pool_env):
    at = run()
    assert not at.exception
    assert listed(at) == [f"rollout-{i:04d}" for i in range(50)]
    assert "120 of 120 traces · page 1 of 3" in captions(at)


def test_the_pools_table_shows_each_task_in_its_own_words(pool_env):
    # the pool's index keeps the words analysis.task_text reads, as the folder index does
    tasks = run().dataframe[0].value["task"].tolist()
    assert tasks == [task_text(t) for t in rollouts()[:50]]
    assert tasks[0] != "task-00"


def test_the_next_page_shows_the_next_fifty(pool_env):
    at = run()
    at.button(key="pool_next").click().run()
    assert listed(at) == [f"rollout-{i:04d}" for i in range(50, 100)]
    at.button(key="pool_next").click().run()
    assert len(listed(at)) == 20 and at.button(key="pool_next").disabled


def test_filters_and_a_search_count_in_the_index(pool_env):
    at = run()
    at.multiselect(key="pool_topologies").select("swarm").run()
    assert "30 of 120 traces" in captions(at)
    at.text_input(key="pool_filter").input("reward.team>=0.5, group~task-0").run()
    shown = listed(at)
    assert shown and all(int(t[-4:]) % 4 == 2 and int(t[-4:]) < 40 for t in shown)
    at.text_input(key="pool_filter").input("").run()
    at.text_input(key="pool_query").input("rollout-0042").run()
    assert listed(at) == ["rollout-0042"]


def test_a_bad_filter_says_why_in_one_sentence_and_lists_the_rest(pool_env):
    at = run()
    at.text_input(key="pool_filter").input("agents>>2").run()
    assert not at.exception
    assert len(at.error) == 1 and "agents" in at.error[0].value
    assert "120 of 120 traces" in captions(at)


def test_sorting_by_a_reward_puts_the_highest_first(pool_env):
    at = run()
    at.selectbox(key="pool_sort").select("reward.team").run()
    at.toggle(key="pool_desc").set_value(True).run()
    rewards = at.dataframe[0].value["reward.team"].tolist()
    assert rewards == sorted(rewards, reverse=True) and rewards[0] == 0.99


def test_a_stratified_sample_draws_from_every_group(pool_env):
    at = run()
    at.number_input(key="pool_sample_n").set_value(30)
    at.selectbox(key="pool_sample_stratify").select("group")
    at.button[-1].click().run()  # the form's submit button
    drawn = at.session_state["pool_sample"]
    assert len(drawn) == 30 and len({int(t[-4:]) // 4 for t in drawn}) == 30
    assert drawn == pool_env.library.sample_pool(30, seed=0, stratify="group")


def test_a_pool_trace_opens_on_the_trace_page_from_a_link(pool_env):
    at = run(trace="rollout-0077")
    assert not at.exception
    assert not at.error and len(at.metric) >= 9  # the trace page's figures
    assert any("00001" in c.value and "parquet" in c.value
               for c in at.caption)  # the trace's source: its shard
    assert any("0077" in m.value for m in at.markdown)


def test_a_bad_shard_is_listed_with_its_name(tmp_path, monkeypatch):
    workspace = pool_workspace(tmp_path, bad_shard=True)
    app_env(monkeypatch, workspace)
    at = run()
    assert "80 of 80 traces" in captions(at)
    assert any("failed to load (1)" in e.label for e in at.expander)
    failures = at.dataframe[-1].value
    assert failures["shard"].str.endswith("part-00001.parquet").all()


# -- in Chromium ------------------------------------------------------------------------------


@pytest.mark.browser
def test_a_reviewer_pages_filters_and_opens_a_pool_trace_in_chromium(page, app_server,
                                                                     tmp_path):
    base = app_server(pool_workspace(tmp_path))
    page.goto(base)
    wait_for_streamlit(page, timeout=90_000)
    main = page.locator('[data-testid="stMain"]')
    assert "120 of 120 traces · page 1 of 3" in main.inner_text()
    shot(page, "library-pool")
    page.get_by_role("button", name="Next page").click()
    wait_for_streamlit(page, timeout=60_000)
    assert "page 2 of 3" in main.inner_text()
    box = page.get_by_role("textbox", name="Filter")
    box.fill("reward.team>=0.9")
    box.press("Enter")
    wait_for_streamlit(page, timeout=60_000)
    text = main.inner_text()
    assert "12 of 120 traces · page 1 of 1" in text
    shot(page, "library-pool-filtered")
    grid = page.locator('[data-testid="stDataFrame"]').first
    frame = grid.bounding_box()
    page.mouse.click(frame["x"] + 14, frame["y"] + 35 + 17)  # the first row's selection box
    page.wait_for_url("**/trace?trace=*", timeout=60_000)
    wait_for_streamlit(page, timeout=90_000)
    assert "rollout-" in page.url and "could not be loaded" not in main.inner_text()
    shot(page, "library-pool-trace")


@pytest.mark.browser
def test_a_lead_ticks_all_that_match_in_chromium_and_the_campaign_takes_exactly_them(
        page, app_server, tmp_path):
    """In Chromium: a filter line selects 59 of the pool's 120 traces (two pages), the
    lead ticks all of them, follows the link to the Campaigns page, which says the held search
    and filter and their count, and makes the campaign: it holds exactly those 59 traces.
    Screenshots library-pool-tick-all and campaigns-tick-all."""
    from conftest import goto_as

    workspace = pool_workspace(tmp_path)
    base = app_server(workspace)
    goto_as(page, base, "lee")
    wait_for_streamlit(page, timeout=90_000)
    main = page.locator('[data-testid="stMain"]')
    box = page.get_by_role("textbox", name="Filter")
    box.fill("reward.team>=0.5")
    box.press("Enter")
    wait_for_streamlit(page, timeout=60_000)
    assert "59 of 120 traces · page 1 of 2" in main.inner_text()
    page.get_by_text("Pick traces for a campaign").click()
    wait_for_streamlit(page, timeout=60_000)
    page.get_by_role("button", name=re.compile("Tick all 59 that match")).click()
    wait_for_streamlit(page, timeout=60_000)
    main.get_by_text("All 59 traces that match this search and filter are ticked",
                     exact=False).wait_for()
    shot(page, "library-pool-tick-all")
    page.get_by_role("link", name=re.compile("Make a review campaign of the 59 traces ticked")
                     ).click()
    wait_for_streamlit(page, timeout=90_000)
    main.get_by_text("the 59 traces ticked in the Library's table (all that match",
                     exact=False).wait_for()
    assert "Ticked: all that match the filter reward.team>=0.5" in main.inner_text()
    page.get_by_role("textbox", name="Name").fill("high-team")
    shot(page, "campaigns-tick-all")
    page.get_by_role("button", name="Make the campaign").click()
    wait_for_streamlit(page, timeout=90_000)
    main.get_by_text("Made the campaign high-team", exact=False).wait_for()
    wanted = sorted(t.trace_id for t in rollouts() if t.rewards["team"] >= 0.5)
    made = workspace.campaigns.get("high-team")
    assert sorted({t.trace_id for t in workspace.campaigns.targets(made)}) == wanted


def test_a_lead_ticks_all_that_match_beyond_the_page_and_makes_a_campaign_of_them(pool_env):
    """90 traces match, 50 are shown: "tick all 90" ticks every page of them, the count said on
    the button, on the Library and on the Campaigns page before the campaign is made."""
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["reviewer"] = "lee"
    at = at.run()
    at.toggle(key="pool_picking").set_value(True).run()
    at.multiselect(key="pool_topologies").set_value(["centralized", "debate", "swarm"]).run()
    assert "90 of 120 traces · page 1 of 2" in captions(at)
    tick = at.button(key="pool_tick_all")
    assert tick.label == "Tick all 90 that match this search and filter"
    at = tick.click().run()
    assert not at.exception, at.exception
    assert any("All 90 traces that match this search and filter are ticked" in i.value
               for i in at.info)
    handed = at.session_state["_library_filter"]
    assert handed["picked"] == []  # the query is held, not the 90 ids
    assert Filter.model_validate_json(handed["matching"]) == Filter(conditions=[Condition(
        field="topology", op="in", value=["centralized", "debate", "swarm"])])
    wanted = [t.trace_id for t in rollouts() if t.topology != "hierarchical"]
    assert any("the 90 traces ticked" in link.label for link in at.get("page_link"))

    handed = at.session_state["_library_filter"]  # what the Library hands the Campaigns page
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["reviewer"], at.session_state["_library_filter"] = "lee", handed
    at.switch_page("app_pages/campaigns.py")
    at = at.run()
    assert not at.exception, at.exception
    assert "the 90 traces ticked in the Library's table (all that match" in at.radio(
        key="camp:source").options[0]
    assert any("Ticked: all that match the filter topology in centralized, debate, swarm"
               in c.value for c in at.caption)
    at.text_input(key="camp:name").input("all-of-them")
    at.multiselect(key="camp:questions").set_value(["stopping_correctness"])
    at = at.button[[b.label for b in at.button].index("Make the campaign")].click().run()
    assert not at.exception, at.exception
    found = pool_env.campaigns.get("all-of-them")
    assert sorted({t.trace_id for t in pool_env.campaigns.targets(found)}) == sorted(wanted)

    # another filter: what was ticked by the old one no longer holds
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["reviewer"] = "lee"
    at = at.run()
    at.toggle(key="pool_picking").set_value(True).run()
    at.multiselect(key="pool_topologies").set_value(["centralized", "debate", "swarm"]).run()
    at = at.button(key="pool_tick_all").click().run()
    assert any("are ticked" in i.value for i in at.info)
    at.multiselect(key="pool_topologies").set_value(["swarm"]).run()
    assert at.button(key="pool_tick_all").label == "Tick all 30 that match this search and filter"
    assert not any("are ticked" in i.value for i in at.info)
