"""The campaigns facet (`ws.campaigns`): review campaigns over the library, their queue of
claims, saves and adjudications, the members who lead them, and the sealing a campaign puts on
its targets (what a reviewer may see of others' answers there, and when).

Below it: the library (what a campaign is drawn from and its traces), labelling's rules of a
save (`answers_to_save`) and the stores. Suggestions sit above it (a learned model names a
campaign), so the orders that read suggestions read their store here, not the facet.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from viz_app.analysis import analyze
from viz_app.errors import LabelError, OrchvizError
from viz_app.labels import (LEARNED, SPREAD, AlikeRefusal, AlikeSaved, AlikeTarget, Campaign,
                            CampaignProgress, CampaignSpec,
                            CampaignStatus, Claim, Disagreement, Filter, Label, LabelTarget,
                            PlannedTarget,
                            Reviewer, ReviewerStatus, Rubric, Suggestion, campaign_questions,
                            contest, contests, earlier_reviewers, filter_rows, find_disagreements,
                            first_answers, gold_accuracy, gold_answers, label_target,
                            latest_version, per_step_rows, plan_targets, question_agreement,
                            draw_rows, storage_conditions, uncertainty, unindexed)
from viz_app.model import Trace
from viz_app.query import Condition
from viz_app.store import (CampaignStore, IndexBusy, IndexProgress, IndexResult, LabelStore,
                           Member, MemberStore, SavedTarget, Storage, SuggestionStore)
from viz_app.suggest import RULES
from viz_app.summary import LibraryRow
from viz_app.text import brief
from viz_app.workspace.answers import answers_to_save, read_label_records
from viz_app.workspace.ground import Ground
from viz_app.workspace.library import Library

TAKEN = "taken by another reviewer meanwhile, or answered or skipped by you already"
"""Why a target chosen for one answer given to many was not saved, when its slot was no longer
free to the reviewer."""

if TYPE_CHECKING:
    from viz_app.store.campaigns import TargetRow


def late_members(storage: Any, filters: Sequence[Condition], search: str,
                 taken: Mapping[int, set[str]], held: Collection[str]) -> list[LibraryRow]:
    """The rollouts of groups a per-step campaign took already that it does not hold yet: a
    group sampled while the trainer was still writing it (its last line half-written, say)
    gets its other members as they come, so a group stays whole."""
    groups = sorted({g for names in taken.values() for g in names if g})
    found: list[LibraryRow] = []
    for start in range(0, len(groups), 500):
        wanted = [*filters, Condition(field="group", op="in", value=groups[start:start + 500])]
        found += [r for r in storage.page(wanted, search, limit=storage.count(wanted, search))
                  if r.trace_id not in held]
    return found


def _uncertain(rubric: Rubric, planned: Sequence[PlannedTarget],
               suggestions: Sequence[Suggestion]) -> dict[tuple[str, str], float]:
    """The learned producer's doubt on each planned target; LabelError saying what to run when
    it has none to give (naming the campaign's questions that are no follow-up)."""
    asked = {q for t in planned for q in t.questions}
    named = [q.id for q in rubric.questions if q.id in asked and q.ask_when is None] or \
        sorted(asked)
    mine = [s for s in suggestions if s.question in asked]
    if latest_version(mine, LEARNED) is None:
        raise LabelError(f"the learned producer has suggested no answer to {', '.join(named)} "
                         f"yet, so there is nothing to order by: run `orchviz suggest train "
                         f"--question {named[0]}` then `orchviz suggest --producer learned "
                         "--traces DIR`, or choose another --order")
    found = uncertainty(planned, mine, LEARNED)
    if not found:
        raise LabelError(f"the learned producer's latest models of {', '.join(named)} "
                         f"suggested nothing on this campaign's {len(planned)} targets, so "
                         "there is nothing to order by: run `orchviz suggest --producer learned "
                         "--traces DIR` over these traces, or choose another --order")
    return found


def _contested(rubric: Rubric, planned: Sequence[PlannedTarget],
               suggestions: Sequence[Suggestion], first: Mapping[Any, Any],
               silence: Mapping[str, Mapping[str, Any]],
               ran_on: Collection[tuple[str, str, str]] = ()) -> dict[tuple[str, str], float]:
    """How contested each planned target is; LabelError when nothing could ever be (no
    producer suggested on these targets' questions, or none disagrees and no target has a
    second reviewer to follow a first)."""
    asked = {q for t in planned for q in t.questions}
    traces = {(t.trace_id, t.trace_sha256) for t in planned}
    if not any(s.question in asked and (s.trace_id, s.trace_sha256) in traces
               for s in suggestions):
        named = [q.id for q in rubric.questions if q.id in asked and q.ask_when is None] or \
            sorted(asked)
        raise LabelError(f"no producer has suggested an answer to {', '.join(named)} "
                         f"on this campaign's {len(planned)} targets, so nothing can be "
                         "contested: run `orchviz suggest --traces DIR` (and a judge or the "
                         "learned producer) first, or choose another --order")
    found = contests(rubric, planned, suggestions, first, silence, ran_on)
    if not found and all(t.required < 2 for t in planned):
        raise LabelError(f"nothing is contested on this campaign's {len(planned)} targets "
                         "yet, and with one reviewer per target no second review can follow a "
                         "first reviewer who contests a producer: give --per-target 2 or "
                         "--agreement-share F, or run a second producer first")
    return found


class Campaigns:
    """Review campaigns, their members and their sealing, over the library."""

    def __init__(self, ground: Ground, library: Library):
        self._ground = ground
        self._library = library

    @property
    def _store(self) -> CampaignStore:
        return CampaignStore(self._ground.engine)

    @property
    def _labels(self) -> LabelStore:
        return self._ground.labels

    @property
    def _suggestion_store(self) -> SuggestionStore:
        return SuggestionStore(self._ground.engine)

    # -- sealing ----------------------------------------------------------------------------------

    def sealed(self, trace_id: str) -> set[str]:
        """The targets of a trace (event id, '' for the trace) that a campaign holds: others'
        answers there, adjudications included, are shown to a reviewer only after their own
        save in a campaign (`labels_in_view`), whatever a page's blind toggle says."""
        return self._store.target_keys(trace_id)

    def labels_in_view(self, trace_id: str, viewer: str | None, *, blind: bool = True
                       ) -> list[Label]:
        """The current labels on a trace that a reviewer may be shown, decided here and not by
        a page: their own; others' on a target of a campaign (`sealed`) only once the
        viewer saved their own answer there in a campaign; others' on any other target once
        the viewer saved their own there, or at once with `blind` off. A viewer of None (not
        identified) sees no one's."""
        current = self._labels.current(trace_id)
        if not viewer:
            return []
        sealed = self.sealed(trace_id)
        opened = self._unsealed(current, sealed, viewer)

        def shown(label: Label) -> bool:
            if label.reviewer == viewer and label.source == "human":
                return True
            return label.event_id in opened or (not blind and label.event_id not in sealed)

        return [x for x in current if shown(x)]

    def unsealed(self, trace_id: str, viewer: str) -> set[str]:
        """The targets of a trace (event id, '' for the trace) where a reviewer has saved
        their own answer, so others' answers and suggestions may be shown to them blind-first:
        on a target a campaign holds, only a save in a campaign counts."""
        return self._unsealed(self._labels.current(trace_id), self.sealed(trace_id),
                              viewer)

    @staticmethod
    def _unsealed(current: Sequence[Label], sealed: set[str], viewer: str) -> set[str]:
        mine = [x for x in current if x.reviewer == viewer and x.source == "human"]
        return {x.event_id for x in mine if x.campaign or x.event_id not in sealed}

    # -- members and leads ------------------------------------------------------------------------

    def may_lead(self, person: Reviewer) -> bool:
        """Whether a person may act as a lead (create campaigns, adjudicate, retract, add
        members). Signed in (`via` oidc): when the members table names them lead. Otherwise
        (a name typed in the app, a command's argument) everyone may: such names are not
        verified, and a person alone on a laptop leads their own database."""
        return person.via != "oidc" or self.role(person.name) == "lead"

    def _lead(self, person: Reviewer, doing: str) -> None:
        if not self.may_lead(person):
            raise LabelError(f"{person.name} is not a lead of this workspace, so cannot {doing} "
                             f"(a lead can add them: orchviz campaign members add {person.name} "
                             "--role lead)")

    def create(self, spec: CampaignSpec, lead: Reviewer, *,
                        gold_records: Iterable[Mapping[str, Any]] | None = None,
                        progress: IndexProgress | None = None) -> Campaign:
        """Create a campaign over the library: the traces the spec's filter keeps, sampled as
        it says, each target with the campaign's questions that apply; gold items from
        `gold_records` (else the spec's gold file) and the spec's earlier campaign's
        adjudicated answers, drawn from the filtered traces and mixed in. The filter and sample
        run in the library's storage (`ws.library.storage`: a pool's index, the spec's or the
        first when the folders hold no trace, else the folders), by the one sampler
        (`labels.campaign_plan.draw_rows`). A question the index does not place
        (`labels.campaign_plan.unindexed`: asked only where nothing must be answered) takes its
        targets from the sampled traces, read (`ws.library.targets`). Pins the workspace's
        rubric. One transaction: LabelError (and nothing stored) when the name is taken or no
        target is chosen."""
        self._lead(lead, "create a campaign")
        rubric = self._ground.rubric
        questions = campaign_questions(rubric, spec.questions)
        storage, filters, search = self._drawn_from(spec, self._library.update_index(progress))
        chosen = draw_rows(storage, filters, search, spec.sample)
        pool = storage.location if storage.kind == "pool" else None
        records: list[Mapping[str, Any]] = []
        if gold_records is not None:
            records += list(gold_records)
        elif spec.gold:
            records += read_label_records(spec.gold)
        if spec.gold_campaign:
            self.get(spec.gold_campaign)
            records += self._labels.current_records(campaign=spec.gold_campaign,
                                                   adjudicated_only=True)
        gold = gold_answers(records, questions, rubric)
        gold_rows = storage.rows(sorted({t for t, _ in gold}), filters, search) if gold else []
        store = self._store
        flags = store.suggestion_counts() if spec.order == "suggestions" else None
        read = self._targets_of(len(chosen), progress) if unindexed(rubric, spec.questions) \
            else None
        planned = plan_targets(chosen, rubric, spec, gold, library=gold_rows, flags=flags,
                               sampled=True, targets_of=read,
                               urgency=self._urgency(spec.order, rubric, questions, pool))
        made = (lambda done, total: progress(done, total, "targets")) if progress else None
        return store.create(spec, rubric_version=rubric.version, rubric_sha256=rubric.sha256,
                            questions=questions, created_by=lead.name, planned=planned,
                            progress=made)

    def _urgency(self, order: str, rubric: Rubric, questions: Sequence[str],
                 pool: str | None = None) -> Any:
        """For the `uncertain`, `contested` and `reward` orders, the function that gives the
        planned targets their urgencies (`viz_app.labels.attention`), from the suggestions on
        the campaign's questions (`reward`: from the scores a reward server logged beside the
        campaign's pool, `viz_app.reward.audit.urgencies`), refusing in one sentence (a
        LabelError, nothing stored) when there is nothing to order by; None for other
        orders."""
        if order == "reward":
            from viz_app.reward.audit import urgencies

            if pool is None:
                raise LabelError("the reward order reads the scores a reward server logged "
                                 "beside a pool (orchviz reward serve --audit LOCATION): "
                                 "draw the campaign from that pool")
            first = first_answers(self._labels.current_records())
            found = urgencies(pool, rubric, first)
            if not found:
                raise LabelError(f"the reward order reads the scores a reward server logged "
                                 f"beside the pool, and {pool} holds none (orchviz reward "
                                 "serve --audit LOCATION writes them)")
            return lambda planned: {(t.trace_id, t.event_id): found[k] for t in planned
                                    if (k := (t.trace_id, t.trace_sha256, t.event_id))
                                    in found}
        if order not in ("uncertain", "contested"):
            return None
        store = self._suggestion_store
        if order == "uncertain":
            learned = store.all(producer=LEARNED, questions=questions)
            return lambda planned: _uncertain(rubric, planned, learned)
        suggestions = store.all(questions=questions)
        ran_on = store.ran_on(RULES.name)
        records = self._labels.current_records()
        first, earlier = first_answers(records), earlier_reviewers(records)
        from viz_app.suggest import FINE

        def contested(planned: Sequence[PlannedTarget]) -> dict[tuple[str, str], float]:
            found = _contested(rubric, planned, suggestions, first, {RULES.name: FINE},
                               ran_on)
            for t in planned:  # those who answered a contested target before never get it
                if (t.trace_id, t.event_id) in found:
                    t.kept_from = sorted(earlier.get((t.trace_id, t.trace_sha256, t.event_id),
                                                     ()))
            return found

        return contested

    def _drawn_from(self, spec: CampaignSpec, library: IndexResult
                    ) -> tuple[Storage, list[Any], str]:
        """The storage a campaign draws from (`_campaign_pool`'s pool, else the folders, under
        the filter's folders), with its filter's conditions and search."""
        storage = self._library.storage(self._campaign_pool(spec, library.rows), library)
        filters, search = storage_conditions(spec.filter, storage.kind)
        if spec.filter.folders:
            storage = storage.under(spec.filter.folders)
        return storage, filters, search

    def _campaign_pool(self, spec: CampaignSpec, library: Sequence[LibraryRow]) -> str | None:
        """The pool a campaign draws from: the spec's (LabelError when the workspace lists no
        such pool), else the first pool when the folders hold no trace, else None (the
        folders)."""
        if spec.pool is not None:
            if spec.pool not in self._library.pools:
                raise LabelError(f"this workspace lists no pool {spec.pool!r} (its pools: "
                                 f"{', '.join(self._library.pools) or 'none'})")
            return spec.pool
        return self._library.pools[0] if self._library.pools and not library else None

    def _targets_of(self, total: int, progress: IndexProgress | None) -> Any:
        """Reads a row's trace (of the folders or a pool) and gives its targets, each trace
        once: how a campaign finds the targets of questions the index does not record
        (`progress(done, total, "reading")` as it reads `total` traces, gold items aside)."""
        seen: dict[str, list[LabelTarget]] = {}

        def targets_of(row: Any) -> list[LabelTarget]:
            if row.trace_id not in seen:
                if progress is not None:
                    progress(min(len(seen), total), total, "reading")
                trace = self._library.index.read(row.path, row.position) \
                    if row.pool is None else self._library.trace(row.trace_id)
                seen[row.trace_id] = self._library.targets(trace)
                if progress is not None and len(seen) == total:
                    progress(total, total, "reading")
            return seen[row.trace_id]

        return targets_of

    def close(self, name: str, lead: Reviewer) -> Campaign:
        """Close a campaign (a lead's call): no reviewer claims a target of it any more; its
        status says when it was closed. LabelError when the person is no lead or there is no
        such campaign."""
        self._lead(lead, "close a campaign")
        return self._store.close(name)

    def reopen(self, name: str, lead: Reviewer) -> Campaign:
        """Open a closed campaign again (a lead's call): its open targets are claimed again.
        LabelError when the person is no lead or there is no such campaign."""
        self._lead(lead, "reopen a campaign")
        return self._store.reopen(name)

    def set_instructions(self, name: str, instructions: str, lead: Reviewer) -> Campaign:
        """Change what a campaign tells its reviewers (Markdown, shown on the Review page).
        LabelError when the person is no lead, there is no such campaign or the text is too
        long."""
        self._lead(lead, "change a campaign's instructions")
        return self._store.set_instructions(name, instructions)

    def add_traces(self, name: str, trace_ids: Sequence[str], lead: Reviewer) -> int:
        """Add traces of the library to a campaign (a lead's call): their targets, with the
        campaign's questions and K under the rubric it pinned, join its queue (a target it holds
        already is not added again). Returns how many targets were added; LabelError when the
        person is no lead, the campaign is closed, or a trace is not in the library."""
        self._lead(lead, "add traces to a campaign")
        found = self.get(name)
        if found.closed_at is not None:
            raise LabelError(f"the campaign {name!r} is closed: reopen it to add traces")
        library = self._library.update_index().rows
        known = {r.trace_id for r in library}
        missing = [t for t in trace_ids if t not in known]
        if missing:
            raise LabelError(f"{missing[0]!r} is not a trace of the library")
        rows = filter_rows(library, Filter(trace_ids=list(trace_ids)))
        planned = plan_targets(rows, self._pinned(found), found.spec, sampled=True)
        return self._store.add_targets(found, planned)

    def reservations(self, name: str) -> list[Any]:
        """The targets of a campaign reviewers hold now, with when each reservation ends
        (`store.campaigns.Reservation`), soonest first."""
        return self._store.reservations(self.get(name))

    def release_reservation(self, name: str, slot_id: int, lead: Reviewer) -> bool:
        """A lead gives a reserved target back to everyone at once (a reviewer who left for
        the day); False when it was no longer reserved. LabelError when the person is no
        lead."""
        self._lead(lead, "release a reservation")
        return self._store.release_slot(self.get(name), slot_id)

    def all(self) -> list[Campaign]:
        """Every campaign, oldest first."""
        return self._store.all()

    def get(self, name: str) -> Campaign:
        """The campaign of this name; LabelError when there is none."""
        return self._store.get(name)

    def claim_next(self, campaign: str, reviewer: Reviewer) -> Claim | None:
        """The next target reserved for this reviewer (the one they hold, renewed, if any),
        or None when nothing is left for them. A claim never says whether its target is gold,
        nor what anyone else answered. A campaign sampled per training step whose queue is
        empty for them first samples the steps a trainer wrote since (`top_up`)."""
        claim = self._store.claim_next(campaign, reviewer)
        if claim is None and self.get(campaign).spec.sample.kind == "per_step" \
                and self.top_up(campaign):
            claim = self._store.claim_next(campaign, reviewer)
        return claim

    def top_up(self, name: str) -> int:
        """Keep sampling a per-step campaign as a trainer's steps arrive: each training step of
        the library (its filter applied) gets whole groups until it has the spec's N (a new
        step its N, a step still being written the groups it lacked), their targets added to
        the open campaign. Returns how many targets were added (0 for a closed campaign or
        another kind of sample)."""
        found = self.get(name)
        spec = found.spec
        if found.closed_at is not None or spec.sample.kind != "per_step":
            return 0
        library = self._library.update_index()
        if self._campaign_pool(spec, library.rows) is not None:  # its index brought up to date
            try:  # first (or, while another process updates it, as it is: its new rows come at
                self._library.update_pool_index(self._campaign_pool(spec, library.rows),
                                                wait=False)  # the next look)
            except IndexBusy:
                pass
        storage, filters, search = self._drawn_from(spec, library)
        held = {t.trace_id for t in self._store.targets(found)}
        taken: dict[int, set[str]] = defaultdict(set)
        for row in storage.rows(sorted(held)):
            if row.rollout_step is not None:
                taken[row.rollout_step].add(row.rollout_group)
        chosen = storage.per_step(spec.sample.n or 1, spec.sample.seed, filters, search,
                                  taken=taken)
        chosen += late_members(storage, filters, search, taken, held)
        if not chosen:
            return 0
        planned = plan_targets(chosen, self._ground.rubric, spec, sampled=True)
        return self._store.add_targets(found, planned)

    def upcoming(self, campaign: str, reviewer: str) -> str | None:
        """The trace of the target this reviewer will most likely be given after the one they
        hold (`CampaignStore.upcoming`: nothing is reserved): what the review page reads ahead."""
        return self._store.upcoming(campaign, reviewer)

    def renew(self, claim: Claim) -> Claim:
        """Extend a claim's reservation by the campaign's lease; LabelError when it went to
        someone else, ClaimError when the store did not issue it as given."""
        return self._store.renew(claim)

    def skip(self, claim: Claim, reason: str) -> None:
        """Put a claimed target back for others, with why; it is not offered to this reviewer
        again. ClaimError when the store did not issue the claim as given."""
        self._store.skip(claim, reason)

    def release(self, claim: Claim) -> bool:
        """Give a claimed target back to the queue now, unanswered and not skipped (its
        reviewer left it, say to work under another name); False when it was no longer
        theirs."""
        return self._store.release(claim)

    def submit(self, claim: Claim, answers: Mapping[str, Any], *, comment: str = "",
               seconds_spent: float | None = None,
               suggestions_visible: bool = False, judged: str | None = None) -> list[Label]:
        """Save a reviewer's answers on their claimed target and complete their slot, in one
        transaction; `judged`, the SHA-256 of the trace the page showed, refuses the save
        when the file changed since (`ws.library.check_version`). The claim must be one the
        store issued, as it issued it (its slot, target, trace, event, questions, campaign
        and token: ClaimError otherwise); the answers follow the rules of a save
        (`answers_to_save`) and the campaign's pinned rubric, and answer only the claim's
        questions. LabelError, and nothing saved, when they do not, or when the reservation
        expired and the target went to someone else."""
        held = self._store.check(claim)
        found = self._store.get(held.campaign, count=False)
        trace = self._library.trace(held.trace_id)
        made = self._answers(found, trace, held.event_id or None, held.questions, answers,
                             claim.reviewer, judged=judged, comment=comment,
                             seconds_spent=seconds_spent,
                             suggestions_visible=suggestions_visible)
        raise_to = None
        if found.order == "contested":  # a first reviewer at odds with a producer: ask again soon
            raise_to = self._contested_again(found, held, trace, made)
        return self._store.submit(claim, made, raise_to=raise_to)

    def _answers(self, found: Campaign, trace: Trace, event_id: str | None,
                 questions: Sequence[str], answers: Mapping[str, Any], reviewer: Reviewer, *,
                 judged: str | None, origin: str = "", **given: Any) -> list[Label]:
        """The labels a reviewer's answers on one target of a campaign make, checked by the
        rules of every save (`answers_to_save`), the campaign's pinned rubric and the trace
        as the page showed it (`judged`); LabelError, nothing stored, otherwise."""
        rubric = self._pinned(found)
        foreign = [q for q, v in answers.items() if q not in questions and v is not None]
        if foreign:
            raise LabelError(f"{foreign[0]} is not asked on this target of campaign "
                             f"{found.name!r} (it asks {', '.join(questions)}); nothing "
                             "was saved")
        if judged is not None and judged != trace.sha256:
            self._library.check_version(trace.trace_id, judged)
        values = answers_to_save(rubric, label_target(rubric, event_id, list(questions)),
                                 answers, analyze(trace))
        made = self._labels.checked(trace, event_id, values, reviewer.name,
                                    identified_by=reviewer.via, campaign=found.name, **given)
        return [x.model_copy(update={"origin": origin}) for x in made] if origin else made

    # -- one answer for many targets, and going back to change one's answer -------------------

    def alike(self, claim: Claim) -> list[AlikeTarget]:
        """The other targets of a claim's campaign, on its trace and on the campaign's other
        traces, that ask its very questions (the same kind: every spawn of a fan-out, every
        stop) and that its reviewer may answer now: the claim's trace's first, each in queue
        order. What they may answer at once with the claim's target (`submit_alike`). Nothing
        is reserved."""
        return self._store.alike(claim)

    def submit_alike(self, claim: Claim, chosen: Sequence[AlikeTarget],
                     answers: Mapping[str, Any],
                     *, comment: str = "", seconds_spent: float | None = None,
                     suggestions_visible: bool = False,
                     judged: str | None = None) -> AlikeSaved:
        """Save one answer on a claim's target and on other targets of its kind the reviewer
        chose (of `alike`), each its own label with its own provenance (its target,
        its time, the seconds split evenly, `origin` saying how many targets the one answer
        went to), and complete a slot of each, in one transaction.

        The claim's target is saved or nothing is: an answer that belongs to one target alone
        (an event pointer, a correction, a free text) is refused, as is a claim no longer
        held. Of the other targets, those refused (taken by another reviewer meanwhile, or
        answered or skipped already; an answer that does not hold on that target; a trace that
        cannot be read) are left out and the rest saved: `AlikeSaved.sentence()` says which
        were not saved and why."""
        if not chosen:
            made = self.submit(claim, answers, comment=comment, seconds_spent=seconds_spent,
                               suggestions_visible=suggestions_visible, judged=judged)
            return AlikeSaved(labels=made, saved=1)
        held = self._store.check(claim)
        found = self._store.get(held.campaign, count=False)
        rubric = self._pinned(found)
        own = [q for q, v in answers.items() if v not in (None, "", [])
               and rubric.question(q).kind in ("event", "correction", "text")]
        if own:
            raise LabelError(f"{own[0]} is this target's own answer (an event, a correction or "
                             "a text cannot be another target's): save it alone, or leave it "
                             "empty to give the one answer to several targets; nothing was "
                             "saved")
        free = {t.target_id: t for t in self._store.alike(claim, limit=10**9)}
        refused = [AlikeRefusal(target=t, reason=TAKEN) for t in chosen
                   if t.target_id not in free]
        count = 1 + len(chosen)
        share = None if seconds_spent is None else round(seconds_spent / count, 1)
        given = {"comment": comment, "seconds_spent": share,
                 "suggestions_visible": suggestions_visible}
        origin = f"one answer given to {count} targets at once"
        traces = {held.trace_id: self._library.trace(held.trace_id)}
        made = self._answers(found, traces[held.trace_id], held.event_id or None,
                             held.questions, answers, claim.reviewer, judged=judged,
                             origin=origin, **given)
        others: dict[int, list[Label]] = {}
        for target in (free[t.target_id] for t in chosen if t.target_id in free):
            try:
                if target.trace_id not in traces:
                    traces[target.trace_id] = self._library.trace(target.trace_id)
                trace = traces[target.trace_id]
                others[target.target_id] = self._answers(
                    found, trace, target.event_id, held.questions, answers, claim.reviewer,
                    judged=trace.sha256 if trace.trace_id != held.trace_id else judged,
                    origin=origin, **given)
            except (OrchvizError, OSError) as err:  # this target alone: its answer or its trace
                refused.append(AlikeRefusal(target=target, reason=brief(err, 160)))
        saved, taken = self._store.submit_alike(claim, made, others)
        refused += [AlikeRefusal(target=free[t], reason=TAKEN) for t in taken]
        return AlikeSaved(labels=saved, saved=1 + len(others) - len(taken), refused=refused)

    def saved(self, name: str, reviewer: str) -> list[SavedTarget]:
        """The targets a reviewer saved in a campaign, in the order they saved them: where the
        review page goes back to (`change`)."""
        return self._store.saved_targets(self.get(name), reviewer)

    def change(self, name: str, slot_id: int, reviewer: Reviewer, answers: Mapping[str, Any],
               *, comment: str = "", seconds_spent: float | None = None,
               suggestions_visible: bool | None = None,
               judged: str | None = None) -> list[Label]:
        """A reviewer changes their answer on a target they saved in a campaign (its slot, from
        `saved`): new labels in the campaign, checked as every save; the earlier ones stay in
        the history, and the newest is the reviewer's current answer everywhere (`ANSWER_KEY`).
        LabelError, nothing saved, when the slot is not one they saved."""
        found = self._store.get(name, count=False)
        saved = self._store.saved_target(found, reviewer.name, slot_id)
        made = self._answers(found, self._library.trace(saved.trace_id), saved.event_id,
                             saved.questions, answers, reviewer, judged=judged,
                             comment=comment, seconds_spent=seconds_spent,
                             suggestions_visible=suggestions_visible)
        self._labels.add(made)
        return made

    def _contested_again(self, campaign: Campaign, held: Any, trace: Trace,
                         made: Sequence[Label]) -> float | None:
        """The priority the target's other open slots move to when its first reviewer in the
        campaign (these labels, or an earlier save) and the producers disagree (below every
        priority the campaign was created with, the most contested first), else None."""
        from viz_app.suggest import FINE

        earlier = [r for r in self._labels.current_records(trace.trace_id,
                                                          campaign=campaign.name)
                   if (r["event_id"] or "") == held.event_id]
        first = first_answers(earlier + [x.to_record() for x in made])
        target = PlannedTarget(trace_id=trace.trace_id, trace_sha256=trace.sha256,
                               event_id=held.event_id, questions=held.questions)
        found = contest(self._ground.rubric, target, self._suggestion_store.all(trace.trace_id),
                        first, {RULES.name: FINE})
        return None if found is None else -1.0 - found

    def _pinned(self, campaign: Campaign) -> Rubric:
        rubric = self._ground.rubric
        if rubric.sha256 != campaign.rubric_sha256:
            raise LabelError(f"campaign {campaign.name!r} was created under rubric "
                             f"{campaign.rubric_version} ({campaign.rubric_sha256[:12]}), not "
                             f"the {rubric.version} ({rubric.sha256[:12]}) this workspace uses: "
                             "open it with that rubric (--rubric)")
        return rubric

    def progress(self, name: str, reviewer: str) -> CampaignProgress:
        """How far a campaign and one reviewer in it are (counts only, safe to show any
        reviewer: no answers, no gold)."""
        found = self.get(name)
        store = self._store
        counts = store.progress(found)
        mine = store.reviewer_counts(found, only=reviewer).get(reviewer, {})
        return CampaignProgress(name=found.name, targets=counts["targets"],
                                complete=counts["complete"], slots=counts["slots"],
                                saved=counts["saved"], reviewer=reviewer,
                                reviewer_saved=mine.get("saved", 0),
                                reviewer_skipped=mine.get("skipped", 0))

    def status(self, name: str) -> CampaignStatus:
        """Where a campaign stands, for its leads: targets, complete, in progress, each
        reviewer's saves and gold accuracy, alpha per question over its (unretracted) labels,
        and its disagreements no adjudication settled yet."""
        found = self.get(name)
        store = self._store
        counts = store.progress(found)
        records = self._labels.current_records(campaign=found.name)
        human = [r for r in records if r["source"] == "human"]
        gold_rows = store.targets(found, gold_only=True)
        scores = gold_accuracy(self._ground.rubric, gold_rows, human)
        people = store.reviewer_counts(found)
        reviewers = [ReviewerStatus(reviewer=r, saved=people.get(r, {}).get("saved", 0),
                                    leased=people.get(r, {}).get("leased", 0),
                                    skipped=people.get(r, {}).get("skipped", 0),
                                    gold_seen=scores.get(r, (0, 0))[0],
                                    gold_correct=scores.get(r, (0, 0))[1])
                     for r in sorted(set(people) | set(scores))]
        known = self._ground.rubric.questions_by_id
        alpha = [question_agreement(known[q], human) for q in found.questions if q in known]
        unresolved = [d for d in self._disagreements(found, records, SPREAD) if not d.resolved]
        return CampaignStatus(name=found.name, gold=len(gold_rows), reviewers=reviewers,
                              agreement=alpha, unresolved=unresolved,
                              closed_at=found.closed_at, **counts)

    def disagreements(self, name: str, spread: float = SPREAD) -> list[Disagreement]:
        """The targets of a campaign whose reviewers disagree (a scale: answers further apart
        than `spread` of its span; anything else: any difference), with each reviewer's
        answers and any adjudicated answer: for its leads only."""
        found = self.get(name)
        return self._disagreements(found, self._labels.current_records(campaign=found.name),
                                   spread)

    def disagreement(self, name: str, trace_id: str, event_id: str | None,
                     spread: float = SPREAD) -> Disagreement | None:
        """The disagreement on one target of a campaign (settled or not) by the rule of
        `disagreements`, reading that target's labels only; None where its reviewers agree.
        LabelError when the campaign has no such target."""
        found = self.get(name)
        row = self._store.target(found, trace_id, event_id)
        records = [r for r in self._labels.current_records(trace_id, campaign=found.name)
                   if (r["event_id"] or "") == (event_id or "")]
        hits = find_disagreements(self._ground.rubric, [row], records, spread)
        return hits[0] if hits else None

    def _disagreements(self, found: Campaign, records: Sequence[Mapping[str, Any]],
                       spread: float) -> list[Disagreement]:
        keys = {(r["trace_id"], r["event_id"] or "") for r in records}
        rows = [t for t in self._store.targets(found)
                if (t.trace_id, t.event_id) in keys]
        return find_disagreements(self._ground.rubric, rows, records, spread)

    def adjudicate(self, name: str, trace_id: str, event_id: str | None,
                   answers: Mapping[str, Any], lead: Reviewer, reason: str) -> list[Label]:
        """A lead's final answers on a target of a campaign, with why: new labels (`source:
        adjudication`, the reason as their comment); the reviewers' own labels stay.
        LabelError when the person is no lead, there is no reason, the campaign has no such
        target, or an answer is refused."""
        self._lead(lead, "adjudicate")
        if not (reason or "").strip():
            raise LabelError("an adjudication needs a reason")
        found = self.get(name)
        self._pinned(found)
        target = self._store.target(found, trace_id, event_id)
        given = {q: v for q, v in answers.items() if v is not None and v != ""}
        foreign = [q for q in given if q not in target.questions]
        if foreign:
            raise LabelError(f"{foreign[0]} is not asked on this target of campaign "
                             f"{found.name!r} (it asks {', '.join(target.questions)})")
        made = self._labels.checked(self._library.trace(trace_id), event_id, given, lead.name,
                                   comment=reason.strip(), identified_by=lead.via,
                                   source="adjudication", campaign=found.name)
        self._labels.add(made)
        return made

    def retract(self, label_ids: Iterable[str], lead: Reviewer, reason: str,
                campaign: str = "") -> int:
        """A lead's retraction of labels (a trial run, a reviewer who misread the rubric):
        appended rows, so the history stays while agreement and every export leave the labels
        out. Returns how many labels were newly retracted."""
        self._lead(lead, "retract labels")
        if campaign:
            self.get(campaign)
        return self._labels.retract(label_ids, lead.name, lead.via, reason, campaign)

    def add_member(self, email: str, role: str, by: Reviewer) -> Member:
        """Make someone a lead or a reviewer (or change their role). Only a lead may (see
        `may_lead`: without sign-in, anyone)."""
        self._lead(by, "add members")
        return MemberStore(self._ground.engine).add(email, role, by.name)

    def members(self) -> list[Member]:
        """Every member and their role."""
        return MemberStore(self._ground.engine).all()

    def role(self, email: str) -> str | None:
        """A member's role, `lead` or `reviewer`; None for someone not a member."""
        return MemberStore(self._ground.engine).role(email)

    # -- what a campaign holds, for its leads and its tests ---------------------------------------

    def targets(self, campaign: Campaign, *, gold_only: bool = False) -> list[TargetRow]:
        """A campaign's targets (or its gold items), in queue order."""
        return self._store.targets(campaign, gold_only=gold_only)

    def slot_rows(self, campaign: Campaign) -> list[dict[str, Any]]:
        """Every slot of a campaign as a stored row (tests and the concurrency checks read them)."""
        return self._store.slot_rows(campaign)
