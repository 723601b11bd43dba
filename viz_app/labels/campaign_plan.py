"""Planning a review campaign, pure: which questions it asks, which rows of the library its
filter keeps and its sample takes, the targets each row holds under the rubric, the gold items
mixed in, the share kept for agreement and the queue's priorities (`plan_targets`). The spec
and the shapes a campaign's store hands out are `viz_app.labels.campaign`'s. Every function
that chooses is deterministic: the same rows, spec and seed give the same targets in the same
order.

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
from typing import TYPE_CHECKING, Any

from viz_app.errors import LabelError
from viz_app.labels.campaign import URGENT_ORDERS, CampaignSpec, Filter, Sample
from viz_app.labels.label import LabelRecord
from viz_app.labels.rubric import LabelTarget, Rubric, check_value
from viz_app.listing import Listing
from viz_app.query import Condition, holds
from viz_app.sampling import per_step_groups, per_step_rows  # noqa: F401 - the face shows them

if TYPE_CHECKING:  # the rows are read by attribute: no store is imported here
    from viz_app.summary import LibraryRow


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
    pools alike: its lists as `in` (its trace ids too, traces ticked by hand), its figure
    bounds as `>=` and `<=`, then its own conditions (the Library's filter line, held when a
    lead ticks all that match). Its folders are no
    field of the language (a folder library checks them itself; a pool has none) and its
    text is the library's search."""
    found = [Condition(field=field, op="in", value=list(values)) for field, values in (
        ("system", wanted.systems), ("topology", wanted.topologies),
        ("task_id", wanted.tasks), ("source_format", wanted.formats),
        ("trace_id", wanted.trace_ids)) if values]
    for name, (low, high) in wanted.figures.items():
        if low is not None:
            found.append(Condition(field=name, op=">=", value=low))
        if high is not None:
            found.append(Condition(field=name, op="<=", value=high))
    return found + list(wanted.conditions)


def storage_conditions(wanted: Filter, kind: str) -> tuple[list[Condition], str]:
    """A campaign's filter as a storage of the library takes it (`store.library.Storage`):
    its `conditions`, and its text as the search. Its folders narrow the folders' storage
    (`Folders.under`); a pool has none, so LabelError for a folder filter over a pool."""
    if wanted.folders and kind != "folders":
        raise LabelError("a campaign over a pool takes no folder filter (filter by system, "
                         "topology, task, format, figures or text)")
    return conditions(wanted), wanted.text


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


STRATIFY = {"task": "task_id", "system": "system", "topology": "topology"}
"""A campaign sample's stratum field -> the library's field (`viz_app.query.FIELDS`)."""


def draw_rows(source: Any, filters: Sequence[Condition], search: str,
              sample: Sample) -> list[LibraryRow]:
    """The rows a campaign's sample takes of what a filter and search select, in the order the
    queue will hand them out, from any storage of the library (a pool's index, the folders'
    listing, any list of rows: `viz_app.listing.Listing`), by the library's one sampler:
    `all` in the library's one order (`viz_app.query.ordered`); `random` N
    (`viz_app.sampling.draw`); `stratified` by task (the GRPO group), system or topology, N (or
    all) spread evenly over its values, the strata in turn; `groups` N whole groups (every
    rollout of a task) in a seeded order, each group's rollouts together; `per_step` N whole
    groups of each training step (`viz_app.sampling.per_step_groups`). The same seed and traces give the same
    rows, whatever holds them."""
    selected = source.count(filters, search)
    if sample.kind == "all":
        return source.page(filters, search, limit=selected)
    if sample.kind == "per_step":
        return source.per_step(sample.n or 1, sample.seed, filters, search)
    if sample.kind == "groups":
        names = sorted(v for v, _ in source.values("task_id", filters, search,
                                                   limit=selected or 1))
        random.Random(sample.seed).shuffle(names)
        names = names[:sample.n] if sample.n is not None else names
        rows = source.page([*filters, Condition(field="task_id", op="in", value=names)], search,
                           limit=selected) if names else []
        place = {n: i for i, n in enumerate(names)}
        return sorted(rows, key=lambda r: place[r.task_id])  # stable: in order in a group
    stratify = STRATIFY[sample.field] if sample.kind == "stratified" and sample.field else None
    ids = source.sample(sample.n if sample.n is not None else selected, seed=sample.seed,
                        filters=filters, search=search, stratify=stratify)
    return source.rows(ids)


def sample_rows(rows: Sequence[LibraryRow], sample: Sample) -> list[LibraryRow]:
    """The rows of a list a campaign's sample takes, in the queue's order (`draw_rows` over a
    listing of them: the draw a pool's index or the folders make of the same rows)."""
    return draw_rows(Listing(rows), [], "", sample)


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
