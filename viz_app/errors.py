"""The one error orchviz raises for input it cannot read."""

from __future__ import annotations


class TraceError(ValueError):
    """A trace file that cannot be loaded: names the file, the place in it, and what is wrong."""

    def __init__(self, file: str, place: str, problem: str):
        self.file = file
        self.place = place
        self.problem = problem
        super().__init__(f"{file}: {place}: {problem}" if place else f"{file}: {problem}")

    def as_dict(self) -> dict[str, str]:
        """The error as a machine-readable record."""
        return {"file": self.file, "place": self.place, "problem": self.problem}
