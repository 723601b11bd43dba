"""The one front door to orchviz's data (`Workspace`) and its facets' public names.

Callers import from here, so the facets' modules can move without moving a caller:
`viz_app.workspace.door` puts the facets together; each facet lives in a module of its own.
"""

from viz_app.workspace.answers import ANSWER_FIRST, answers_to_save, read_label_records
from viz_app.workspace.branches import BRANCHES
from viz_app.workspace.door import Workspace
from viz_app.workspace.library import TraceSet
from viz_app.workspace.suggestions import InView, SuggestReport

__all__ = ["ANSWER_FIRST", "BRANCHES", "InView", "SuggestReport", "TraceSet", "Workspace",
           "answers_to_save", "read_label_records"]
