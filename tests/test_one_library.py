"""One library over folders and pools: the same files, listed as a folder of the library (a pool
of one shard a file) or as a pool (its DuckDB and FTS5 index), answer a search, a filter, a
sample and a campaign's draw with the same traces, through one interface (`ws.library.storage`),
one search (`viz_app.search`), one sampler (`viz_app.sampling`) and one failure type."""

from __future__ import annotations

import json

import pytest

from factories import example_trace
from viz_app.labels import CampaignSpec, Filter, Sample, draw_rows, storage_conditions
from viz_app.query import Condition, condition_text, parse_condition, parse_conditions
from viz_app.sampling import draw, ntile
from viz_app.search import fts_query, matches, plain
from viz_app.settings import Settings, database_url
from viz_app.store import Folders, PoolIndex, storage_kind
from viz_app.summary import LibraryFailure
from viz_app.workspace import Workspace

TOPOLOGIES = ["centralized", "debate", "swarm"]


def runs(count: int = 30):
    """Traces whose ids, tasks (groups of 3), topologies, agents' words and rewards vary."""
    found = []
    for i in range(count):
        trace = example_trace(f"rollout-{i:03d}", task_id=f"task-{i // 3}",
                              topology=TOPOLOGIES[i % 3],
                              system="Café-bot" if i % 5 == 0 else "planner",
                              rewards={"team": float(i % 2), "tool": i / count})
        found.append(trace)
    return found


def write_runs(folder):
    """`runs()` as five JSON Lines files of six traces, the third with a line that holds none."""
    folder.mkdir()
    traces = runs()
    for k in range(5):
        lines = [json.dumps(t.to_dict()) for t in traces[k * 6:(k + 1) * 6]]
        if k == 2:
            lines.insert(1, '{"trace_id": 7}')  # a line that holds no trace
        (folder / f"part-{k}.jsonl").write_text("\n".join(lines) + "\n")
    return folder


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """The same five JSON Lines files, listed by one workspace as a folder and by another as a
    pool, each brought up to date: (folder storage, pool storage, the workspaces)."""
    root = tmp_path_factory.mktemp("one")
    folder = write_runs(root / "runs")
    as_folder = Workspace(Settings(traces=[folder], db_url=database_url(root / "a.db")))
    as_pool = Workspace(Settings(traces=[], pools=[str(folder)],
                                 db_url=database_url(root / "b.db")))
    as_pool.library.update_pool_index(workers=1)
    return (as_folder.library.storage(), as_pool.library.storage(str(folder)), as_folder,
            as_pool)


def ids(rows):
    return [r.trace_id for r in rows]


# -- one interface, two kinds of storage ----------------------------------------------------------


def test_the_folder_is_a_pool_of_one_shard_a_file_and_the_pool_its_index(both):
    folder, pool, _, _ = both
    assert isinstance(folder, Folders) and isinstance(pool, PoolIndex)
    assert (folder.kind, pool.kind) == ("folders", "pool")
    assert folder.count() == pool.count() == 30
    assert ids(folder.page(limit=100)) == ids(pool.page(limit=100))  # files, then rows
    # each a file's traces by their place in it: a folder's position counts the traces read,
    # a pool's row the lines (after part-2's bad line 2 they differ by one), each its reader's
    assert [r.path for r in folder.page(limit=100)] == [r.path for r in pool.page(limit=100)]


def test_a_folder_of_json_lines_alone_is_folders_and_one_with_a_manifest_a_pool(tmp_path, both):
    folder, _, _, _ = both
    assert storage_kind(folder.result.rows[0].path.rsplit("/", 1)[0]) == "folders"
    from viz_app.io import pool as pools
    pools.write_pool(runs(4), str(tmp_path / "written"))
    assert storage_kind(str(tmp_path / "written")) == "pool"


def test_one_failure_type_names_the_file_or_shard_that_failed(both):
    folder, pool, _, _ = both
    assert folder.failure_count() == pool.failure_count() == 1
    for failure in (*folder.failures(), *pool.failures()):
        assert isinstance(failure, LibraryFailure)
        assert failure.path.endswith("part-2.jsonl") and failure.shard == failure.path
        assert "line 2" in failure.error or "row 1" in failure.error


def test_a_trace_opens_by_id_from_either(both):
    folder, pool, _, _ = both
    assert folder.trace("rollout-013") == pool.trace("rollout-013")


# -- one search -----------------------------------------------------------------------------------


@pytest.mark.parametrize("typed, expected", [
    ("rollout-01", [f"rollout-{i:03d}" for i in range(10, 20)]),  # a word and the next's start
    ("ROLLOUT-021", ["rollout-021"]),                               # any case
    ("cafe-bot", [f"rollout-{i:03d}" for i in range(0, 30, 5)]),     # accents aside
    ("-rollout-02", [f"rollout-{i:03d}" for i in range(20, 30)]),    # a leading dash only parts
    ("ollout", []),                                                  # a word's middle: nothing
    ("rollout_01", []),                                              # typed as it stands
    ("rollout%01", []),                                              # LIKE's wildcard: a char
    ("task-3 rollout-01", ["rollout-010", "rollout-011"]),           # every word
])
def test_the_same_search_finds_the_same_traces_in_a_folder_and_a_pool(both, typed, expected):
    folder, pool, as_folder, _ = both
    assert sorted(ids(folder.page(search=typed, limit=100))) == expected
    assert sorted(ids(pool.page(search=typed, limit=100))) == expected
    assert folder.count(search=typed) == pool.count(search=typed) == len(expected)
    listed = as_folder.library.update_index().rows  # the Library page's folder table
    assert sorted(ids(as_folder.library.search(listed, typed))) == expected


# -- one order ------------------------------------------------------------------------------------


@pytest.mark.parametrize("typed", ["rollout", "rollout-01", "cafe-bot", "task-3 rollout-01",
                                   "ollout", ""])
@pytest.mark.parametrize("filters", [[], ["topology=debate"]])
def test_a_search_lists_its_traces_in_the_librarys_order_from_either(both, typed, filters):
    """A search selects as a filter does: its traces keep their places in the library's order
    (files then positions, shards then rows), a page at a time, in a folder as in a pool."""
    folder, pool, _, _ = both
    wanted = [parse_condition(f) for f in filters]
    everything = ids(folder.page(limit=100))
    listed = [ids(s.page(wanted, typed, limit=100)) for s in (folder, pool)]
    assert listed[0] == listed[1] == [t for t in everything if t in set(listed[0])]
    paged = [ids(s.page(wanted, typed, offset=start, limit=4)) for s in (folder, pool)
             for start in range(0, 100, 4)]
    assert sum(paged[:25], []) == sum(paged[25:], []) == listed[0]


@pytest.mark.parametrize("sort", ["topology", "reward.team", "task_id", "system"])
@pytest.mark.parametrize("descending", [False, True])
def test_a_chosen_sort_orders_by_its_field_and_ties_in_the_librarys_order(both, sort,
                                                                           descending):
    folder, pool, _, _ = both
    for typed in ("", "rollout-0", "planner"):
        listed = [ids(s.page(search=typed, sort=sort, descending=descending, limit=100))
                  for s in (folder, pool)]
        assert listed[0] == listed[1]
    rows = folder.page(sort=sort, descending=descending, limit=100)
    from viz_app.query import row_value

    everything = ids(folder.page(limit=100))
    for a, b in zip(rows, rows[1:]):  # ties (the fixture has many) in the library's order
        if row_value(a, sort) == row_value(b, sort):
            assert everything.index(a.trace_id) < everything.index(b.trace_id)
        else:
            assert (row_value(a, sort) > row_value(b, sort)) == descending


def test_the_rule_is_a_word_start_and_fts5_finds_all_it_accepts():
    assert matches("db_analyst said: the analysts agree", "analyst AGREE")
    assert not matches("db_analyst", "nalyst")
    assert matches("Café-bot", "cafe") and matches("cafe-bot", "Café")
    assert plain("rollout 42") and not plain("rollout-42")
    assert fts_query('say "x" OR y') == '"say"* AND "x"* AND "or"* AND "y"*'
    assert fts_query("  -- ") is None and matches("anything", "  -- ")


# -- the folders' word index ----------------------------------------------------------------------

SEARCHES = ["rollout-01", "ROLLOUT-021", "cafe-bot", "-rollout-02", "ollout", "rollout_01",
            "rollout%01", "task-3 rollout-01", "rollout", "planner", "cafe", "task-1 planner"]


def word_rows(ws):
    """(words the word index holds, the words its rows say it holds, words of no row)."""
    from sqlalchemy import func, select

    from viz_app.store.tables import trace_index, trace_words

    with ws.engine.connect() as conn:
        held = conn.execute(select(func.count()).select_from(trace_words)).scalar_one()
        said = conn.execute(select(func.coalesce(func.sum(trace_index.c.words), 0))).scalar_one()
        lost = conn.execute(select(func.count()).select_from(trace_words).where(
            trace_words.c.doc.not_in(select(trace_index.c.id)))).scalar_one()
    return held, said, lost


@pytest.mark.postgres
def test_the_folders_word_index_answers_alike_on_postgresql(both, postgres_url, tmp_path):
    from test_migrations import postgres_database

    folder, _, _, _ = both
    with postgres_database(postgres_url) as url:
        ws = Workspace(Settings(traces=[write_runs(tmp_path / "runs")], db_url=url))
        on_postgres = ws.library.storage()
        for typed in SEARCHES:
            assert ids(on_postgres.page(search=typed, limit=100)) == \
                ids(folder.page(search=typed, limit=100)), typed
        held, said, lost = word_rows(ws)
        assert held == said > 0 and lost == 0


def test_a_rewritten_file_s_words_replace_its_old_ones(tmp_path):
    ws = Workspace(Settings(traces=[write_runs(tmp_path / "runs")],
                            db_url=database_url(tmp_path / "a.db")))
    assert ids(ws.library.storage().page(search="cafe", limit=100))[:1] == ["rollout-000"]
    held, said, lost = word_rows(ws)
    assert held == said > 0 and lost == 0
    part = tmp_path / "runs" / "part-0.jsonl"
    rewritten = [json.loads(line) for line in part.read_text().splitlines()]
    rewritten[0]["system"] = "zebra"
    part.write_text("\n".join(json.dumps(t) for t in rewritten) + "\n")
    (tmp_path / "runs" / "part-4.jsonl").unlink()
    folder = ws.library.storage()
    assert "rollout-000" not in ids(folder.page(search="cafe", limit=100))
    assert ids(folder.page(search="zebra", limit=100)) == ["rollout-000"]
    assert folder.count(search="rollout-02") == 4  # 24 to 29 left with part-4
    held, said, lost = word_rows(ws)
    assert held == said > 0 and lost == 0


def test_rows_indexed_before_the_word_index_get_their_words_without_a_read(tmp_path):
    from sqlalchemy import delete, update

    from viz_app.store.tables import trace_index, trace_words

    db = database_url(tmp_path / "a.db")
    ws = Workspace(Settings(traces=[write_runs(tmp_path / "runs")], db_url=db))
    before = ids(ws.library.storage().page(search="task-3 rollout-01", limit=100))
    with ws.engine.begin() as conn:  # as Alembic 0017 leaves an index written before it
        conn.execute(delete(trace_words))
        conn.execute(update(trace_index).values(words=None))
    again = Workspace(Settings(traces=[tmp_path / "runs"], db_url=db))
    result = again.library.update_index()
    assert result.parsed == 0 and result.skipped == 5  # no file read again
    assert ids(again.library.storage(result=result).page(
        search="task-3 rollout-01", limit=100)) == before == ["rollout-010", "rollout-011"]
    held, said, lost = word_rows(again)
    assert held == said > 0 and lost == 0


# -- one sampler ----------------------------------------------------------------------------------


@pytest.mark.parametrize("stratify", [None, "topology", "group", "reward.tool"])
def test_the_same_seed_draws_the_same_traces_from_a_folder_and_a_pool(both, stratify):
    folder, pool, _, _ = both
    for seed in (0, 7):
        drawn = folder.sample(9, seed=seed, stratify=stratify)
        assert drawn == pool.sample(9, seed=seed, stratify=stratify)
        assert len(set(drawn)) == 9
    debate = [parse_condition("topology=debate")]
    assert folder.sample(4, seed=3, filters=debate, search="rollout-0") == \
        pool.sample(4, seed=3, filters=debate, search="rollout-0")


def test_a_stratified_draw_is_even_and_takes_the_strata_in_turn(both):
    folder, _, _, _ = both
    drawn = folder.rows(folder.sample(9, seed=2, stratify="topology"))
    assert [r.topology for r in drawn] == TOPOLOGIES * 3


def test_the_sampler_fills_from_larger_strata_what_a_small_one_lacks():
    strata = ["big"] * 40 + ["small"] * 3 + ["one"]
    picked = draw(strata, 9, seed=1)
    taken = [strata[i] for i in picked]
    assert (taken.count("one"), taken.count("small"), taken.count("big")) == (1, 3, 5)
    assert picked == draw(strata, 9, seed=1) and picked != draw(strata, 9, seed=2)
    assert ntile([5, None, 1, 3, 3], 2) == [2, 2, 1, 1, 1]  # 1 3 3 | 5 None


@pytest.mark.parametrize("sample", [
    Sample(kind="all"), Sample(kind="random", n=7, seed=4),
    Sample(kind="stratified", n=6, seed=1, field="topology"),
    Sample(kind="stratified", seed=1, field="task"), Sample(kind="groups", n=3, seed=5)])
def test_a_campaigns_draw_is_the_same_over_a_folder_and_a_pool(both, sample):
    folder, pool, _, _ = both
    wanted = Filter(topologies=["debate", "swarm"], figures={"events": (1, None)})
    drawn = [ids(draw_rows(s, *storage_conditions(wanted, s.kind), sample))
             for s in (folder, pool)]
    assert drawn[0] == drawn[1] and drawn[0]


def test_a_held_query_draws_the_same_traces_over_a_folder_and_a_pool(both):
    """A lead's "tick all that match" is the Library's filter line held as a campaign's filter
    (`Filter.conditions`): it selects in each storage what the line selects there, and a spec
    holding it reads back the same from its JSON (as the campaigns' store keeps it)."""
    folder, pool, _, _ = both
    line = [parse_condition("agents>=1"),
            Condition(field="topology", op="in", value=["debate", "swarm"])]
    wanted = Filter(text="rollout", conditions=line)
    drawn = [ids(draw_rows(s, *storage_conditions(wanted, s.kind), Sample(kind="all")))
             for s in (folder, pool)]
    assert drawn[0] == drawn[1] == ids(folder.page(line, "rollout", limit=1000))
    assert drawn[0] and len(drawn[0]) < folder.count()
    spec = CampaignSpec(name="every-match", filter=wanted)
    assert CampaignSpec.model_validate_json(spec.model_dump_json()).filter == wanted
    assert [condition_text(c) for c in line] == ["agents>=1", "topology in debate, swarm"]
    assert parse_conditions(condition_text(line[0])) == line[:1]


def test_campaigns_over_the_folder_and_over_the_pool_hold_the_same_traces(both):
    _, _, as_folder, as_pool = both
    from viz_app.labels import Reviewer

    lead = Reviewer(name="lead", via="cli")
    made = []
    for ws, pool in ((as_folder, None), (as_pool, as_pool.library.pools[0])):
        spec = CampaignSpec(name="same", questions=["task_outcome"], pool=pool,
                            filter=Filter(text="rollout-01"),
                            sample=Sample(kind="random", n=4, seed=9))
        campaign = ws.campaigns.create(spec, lead)
        made.append([t.trace_id for t in ws.campaigns._store.targets(campaign)])
    assert made[0] == made[1] and len(set(made[0])) == 4


def test_the_folders_sample_is_the_librarys_sample(both):
    folder, pool, as_folder, as_pool = both
    filters = [Condition(field="agents", op=">=", value=1)]
    assert as_folder.library.sample(5, seed=1, filters=filters) == folder.sample(
        5, seed=1, filters=filters)
    assert as_pool.library.sample_pool(5, seed=1, filters=filters) == pool.sample(
        5, seed=1, filters=filters) == folder.sample(5, seed=1, filters=filters)


def test_a_folder_filter_is_the_folders_alone(both):
    folder, _, _, _ = both
    with pytest.raises(Exception, match="takes no folder filter"):
        storage_conditions(Filter(folders=["x"]), "pool")
    assert storage_conditions(Filter(folders=["x"]), "folders")[0] == []
    part = folder.result.rows[0].path
    assert {r.path for r in folder.under([part]).page(limit=100)} == {part}


def test_a_histogram_and_the_reward_channels_are_the_same_from_either(both):
    folder, pool, _, _ = both
    for field, bins in (("agents", 20), ("reward.tool", 4), ("events", 3)):
        assert folder.histogram(field, bins=bins) == pool.histogram(field, bins=bins)
    swarm = [parse_condition("topology=swarm")]
    assert folder.histogram("reward.tool", swarm, "rollout-0", 5) == \
        pool.histogram("reward.tool", swarm, "rollout-0", 5)
    assert folder.reward_names() == pool.reward_names() == ["team", "tool"]
    assert folder.values("topology") == pool.values("topology")


def test_a_filter_on_a_carried_reward_keeps_the_same_traces_in_either(both):
    folder, pool, _, _ = both
    team = [parse_condition("reward.team>=1")]
    assert folder.count(team) == pool.count(team) == 15
    assert ids(folder.page(team, sort="reward.tool", descending=True, limit=5)) == \
        ids(pool.page(team, sort="reward.tool", descending=True, limit=5))


def test_pool_ls_lists_a_folder_of_traces_and_a_pool_alike(both, tmp_path, capsys):
    from viz_app.cli import main

    _, pool, _, _ = both
    folder = str(tmp_path / "copy")
    import shutil
    shutil.copytree(pool.location, folder)
    (tmp_path / "copy" / "note.json").write_text(json.dumps(runs(31)[30].to_dict()))
    listed = []
    for location in (folder, pool.location):  # a library folder (a .json file in it), a pool
        assert main(["pool", "ls", location, "--db", str(tmp_path / f"{len(listed)}.db"),
                     "--workers", "1", "--search", "rollout-01", "--filter", "topology=debate",
                     "--json"]) == 0
        listed.append(json.loads(capsys.readouterr().out))
    # the same traces in the same order: the library's
    assert listed[0]["count"] == listed[1]["count"] == 4
    assert [r["trace_id"] for r in listed[0]["rows"]] == \
        [r["trace_id"] for r in listed[1]["rows"]] == ["rollout-010", "rollout-013",
                                                       "rollout-016", "rollout-019"]
