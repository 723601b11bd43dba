"""A review campaign as an RL team runs one, built through the Workspace: 14 traces (the 12
demo orchestrations and a rerun each of the premature-stop and late-stop runs), three reviewers
who mostly agree, a lead who adjudicates half of their disputes and retracts a trial label,
pairwise judgements of each run against its rerun, and an LLM judge's labels imported beside
the humans'. Every training shape is then exported from it with the `orchviz` CLI, as a file and
as a `--hf-dataset` folder."""

from __future__ import annotations

import hashlib
import io
import json
from contextlib import redirect_stderr, redirect_stdout
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from factories import demo_paths, make_workspace
from viz_app.cli import main
from viz_app.export import FORMATS, TRAINING
from viz_app.labels.campaign import CampaignSpec
from viz_app.labels.label import Reviewer
from viz_app.workspace import Workspace

CAMPAIGN = "week-1"
REVIEWERS = ("ann", "bob", "cy")
LEAD = Reviewer(name="lee", via="cli")
PREMATURE = "demo-10-review-premature-stop"
LATE = "demo-11-review-late-stop"
RERUNS = {PREMATURE: "demo-10-rerun", LATE: "demo-11-rerun"}
"""Each judged run and its rerun (the same task, the orchestrator decided differently)."""

FORKS = {PREMATURE: "e13", LATE: "e39"}
"""Where each rerun leaves its run: replayed from the stop, it went on (decision-groups'
groups: the run and its rerun from one fork point)."""

EXPORT_OPTIONS = ("--disputed", "adjudicated")
"""Disputed targets take the lead's adjudication, as a team that adjudicates exports them."""


def rerun(trace_id: str) -> dict:
    """A second run of a demo's task, replayed from the run's stop (which it turned into going on):
    the same events, the orchestrator's first words changed,
    and each event with the id of the LLM response it came from (`response_id`, as read from
    OpenTelemetry's `gen_ai.response.id`), which Agent Lightning links rewards by."""
    raw = _demo_dict(trace_id)
    raw["trace_id"] = RERUNS[trace_id]
    raw["events"][0]["content"] = "A rerun that waits for every analyst before answering."
    fork = next(e for e in raw["events"] if e["id"] == FORKS[trace_id])
    fork.update(forked_from=trace_id, fork_event=fork["id"], decision="continue",
                content="Wait for every analyst before answering.", replay_model="stub")
    for event in raw["events"]:
        event["response_id"] = f"resp-{raw['trace_id']}-{event['id']}"
    return raw


def _read(path: Path) -> dict:
    return json.loads(path.read_text())


def _demo_dict(trace_id: str) -> dict:
    (raw,) = [r for r in map(_read, demo_paths()) if r["trace_id"] == trace_id]
    return raw


def _pick(*key: object) -> int:
    """A stable number for a target, so every build of the campaign answers alike."""
    return int(hashlib.sha256(repr(key).encode()).hexdigest()[:8], 16)


def _stop_answer(trace_id: str) -> dict:
    """Premature in the premature-stop runs (it should have waited for db_analyst's result,
    e15), late in the late-stop runs (researcher_1's verified answer was in at e7, so the
    orchestrator's decision e8 should have been the stop), correct elsewhere."""
    if trace_id.startswith("demo-10"):
        return {"stopping_correctness": "premature", "stop_should_have_been": "e15"}
    if trace_id.startswith("demo-11"):
        return {"stopping_correctness": "late", "stop_should_have_been": "e8"}
    return {"stopping_correctness": "correct"}


def answers(ws: Workspace, claim, reviewer: str) -> dict:
    """A reviewer's answers to a claim's required questions; cy differs on one target in five
    (and calls the premature stop correct), which makes the disputes."""
    found: dict = {}
    for q in claim.questions:
        question = ws.rubric.question(q)
        if question.ask_when is not None:
            continue
        if q == "stopping_correctness":
            found.update(_stop_answer(claim.trace_id))
            continue
        if question.optional:
            continue
        plain = [c.value for c in question.choices if c.pointer is None]
        n = _pick(claim.trace_id, claim.event_id, q)
        found[q] = plain[n % len(plain)]
        if reviewer == "cy" and n % 5 == 0:
            found[q] = plain[(n + 1) % len(plain)]
    if reviewer == "cy" and claim.trace_id == PREMATURE and "stopping_correctness" in found:
        found = {k: v for k, v in found.items() if k != "stop_should_have_been"}
        found["stopping_correctness"] = "correct"
    return found


@dataclass
class Campaign:
    """The campaign's database and traces, and what was done in it."""

    db: Path
    traces: Path
    submitted: int = 0
    adjudicated: int = 0
    retracted: list[str] = field(default_factory=list)
    imported: int = 0


def build(folder: Path) -> Campaign:
    """Run the whole campaign in `folder`."""
    traces = [*map(_read, demo_paths()), rerun(PREMATURE), rerun(LATE)]  # one folder
    ws = make_workspace(folder, traces=traces)
    ws.campaigns.create(CampaignSpec(name=CAMPAIGN, per_target=len(REVIEWERS)), LEAD)
    done = Campaign(db=folder / "orchviz.db", traces=folder / "traces")
    people = [Reviewer(name=n, via="cli") for n in REVIEWERS]
    while True:
        claims = [(p, ws.campaigns.claim_next(CAMPAIGN, p)) for p in people]
        if all(c is None for _, c in claims):
            break
        for person, claim in claims:
            if claim is not None:
                ws.campaigns.submit(claim, answers(ws, claim, person.name))
                done.submitted += 1
    for n, dispute in enumerate(ws.campaigns.disagreements(CAMPAIGN)):
        if dispute.trace_id == PREMATURE or n % 2 == 0:
            settled = dispute.answers["ann"]
            ws.campaigns.adjudicate(CAMPAIGN, dispute.trace_id, dispute.event_id, settled, LEAD,
                          "two of three reviewers, and the trace bears them out")
            done.adjudicated += 1
    trial = [r for r in ws.labelling.current_records(campaign=CAMPAIGN) if r["reviewer"] == "cy"]
    done.retracted = [trial[0]["label_id"]]
    ws.campaigns.retract(done.retracted, LEAD, "cy's first label was a trial run", CAMPAIGN)
    for first, second in RERUNS.items():
        for name in ("ann", "bob"):
            ws.labelling.save_preference(ws.library.trace(first), ws.library.trace(second), second,
                               Reviewer(name=name, via="cli"), "waits for every result", 2)
    judged = [dict(r, reviewer="judge-llm", label_id=None, comment="judge: gpt-like")
              for r in ws.labelling.current_records(trace_id="demo-01-centralized-faithful")
              if r["reviewer"] == "ann"]
    report = ws.labelling.import_labels(judged, {t: ws.library.trace(t) for t in {r["trace_id"] for r in judged}},
                              origin="llm-judge")
    done.imported = report.added
    return done


@dataclass
class Export:
    """One shape written both ways by the CLI, with what it printed."""

    format: str
    file: Path
    folder: Path
    said: str


def export(campaign: Campaign, format: str, out: Path, *extra: str) -> Export:
    """`orchviz labels export --format F -o FILE` and the same with `--hf-dataset -o FOLDER`;
    AssertionError with what the CLI said when either exits non-zero."""
    found = FORMATS[format]
    file = out / found.file_name
    folder = out / f"{format}-dataset"
    said = io.StringIO()
    for target, more in ((file, ()), (folder, ("--hf-dataset",))):
        argv = ["labels", "export", "--db", str(campaign.db), "--traces", str(campaign.traces),
                "--format", format, "-o", str(target), *EXPORT_OPTIONS, *extra, *more]
        with redirect_stdout(said), redirect_stderr(said):
            code = main(argv)
        assert code == 0, f"orchviz {' '.join(argv)} exited {code}: {said.getvalue()}"
    return Export(format, file, folder, said.getvalue())


VARIANTS = {**{f: () for f in TRAINING},
            **{f"{f}+conversational": ("--conversational",) for f in TRAINING
               if "conversational" in FORMATS[f].accepts}}
"""Every training shape in the FORMATS registry, and its message-list variant where it has
one; the key is the shape, `+conversational` for the variant."""


@dataclass
class Shapes:
    """The campaign and every variant exported from it."""

    campaign: Campaign
    exports: dict[str, Export]

    def __getitem__(self, variant: str) -> Export:
        return self.exports[variant]

    def texts(self) -> Iterator[str]:
        """Every line of every exported file, for training a tokenizer on."""
        for found in self.exports.values():
            if found.file.suffix == ".jsonl":
                yield from found.file.read_text().splitlines()


def build_shapes(folder: Path) -> Shapes:
    """Run the campaign in `folder` and export every variant from it."""
    campaign = build(folder / "campaign")
    return Shapes(campaign, {
        variant: export(campaign, variant.split("+")[0], folder / variant.replace("+", "-"),
                        *extra)
        for variant, extra in VARIANTS.items()})
