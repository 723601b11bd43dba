"""The suggestions facet (`ws.suggestions`): producers of suggested answers (rules, a judge,
learned models) run over traces and stored apart from human answers, the learned models
trained on the team's labels, how far each producer agrees with the blind labels, and
`visible`: the one rule of what a reviewer may see of them, and the flag a save records.

Suggestions never anchor: on a target a reviewer sees them only after saving their own answer
there (in a campaign, a save in a campaign), unless the campaign is an assisted one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from viz_app.analysis import analyze
from viz_app.errors import LabelError, OrchvizError
from viz_app.labels import (AgreementHistory, Campaign, LabelTarget, Suggestion,
                            SuggestionAgreement, SuggestionFailure, agreement_history, now,
                            suggestion_agreement, targets)
from viz_app.model import Trace
from viz_app.store import (IndexProgress, LabelStore, LearnedModelStore, RewardModelStore,
                           SuggestionStore)
from viz_app.suggest import RULES, SuggestError, produce
from viz_app.workspace.campaigns import Campaigns
from viz_app.workspace.ground import Ground
from viz_app.workspace.library import Library


class SuggestReport(BaseModel):
    """What one run of a producer over some traces did."""

    producer: str = Field(description="`rules`, `judge` or `learned`.")
    traces: int = Field(0, description="Traces the producer ran on.")
    suggestions: int = Field(0, description="Suggestions it made.")
    added: int = Field(0, description="Suggestions stored now (the rest were stored before: "
                       "same producer version, trace version, target and question).")
    skipped: int = Field(0, description="Questions on targets the producer (a judge) had "
                         "answered before on the same trace version, as the same version, "
                         "and was not asked again.")
    failures: list[SuggestionFailure] = Field(default_factory=list,
                                              description="Targets it gave nothing usable on.")

    @property
    def text(self) -> str:
        """One line for people."""
        return (f"{self.producer}: {self.traces} traces, {self.suggestions} suggestions "
                f"({self.added} new), {len(self.failures)} failures"
                + (f", {self.skipped} answered before and not asked again"
                   if self.skipped else ""))


class InView(BaseModel):
    """What a reviewer may see of the suggestions on one target (`Suggestions.visible`)."""

    suggestions: list[Suggestion] = Field(description="The suggestions on the target's "
                                          "questions, for this version of the trace.")
    shown: bool = Field(description="Whether they may be shown now: the campaign is "
                        "assisted, or the reviewer saved their own answer there.")

    @property
    def suggestions_visible(self) -> bool:
        """What a save made now records as `suggestions_visible`: suggestions were on screen."""
        return self.shown and bool(self.suggestions)


class Suggestions:
    """Producers' suggestions, learned models and their agreement with the blind labels."""

    def __init__(self, ground: Ground, library: Library, campaigns: Campaigns):
        self._ground = ground
        self._library = library
        self._campaigns = campaigns
        self._measured: dict[tuple, Any] = {}
        """Agreement figures by what they were computed from (`_measure`)."""

    @property
    def _store(self) -> SuggestionStore:
        return SuggestionStore(self._ground.engine)

    @property
    def _models(self) -> LearnedModelStore:
        return LearnedModelStore(self._ground.engine)

    @property
    def _labels(self) -> LabelStore:
        return self._ground.labels

    # -- what a reviewer sees ---------------------------------------------------------------------

    def visible(self, trace: Trace, target: LabelTarget, reviewer: str,
                campaign: Campaign | None = None) -> InView:
        """The suggestions on a target's questions (this version of the trace) and whether a
        reviewer may see them now, blind first: on a campaign's claimed target only when the
        campaign is assisted; elsewhere once the reviewer has saved their own answer there (on
        a target a campaign holds, a save in a campaign: `ws.campaigns.unsealed`)."""
        asked_here = set(target.questions)
        found = [s for s in self._store.all(trace.trace_id, target.key)
                 if s.question in asked_here and s.trace_sha256 == trace.sha256]
        if campaign is not None:
            shown = campaign.assisted
        else:
            shown = target.key in self._campaigns.unsealed(trace.trace_id, reviewer)
        return InView(suggestions=found, shown=shown)

    # -- stored suggestions and models ------------------------------------------------------------

    def all(self, trace_id: str | None = None, event_id: str | None = None,
            question: str | None = None, producer: str | None = None) -> list[Suggestion]:
        """The stored suggestions: on one trace or all, one event (`''` for the trace itself)
        or all, one question or all, by one producer or all, in the order they were stored.
        For a reviewer's eyes, ask `visible` instead."""
        return self._store.all(trace_id, event_id, question, producer)

    def add(self, suggestions: Iterable[Suggestion]) -> int:
        """Store suggestions made elsewhere (a producer run outside `run`), each once; returns
        how many were new."""
        return self._store.add(suggestions)

    def failures(self, trace_id: str | None = None) -> list[SuggestionFailure]:
        """The targets producers gave nothing usable on, with why."""
        return self._store.failures(trace_id)

    def models(self, question: str | None = None) -> list[Any]:
        """The learned producer's stored models (of one question, or all)."""
        return self._models.all(question)

    def model_listing(self, question: str | None = None) -> list[Any]:
        """The stored models (of one question, or all), newest first, a row that cannot be read
        in its place as the LearnError that says so: what `orchviz suggest models` lists."""
        return self._models.listing(question)

    def reward_answers(self) -> list[Suggestion]:
        """Every stored reward model's held-out answers as suggestions of the producer
        `reward-model` (one version per model, placed at its training time): what the
        Agreement page measures against the blind labels, beside the other producers
        (`viz_app.reward.train.held_out_suggestions`)."""
        from viz_app.reward.stored import held_out_answers
        from viz_app.reward.train import held_out_suggestions

        return [s for version, at, held in RewardModelStore(self._ground.engine).held_out()
                for s in held_out_suggestions(held_out_answers(held), version, created_at=at)]

    def model(self, version: str) -> Any:
        """A stored learned model by its version, or None."""
        return self._models.find(version)

    # -- producing --------------------------------------------------------------------------------

    def run(self, traces: Iterable[Trace] | Mapping[str, Trace], producer: str = "rules",
                judge: Any = None, progress: IndexProgress | None = None,
                learned: Any = None) -> SuggestReport:
        """Run a producer (`rules`; `judge` with a `viz_app.suggest.judge.JudgeProducer`
        given as `judge`; `learned`, the newest stored model of each question unless a
        `viz_app.suggest.learned.LearnedProducer` is given as `learned`) over traces under the
        workspace's rubric and store what it suggests;
        a suggestion stored before (same producer version, trace version, target and question)
        is not stored again, and a judge is not asked again where it made one (a failure is
        asked again). Targets it failed on are recorded as failures, never as suggestions.
        `progress(done, total, trace_id)` is called as traces are done."""
        if producer == "rules":
            maker: Any = "rules"
        elif producer == "judge":
            if judge is None:
                raise SuggestError("the judge producer needs a judge: give --judge-url and "
                                   "--judge-model")
            maker = judge
        elif producer == "learned":
            maker = learned if learned is not None else self.learned_producer()
        else:
            raise SuggestError(f"unknown producer {producer!r} (known: rules, judge, learned)")
        items = list(traces.values() if isinstance(traces, Mapping) else traces)
        store, rubric = self._store, self._ground.rubric
        report = SuggestReport(producer=producer)
        for done, trace in enumerate(items):
            if progress is not None:
                progress(done, len(items), trace.trace_id)
            answered = self._answered(trace, maker)
            report.skipped += len(answered)
            try:
                made, failed = produce(trace, rubric, maker, answered)
            except OrchvizError:
                raise
            except Exception as err:  # one trace a producer trips on must not stop the rest
                failed = [SuggestionFailure(
                    trace_id=trace.trace_id, trace_sha256=trace.sha256, event_id="", question="",
                    producer=RULES if maker == "rules" else maker.producer,
                    error=f"the {producer} producer failed on this trace ({err!r})")]
                made = []
            report.traces += 1
            report.suggestions += len(made)
            report.added += store.add(made)
            for failure in failed:
                store.add_failure(failure)
            report.failures += failed
        if progress is not None and items:
            progress(len(items), len(items), "")
        return report

    def learned_producer(self, questions: Sequence[str] | None = None) -> Any:
        """The learned producer of the newest stored model of each question (of those named);
        LearnError when none is stored (or scikit-learn is missing)."""
        from viz_app.suggest import LearnedProducer, require_sklearn

        require_sklearn()
        for q in questions or ():
            self._ground.rubric.question(q)
        return LearnedProducer(self._models.newest(list(questions) if questions else None),
                               self._ground.rubric)

    def train(self, question: str, campaign: str | None = None, *,
                       folds: int | None = None, resamples: int = 1000, seed: int = 0,
                       created_by: str = "", progress: IndexProgress | None = None
                       ) -> tuple[Any, bool]:
        """Fit the learned producer's model for one question from the team's blind labels
        (adjudications first; of one campaign, or all), cross-validate it against held-out
        human labels and store it under its training set's hash
        (`viz_app.suggest.learned.train`; docs/suggestions.md). Returns the model and whether
        it was stored now (False: the same training set was trained before). LearnError, one
        sentence, when there are too few labels. `progress(done, total, trace_id)` is called
        as the labelled targets' traces are read and their features computed."""
        from viz_app.suggest import FOLDS, train

        self._ground.rubric.question(question)  # LabelError naming the questions there are
        if campaign is not None:
            self._campaigns.get(campaign)  # one sentence when there is no such campaign
        records = [r for r in self._labels.current_records(campaign=campaign)
                   if r["question"] == question]
        traces: dict[str, Trace | None] = {}
        ids = list(dict.fromkeys(r["trace_id"] for r in records))
        for done, trace_id in enumerate(ids):
            if progress is not None:
                progress(done, 2 * len(ids), trace_id)
            try:
                traces[trace_id] = self._library.trace(trace_id)
            except OrchvizError:
                traces[trace_id] = None
        model = train(self._ground.rubric, question, records,
                      self._store.all(question=question), traces,
                      campaign=campaign or "", folds=folds or FOLDS, resamples=resamples,
                      seed=seed, created_by=created_by, created_at=now(),
                      progress=None if progress is None else
                      lambda done, total, trace_id: progress(
                          len(ids) + round(done * len(ids) / max(1, total)), 2 * len(ids),
                          trace_id))
        return model, self._models.add(model)

    def _answered(self, trace: Trace, maker: Any) -> set[tuple[str, str]]:
        """(event id or '', question) a judge answered before on this trace version, as the
        same producer (version, model and prompt hash, its examples included), among the
        questions it asks now; empty for any other producer."""
        producer = getattr(maker, "producer", None)
        judged = getattr(maker, "judged", None)
        if producer is None or judged is None or producer.name != "judge":
            return set()
        asked = set(judged(self._ground.rubric))
        return {(s.event_id, s.question)
                for s in self._store.all(trace_id=trace.trace_id, producer="judge")
                if s.trace_sha256 == trace.sha256 and s.producer == producer
                and s.question in asked}

    def judge_examples(self, k: int, questions: Sequence[str] | None = None) -> list[Any]:
        """Up to `k` few-shot examples per judged question (or per question named) for a
        judge, from the leads' current adjudicated answers (`judge.choose_examples`), each with
        its target's context as the judge's prompt shows it. An answer on a trace the library
        no longer holds, or on another version of it, is left out. LabelError when no
        question has one."""
        from viz_app.suggest import (JUDGED_KINDS, MAX_INPUTS, TEXT_LIMIT, Example, choose_examples,
                                     target_context)

        rubric = self._ground.rubric
        wanted = [q.id for q in rubric.questions if q.kind in JUDGED_KINDS
                  and q.ask_when is None and (questions is None or q.id in questions)]
        records = self._labels.current_records(adjudicated_only=True)
        found: list[Example] = []
        for record in choose_examples(records, wanted, k):
            try:
                trace = self._library.trace(record["trace_id"])
            except OrchvizError:
                continue
            if record.get("trace_sha256") and record["trace_sha256"] != trace.sha256:
                continue
            analysis = analyze(trace)
            key = record["event_id"] or ""
            target = next((t for t in targets(rubric, analysis) if t.key == key), None)
            if target is None:
                continue
            found.append(Example(question=rubric.question(record["question"]),
                                 context=target_context(analysis, target,
                                                        text_limit=TEXT_LIMIT,
                                                        max_inputs=MAX_INPUTS),
                                 value=record["value"]))
        if k > 0 and not found:
            raise LabelError(f"few-shot examples come from adjudicated labels, and none of "
                             f"{', '.join(wanted)} has one on a trace of this library yet (a "
                             "lead adjudicates a campaign's disagreements on the Adjudicate "
                             "page); run without --few-shot")
        return found

    def agreement_history(self, question: str | None = None, *, resamples: int = 1000,
                          seed: int = 0) -> AgreementHistory:
        """Each producer version's agreement with the blind labels, in the order the versions
        came (alpha and kappa with bootstrap 95 % intervals, each version alone), and the
        versions whose alpha left their predecessor's interval
        (`viz_app.labels.agreement.agreement_history`; docs/suggestions.md)."""
        from viz_app.suggest import FINE

        if question is not None:
            self._ground.rubric.question(question)
        return self._measure(("history", question, resamples, seed), lambda: agreement_history(
            self._ground.rubric, self._labels.current_records(), self._store.all(),
            question=question, resamples=resamples, seed=seed, silence={RULES.name: FINE},
            unseen=self.reward_answers()))

    MEASURED_KEPT = 16
    """Agreement figures kept per workspace (`_measure`)."""

    def _measure(self, key: tuple, compute: Callable[[], Any]) -> Any:
        """An agreement figure computed once per state of its data: labels, retractions and
        suggestions are only ever appended, so their row counts change with every write that
        could change it (the Agreement page reruns on each click; a thousand resamples of ten
        thousand targets take seconds). The bootstrap is seeded, so a kept figure is the one a
        new computation would give. Shared by every session, as the workspace is."""
        stamp = (*self._labels.revision(), self._store.count(),
                 RewardModelStore(self._ground.engine).count())
        full = (*key, self._ground.rubric.sha256, stamp)
        found = self._measured.get(full)
        if found is None:
            found = compute()
            if len(self._measured) >= self.MEASURED_KEPT:
                self._measured.pop(next(iter(self._measured)), None)
            self._measured[full] = found
        return found

    def agreement(self, question: str | None = None, *, resamples: int = 1000,
                             seed: int = 0) -> SuggestionAgreement:
        """How far each producer's suggestions agree with the current human labels made
        without suggestions in view, beside how far the reviewers agree with each other, per
        question (or the one named): alpha, kappa, bootstrap 95 % intervals, confusion
        matrices (`viz_app.labels.agreement.suggestion_agreement`; docs/suggestions.md). The
        rules' silence on a target of a trace they ran on reads as `rules.FINE`."""
        from viz_app.suggest import FINE

        if question is not None:
            self._ground.rubric.question(question)  # LabelError naming the questions there are
        return self._measure(("suggestions", question, resamples, seed),
                             lambda: suggestion_agreement(
                                 self._ground.rubric, self._labels.current_records(),
                                 self._store.all(), question=question,
                                 resamples=resamples, seed=seed, silence={RULES.name: FINE},
                                 unseen=self.reward_answers()))
