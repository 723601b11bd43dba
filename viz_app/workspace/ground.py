"""What every facet of the Workspace stands on: the settings, the database engine and the
rubric (with why it cannot be used, when its file is wrong), and the label store under it.

A facet receives the ground and the facets below it, never the door: so no facet reaches one
above it, and the door (`viz_app.workspace.door`) only puts them together.
"""

from __future__ import annotations

from sqlalchemy import Engine

from viz_app.errors import RubricError
from viz_app.labels import Rubric, load_rubric
from viz_app.settings import Settings
from viz_app.store import LabelStore, connect


class Ground:
    """Settings, engine and rubric, opened together and shared by every facet."""

    def __init__(self, settings: Settings, *, rubric: Rubric | None = None):
        self.settings = settings
        self.engine: Engine = connect(settings.db_url)
        self.given_rubric: Rubric | None = rubric
        """The rubric, or None when its file cannot be used (`rubric_error` says why)."""
        self.rubric_error: RubricError | None = None
        if rubric is None:
            try:
                self.given_rubric = load_rubric(settings.rubric)
            except RubricError as err:  # the library still lists; labelling says why it cannot
                self.rubric_error = err

    @property
    def rubric(self) -> Rubric:
        """The rubric labels are checked against; RubricError when its file cannot be used."""
        if self.given_rubric is None:
            assert self.rubric_error is not None
            raise self.rubric_error
        return self.given_rubric

    @property
    def labels(self) -> LabelStore:
        """The label store under the workspace's rubric; RubricError when it cannot be used.
        For the facets only: callers ask a facet (`ws.labelling`) for what they need."""
        return LabelStore(self.engine, self.rubric)
