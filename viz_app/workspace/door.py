"""The Workspace: the one front door to orchviz's data, and its facets.

A Workspace holds what one team works on together: the folders and pools of traces (and the
uploads folder), the database (trace index, labels, campaigns, suggestions, bookmarks, behind
one migration history) and the rubric labels are checked against. The CLI, every page of the
app and the tests go through it, so a rule such as "which trace comes next for this reviewer"
or "what a save must contain" is written once. The reviewer is always an argument: a Workspace
is shared by everyone who uses it, and knows nobody.

Each noun with many verbs is a facet behind the door, built bottom-up (no facet reaches one
above it; tests/test_architecture.py checks the order):

    ground       settings, engine, rubric              (ws.settings, ws.engine, ws.rubric)
    library      folders, pools, indexes, one door to a trace     ws.library
    labelling    saving answers, the labels as they stand          ws.labelling
    campaigns    campaigns, claims, adjudication, members, sealing ws.campaigns
    disputes     the comment thread of each disputed target        ws.disputes
    suggestions  producers, learned models, what a reviewer sees   ws.suggestions
    bookmarks    bookmarks and a trace's case study                ws.bookmarks
    branches     corrections continued by a model endpoint         ws.branches
    exports      label files in the trainers' shapes               ws.exports
    rewards      reward models trained on the team's labels        ws.rewards

    ws = Workspace.open("orchviz.db", traces=["demo_traces"])
    library = ws.library.update_index()
    trace = ws.library.trace(library.rows[0].trace_id)
    ws.labelling.save_answers(trace, "e12", {"aggregation_quality": 2},
                              Reviewer(name="ann", via="cli"))
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from sqlalchemy import Engine

from viz_app.errors import RubricError
from viz_app.labels import Rubric
from viz_app.settings import Settings, database_url
from viz_app.workspace.bookmarks import Bookmarks
from viz_app.workspace.branches import Branches
from viz_app.workspace.campaigns import Campaigns
from viz_app.workspace.disputes import Disputes
from viz_app.workspace.exports import Exports
from viz_app.workspace.ground import Ground
from viz_app.workspace.labelling import Labelling
from viz_app.workspace.library import Library
from viz_app.workspace.rewards import Rewards
from viz_app.workspace.suggestions import Suggestions


class Workspace:
    """Settings, engine and rubric, with the facets that work on them."""

    def __init__(self, settings: Settings, *, rubric: Rubric | None = None):
        ground = Ground(settings, rubric=rubric)
        self._ground = ground
        self.library = Library(ground)
        self.labelling = Labelling(ground, self.library)
        self.campaigns = Campaigns(ground, self.library)
        self.disputes = Disputes(ground, self.campaigns)
        self.suggestions = Suggestions(ground, self.library, self.campaigns)
        self.bookmarks = Bookmarks(ground, self.campaigns)
        self.branches = Branches(ground, self.library)
        self.exports = Exports(ground, self.library, self.campaigns, self.suggestions,
                               self.bookmarks, self.disputes)
        self.rewards = Rewards(ground, self.library, self.campaigns, self.suggestions)

    @classmethod
    def open(cls, db: str | os.PathLike, *, traces: Sequence[str | os.PathLike] = (),
             rubric: str | os.PathLike | Rubric | None = None,
             uploads: str | os.PathLike | None = None) -> Workspace:
        """A Workspace on a database (a SQLAlchemy URL or a SQLite file's path), listing the
        given folders or files of traces, under a rubric (a file, a Rubric, or the default)."""
        given = rubric if isinstance(rubric, Rubric) else None
        settings = Settings(
            traces=[Path(t) for t in traces], db_url=database_url(db),
            uploads=Path(uploads).resolve() if uploads is not None else None,
            rubric=Path(rubric) if rubric is not None and given is None else None)
        return cls(settings, rubric=given)

    @classmethod
    def from_env(cls) -> Workspace:
        """The Workspace that `orchviz app` describes in the environment (see Settings)."""
        return cls(Settings.from_env())

    @property
    def settings(self) -> Settings:
        """Where the traces, database, rubric and endpoints are."""
        return self._ground.settings

    @property
    def engine(self) -> Engine:
        """The database engine every store of the workspace shares."""
        return self._ground.engine

    @property
    def rubric(self) -> Rubric:
        """The rubric labels are checked against; RubricError when its file cannot be used."""
        return self._ground.rubric

    @property
    def rubric_error(self) -> RubricError | None:
        """Why the rubric's file cannot be used, or None."""
        return self._ground.rubric_error
