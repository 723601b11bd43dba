"""A lead follows a run in the app (`orchviz app --follow`) while others use the same app: the
index is shared by every session, so whichever session (or command) reads the trainer's new
lines first, the lead's Library still sees them come, says so, and tops up the per-step
campaigns that sample the run."""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from factories import APP, app_env, make_workspace
from rollout_writer import append, lines
from viz_app.labels.campaign import CampaignSpec, Sample
from viz_app.labels.label import Reviewer

GROUP = 4


@pytest.fixture
def followed(tmp_path, monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    log = run / "rollout_data_rank_0.jsonl"
    append(log, b"".join(lines(1, range(2), GROUP)))
    ws = make_workspace(tmp_path, traces=[run])
    ws.settings.follow = 1.0
    app_env(monkeypatch, ws)
    return ws, log


def status(at: AppTest) -> str:
    return next(c.value for c in at.caption if re.search(r"\d+ of \d+ traces", c.value))


def test_lines_another_session_read_first_still_come_in_and_top_up_the_campaign(followed):
    ws, log = followed
    ws.campaigns.create(CampaignSpec(name="live", questions=["task_outcome"],
                                     sample=Sample(kind="per_step", n=1)),
                        Reviewer(name="lee", via="cli"))
    assert ws.campaigns.get("live").targets == GROUP  # step 1's one group
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    assert not at.exception
    assert "following the run: looking every 1 s" in status(at)

    append(log, b"".join(lines(2, range(2), GROUP)), cut=True)
    ws.library.update_index()  # another session's look reads the new lines first
    at.run()
    assert not at.exception
    assert status(at).startswith("16 of 16 traces")
    assert f"{2 * GROUP} new traces at" in status(at)  # said, though this page read none
    assert "indexed 0 new" not in status(at)
    assert ws.campaigns.get("live").targets == 2 * GROUP  # step 2 sampled as it came

    at.run()  # a look that finds nothing new changes nothing
    assert ws.campaigns.get("live").targets == 2 * GROUP


def test_a_lead_makes_a_per_step_campaign_in_the_app_and_it_samples_the_steps_that_come(
        followed):
    """The Campaigns page offers what `--per-step N` does: N whole groups of each training step,
    and of each step the trainer writes later, which the followed Library tops up."""
    ws, log = followed
    append(log, b"".join(lines(2, range(3), GROUP)))
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["reviewer"] = "lee"
    at.switch_page("app_pages/campaigns.py")
    at = at.run()
    assert not at.exception, at.exception
    at.radio(key="camp:source").set_value("library")
    at.text_input(key="camp:name").input("live")
    at.multiselect(key="camp:questions").set_value(["task_outcome"])
    at.number_input(key="camp:per_step").set_value(1)
    at = at.button[[b.label for b in at.button].index("Make the campaign")].click().run()
    assert not at.exception, at.exception
    made = ws.campaigns.get("live")
    assert made.spec.sample.kind == "per_step" and made.spec.sample.n == 1
    assert made.targets == 2 * GROUP  # one whole group of each of the two steps
    assert any("1 whole group of each training step" in s.value for s in at.success)

    append(log, b"".join(lines(3, range(2), GROUP)))
    library = AppTest.from_file(str(APP), default_timeout=120).run()  # the lead's Library
    assert not library.exception
    assert ws.campaigns.get("live").targets == 3 * GROUP  # step 3 sampled as it came


def test_the_steps_a_lead_narrowed_to_stay_narrowed_as_steps_come(followed):
    """A slider whose ends change is a new widget to Streamlit: without care, each step a
    trainer writes would set the lead's narrowing back to every step. A range short of the last
    step stays as chosen; one that reached the last step follows the newest."""
    ws, log = followed
    append(log, b"".join(lines(2, range(2), GROUP)) + b"".join(lines(3, range(2), GROUP)))
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.slider(key="library_steps").set_value((1, 2)).run()
    append(log, b"".join(lines(4, range(2), GROUP)))
    at.run()
    assert not at.exception, at.exception
    assert at.slider(key="library_steps").value == (1, 2)
    assert status(at).startswith(f"{4 * GROUP} of {8 * GROUP} traces")

    at.slider(key="library_steps").set_value((3, 4)).run()  # the newest steps
    append(log, b"".join(lines(5, range(2), GROUP)))
    at.run()
    assert at.slider(key="library_steps").value == (3, 5)
    assert status(at).startswith(f"{6 * GROUP} of {10 * GROUP} traces")
