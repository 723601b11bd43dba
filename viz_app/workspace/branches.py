"""The branches facet (`ws.branches`): a reviewer's correction of a decision turned into a
replacement, and a trace continued from it by a model endpoint, saved where the library lists
it (the uploads folder's `branches/`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from viz_app.errors import LabelError
from viz_app.labels import Reviewer
from viz_app.model import Trace
from viz_app.settings import ModelEndpoint, ReplayLimits
from viz_app.workspace.ground import Ground
from viz_app.workspace.library import Library

if TYPE_CHECKING:
    from viz_app.branch import Branch, Replacement

BRANCHES = "branches"
"""The uploads folder's subfolder where continued traces are saved (`Branches.continue_from`)."""


class Branches:
    """Corrections as replacements, and traces continued from them."""

    def __init__(self, ground: Ground, library: Library):
        self._ground = ground
        self._library = library

    def correction_at(self, trace: Trace, event_id: str, reviewer: str) -> Replacement | None:
        """The decision a reviewer's saved correction at an event gives, as a replacement to
        continue from (their current answers on that target, through
        `viz_app.labels.correction.corrected_decision`); None when they corrected nothing
        there."""
        from viz_app.branch import replacement_from
        from viz_app.labels import corrected_decision

        answers = {label.question: label.value
                   for label in self._ground.labels.current(trace.trace_id, reviewer)
                   if label.event_id == event_id}
        if not answers:
            return None
        try:
            decision = corrected_decision(self._ground.rubric, trace, event_id, answers)
        except LabelError:  # an answer saved under another rubric: no correction to start from
            return None
        return replacement_from(decision) if decision is not None else None

    def continue_from(self, trace: Trace, event_id: str, replacement: Replacement, *,
                      endpoint: ModelEndpoint | None = None, limits: ReplayLimits | None = None,
                      output: str | os.PathLike | None = None, by: Reviewer | None = None
                      ) -> tuple[Branch, Path]:
        """Continue a trace from an edited decision (`viz_app.branch.continue_from`) with the
        configured endpoint (or the one given) and save the branch: as `output`, or in the
        uploads folder's `branches/`, where the library lists it; `by` is who wrote the
        decision. BranchError, saying what failed and that nothing was saved, when no branch
        was made."""
        from viz_app.branch import BranchError, continue_from
        from viz_app.io.native import write_trace

        endpoint = endpoint or self._ground.settings.endpoint
        if endpoint is None:
            raise BranchError("no model endpoint is configured to continue the trace (start the "
                              "app with --judge-url and --judge-model); nothing was saved")
        if output is None and self._ground.settings.uploads is None:
            raise BranchError("say where the branch goes (an output file); nothing was saved")
        branch = continue_from(trace, event_id, replacement, endpoint,
                               limits or self._ground.settings.replay, by=by.name if by else "")
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", branch.trace.trace_id)[:150] + ".json"
        path = write_trace(branch.trace, output if output is not None else
                           self._ground.settings.uploads / BRANCHES / name)  # type: ignore[operator]
        if output is None:
            self._library.update_index()
        return branch, path
