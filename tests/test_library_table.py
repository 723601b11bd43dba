"""The Library page's one table, over the folders and over a pool of the same files (AppTest):
the same columns, search, filters, steps, sort, pages, ticking and sample, asked of the
library's one interface (`store.library.Storage`), the widgets named `library_*` over the
folders and `pool_*` over a pool."""

from __future__ import annotations

import shutil

import pytest
from streamlit.testing.v1 import AppTest

from factories import APP, app_env, as_trace, example_trace, make_workspace
from viz_app.io import pool
from viz_app.io.rollouts import ROLLOUT_KEY
from viz_app.text import markdown_literal
from viz_app.workspace import Workspace

TOPOLOGIES = ["centralized", "debate", "swarm"]
COUNT = 60


def rollouts():
    """A trainer's rollouts: 60 of 20 tasks (groups of 3) over 6 steps (10 a step), rewards
    that vary."""
    found = []
    for i in range(COUNT):
        raw = example_trace(f"rollout-{i:03d}", task_id=f"task-{i // 3:02d}",
                            topology=TOPOLOGIES[i % 3],
                            rewards={"team": round((i * 37 % 100) / 100, 2)}).to_dict()
        first = min(raw["events"], key=lambda e: e["t"])
        first[ROLLOUT_KEY] = {"trainer": "verl", "group": f"g-{i // 3:02d}", "step": i // 10}
        found.append(as_trace(raw))
    return found


@pytest.fixture(params=["folders", "pool"])
def table(request, tmp_path, monkeypatch) -> tuple[str, Workspace]:
    """The app over the same JSON Lines files, as a folder of the library or as a pool: the
    widgets' prefix and the workspace."""
    written = tmp_path / "pool"
    pool.write_pool(rollouts(), str(written), shard_rows=20, format="jsonl", compress=False)
    if request.param == "pool":
        workspace = make_workspace(tmp_path, traces=[written])
        workspace.library.update_pool_index(workers=1)
        workspace.library.pool_index().close()  # an app (AppTest: this process) opens it again
        return "pool", app_env(monkeypatch, workspace)
    folder = tmp_path / "runs"
    folder.mkdir()
    for shard in sorted(written.glob("part-*.jsonl")):  # the files alone, no manifest
        shutil.copy(shard, folder / shard.name)
    return "library", app_env(monkeypatch, make_workspace(tmp_path, traces=[folder]))


def run() -> AppTest:
    return AppTest.from_file(str(APP), default_timeout=120).run()


def listed(at: AppTest) -> list[str]:
    return at.dataframe[0].value["trace id"].tolist()


def captions(at: AppTest) -> str:
    return " ".join(c.value for c in at.caption)


def test_both_storages_show_the_same_columns_and_first_page(table):
    prefix, _ = table
    at = run()
    assert not at.exception, at.exception
    shown = at.dataframe[0].value
    assert list(shown.columns) == [
        "trace id", "labelled", "step", "group", "trainer reward", "task", "system", "topology", "format", "events", "agents",
        "depth", "makespan (s)", "parallelism", "tokens", "reward.team", "file", "row"]
    assert listed(at) == [f"rollout-{i:03d}" for i in range(50)]
    assert shown["file"].tolist()[:21:20] == ["part-00000.jsonl", "part-00001.jsonl"]
    assert shown["row"].tolist()[:3] == [0, 1, 2]
    assert shown["step"].tolist()[:21:10] == [0, 1, 2]
    assert shown["group"].str.endswith("g-00").tolist()[:4] == [True, True, True, False]
    assert f"{COUNT} of {COUNT} traces · page 1 of 2" in captions(at)


def test_both_page_with_the_same_buttons(table):
    prefix, _ = table
    at = run()
    at.button(key=f"{prefix}_next").click().run()
    assert listed(at) == [f"rollout-{i:03d}" for i in range(50, COUNT)]
    assert at.button(key=f"{prefix}_next").disabled
    at.button(key=f"{prefix}_previous").click().run()
    assert listed(at)[0] == "rollout-000"


def test_both_search_filter_and_sort_alike(table):
    prefix, _ = table
    at = run()
    at.text_input(key=f"{prefix}_query").input("rollout-01").run()
    assert listed(at) == [f"rollout-{i:03d}" for i in range(10, 20)]  # the library's order
    at.multiselect(key=f"{prefix}_topologies").select("debate").run()
    assert listed(at) == ["rollout-010", "rollout-013", "rollout-016", "rollout-019"]
    at.text_input(key=f"{prefix}_filter").input("reward.team>=0.5").run()
    team = {t.trace_id: t.rewards["team"] for t in rollouts()}
    assert listed(at) == [t for t in ["rollout-010", "rollout-013", "rollout-016",
                                      "rollout-019"] if team[t] >= 0.5]
    at.text_input(key=f"{prefix}_query").input("").run()
    at.multiselect(key=f"{prefix}_topologies").unselect("debate").run()
    at.text_input(key=f"{prefix}_filter").input("").run()
    at.selectbox(key=f"{prefix}_sort").select("reward.team").run()
    at.toggle(key=f"{prefix}_desc").set_value(True).run()
    rewards = at.dataframe[0].value["reward.team"].tolist()
    assert rewards == sorted(rewards, reverse=True) and len(rewards) == 50


def test_both_narrow_a_run_to_some_of_its_training_steps(table):
    prefix, _ = table
    at = run()
    assert at.slider(key=f"{prefix}_steps").value == (0, 5)
    at.slider(key=f"{prefix}_steps").set_value((2, 3)).run()
    assert listed(at) == [f"rollout-{i:03d}" for i in range(20, 40)]
    assert "20 of 60 traces" in captions(at)


def test_a_bad_filter_says_why_over_either(table):
    prefix, _ = table
    at = run()
    at.text_input(key=f"{prefix}_filter").input("agents>>2").run()
    assert not at.exception
    assert len(at.error) == 1 and "agents" in at.error[0].value
    assert f"{COUNT} of {COUNT} traces" in captions(at)


def test_both_draw_the_librarys_sample(table):
    prefix, workspace = table
    at = run()
    at.number_input(key=f"{prefix}_sample_n").set_value(12)
    at.selectbox(key=f"{prefix}_sample_stratify").select("topology")
    next(b for b in at.button if b.label == "Draw sample").click().run()
    drawn = at.session_state[f"{prefix}_sample"]
    location = None if prefix == "library" else workspace.library.pools[0]
    assert drawn == workspace.library.sample(12, seed=0, stratify="topology",
                                             location=location)
    assert len(drawn) == 12


def test_both_tick_rows_for_a_campaign(table):
    prefix, _ = table
    at = run()
    at.toggle(key=f"{prefix}_picking").set_value(True).run()
    assert "tick the rows of a campaign" in captions(at)
    key = f"{prefix}_table:0:0:picking"  # the table's key while ticking (page 1)
    at.session_state[key] = {"selection": {"rows": [0, 2], "columns": []}}
    at.run()
    chosen = at.session_state["_library_filter"]["picked"]
    assert chosen == ["rollout-000", "rollout-002"]
    assert any("Make a review campaign of the 2 traces ticked" in p.label
               for p in at.get("page_link"))


def test_a_campaign_of_the_folders_filter_takes_the_traces_it_selects(table):
    """Over the folders, the Library hands the Campaigns page its current search and filter as
    the query (not the ids of the traces they select, read again at every run of the page),
    and the campaign made of "the Library's current filter" holds exactly those traces."""
    prefix, workspace = table
    at = run()
    at.text_input(key=f"{prefix}_filter").input("reward.team>=0.9").run()
    team = {t.trace_id: t.rewards["team"] for t in rollouts()}
    high = [t for t in sorted(team) if team[t] >= 0.9]
    assert listed(at) == high
    if prefix != "library":
        return
    chosen = at.session_state["_library_filter"]
    assert "ids" not in chosen and "rollout-" not in chosen["query"]
    assert any(f"these {len(high)} traces" in p.label for p in at.get("page_link"))

    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["reviewer"], at.session_state["_library_filter"] = "lee", chosen
    at.switch_page("app_pages/campaigns.py")
    at = at.run()
    assert at.radio(key="camp:source").value == "library"
    assert f"{markdown_literal('reward.team>=0.9')}: {len(high)} traces)" in at.radio(
        key="camp:source").options[0]
    at.text_input(key="camp:name").input("high")
    at.multiselect(key="camp:questions").set_value(["stopping_correctness"])
    at = at.button[[b.label for b in at.button].index("Make the campaign")].click().run()
    assert not at.exception, at.exception
    made = workspace.campaigns.get("high")
    assert sorted({t.trace_id for t in workspace.campaigns.targets(made)}) == high


def test_both_tick_all_that_match_as_a_query_and_a_campaign_takes_exactly_those(table):
    """"Tick all N that match" holds the search and filter, not N trace ids: the Library hands
    the Campaigns page the query, the page counts it again in the storage the campaign draws
    from, and the campaign made of it holds exactly the traces that match (a filter line and
    the steps slider together), over the folders and over a pool alike."""
    prefix, workspace = table
    team = {t.trace_id: t.rewards["team"] for t in rollouts()}
    wanted = sorted(t for i, t in enumerate(sorted(team)) if team[t] >= 0.3 and 1 <= i // 10 <= 4)
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["reviewer"] = "lee"
    at = at.run()
    at.toggle(key=f"{prefix}_picking").set_value(True).run()
    at.text_input(key=f"{prefix}_filter").input("reward.team>=0.3").run()
    at.slider(key=f"{prefix}_steps").set_value((1, 4)).run()
    at = at.button(key=f"{prefix}_tick_all").click().run()
    assert not at.exception, at.exception
    assert any(f"All {len(wanted)} traces that match" in i.value for i in at.info)
    handed = at.session_state["_library_filter"]
    assert handed["picked"] == [] and "rollout-" not in handed["matching"]  # no id is held
    assert any(f"the {len(wanted)} traces ticked" in p.label for p in at.get("page_link"))

    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["reviewer"], at.session_state["_library_filter"] = "lee", handed
    at.switch_page("app_pages/campaigns.py")
    at = at.run()
    assert not at.exception, at.exception
    assert at.radio(key="camp:source").options[0].startswith(
        f"the {len(wanted)} traces ticked in the Library's table (all that match")
    said = "the filter " + markdown_literal("reward.team>=0.3, step>=1, step<=4")
    assert any(said in c.value for c in at.caption)
    at.text_input(key="camp:name").input("every-match")
    at.multiselect(key="camp:questions").set_value(["stopping_correctness"])
    at = at.button[[b.label for b in at.button].index("Make the campaign")].click().run()
    assert not at.exception, at.exception
    made = workspace.campaigns.get("every-match")
    assert sorted({t.trace_id for t in workspace.campaigns.targets(made)}) == wanted
    assert made.spec.filter.trace_ids == [] and len(made.spec.filter.conditions) == 3


def test_tick_all_shows_the_pages_rows_ticked_and_a_row_unticked_is_left_out(table):
    """While "all that match" is ticked, the rows of every page show ticked (not only a banner
    saying so); unticking one leaves it out of "all" (all but these, held by id, said), ticking
    it again takes it back, and the campaign made of it holds all that match but the ones left
    out; "Untick them all" unticks the page's rows too."""
    prefix, workspace = table
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["reviewer"] = "lee"
    at = at.run()
    at.toggle(key=f"{prefix}_picking").set_value(True).run()
    at = at.button(key=f"{prefix}_tick_all").click().run()
    assert not at.exception, at.exception
    key = f"{prefix}_table:0:0:picking"
    page = listed(at)
    assert len(page) == 50 and at.session_state[key]["selection"]["rows"] == list(range(50))

    at.session_state[key] = {"selection": {"rows": [i for i in range(50) if i != 3]}}  # unticked
    at = at.run()
    assert not at.exception, at.exception
    assert at.session_state[key]["selection"]["rows"] == [i for i in range(50) if i != 3]
    said = " ".join(i.value for i in at.info)
    assert f"{COUNT - 1} of the {COUNT} traces that match" in said
    assert markdown_literal(page[3]) in said
    assert any(f"the {COUNT - 1} traces ticked" in p.label for p in at.get("page_link"))

    at.button(key=f"{prefix}_next").click().run()  # the next page: its rows all show ticked
    assert at.session_state[f"{prefix}_table:0:1:picking"]["selection"]["rows"] == \
        list(range(COUNT - 50))
    at.button(key=f"{prefix}_previous").click().run()
    assert at.session_state[key]["selection"]["rows"] == [i for i in range(50) if i != 3]

    handed = at.session_state["_library_filter"]
    at2 = AppTest.from_file(str(APP), default_timeout=120)
    at2.session_state["reviewer"], at2.session_state["_library_filter"] = "lee", handed
    at2.switch_page("app_pages/campaigns.py")
    at2 = at2.run()
    assert at2.radio(key="camp:source").options[0].startswith(f"the {COUNT - 1} traces ticked")
    at2.text_input(key="camp:name").input("all-but-one")
    at2.multiselect(key="camp:questions").set_value(["stopping_correctness"])
    at2 = at2.button[[b.label for b in at2.button].index("Make the campaign")].click().run()
    assert not at2.exception, at2.exception
    made = workspace.campaigns.get("all-but-one")
    taken = {t.trace_id for t in workspace.campaigns.targets(made)}
    assert len(taken) == COUNT - 1 and page[3] not in taken

    at.session_state[key] = {"selection": {"rows": list(range(50))}}  # ticked again: back in
    at = at.run()
    assert f"All {COUNT} traces that match" in " ".join(i.value for i in at.info)
    at = at.button(key=f"{prefix}_untick_all").click().run()
    assert not at.exception, at.exception
    assert at.session_state[key]["selection"]["rows"] == [] and not at.info
