"""Every error orchviz raises on purpose: one base, `OrchvizError`, whose message is one sentence
that a person can act on. The CLI prints it and exits 1; the app shows it and keeps running."""

from __future__ import annotations


class OrchvizError(Exception):
    """Something orchviz cannot do, said in one sentence (no traceback needed)."""


class _Located(OrchvizError, ValueError):
    """An error in a file: names the file, the place in it, and what is wrong."""

    def __init__(self, file: str, place: str, problem: str):
        self.file = file
        self.place = place
        self.problem = problem
        super().__init__(f"{file}: {place}: {problem}" if place else f"{file}: {problem}")

    def as_dict(self) -> dict[str, str]:
        """The error as a machine-readable record."""
        return {"file": self.file, "place": self.place, "problem": self.problem}


class TraceError(_Located):
    """A trace file that cannot be loaded: names the file, the place in it, and what is wrong."""


class NoSuchTrace(TraceError):
    """No index of the workspace (its folders' or its pools') knows this trace id."""


class RubricError(_Located):
    """A rubric file that cannot be used: names the file, the place in it, and what is wrong."""


class LabelError(OrchvizError, ValueError):
    """A label the rubric or the trace refuses: an unknown event, question or answer."""


class BookmarkError(LabelError):
    """A bookmark the trace refuses: an unknown event, a range outside the run, no reviewer."""


class SchemaError(OrchvizError):
    """A database orchviz cannot use as it is: written by a newer release, or not migrated."""


class StoreError(OrchvizError):
    """The database failed under orchviz: a full disk, a read-only file, a lock held past the
    busy timeout, a server that cannot be reached. Said in one sentence that names the database
    and says that nothing was saved (the transaction was rolled back); the database's own error
    is kept as the cause, for the log."""


class ClaimError(LabelError):
    """A campaign claim the store did not issue as it is given (another slot, target, trace,
    event, campaign or questions than the reservation's, or not its token): refused in one
    sentence, with nothing saved."""
