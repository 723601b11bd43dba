"""Why an export wrote no row, in one sentence: said beside `0 rows -> file` wherever an export
is asked for (the CLI, the app), so that an empty file never reaches a trainer unexplained.

Pure: reads what the export was given and what it left out; writes nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from viz_app.export.formats import ExportFormat, ExportInput

NEEDS: dict[str, str] = {
    "stepwise": "a row is a trace with a rewarded answer on one of its steps",
    "openrlhf-prm": "a row is a trace with a rewarded answer on one of its steps",
    "unpaired": "a row is a step (an event) with a rewarded answer",
    "agent-lightning": "a row is a step (an event) with a rewarded answer",
    "verl": "a row is a step (an event) with a rewarded answer, not averaged from a dispute",
    "rllm": "an episode is a trace with a rewarded answer",
    "agent-rewards": "a row is a trace with a rewarded answer",
    "decision-pairs": "a decision pair needs a correction, a stop answered premature or late "
                      "with its pointer, or a decision judged sound (--confirmations)",
    "openrlhf-decision-pairs": "a decision pair needs a correction, a stop answered premature or "
                               "late with its pointer, or a decision judged sound "
                               "(--confirmations)",
}
"""What one row of a training shape needs, said when none had it."""


def why_empty(found: ExportFormat, given: ExportInput, left_out: Sequence[str]) -> str:
    """The one sentence saying why an export of `found` wrote nothing from `given`."""
    if found.reads == "bookmarks":
        return "Nothing to write: there is no current bookmark (by the reviewer asked for)."
    if found.reads == "suggestions":
        return ("Nothing to write: no suggestion is stored (`orchviz suggest` or the Review "
                "page's producers make them).")
    labels = list(given.labels)
    if not labels:
        return ("Nothing to write: no current label was read (none saved yet, or none by the "
                "reviewer, campaign or --adjudicated-only asked for).")
    if found.needs_traces:
        wanted = {r["trace_id"] for r in labels}
        if not wanted & set(given.traces):
            return (f"Nothing to write: none of the {len(wanted)} labelled traces was among "
                    "the traces read (name their folders with --traces).")
    if found.name in ("preference", "openrlhf-rm"):
        from viz_app.export.preference import why_no_pairs

        return "No row: " + why_no_pairs(labels, given.traces, given.rubric, given.options,
                                         from_scores=given.from_scores) + "."
    traces = len({r["trace_id"] for r in labels})
    need = NEEDS.get(found.name)
    return (f"No row: the {len(labels)} current labels on {traces} traces make none"
            + (f" ({need})" if need else "")
            + ("; what was left out is said above" if left_out else "") + ".")
