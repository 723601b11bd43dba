"""The labelling facet (`ws.labelling`): a reviewer's answers on a trace's targets, saved by the
rules of a save, and the labels as they stand (current, history, progress), read for a page,
a command or a test without anyone holding the label store.

Campaign saves go through `ws.campaigns.submit`; what a reviewer may see of others' answers is
`ws.campaigns` too (sealing), since a campaign decides it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from viz_app.analysis import analyze
from viz_app.errors import LabelError, OrchvizError
from viz_app.io.detect import published_label_records
from viz_app.labels import (Identity, ImportReport, Label, LabelTarget, Preference, Progress,
                            Reviewer, judgement, judgement_label, preference_of)
from viz_app.model import Trace
from viz_app.store import CampaignStore, DraftStore, LabelStore
from viz_app.summary import LibraryRow
from viz_app.workspace.answers import answers_to_save
from viz_app.workspace.ground import Ground
from viz_app.workspace.library import Library

if TYPE_CHECKING:
    from viz_app.store.labels import Source


class Labelling:
    """Saving answers and reading labels, under the workspace's rubric."""

    def __init__(self, ground: Ground, library: Library):
        self._ground = ground
        self._library = library

    @property
    def _labels(self) -> LabelStore:
        return self._ground.labels

    @property
    def rubric(self):
        """The rubric answers are checked against (`ws.rubric`); RubricError when its file
        cannot be used."""
        return self._ground.rubric

    # -- drafts -----------------------------------------------------------------------------------

    @cached_property
    def _drafts(self) -> DraftStore:
        return DraftStore(self._ground.engine)

    def draft(self, reviewer: str, form: str) -> dict[str, Any]:
        """What the reviewer answered on a form (a trace's panel, a claim, an adjudication) and
        did not save: widget key -> value, empty when nothing is pending."""
        return self._drafts.get(reviewer, form)

    def keep_draft(self, reviewer: str, form: str, answers: Mapping[str, Any]) -> bool:
        """Keep the reviewer's unsaved answers on a form, so a reload or a closed tab brings
        them back; False when the draft is too large to keep."""
        return self._drafts.keep(reviewer, form, answers)

    def drop_draft(self, reviewer: str, form: str) -> None:
        """Forget the reviewer's unsaved answers on a form."""
        self._drafts.drop(reviewer, form)

    # -- saving -----------------------------------------------------------------------------------

    def save_answers(self, trace: Trace, target: LabelTarget | str | None,
                     values: Mapping[str, Any], reviewer: Reviewer, *, comment: str = "",
                     seconds_spent: float | None = None,
                     suggestions_visible: bool | None = None) -> list[Label]:
        """Save a reviewer's answers on one target of a trace, together.

        The rules of a save (`answers_to_save`): every required question of the target has an
        answer (empty answers count as none), tags are saved even when empty, and a follow-up
        question is kept only when the answer it follows asks it (and then it must be
        answered). LabelError says what is missing or refused; nothing is saved then.
        `suggestions_visible` records whether suggested answers were on screen
        (`ws.suggestions.visible` says)."""
        found = self.target(trace, target)
        answers = answers_to_save(self._ground.rubric, found, values, analyze(trace))
        self._library.check_version(trace.trace_id, trace.sha256, trace)
        held = self.campaigns_of(trace.trace_id, found.event_id, reviewer.name)
        groups: dict[str, dict[str, Any]] = {}
        for question, value in answers.items():
            groups.setdefault(held.get(question, ""), {})[question] = value
        made = [label for campaign, given in groups.items()
                for label in self._labels.checked(
                    trace, found.event_id, given, reviewer.name, comment=comment,
                    seconds_spent=seconds_spent, identified_by=reviewer.via, campaign=campaign,
                    suggestions_visible=suggestions_visible)]
        self._labels.add(made)  # one transaction
        return made

    def campaigns_of(self, trace_id: str, event_id: str | None, reviewer: str
                     ) -> dict[str, str]:
        """Question -> the campaign in which the reviewer saved their answer on this target
        (their latest such save, under this rubric): a change of that answer made anywhere is
        saved in that campaign too, so the newest answer is the one the campaign counts."""
        rubric = self._ground.rubric.sha256
        found: dict[str, str] = {}
        for campaign, sha, questions in CampaignStore(self._ground.engine).saved_in(
                trace_id, event_id, reviewer):
            if sha == rubric:
                for question in questions:
                    found.setdefault(question, campaign)
        return found

    def target(self, trace: Trace, target: LabelTarget | str | None) -> LabelTarget:
        """The target of a trace with this key (`''` or None: the trace itself); LabelError
        when the rubric asks nothing there."""
        if isinstance(target, LabelTarget):
            return target
        key = target or ""
        for found in self._library.targets(trace):
            if found.key == key:
                return found
        raise LabelError(f"trace {trace.trace_id} has no target {key or '(the trace)'!r} "
                         f"under rubric {self._ground.rubric.name}")

    def save(self, trace: Trace, question: str, value: Any, reviewer: str,
             event_id: str | None = None, *, comment: str = "",
             seconds_spent: float | None = None, identified_by: Identity = "cli") -> Label:
        """Save one answer as a new label, checked against the rubric and the trace (LabelError
        when they refuse it), without the rules of a whole target's save."""
        return self._labels.save(trace, question, value, reviewer, event_id, comment=comment,
                                 seconds_spent=seconds_spent, identified_by=identified_by)

    def save_target(self, trace: Trace, event_id: str | None, answers: Mapping[str, Any],
                    reviewer: str, *, comment: str = "", seconds_spent: float | None = None,
                    identified_by: Identity = "cli",
                    suggestions_visible: bool | None = None) -> list[Label]:
        """Save answers on one target together (one transaction), each checked against the
        rubric and the trace; follow-up questions are checked against the other answers."""
        return self._labels.save_target(trace, event_id, answers, reviewer, comment=comment,
                                        seconds_spent=seconds_spent,
                                        identified_by=identified_by,
                                        suggestions_visible=suggestions_visible)

    def checked(self, trace: Trace, event_id: str | None, answers: Mapping[str, Any],
                reviewer: str, *, comment: str = "", seconds_spent: float | None = None,
                identified_by: Identity = "cli", source: Source = "human",
                campaign: str = "", suggestions_visible: bool | None = None) -> list[Label]:
        """The labels a save of these answers would add, each checked (LabelError otherwise),
        none stored: to be written together by `add`."""
        return self._labels.checked(trace, event_id, answers, reviewer, comment=comment,
                                    seconds_spent=seconds_spent, identified_by=identified_by,
                                    source=source, campaign=campaign,
                                    suggestions_visible=suggestions_visible)

    def add(self, labels: Iterable[Label]) -> int:
        """Write labels already checked, in one transaction, skipping any whose label_id is
        stored; returns how many were added."""
        return self._labels.add(labels)

    def save_preference(self, a: Trace, b: Trace, chosen: str | None, reviewer: Reviewer,
                        reason: str, strength: int | None = None) -> Preference:
        """Save a reviewer's judgement of two traces (which is better, why, by how much)."""
        label = judgement_label(self._ground.rubric, a, b, chosen, reviewer.name, reason,
                                strength, identified_by=reviewer.via)
        self._labels.add([label])
        return preference_of(label.to_record())

    def judgement(self, a: str, b: str, reviewer: str) -> Preference | None:
        """A reviewer's current judgement of two traces, if they gave one."""
        first = min(a, b)
        return judgement(self._labels.current_records(trace_id=first, reviewer=reviewer),
                         a, b, reviewer)

    # -- importing --------------------------------------------------------------------------------

    def import_labels(self, records: Iterable[Mapping[str, Any]], traces: Mapping[str, Trace],
                      origin: str) -> ImportReport:
        """Import label records (the jsonl export's shape) all or nothing, checked against the
        workspace's rubric; LabelError names the first bad record. Imported labels are
        `source: import` and never become a person's current answer (see docs/labels.md); a
        record dated in the future is stored at the import's time (`ImportReport.clamped`)."""
        return self._labels.import_records(records, traces, origin)

    def import_published(self, traces: Iterable[Trace]) -> int:
        """Store the annotations that runs arrive with (Who&When's, TRAIL's, MAST's) as
        imported labels under the workspace's rubric (each dataset's mapping, in
        docs/importers.md); returns how many were added (0 when already there)."""
        questions = set(self._ground.rubric.questions_by_id)
        added = 0
        for trace in traces:
            records = published_label_records(trace, questions)
            if records:
                added += self.import_labels(records, {trace.trace_id: trace},
                                            records[0]["origin"]).added
        return added

    # -- the labels as they stand -----------------------------------------------------------------

    def current(self, trace_id: str | None = None, reviewer: str | None = None, *,
                campaign: str | None = None, include_retracted: bool = False,
                adjudicated_only: bool = False) -> list[Label]:
        """The current labels: newest per reviewer, target and question, sorted by target,
        retracted ones left out (see `current_records`)."""
        return self._labels.current(trace_id, reviewer, campaign=campaign,
                                    include_retracted=include_retracted,
                                    adjudicated_only=adjudicated_only)

    def current_records(self, trace_id: str | None = None, reviewer: str | None = None, *,
                        campaign: str | None = None, include_retracted: bool = False,
                        adjudicated_only: bool = False) -> list[dict[str, Any]]:
        """The current labels as export records (dicts of every field, `event_id` None for the
        trace itself): what exports and agreement read."""
        return self._labels.current_records(trace_id, reviewer, campaign=campaign,
                                            include_retracted=include_retracted,
                                            adjudicated_only=adjudicated_only)

    def all(self, trace_id: str | None = None, reviewer: str | None = None) -> Iterator[Label]:
        """Every stored label (the whole history, retracted ones too), oldest first."""
        return self._labels.all(trace_id, reviewer)

    def history(self, trace_id: str, event_id: str | None = None, question: str | None = None,
                reviewer: str | None = None) -> list[Label]:
        """Every label ever saved on a trace (or one target of it), oldest first."""
        return self._labels.history(trace_id, event_id, question, reviewer)

    def count(self) -> int:
        """How many label rows are stored (history included)."""
        return self._labels.count()

    def answers(self, trace_id: str, reviewer: str) -> dict[str, dict[str, Label]]:
        """A reviewer's current answers on a trace, as they saved them: target key ->
        question -> label."""
        return self._labels.answers(trace_id, reviewer)

    # -- progress ---------------------------------------------------------------------------------

    def progress(self, trace: Trace, reviewer: str | None = None) -> Progress:
        """How many of a trace's targets are labelled, by one reviewer or (None) by anyone."""
        return self._labels.progress(trace, reviewer)

    def answered(self, reviewer: str | None = None) -> dict[str, dict[str, set[str]]]:
        """Trace id -> target key -> questions answered, by a reviewer or (None) by anyone;
        empty when the rubric cannot be used."""
        if self._ground.given_rubric is None:
            return {}
        return self._labels.answered(reviewer)

    @staticmethod
    def labelled_text(row: LibraryRow, answered: Mapping[str, dict[str, set[str]]]) -> str:
        """What the library says of a trace's labels: '2 of 5' (targets with every required
        question answered, of those the rubric asks for), or a bare count when the row was
        indexed without a rubric."""
        found = answered.get(row.trace_id, {})
        if row.targets is None:
            return f"{len(found)} labelled"
        return f"{row.labelled(found)} of {len(row.targets)}"

    def next_unlabelled(self, reviewer: str, after: str | None,
                        rows: Sequence[LibraryRow] | None = None) -> str | None:
        """The first trace after `after` (library order, wrapping) that the reviewer has not
        fully labelled, or None when every one is. Traces indexed with their targets are judged
        without being loaded."""
        rows = list(rows if rows is not None else self._library.update_index().rows)
        ids = [r.trace_id for r in rows]
        start = ids.index(after) + 1 if after in ids else 0
        answered = self.answered(reviewer)
        ordered = rows[start:] + rows[:start]
        for row in ordered:
            if row.trace_id == after:
                continue
            if row.trace_id not in answered:
                return row.trace_id
            if row.targets is not None and row.labelled(answered[row.trace_id]) < len(row.targets):
                return row.trace_id
        for row in ordered:  # rows indexed without their targets (the rubric file was wrong then)
            if row.trace_id == after or row.targets is not None:
                continue
            try:
                if not self.progress(self._library.index.read(row.path, row.position),
                                     reviewer).done:
                    return row.trace_id
            except OrchvizError:  # a file that changed or vanished since it was indexed
                continue
        return None
