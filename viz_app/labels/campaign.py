"""Review campaigns, pure: what a campaign asks (its spec: questions, a filter over the library,
a sample, gold, agreement, the queue's order), and the shapes a campaign's store hands out (a
claim, a status, a disagreement), with the judging of answers those shapes report (gold
accuracy, disagreements by the one rule of `viz_app.labels.disagreement`). No SQL here: the
store (`viz_app.store.campaigns`) keeps campaigns, their targets and the slots reviewers claim.

A campaign *target* is one (trace, event) of the library or of a pool (the trace itself when the
event is '') with the campaign's questions that the rubric asks there. Choosing them (the rows a
filter keeps and a sample takes, their targets, gold items, agreement slots and priorities) is
`viz_app.labels.campaign_plan`'s.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from viz_app.errors import LabelError
from viz_app.labels.agreement import QuestionAgreement
from viz_app.labels.disagreement import SPREAD, disputed, same_answer
from viz_app.labels.label import LabelRecord, Reviewer
from viz_app.labels.rubric import LabelTarget, Rubric
from viz_app.query import Condition

Role = Literal["lead", "reviewer"]
"""What a member may do: a `lead` creates campaigns, sees everyone's progress, adjudicates and
retracts; a `reviewer` claims and saves targets."""

ROLES: tuple[str, ...] = ("lead", "reviewer")

QueueOrder = Literal["sample", "suggestions", "disagreement", "uncertain", "contested",
                     "reward"]
"""The order the queue hands out targets: the sample's own order (`sample`), targets that
suggestions flag first (`suggestions`), the targets kept for agreement (K of 2 or more)
first, so agreement can be measured early (`disagreement`), the learned producer's least
certain targets first (`uncertain`), or the targets where producers disagree with each other
or with a first reviewer first (`contested`; `viz_app.labels.attention`), or, in a pool a
reward server logged (`orchviz reward serve --audit`), the targets the reward model is least
sure of or furthest from a first reviewer's answer first (`reward`; `viz_app.reward.audit`)."""

ORDERS: tuple[str, ...] = ("sample", "suggestions", "disagreement", "uncertain", "contested",
                           "reward")

URGENT_ORDERS: tuple[str, ...] = ("uncertain", "contested", "reward")
"""The orders that rank targets by an urgency (`PlannedTarget.urgency`, higher first)."""

SampleKind = Literal["all", "random", "stratified", "groups", "per_step"]

STRATA: tuple[str, ...] = ("task", "system", "topology")
"""The fields a sample can be stratified by."""

FIGURES: tuple[str, ...] = ("events", "agents", "depth", "makespan_s", "parallelism", "tokens",
                            "cost_usd", "warnings")
"""The index figures a filter can bound."""

LEASE_SECONDS = 600
"""How long a claimed target stays reserved for its reviewer unless renewed (10 minutes)."""

EXPIRED = ("your reservation expired and the target went to someone else; nothing was saved")
"""What a reviewer is told when they save a target whose lease another reviewer has taken."""


# -- the spec ----------------------------------------------------------------------------------


class Filter(BaseModel):
    """Which traces of the library a campaign draws from: every condition given must hold (a
    list means any of its values)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    folders: list[str] = Field(default_factory=list, description="Only traces in files under "
                               "one of these folders (or these files).")
    systems: list[str] = Field(default_factory=list, description="Only these systems.")
    topologies: list[str] = Field(default_factory=list, description="Only these topologies.")
    tasks: list[str] = Field(default_factory=list, description="Only these task ids.")
    formats: list[str] = Field(default_factory=list, description="Only these source formats "
                               "(`orchviz`, or an importer's name).")
    figures: dict[str, tuple[float | None, float | None]] = Field(
        default_factory=dict, description="Figure -> (lowest, highest), either None for no "
        "bound: events, agents, depth, makespan_s, parallelism, tokens, cost_usd, warnings.")
    text: str = Field("", description="Words every trace must contain (ids, task, agents, "
                      "tools, content), as the library's search matches them.")
    trace_ids: list[str] = Field(default_factory=list, description="Only these traces (the "
                                 "ones a lead picked in the Library).")
    conditions: list[Condition] = Field(default_factory=list, description="Conditions in the "
                                        "library's filter language (`viz_app.query`: "
                                        "`agents>10`, `reward.team>=0.5`, `step>=40`), as the "
                                        "Library's filter line holds them: all must hold.")

    @field_validator("figures")
    @classmethod
    def _known_figures(cls, value: dict) -> dict:
        unknown = sorted(set(value) - set(FIGURES))
        if unknown:
            raise ValueError(f"no figure {unknown[0]!r} (figures: {', '.join(FIGURES)})")
        return value


class Sample(BaseModel):
    """How many of the filtered traces a campaign takes, and which."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: SampleKind = Field("all", description="`all`; `random` N traces; `stratified` by a "
                             "field, N traces spread evenly over its values (all, interleaved, "
                             "without N); `groups`: whole GRPO groups, every rollout of the "
                             "same task_id (N groups, or all); `per_step`: N whole groups "
                             "of each training step of a trainer's rollouts, sampled again as "
                             "steps arrive.")
    n: int | None = Field(None, ge=1, description="How many traces (groups, for `groups`; "
                          "groups of each step, for `per_step`); None for every one.")
    seed: int = Field(0, description="The seed of every random choice: the same seed, the same "
                      "campaign.")
    field: Literal["task", "system", "topology"] | None = Field(
        None, description="The field of a stratified sample.")

    @model_validator(mode="after")
    def _coherent(self) -> Sample:
        if self.kind in ("random", "per_step") and self.n is None:
            raise ValueError(f"a {'random' if self.kind == 'random' else 'per-step'} sample "
                             "needs its size N")
        if self.kind == "stratified" and self.field is None:
            raise ValueError(f"a stratified sample needs its field ({', '.join(STRATA)})")
        if self.kind != "stratified" and self.field is not None:
            raise ValueError("only a stratified sample takes a field")
        return self


INSTRUCTIONS_LIMIT = 20_000
"""Characters of a campaign's instructions (a page of guidance, not a manual)."""


class CampaignSpec(BaseModel):
    """What a lead asks for when creating a campaign."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=256, description="The campaign's name, unique in "
                      "the database.")
    questions: list[str] = Field(default_factory=list, description="The rubric questions asked "
                                 "(their follow-ups come with them); empty for the `default_questions`.")
    per_target: int = Field(1, ge=1, le=50, description="K: reviewers who must save each "
                            "target.")
    agreement_share: float = Field(0.0, ge=0.0, le=1.0, description="The share of targets "
                                   "given `agreement_k` reviewers, only to measure agreement.")
    agreement_k: int = Field(2, ge=2, le=50, description="Reviewers of a target kept for "
                             "agreement.")
    filter: Filter = Field(default_factory=Filter, description="Which traces to draw from.")
    sample: Sample = Field(default_factory=Sample, description="How many of them, and which.")
    pool: str | None = Field(None, description="The pool (a location the workspace lists, "
                             "docs/pools.md) the campaign draws from, through its index; None: "
                             "the library's folders, or the workspace's first pool when the "
                             "folders hold no trace.")
    gold: str | None = Field(None, description="A labels file (the jsonl export's shape) whose "
                             "answers make gold items, mixed in unannounced.")
    gold_campaign: str | None = Field(None, description="An earlier campaign whose adjudicated "
                                      "answers make gold items.")
    assisted: bool = Field(False, description="Whether reviewers see suggestions before "
                           "answering.")
    order: QueueOrder = Field("sample", description="The queue's order (see QueueOrder).")
    lease_seconds: int = Field(LEASE_SECONDS, ge=1, le=7 * 24 * 3600, description="How long a "
                               "claim is reserved unless renewed.")
    instructions: str = Field("", max_length=INSTRUCTIONS_LIMIT, description="What the lead "
                              "tells the reviewers, in Markdown: shown on the Review page beside "
                              "the first target and on demand (rendered safely: no HTML, no "
                              "image, links only to http(s)).")

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        value = value.strip()
        if not value or any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
            raise ValueError("a campaign's name is non-empty text on one line")
        return value


def spec_error(err: Exception) -> LabelError:
    """A pydantic ValidationError of a spec as one sentence."""
    errors = getattr(err, "errors", None)
    if errors is None:
        return LabelError(str(err))
    first = errors()[0]
    place = ".".join(str(p) for p in first["loc"])
    message = str(first["msg"]).removeprefix("Value error, ")
    return LabelError(f"campaign spec: {place}: {message}" if place else
                      f"campaign spec: {message}")


# -- the shapes a store hands out ----------------------------------------------------------------


class Campaign(BaseModel):
    """A campaign as stored: its spec and the rubric it pinned."""

    model_config = ConfigDict(frozen=True)

    campaign_id: str
    name: str
    rubric_version: str = Field(description="The rubric every label of it is saved under.")
    rubric_sha256: str
    questions: list[str] = Field(description="The questions asked (follow-ups included), rubric "
                                 "order.")
    per_target: int = Field(description="K, the reviewers of an ordinary target.")
    spec: CampaignSpec = Field(description="What the lead asked for.")
    assisted: bool
    order: QueueOrder
    lease_seconds: int
    created_by: str
    created_at: str
    closed_at: str | None = None
    targets: int = Field(0, description="How many targets it has.")


class Claim(BaseModel):
    """A target reserved for one reviewer until `leased_until`: what the review page shows. It
    never says whether the target is gold, nor what anyone else answered."""

    model_config = ConfigDict(frozen=True)

    campaign: str = Field(description="The campaign's name.")
    slot_id: int = Field(description="The slot held (the store's id).")
    target_id: int = Field(description="The target's id in the campaign.")
    trace_id: str
    event_id: str | None = Field(description="The event to label; None for the trace itself.")
    questions: list[str] = Field(description="The questions to answer, rubric order (follow-ups "
                                 "included: asked only when their answer calls for them).")
    leased_until: float = Field(description="Seconds since the epoch when the reservation ends "
                                "unless renewed.")
    reviewer: Reviewer = Field(description="Who holds it.")
    assisted: bool = Field(False, description="Whether the campaign shows suggestions before "
                           "answering.")
    token: str = Field("", repr=False, description="The secret the store issued with this "
                       "reservation: a save, skip or renewal brings it back, so only the claim "
                       "the store handed out is accepted.")

    @property
    def key(self) -> str:
        """The target's event id, or '' for the trace (as labels store it)."""
        return self.event_id or ""


class AlikeTarget(BaseModel):
    """A target of a claim's kind (it asks the claim's very questions: another spawn, another
    stop) on any trace of the campaign, free to the claim's reviewer: one they may answer with
    the claim's target at once (`ws.campaigns.alike`)."""

    model_config = ConfigDict(frozen=True)

    target_id: int
    trace_id: str
    event_id: str | None = Field(description="None for the trace itself.")

    @property
    def key(self) -> str:
        """The target's event id, or '' for the trace (as labels store it)."""
        return self.event_id or ""

    def named(self, trace_id: str | None = None) -> str:
        """'e12', or 'e12 of run-7' when it is on another trace than `trace_id`."""
        where = self.event_id or "the whole trace"
        return where if self.trace_id == trace_id else f"{where} of {self.trace_id}"


class AlikeRefusal(BaseModel):
    """A target a one-answer-for-many save did not save, and why (one clause)."""

    model_config = ConfigDict(frozen=True)

    target: AlikeTarget
    reason: str


class AlikeSaved(BaseModel):
    """What one answer given to many targets saved: the labels (the claim's target's first),
    and the targets chosen that were not saved, each with why."""

    labels: list[Any] = Field(description="The labels saved (`Label`), one per question and "
                              "target.")
    saved: int = Field(description="Targets saved, the claim's own included.")
    refused: list[AlikeRefusal] = Field(default_factory=list)

    def sentence(self, trace_id: str | None = None) -> str:
        """One sentence saying which chosen targets were not saved and why ('' when all
        were); targets on another trace than `trace_id` are named with their trace."""
        if not self.refused:
            return ""
        by_reason: dict[str, list[str]] = defaultdict(list)
        for r in self.refused:
            by_reason[r.reason].append(r.target.named(trace_id))
        total = self.saved + len(self.refused)
        return (f"Saved {self.saved} of the {total} targets; not saved: "
                + "; ".join(f"{', '.join(names)} ({reason})"
                            for reason, names in by_reason.items()) + ".")



class ReviewerStatus(BaseModel):
    """One reviewer's part in a campaign, as its leads see it."""

    reviewer: str
    saved: int = Field(description="Targets they saved.")
    leased: int = Field(0, description="Targets reserved for them now.")
    skipped: int = Field(0, description="Targets they put back.")
    gold_seen: int = Field(0, description="Answers they gave on gold items.")
    gold_correct: int = Field(0, description="Of those, the ones equal to the gold answer.")

    @property
    def accuracy(self) -> float | None:
        """gold_correct / gold_seen; None before any gold item."""
        return self.gold_correct / self.gold_seen if self.gold_seen else None


class Disagreement(BaseModel):
    """A target of a campaign whose reviewers disagree, with each one's answers, for its leads."""

    target_id: int
    trace_id: str
    event_id: str | None = Field(description="None for the trace itself.")
    answers: dict[str, dict[str, Any]] = Field(description="Reviewer -> question -> answer.")
    disputed: dict[str, float] = Field(description="Question -> spread (0 to 1) of the "
                                       "questions disputed.")
    adjudicated: dict[str, Any] = Field(default_factory=dict, description="Question -> the "
                                        "adjudicated answer, for those settled.")

    @property
    def resolved(self) -> bool:
        """Whether every disputed question has an adjudicated answer."""
        return set(self.disputed) <= set(self.adjudicated)


class CampaignProgress(BaseModel):
    """How far a campaign and one reviewer in it are: what the review page's progress bars
    show. Counts only: it tells nobody what anyone answered, nor which targets are gold."""

    name: str
    targets: int = Field(description="Targets in the campaign.")
    complete: int = Field(description="Targets whose every slot is saved.")
    slots: int = Field(description="Reviews needed in all.")
    saved: int = Field(description="Reviews saved by anyone.")
    reviewer: str
    reviewer_saved: int = Field(description="Targets this reviewer saved.")
    reviewer_skipped: int = Field(description="Targets this reviewer put back.")

    @property
    def fraction(self) -> float:
        """saved / slots (1 for a campaign with none)."""
        return self.saved / self.slots if self.slots else 1.0


class CampaignStatus(BaseModel):
    """Where a campaign stands."""

    name: str
    targets: int = Field(description="Targets in the campaign.")
    complete: int = Field(description="Targets whose every slot is saved.")
    in_progress: int = Field(description="Targets begun (a slot reserved or saved), not "
                             "complete.")
    slots: int = Field(0, description="Reviews needed in all.")
    saved: int = Field(0, description="Reviews saved.")
    gold: int = Field(0, description="Gold items among the targets.")
    reviewers: list[ReviewerStatus] = Field(default_factory=list)
    agreement: list[QuestionAgreement] = Field(default_factory=list, description="Alpha per "
                                               "question over the campaign's labels.")
    unresolved: list[Disagreement] = Field(default_factory=list, description="Disagreements "
                                           "without an adjudicated answer.")
    closed_at: str | None = Field(None, description="When a lead closed it (no more claims); "
                                  "None while it is open.")

    @property
    def alpha(self) -> dict[str, float | None]:
        """Question -> Krippendorff's alpha (None where it cannot be computed)."""
        return {q.question: q.alpha for q in self.agreement}

    def as_json(self) -> dict[str, Any]:
        """The status as plain data (accuracy included)."""
        data = self.model_dump(mode="json")
        for entry, reviewer in zip(data["reviewers"], self.reviewers):
            entry["accuracy"] = reviewer.accuracy
        data["alpha"] = self.alpha
        return data


# -- judging answers --------------------------------------------------------------------------------


def label_target(rubric: Rubric, event_id: str | None, questions: Sequence[str]) -> LabelTarget:
    """The LabelTarget a claim stands for: its questions, the required ones being those neither
    optional nor follow-ups (what `ws.labelling.save_answers`' rules check)."""
    required = [q for q in questions if not rubric.question(q).optional
                and rubric.question(q).ask_when is None]
    return LabelTarget(event_id=event_id or None, kinds=[], t=None, agent=None,
                       questions=list(questions), required=required)


def gold_score(rubric: Rubric, gold: Mapping[str, Any],
               answers: Mapping[str, Any]) -> tuple[int, int]:
    """(answers compared, answers equal to the gold) for one reviewer on one gold item: every
    gold question the reviewer answered counts once."""
    seen = correct = 0
    for question, known in gold.items():
        if question not in answers:
            continue
        seen += 1
        correct += same_answer(rubric.question(question), known, answers[question])
    return seen, correct


class _Target:
    """What `find_disagreements` and `gold_accuracy` read of a stored target (the store's
    TargetRow has these attributes)."""

    target_id: int
    trace_id: str
    event_id: str
    questions: list[str]
    gold_answers: dict[str, Any] | None


def _by_target(records: Iterable[LabelRecord], source: str) -> dict[tuple[str, str],
                                                                      dict[str, dict[str, Any]]]:
    """(trace id, event id) -> reviewer -> question -> value, of the records of one source."""
    found: dict[tuple[str, str], dict[str, dict[str, Any]]] = defaultdict(
        lambda: defaultdict(dict))
    for r in records:
        if r.get("source", "human") == source:
            found[(r["trace_id"], r["event_id"] or "")][r["reviewer"]][r["question"]] = r["value"]
    return found


def _adjudicated(records: Iterable[LabelRecord]) -> dict[tuple[str, str], dict[str, Any]]:
    """(trace id, event id) -> question -> the newest adjudicated answer."""
    newest: dict[tuple[str, str, str], tuple[str, Any]] = {}
    for r in records:
        if r.get("source") != "adjudication":
            continue
        key = (r["trace_id"], r["event_id"] or "", r["question"])
        stamp = (r.get("created_at") or "", r.get("label_id") or "")
        if key not in newest or stamp > newest[key][0]:
            newest[key] = (stamp, r["value"])
    found: dict[tuple[str, str], dict[str, Any]] = defaultdict(dict)
    for (trace_id, event_id, question), (_, value) in newest.items():
        found[(trace_id, event_id)][question] = value
    return found


def find_disagreements(rubric: Rubric, rows: Iterable[_Target], records: Sequence[LabelRecord],
                       threshold: float = SPREAD) -> list[Disagreement]:
    """The targets whose reviewers (`source: human` labels) disagree on a question, by the one
    rule (`viz_app.labels.disagreement.disputed`), each with every reviewer's answers and the adjudicated answers
    given, in the order of `rows`."""
    answers = _by_target(records, "human")
    settled = _adjudicated(records)
    found: list[Disagreement] = []
    known = rubric.questions_by_id
    for row in rows:
        key = (row.trace_id, row.event_id)
        given = answers.get(key)
        if not given or len(given) < 2:
            continue
        spreads: dict[str, float] = {}
        for question in row.questions:
            if question not in known:
                continue
            values = [a[question] for a in given.values() if question in a]
            found_spread = disputed(known[question], values, threshold)
            if found_spread is not None:
                spreads[question] = found_spread
        if spreads:
            found.append(Disagreement(
                target_id=row.target_id, trace_id=row.trace_id, event_id=row.event_id or None,
                answers={r: dict(a) for r, a in sorted(given.items())}, disputed=spreads,
                adjudicated=dict(settled.get(key, {}))))
    return found


def gold_accuracy(rubric: Rubric, gold_rows: Iterable[_Target],
                  records: Iterable[LabelRecord]) -> dict[str, tuple[int, int]]:
    """Reviewer -> (gold answers compared, of them correct), over the gold items' known
    answers and the reviewers' (`source: human`) labels."""
    answers = _by_target(records, "human")
    found: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in gold_rows:
        if not row.gold_answers:
            continue
        for reviewer, given in answers.get((row.trace_id, row.event_id), {}).items():
            seen, correct = gold_score(rubric, row.gold_answers, given)
            found[reviewer][0] += seen
            found[reviewer][1] += correct
    return {r: (s, c) for r, (s, c) in found.items()}
