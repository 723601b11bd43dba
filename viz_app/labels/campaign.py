"""Review campaigns, pure: what a campaign asks (its spec), the targets it draws from the library
(a filter over the trace index and a sample), which of them are gold items and which get more
reviewers for agreement, and the shapes a campaign's store hands out (a claim, a status, a
disagreement). No SQL here: the store (`viz_app.store.campaigns`) keeps campaigns, their targets
and the slots reviewers claim.

A campaign *target* is one (trace, event) of the library or of a pool (the trace itself when the
event is '') with the campaign's questions that the rubric asks there: from the index's rows, or,
for a question the index does not place (`unindexed`), from the trace's own targets. Every function that chooses is
deterministic: the same rows, spec and seed give the same targets in the same order.

    spec = CampaignSpec(name="stops", questions=["stopping_correctness"],
                        sample=Sample(kind="random", n=200, seed=7), per_target=1,
                        agreement_share=0.1, agreement_k=2)
    planned = plan_targets(rows, rubric, spec, gold={})
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from viz_app.errors import LabelError
from viz_app.labels.agreement import QuestionAgreement
from viz_app.labels.disagreement import SPREAD, disputed, same_answer
from viz_app.labels.label import LabelRecord, Reviewer
from viz_app.labels.rubric import LabelTarget, Rubric, check_value
from viz_app.query import Condition, holds

if TYPE_CHECKING:  # the rows are read by attribute: no store is imported here
    from viz_app.summary import LibraryRow

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


# -- choosing targets ------------------------------------------------------------------------------


@dataclass(slots=True)
class PlannedTarget:
    """A target a campaign will hold, before it is stored."""

    trace_id: str
    trace_sha256: str
    event_id: str
    """'' for the trace itself."""
    questions: list[str]
    required: int = 1
    gold: bool = False
    gold_answers: dict[str, Any] | None = None
    priority: float = 0.0
    group: str = ""
    """The task id (GRPO group) it belongs to."""
    flags: int = 0
    """How many suggestions point at it (for the `suggestions` order)."""
    urgency: float | None = None
    """How much the `uncertain` or `contested` order asks for it, higher first (None: nothing
    to go on, after every target with one); `viz_app.labels.attention`."""
    kept_from: list[str] = field(default_factory=list)
    """Reviewers never offered it in this campaign: under the `contested` order, those who
    answered it before (its coming early would tell them an answer differs from theirs)."""


def campaign_questions(rubric: Rubric, wanted: Sequence[str] = ()) -> list[str]:
    """The questions a campaign asks, rubric order: those wanted and every follow-up of one of
    them; LabelError naming a question the rubric lacks. When none are wanted, the
    `default_questions`: a question asked only where nothing must be answered (a message's,
    a spawn's, a delegation's) is asked when named."""
    for q in wanted:
        rubric.question(q)
    chosen = set(wanted) if wanted else set(default_questions(rubric))
    grew = True
    while grew:
        grew = False
        for q in rubric.questions:
            if q.id not in chosen and q.ask_when is not None and q.ask_when.question in chosen:
                chosen.add(q.id)
                grew = True
    return [q.id for q in rubric.questions if q.id in chosen]


def default_questions(rubric: Rubric) -> list[str]:
    """What a campaign asks when it names no question: the required questions, with those
    asked on the same targets beside them (such as `aggregation_issues`) and their follow-ups;
    never a question of a target where nothing must be answered (`optional_questions`)."""
    left_out = set(unindexed(rubric, [q.id for q in rubric.questions]))
    return [q.id for q in rubric.questions if q.id not in left_out]


def optional_questions(rubric: Rubric) -> list[str]:
    """The questions a campaign asks only when named: those of targets where no question must
    be answered (`message_necessity`, `spawn_necessity`, `delegation_fit` in the packaged
    rubric, and `missed_decision`), which would add a target for every message, spawn and
    delegation. Follow-ups are not listed: they come with the question they follow."""
    return unindexed(rubric, [q.id for q in rubric.questions if q.ask_when is None])


def conditions(wanted: Filter) -> list[Condition]:
    """A campaign's filter in the library's filter language (`viz_app.query`), folders and
    pools alike: its lists as `in`, its figure bounds as `>=` and `<=`. Its folders are no
    field of the language (a folder library checks them itself; a pool has none) and its
    text is the library's search."""
    found = [Condition(field=field, op="in", value=list(values)) for field, values in (
        ("system", wanted.systems), ("topology", wanted.topologies),
        ("task_id", wanted.tasks), ("source_format", wanted.formats)) if values]
    for name, (low, high) in wanted.figures.items():
        if low is not None:
            found.append(Condition(field=name, op=">=", value=low))
        if high is not None:
            found.append(Condition(field=name, op="<=", value=high))
    return found


def _under(path: str, folders: Sequence[str]) -> bool:
    from pathlib import Path

    resolved = Path(path)
    for folder in folders:
        base = Path(folder).resolve()
        if resolved == base or base in resolved.parents:
            return True
    return False


def filter_rows(rows: Iterable[LibraryRow], wanted: Filter) -> list[LibraryRow]:
    """The rows every condition of the filter holds for (its free text aside: the index's
    search applies it), in library order; a trace listed twice is kept once."""
    found, seen = [], set()
    asked = conditions(wanted)
    for row in rows:
        if row.trace_id in seen:
            continue
        if wanted.trace_ids and row.trace_id not in wanted.trace_ids:
            continue
        if wanted.folders and not _under(row.path, wanted.folders):
            continue
        if not all(holds(row, c) for c in asked):
            continue
        seen.add(row.trace_id)
        found.append(row)
    return found


def _stratum(row: LibraryRow, name: str) -> str:
    return {"task": row.task_id, "system": row.system, "topology": row.topology}[name]


def sample_rows(rows: Sequence[LibraryRow], sample: Sample) -> list[LibraryRow]:
    """The sampled rows, in the order the queue will hand them out: `all` in library order;
    `random` N in a seeded random order; `stratified` round-robin over the field's values (in a
    seeded order, each value's rows shuffled) until N are taken; `groups` whole task_id groups
    in a seeded order, N groups (each group's rollouts together, library order)."""
    rng = random.Random(sample.seed)
    if sample.kind == "all":
        return list(rows)
    if sample.kind == "random":
        shuffled = list(rows)
        rng.shuffle(shuffled)
        return shuffled[:sample.n]
    if sample.kind == "per_step":
        return per_step_rows(rows, sample.n or 1, sample.seed)
    if sample.kind == "groups":
        groups: dict[str, list[LibraryRow]] = defaultdict(list)
        for row in rows:
            groups[row.task_id].append(row)
        names = sorted(groups)
        rng.shuffle(names)
        return [row for name in names[:sample.n] for row in groups[name]]
    strata: dict[str, list[LibraryRow]] = defaultdict(list)
    for row in rows:
        strata[_stratum(row, sample.field or "task")].append(row)
    names = sorted(strata)
    rng.shuffle(names)
    for name in names:
        rng.shuffle(strata[name])
    limit = sample.n if sample.n is not None else len(rows)
    taken: list[LibraryRow] = []
    depth = 0
    while len(taken) < limit and any(depth < len(strata[n]) for n in names):
        for name in names:
            if depth < len(strata[name]) and len(taken) < limit:
                taken.append(strata[name][depth])
        depth += 1
    return taken


def per_step_rows(rows: Sequence[Any], n: int, seed: int,
                  taken: Mapping[int, set[str]] | None = None) -> list[Any]:
    """Whole groups of a trainer's rollouts, N of each training step (rows without a step or
    group are left out): each step's groups in an order seeded by the seed and the step alone,
    so that a step sampled now and a step that arrives later are drawn alike. `taken` holds the
    groups of each step a campaign already has: a step is topped up to N (a step still being
    written gets its other groups as they come), never sampled twice."""
    steps: dict[int, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        step, group = getattr(row, "rollout_step", None), getattr(row, "rollout_group", None)
        if step is not None and group is not None:
            steps[step][group].append(row)
    chosen: list[Any] = []
    for step in sorted(steps):
        have = set((taken or {}).get(step, ()))
        names = sorted(steps[step])
        random.Random(f"{seed}:{step}").shuffle(names)
        wanted = [g for g in names if g not in have][:max(0, n - len(have))]
        chosen += [row for group in wanted for row in steps[step][group]]
    return chosen


def companions(rubric: Rubric) -> dict[str, list[str]]:
    """Question id -> the questions asked on the same kind of target (its own included):
    what else is asked where a question is required."""
    found: dict[str, list[str]] = {}
    for q in rubric.questions:
        found[q.id] = [o.id for o in rubric.questions if o.target == q.target]
    return found


def unindexed(rubric: Rubric, questions: Sequence[str]) -> list[str]:
    """The questions whose targets the trace index does not record: those asked on a kind of
    target where no question must be answered (the index keeps the targets with a required
    question), such as `spawn_necessity` on spawns, `delegation_fit` on delegations and
    `message_necessity` on messages. A campaign that names one reads its sampled traces'
    targets from the traces themselves (`rubric.targets`, as the trace page lists them)."""
    near = companions(rubric)
    known = rubric.questions_by_id
    return [q for q in questions if not any(
        not known[o].optional and known[o].ask_when is None for o in near.get(q, [q]))]


def row_targets(row: LibraryRow, rubric: Rubric, questions: Sequence[str],
                near: Mapping[str, list[str]] | None = None,
                found: Sequence[LabelTarget] | None = None) -> list[tuple[str, list[str]]]:
    """(event id, questions) of each target of a trace that the campaign's questions apply
    to. With `found`, the trace's targets (`rubric.targets`, read from the trace): each with the
    campaign's questions asked there, in time order. Otherwise from the index's row: its
    questions are the campaign's questions asked on the kind of target its required questions
    are asked on (rubric order), and it applies when there is one; the index records only the
    targets with a required question (see `unindexed`)."""
    order = {q: i for i, q in enumerate(questions)}
    if found is not None:
        return [(t.key, sorted(here, key=order.__getitem__)) for t in found
                if (here := set(t.questions) & set(questions))]
    if row.targets is None:
        raise LabelError(f"trace {row.trace_id} was indexed without a rubric: index the "
                         "library under the rubric first")
    near = near if near is not None else companions(rubric)
    wanted = set(questions)
    placed = []
    for key, required in row.targets.items():
        here = {c for q in required for c in near.get(q, [q])} & wanted
        if here:
            placed.append((key, sorted(here, key=order.__getitem__)))
    return placed


GoldAnswers = dict[tuple[str, str], dict[str, Any]]
"""(trace id, event id or '') -> question -> known answer."""


def gold_answers(records: Iterable[LabelRecord], questions: Sequence[str],
                 rubric: Rubric) -> GoldAnswers:
    """The known answers of label records (the jsonl export's shape) on the campaign's
    questions: the newest record per target and question wins; LabelError naming a record
    without trace_id, question or value, or whose value the rubric's question does not take
    (99 on a 1-5 scale would score every reviewer wrong)."""
    wanted = set(questions)
    found: dict[tuple[str, str], dict[str, tuple[str, Any]]] = defaultdict(dict)
    for number, record in enumerate(records, 1):
        if not isinstance(record, Mapping) or not all(
                k in record for k in ("trace_id", "question", "value")):
            raise LabelError(f"gold record {number} lacks trace_id, question or value")
        if record["question"] not in wanted:
            continue
        try:
            check_value(rubric.question(record["question"]), record["value"])
        except LabelError as err:
            raise LabelError(f"gold record {number} ({record['trace_id']} "
                             f"{record.get('event_id') or '(the trace)'}): {err}") from None
        key = (str(record["trace_id"]), str(record.get("event_id") or ""))
        stamp = str(record.get("created_at") or "")
        held = found[key].get(record["question"])
        if held is None or stamp >= held[0]:
            found[key][record["question"]] = (stamp, record["value"])
    return {k: {q: v for q, (_, v) in answers.items()} for k, answers in found.items()}


TargetsOf = Callable[[Any], Sequence[LabelTarget]]
"""Reads a row's trace and gives its targets (`rubric.targets`): how a campaign that names a
question of `unindexed` finds its targets."""


def plan_targets(rows: Sequence[LibraryRow], rubric: Rubric, spec: CampaignSpec,
                 gold: GoldAnswers | None = None,
                 library: Sequence[LibraryRow] | None = None,
                 flags: Mapping[tuple[str, str], int] | None = None,
                 sampled: bool = False,
                 targets_of: TargetsOf | None = None,
                 urgency: Callable[[Sequence[PlannedTarget]],
                                   Mapping[tuple[str, str], float]] | None = None
                 ) -> list[PlannedTarget]:
    """Every target of a campaign, with its questions, K, gold answers and queue priority.

    `rows` are the filtered rows (free text already applied); they are sampled by the spec
    (unless `sampled`: a pool's index drew them already, in the queue's order). Their targets
    come from the index's rows, or from `targets_of` (the traces read) when given. Gold
    answers mark the sampled targets they cover, and mix in the other targets they cover among
    `library` (default: `rows`), each once. The share kept for agreement and the queue order
    follow the spec (see `assign_agreement`, `prioritise`); `flags` counts suggestions per
    (trace id, event id) for the `suggestions` order; `urgency` gives the planned targets'
    urgencies for the `uncertain` and `contested` orders (`viz_app.labels.attention`)."""
    questions = campaign_questions(rubric, spec.questions)
    near = companions(rubric)
    chosen = list(rows) if sampled else sample_rows(rows, spec.sample)

    def placed(row: LibraryRow) -> list[tuple[str, list[str]]]:
        found = targets_of(row) if targets_of is not None else None
        return row_targets(row, rubric, questions, near, found)

    planned: list[PlannedTarget] = []
    seen: set[tuple[str, str]] = set()
    for row in chosen:
        for key, asked in placed(row):
            seen.add((row.trace_id, key))
            planned.append(PlannedTarget(trace_id=row.trace_id, trace_sha256=row.sha256,
                                         event_id=key, questions=asked,
                                         required=spec.per_target, group=row.task_id))
    gold = gold or {}
    if gold:
        extra: list[PlannedTarget] = []
        by_id = {r.trace_id: r for r in (library if library is not None else rows)}
        for (trace_id, key) in sorted(gold):
            if (trace_id, key) in seen or trace_id not in by_id:
                continue
            row = by_id[trace_id]
            for found_key, asked in placed(row):
                if found_key == key:
                    seen.add((trace_id, key))
                    extra.append(PlannedTarget(trace_id=trace_id, trace_sha256=row.sha256,
                                               event_id=key, questions=asked,
                                               required=spec.per_target, group=row.task_id))
        mix_in(planned, extra, spec.sample.seed)
        for target in planned:
            known = gold.get((target.trace_id, target.event_id))
            answers = {q: v for q, v in (known or {}).items() if q in target.questions}
            if answers:
                target.gold, target.gold_answers = True, answers
    assign_agreement(planned, spec)
    if flags:
        for target in planned:
            target.flags = flags.get((target.trace_id, target.event_id), 0)
    if urgency is not None:
        found = urgency(planned)
        for target in planned:
            target.urgency = found.get((target.trace_id, target.event_id))
    prioritise(planned, spec.order)
    return planned


def mix_in(planned: list[PlannedTarget], extra: Sequence[PlannedTarget], seed: int) -> None:
    """Put the extra targets (gold items) at seeded random places among the planned ones, so a
    reviewer cannot tell them by their place in the queue."""
    rng = random.Random(f"gold:{seed}")
    for target in extra:
        planned.insert(rng.randint(0, len(planned)), target)


def assign_agreement(planned: Sequence[PlannedTarget], spec: CampaignSpec) -> None:
    """Give `agreement_k` reviewers to a seeded random share of the targets (rounded to the
    nearest whole target; at least one when the share is above 0 and a target exists)."""
    if spec.agreement_share <= 0 or not planned:
        return
    count = max(1, round(spec.agreement_share * len(planned)))
    rng = random.Random(f"agreement:{spec.sample.seed}")
    k = max(spec.agreement_k, spec.per_target)
    for index in rng.sample(range(len(planned)), min(count, len(planned))):
        planned[index].required = k


def prioritise(planned: Sequence[PlannedTarget], order: str) -> None:
    """Set each target's queue priority (lower first): its place in the sample; for
    `suggestions`, targets that suggestions flag first; for `disagreement`, targets with more
    reviewers first; for `uncertain` and `contested`, targets with an urgency first, the most
    urgent first. Ties keep the sample's order."""
    if order in URGENT_ORDERS:
        ranked = sorted(range(len(planned)), key=lambda i: (
            planned[i].urgency is None, -(planned[i].urgency or 0.0), i))
        for rank, index in enumerate(ranked):
            planned[index].priority = float(rank)
        return
    for place, target in enumerate(planned):
        if order == "suggestions":
            rank = 0 if target.flags else 1
            target.priority = float(rank * len(planned) + place)
        elif order == "disagreement":
            rank = 0 if target.required > 1 else 1
            target.priority = float(rank * len(planned) + place)
        else:
            target.priority = float(place)


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
