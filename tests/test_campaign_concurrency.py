"""Reservations hold across processes: two OS processes on one database (PostgreSQL, and one
SQLite file), 16 simulated reviewers between them claiming and saving one campaign until nothing
is left, with a one-second lease that some of them outlast and one reviewer who walks away
holding a target. No target gets more than K saved reviews or K reviewers' labels, none is
lost (every target complete), none is stuck (no slot left reserved)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections import Counter

import pytest

from factories import REPO, copy_demos, make_workspace
from viz_app.labels.campaign import CampaignSpec
from viz_app.labels.label import Reviewer

SCRIPT = REPO / "tests" / "campaign_reviewers.py"


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path):
    if request.param == "postgresql":
        return request.getfixturevalue("postgres_url")
    return str(tmp_path / "shared.db")


def test_sixteen_reviewers_in_two_processes_never_over_review_lose_or_strand_a_target(
        db, tmp_path):
    library = copy_demos(tmp_path / "lib")
    ws = make_workspace(tmp_path, traces=[library], db=db)
    name = f"race-{uuid.uuid4().hex[:8]}"
    campaign = ws.campaigns.create(CampaignSpec(name=name, per_target=2, agreement_share=0.25,
                                               agreement_k=3, lease_seconds=1),
                                  Reviewer(name="lead", via="cli"))
    start = time.time() + 4  # both processes import, then start together
    runs = [subprocess.Popen(
        [sys.executable, str(SCRIPT), "--db", ws.settings.db_url, "--campaign", name,
         "--traces", str(library), "--reviewers",
         ",".join(f"p{p}-r{i}" for i in range(8)), "--start-at", str(start),
         "--slow", "0.15", "--crash", f"p{p}-r0", "--seed", str(p), "--seconds", "240"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for p in range(2)]
    tallies = []
    for run in runs:
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, err[-3000:]
        tallies.append(json.loads(out.strip().splitlines()[-1]))
    claimed = sum(t["claims"] for t in tallies)
    refused = sum(t["refused"] for t in tallies)

    slots = ws.campaigns.slot_rows(campaign)
    targets = {t.target_id: t for t in ws.campaigns.targets(campaign)}
    assert [s for s in slots if s["state"] != "done"] == []  # none stuck, none lost
    done = Counter(s["target_id"] for s in slots)
    assert all(done[t] == targets[t].required for t in targets)
    assert {t.required for t in targets.values()} == {2, 3}
    for target_id in targets:
        reviewers = [s["reviewer"] for s in slots if s["target_id"] == target_id]
        assert len(set(reviewers)) == len(reviewers)

    labels = [x for x in ws.labelling.all() if x.campaign == name and x.source == "human"]
    per_answer = Counter((x.trace_id, x.event_id, x.question) for x in labels)
    per_reviewer = Counter((x.trace_id, x.event_id, x.question, x.reviewer) for x in labels)
    required = {(t.trace_id, t.event_id): t.required for t in targets.values()}
    assert all(n <= required[(k[0], k[1])] for k, n in per_answer.items())
    assert set(per_reviewer.values()) == {1}
    answered = {(x.trace_id, x.event_id) for x in labels}
    assert answered == set(required)  # every target has its labels

    status = ws.campaigns.status(name)
    assert (status.complete, status.in_progress) == (status.targets, 0)
    assert sum(t["saves"] for t in tallies) == sum(required.values())
    assert claimed > sum(required.values())  # walked-away and outlasted leases were re-claimed
    assert sum(t["errors"] for t in tallies) == 0
    print(f"{claimed} claims, {refused} late saves refused")
