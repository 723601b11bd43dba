"""A run's rollouts in the app: the library lists their step, group and trainer reward; the group
page sets siblings side by side, where they part marked, labels them one after another and
judges two against each other; the training-run page sets the trainer's reward beside the
reviewers' per step and lists the rollouts where they part most."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from urllib.parse import unquote

import pytest
from streamlit.testing.v1 import AppTest

from factories import APP, app_env, make_workspace

ROLLOUTS = Path(__file__).resolve().parent / "fixtures" / "rollouts"


@pytest.fixture
def run_env(tmp_path, monkeypatch):
    """The app on a verl run of two steps (the fixture's step 3, and a step 4 copy)."""
    run = tmp_path / "run" / "rollout_data"
    run.mkdir(parents=True)
    shutil.copy(ROLLOUTS / "verl" / "gsm8k-grpo" / "rollout_data" / "3.jsonl", run)
    lines = (run / "3.jsonl").read_text("utf-8").replace('"step": 3', '"step": 4')
    (run / "4.jsonl").write_text(lines, "utf-8")
    return app_env(monkeypatch, make_workspace(tmp_path, traces=[run]))


def page(path: str, **params) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.switch_page(path)
    for key, value in params.items():
        at.query_params[key] = value
    return at


def group_block(at: AppTest) -> str:
    """The one HTML block of a group page that holds its siblings' cards."""
    (block,) = [h.proto.body for h in at.get("html") if "og-card" in h.proto.body]
    return block


def table_data(at: AppTest) -> dict:
    """What a group page handed its members' table (`components.members`)."""
    (data,) = [json.loads(c.proto.json) for c in at.get("bidi_component")
               if c.proto.component_name == "orchviz.members_table"]
    return data


def members_table(at: AppTest) -> list[dict[str, str]]:
    """The members' table of a group page as the browser lays it out, a dict per member in the
    table's order: each cell's whole text (its tooltip where the cell cuts it)."""
    data = table_data(at)
    names = [c["name"] for c in data["columns"]]
    way = "desc" if data["sort"]["desc"] else "asc"
    return [dict(zip(names, [title or cell for cell, title in zip(data["rows"][i]["cells"],
                                                                  data["rows"][i]["titles"])]))
            for i in data["orders"][data["sort"]["by"]][way]]


def cards(at: AppTest) -> list[int]:
    """The numbers of the sibling cards, in the page's order."""
    return [int(n) for n in re.findall(r'id="sibling-(\d+)"', group_block(at))]


def test_the_library_lists_each_rollouts_step_group_and_trainer_reward(run_env):
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    assert not at.exception
    table = at.dataframe[0].value
    assert sorted(set(table["step"])) == [3, 4]
    assert table["group"].nunique() == 4
    assert sorted(table["trainer reward"].tolist()) == sorted([1.0, 0.0, 1.0, 1.0, 0.0, -0.5] * 2)


def test_the_group_page_sets_the_siblings_side_by_side_with_where_they_part(run_env):
    rows = run_env.library.update_index().rows
    at = page("app_pages/group.py", trace=rows[0].trace_id).run()
    assert not at.exception
    table = members_table(at)
    assert [m["trace id"] for m in table] == [r.trace_id for r in rows[:3]]
    assert [m["trainer"] for m in table] == ["1.000", "0.000", "1.000"]
    assert [m["reviewers"] for m in table] == ["—"] * 3
    assert table[1]["where they part"] == "message She sold 48 in April and 48*2 = 96 in May, so 144. #### 144"
    block = group_block(at)
    assert "They part at step 2 of their runs (the same step, other words)" in block
    assert block.count('class="og-card') == 3 and block.count("▶ [message · ") == 3
    assert "Natalia sold clips" in table_data(at)["prompt"]  # folded above the table
    assert [m["steps"] for m in table] == ["2"] * 3


def test_members_are_labelled_one_after_another_and_pairs_judged(run_env):
    rows = run_env.library.update_index().rows
    at = page("app_pages/group.py", trace=rows[0].trace_id).run()
    at.sidebar.text_input(key="_reviewer_box").input("ann").run()
    for _ in range(2):  # answer the outcome by its key, save, and the next member comes
        at.button(key=[b.key for b in at.button if b.key and b.key.endswith(":key:1")][0]) \
            .click().run()
        at.button(key=[b.key for b in at.button if b.key and ":save:" in b.key][0]).click().run()
        assert not at.exception
    saved = {r["trace_id"]: r["value"] for r in run_env.labelling.current_records()
             if r["question"] == "task_outcome"}
    assert saved == {rows[0].trace_id: "success", rows[1].trace_id: "success"}
    assert any("Label member 3 of 3" in m.value for m in at.markdown)
    assert [m["your answer"] for m in members_table(at)] == ["success"] * 2 + [""]
    assert 'class="og-card og-at" id="sibling-3"' in group_block(at)  # the one being labelled
    at.text_input(key="pair_reason").input("#2 shows its working").run()
    at.button(key="pair_b_better").click().run()
    assert any("#2 is better" in s.value for s in at.success)
    assert any("#2 is better" in t.value for t in at.toast)  # seen below the fold too
    judged = [r for r in run_env.labelling.current_records()
              if r["question"] == "pairwise_preference"]
    assert len(judged) == 1 and judged[0]["reviewer"] == "ann"
    # a judgement of two is no answer about either: the form and the table say so
    assert [m["your answer"] for m in members_table(at)] == ["success"] * 2 + [""]
    assert not any("saved 20" in m.value for m in [*at.markdown, *at.caption])
    assert all(a.value != "#2 shows its working" for a in at.text_area)
    assert at.text_input(key="pair_reason").value == ""  # the next pair's reason is its own
    assert judged[0]["value"]["chosen"] == rows[1].trace_id
    run_env.exports.write("preference", run_env.settings.uploads.parent / "pairs.jsonl")
    (row,) = [json.loads(x) for x in (run_env.settings.uploads.parent / "pairs.jsonl")
              .read_text("utf-8").splitlines()]
    assert (row["chosen_trace_id"], row["step"], row["group"]) == (
        rows[1].trace_id, 3, rows[0].rollout_group)
    assert (row["chosen_trainer_reward"], row["rejected_trainer_reward"]) == (0.0, 1.0)


def test_the_group_page_reads_its_rollouts_once_per_version_of_them(run_env, monkeypatch):
    """Each key a reviewer presses reruns the page: where the siblings part is kept, not
    worked out again from the rollout file; a rollout the trainer rewrote is read anew."""
    from viz_app import training

    reads: list[int] = []
    real = training.read_rows
    monkeypatch.setattr(training, "read_rows", lambda rows: reads.append(len(rows)) or real(rows))
    rows = run_env.library.update_index().rows
    at = page("app_pages/group.py", group=rows[0].rollout_group)
    at.session_state["_reviewer_box"] = "ann"
    at.run()
    at.button(key="group_next").click().run()
    at.button(key="group_next").click().run()
    assert not at.exception and any("Label member 3 of 3" in m.value for m in at.markdown)
    assert reads == [3]
    log = Path(rows[0].path)
    log.write_text(log.read_text("utf-8").replace("Altogether 48 + 24 = 72.",
                                                  "Altogether 72, twice checked."), "utf-8")
    at.run()
    assert reads == [3, 3]
    assert "Altogether 72, twice checked." in group_block(at)


def test_a_long_trace_id_shows_its_end_and_links_to_its_trace():
    """Siblings' ids differ at their end (`…@daa2f31a/1/7`): the table shows a long one's end,
    and its link and tooltip carry the whole id."""
    from components.members import Member, Sort, table_data

    long = "openrlhf/groups/run/rank0@daa2f31a/1/7"
    (row,) = table_data([Member(0, long, 1.0, None, 3, "", "alike throughout")], prompt=None,
                        sort=Sort(), at=0)["rows"]
    assert row["link"] == "trace?trace=openrlhf%2Fgroups%2Frun%2Frank0%40daa2f31a%2F1%2F7"
    assert row["cells"][1] == "…@daa2f31a/1/7" and row["titles"][1] == long


def test_the_run_page_sets_the_trainer_beside_the_reviewers_per_step(run_env):
    rows = run_env.library.update_index().rows
    from viz_app.labels.label import Reviewer

    ann = Reviewer(name="ann", via="self-declared")
    for row, value in zip(rows[:3], ("failure", "success", "failure")):
        run_env.labelling.save_answers(run_env.library.trace(row.trace_id), "", {"task_outcome": value}, ann)
    at = page("app_pages/run.py").run()
    assert not at.exception
    steps, gaps = (d.value for d in at.dataframe)  # the steps, then the rollouts, most apart
    assert steps["step"].tolist() == [3]
    assert [unquote(t.removeprefix("trace?trace=")) for t in gaps["trace id"]][:2] == [
        rows[0].trace_id, rows[2].trace_id]  # each a link to its trace
    assert gaps["gap"].tolist()[:2] == [2.0, 2.0]  # the trainer's 1.0 where reviewers said -1


def test_a_rollouts_trace_page_says_its_step_and_links_its_group(run_env):
    rows = run_env.library.update_index().rows
    at = page("app_pages/trace.py", trace=rows[4].trace_id).run()
    assert not at.exception
    assert any("step **3**" in c.value and rows[4].rollout_group.rsplit(":", 1)[-1] in c.value
               for c in at.caption)


def test_the_group_page_draws_its_siblings_as_one_block_and_asks_for_no_bundle(run_env):
    """A group page opened in a new tab draws the members' table as one component and the
    siblings as one block of HTML (not an element per cell and per card: the browser drew
    those one by one), and a form: neither the hidden chart that fetches Plotly's bundle ahead, nor a
    code box (the code highlighter's bundle), nor a data grid is sent (docs/runs.md)."""
    rows = run_env.library.update_index().rows
    at = page("app_pages/group.py", group=rows[0].rollout_group).run()
    assert not at.exception
    assert group_block(at).count('class="og-card') == 3 and len(members_table(at)) == 3
    assert not at.text and not at.dataframe and not at.get("expander")
    assert not at.get("plotly_chart") and not at.code
    assert "_charts_ready" not in at.session_state  # the bundle is left to a page with charts
    at = page("app_pages/trace.py", trace=rows[0].trace_id).run()  # a page with charts still
    assert at.session_state["_charts_ready"]  # fetched the bundles ahead, under its first run


def test_a_group_pages_trace_text_is_text(tmp_path, monkeypatch):
    """A rollout's words that are HTML show as those words: no tag of theirs reaches the page
    (the cards' block is HTML, so each piece of trace text is escaped for it; the table is
    handed its text as data, which its script sets as text)."""
    run = tmp_path / "run"
    run.mkdir()
    evil = '<img src=x onerror="alert(1)"></section><script>alert(2)</script> & "quoted"'
    lines = [json.dumps({"step": 1, "prompt": f"user\n{evil}\nassistant\n",
                         "response": f"{evil} {i}", "reward": float(i)}) for i in range(2)]
    (run / "rollout_data_rank_0.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    ws = app_env(monkeypatch, make_workspace(tmp_path, traces=[run]))
    at = page("app_pages/group.py", group=ws.library.update_index().rows[0].rollout_group).run()
    assert not at.exception
    block = group_block(at)
    assert "<img" not in block and "<script" not in block and "</section><script" not in block
    assert block.count("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;") >= 2  # the cards
    assert evil in table_data(at)["prompt"]
    assert all(m["where they part"].startswith(f"message {evil[:60]}")  # read back as text
               for m in members_table(at))


def test_the_members_sort_by_a_column_and_the_cards_and_keys_follow(run_env):
    """A group page opened with `?sort=trainer:desc` (a heading clicked, or a link that kept
    it) lists the members highest trainer reward first, ties as sampled; the cards follow the
    table, and Next and a save move down the table's order, not the sampled one."""
    rows = run_env.library.update_index().rows
    at = page("app_pages/group.py", group=rows[0].rollout_group, sort="trainer:desc")
    at.session_state["_reviewer_box"] = "ann"
    at.run()
    assert not at.exception
    assert [m["#"] for m in members_table(at)] == ["1", "3", "2"]  # 1.0, 1.0, then 0.0
    assert cards(at) == [1, 3, 2]
    assert table_data(at)["sort"] == {"by": "trainer", "desc": True}
    assert at.query_params["sort"] in ("trainer:desc", ["trainer:desc"])  # the link keeps it
    assert any("Label member #1 · 1 of 3" in m.value for m in at.markdown)
    assert any("trainer reward, highest first" in c.value for c in at.caption)
    at.button(key="group_next").click().run()
    assert any("Label member #3 · 2 of 3" in m.value for m in at.markdown)
    at.button(key=[b.key for b in at.button if b.key and b.key.endswith(":key:1")][0]) \
        .click().run()
    at.button(key=[b.key for b in at.button if b.key and ":save:" in b.key][0]).click().run()
    assert any("Label member #2 · 3 of 3" in m.value for m in at.markdown)  # saved, moved on
    assert [r["trace_id"] for r in run_env.labelling.current_records()] == [rows[2].trace_id]
    assert 'class="og-card og-at" id="sibling-2"' in group_block(at)
    assert table_data(at)["at"] == 1

    at = page("app_pages/group.py", group=rows[0].rollout_group, sort="trainer:asc").run()
    assert [m["#"] for m in members_table(at)] == ["2", "1", "3"]
    at = page("app_pages/group.py", group=rows[0].rollout_group, sort="nonsense:up")
    at.session_state["_reviewer_box"] = "ann"
    at.run()
    assert not at.exception and [m["#"] for m in members_table(at)] == ["1", "2", "3"]
    assert any("Label member 1 of 3" in m.value for m in at.markdown)  # as sampled
    assert "sort" not in at.query_params


def test_a_column_sorts_what_it_lacks_last_either_way():
    """The one sort rule (the browser only applies the orders it is handed): a member with
    nothing in the column (unreviewed, no answer) comes last whichever way, ties keep the order
    the trainer sampled them in, and a text column sorts without regard to case."""
    from components.members import BY_KEY, COLUMNS, Member, Sort, ordered, table_data

    found = [Member(0, "r/0", 0.5, None, 4, "", "tool grep"),
             Member(1, "r/1", None, 1.0, 9, "task_outcome=success", "message Done"),
             Member(2, "r/2", 0.5, -1.0, 2, "task_outcome=failure", "(had ended)"),
             Member(3, "r/3", 1.0, None, 4, "", "Message done")]
    assert ordered(found, Sort("trainer", True)) == [3, 0, 2, 1]
    assert ordered(found, Sort("trainer", False)) == [0, 2, 3, 1]
    assert ordered(found, Sort("reviewers", False)) == [2, 1, 0, 3]
    assert ordered(found, Sort("reviewers", True)) == [1, 2, 0, 3]
    assert ordered(found, Sort("steps", True)) == [1, 0, 3, 2]
    assert ordered(found, Sort("answer", False)) == [2, 1, 0, 3]
    assert ordered(found, Sort("where", False)) == [2, 1, 3, 0]  # alike ones side by side
    assert ordered(found, Sort("n", True)) == [3, 2, 1, 0]
    data = table_data(found, prompt="p", sort=Sort("steps", True), at=0)
    assert data["orders"]["steps"] == {"asc": [2, 0, 3, 1], "desc": [1, 0, 3, 2]}
    assert set(data["orders"]) == set(BY_KEY) == {c.key for c in COLUMNS}
    for column in COLUMNS:  # every order in the URL reads back as itself
        for way in (False, True):
            assert Sort.parse(str(Sort(column.key, way))) == Sort(column.key, way)
    assert Sort.parse("trainer") == Sort("trainer", True)  # a number: highest first
    assert Sort.parse("where") == Sort("where", False)
    assert Sort.parse("trainer:sideways") == Sort.parse(None) == Sort()


def test_a_pair_judged_is_no_answer_about_either_member(run_env):
    """A judgement of two siblings is stored on one of them, but it answers nothing about that
    run: its member's form says not saved yet, with an empty note (not the pair's reason), and
    the table shows no answer of the reviewer's there."""
    from viz_app.labels.label import Reviewer

    rows = run_env.library.update_index().rows
    first, second = (run_env.library.trace(r.trace_id) for r in rows[:2])
    run_env.labelling.save_preference(first, second, second.trace_id,
                                      Reviewer(name="ann", via="self-declared"), "shows its work")
    for trace in (first, second):
        assert run_env.labelling.answers(trace.trace_id, "ann") == {}
    at = page("app_pages/group.py", group=rows[0].rollout_group)
    at.session_state["_reviewer_box"] = "ann"
    at.run()
    for _ in range(2):  # each member of the pair in turn
        assert not at.exception
        assert not any("saved 20" in m.value for m in [*at.markdown, *at.caption])
        assert all(not a.value for a in at.text_area)
        at.button(key="group_next").click().run()
    assert [m["your answer"] for m in members_table(at)] == [""] * 3


def test_the_reviewers_name_goes_along_from_a_rollouts_trace_to_its_group(run_env):
    """Each page draws the Reviewer box, and on a switch of pages Streamlit dropped the value
    the last page's box left: a reviewer who followed "Its group" from a trace arrived with an
    empty box (and the browser forgot the name). The name goes along; a name typed anew still
    wins."""
    rows = run_env.library.update_index().rows
    at = page("app_pages/trace.py", trace=rows[0].trace_id).run()
    at.sidebar.text_input(key="_reviewer_box").input("ann").run()
    for path in ("app_pages/group.py", "app_pages/trace.py", "app_pages/group.py"):
        at.switch_page(path)
        at.query_params["group"] = rows[0].rollout_group
        at.query_params["trace"] = rows[0].trace_id
        at.run()
        assert not at.exception
        assert at.sidebar.text_input(key="_reviewer_box").value == "ann"
    assert any("Label member 1 of 3" in m.value for m in at.markdown)
    at.sidebar.text_input(key="_reviewer_box").input("bob").run()
    at.switch_page("app_pages/trace.py")
    at.run()
    assert at.sidebar.text_input(key="_reviewer_box").value == "bob"
