"""A run's rollouts in the app: the library lists their step, group and trainer reward; the group
page sets siblings side by side, where they part marked, labels them one after another and
judges two against each other; the training-run page sets the trainer's reward beside the
reviewers' per step and lists the rollouts where they part most."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

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


class _Table(HTMLParser):
    """The rows of the members' table of a group block, each a list of its cells: a cell's
    whole text, its tooltip where it has one (the table cuts long ids and texts short)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._in: list[str] | None = None
        self._title: str | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag == "td":
            self._in = self.rows[-1]
            self._in.append("")
            self._title = dict(attrs).get("title")

    def handle_endtag(self, tag):
        if tag == "td":
            if self._title:
                self._in[-1] = self._title
            self._in = None

    def handle_data(self, data):
        if self._in is not None:
            self._in[-1] += data


def group_block(at: AppTest) -> str:
    """The one HTML block of a group page that holds its siblings."""
    (block,) = [h.proto.body for h in at.get("html") if "og-table" in h.proto.body]
    return block


def members_table(at: AppTest) -> list[dict[str, str]]:
    """The members' table of a group page, a dict per member."""
    parser = _Table()
    parser.feed(group_block(at))
    names = ("#", "trace id", "trainer reward", "reviewers", "your answer", "where they part")
    return [dict(zip(names, cells)) for cells in parser.rows if cells]


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
    assert [m["trainer reward"] for m in table] == ["1.000", "0.000", "1.000"]
    assert [m["reviewers"] for m in table] == ["—"] * 3
    assert table[1]["where they part"] == "message She sold 48 in April and 48*2 = 96 in May, so 144. #### 144"
    block = group_block(at)
    assert "They part at step 2 of their runs (the same step, other words)" in block
    assert block.count('class="og-card') == 3 and block.count("▶ [message · ") == 3
    assert "Natalia sold clips" in block  # the prompt, folded above them


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
    assert [m["your answer"] for m in members_table(at)] == ["task_outcome=success"] * 2 + [""]
    assert 'class="og-card og-at" id="sibling-3"' in group_block(at)  # the one being labelled
    at.text_input(key="pair_reason").input("#2 shows its working").run()
    at.button(key="pair_b_better").click().run()
    assert any("#2 is better" in s.value for s in at.success)
    judged = [r for r in run_env.labelling.current_records()
              if r["question"] == "pairwise_preference"]
    assert len(judged) == 1 and judged[0]["reviewer"] == "ann"
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
    """Siblings' ids differ at their end (`…@daa2f31a/1/7`): the table cuts a long one in its
    middle, and its link and tooltip carry the whole id."""
    from components.siblings import siblings_html
    from viz_app.training import GroupView, Sibling

    long = "openrlhf/groups/run/rank0@daa2f31a/1/7"
    row = SimpleNamespace(trace_id=long, rollout_step=1, rollout_group="g", trainer_reward=1.0)
    block = siblings_html(GroupView(parting=None, prompt=None,
                                    siblings=[Sibling(trace_id=long, where="alike throughout",
                                                      steps=[])]),
                          [row], judged={}, answers={}, at=0)
    shown = re.search(r'<a href="([^"]*)">([^<]*)</a>', block)
    assert shown.group(1) == "trace?trace=openrlhf%2Fgroups%2Frun%2Frank0%40daa2f31a%2F1%2F7"
    head, _, tail = shown.group(2).partition("…")
    assert long.startswith(head) and len(head) >= 6 and tail.endswith("daa2f31a/1/7")
    assert "…" in shown.group(2) and f'title="{long}"' in block


def test_the_run_page_sets_the_trainer_beside_the_reviewers_per_step(run_env):
    rows = run_env.library.update_index().rows
    from viz_app.labels.label import Reviewer

    ann = Reviewer(name="ann", via="self-declared")
    for row, value in zip(rows[:3], ("failure", "success", "failure")):
        run_env.labelling.save_answers(run_env.library.trace(row.trace_id), "", {"task_outcome": value}, ann)
    at = page("app_pages/run.py").run()
    assert not at.exception
    gaps = at.dataframe[0].value
    assert gaps["trace id"].tolist()[:2] == [rows[0].trace_id, rows[2].trace_id]
    assert gaps["gap"].tolist()[:2] == [2.0, 2.0]  # the trainer's 1.0 where reviewers said -1


def test_a_rollouts_trace_page_says_its_step_and_links_its_group(run_env):
    rows = run_env.library.update_index().rows
    at = page("app_pages/trace.py", trace=rows[4].trace_id).run()
    assert not at.exception
    assert any("step **3**" in c.value and rows[4].rollout_group.rsplit(":", 1)[-1] in c.value
               for c in at.caption)


def test_the_group_page_draws_its_siblings_as_one_block_and_asks_for_no_bundle(run_env):
    """A group page opened in a new tab draws one block of HTML for the prompt, the members'
    table and the siblings (not an element per cell and per card: the browser drew those one
    by one), and a form: neither the hidden chart that fetches Plotly's bundle ahead, nor a
    code box (the code highlighter's bundle), nor a data grid is sent (docs/runs.md)."""
    rows = run_env.library.update_index().rows
    at = page("app_pages/group.py", group=rows[0].rollout_group).run()
    assert not at.exception
    assert group_block(at).count('class="og-card') == 3
    assert not at.text and not at.dataframe and not at.get("expander")
    assert not at.get("plotly_chart") and not at.code
    assert "_charts_ready" not in at.session_state  # the bundle is left to a page with charts
    at = page("app_pages/trace.py", trace=rows[0].trace_id).run()  # a page with charts still
    assert at.session_state["_charts_ready"]  # fetched the bundles ahead, under its first run


def test_a_group_pages_trace_text_is_text(tmp_path, monkeypatch):
    """A rollout's words that are HTML show as those words: no tag of theirs reaches the page
    (the block is HTML, so each piece of trace text is escaped for it)."""
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
    assert block.count("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;") >= 3  # prompt, cards
    assert all(m["where they part"].startswith(f"message {evil[:60]}")  # read back as text
               for m in members_table(at))
