"""Where a form's unsaved answers live beyond the session: the reviewer's draft of the form in
the Workspace's labelling facet, handed to `components.form.keep_drafts` by the pages that draw
a form (the trace page's labels panel, the Review page's claim and its way back, the
adjudication's final answer), so a reload, a closed tab or another browser of the same
reviewer gets them back. The component keeps the drafts as the reviewer types; this keeper is
the page's door to where they are stored."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from viz_app.errors import StoreError
from viz_app.workspace import Workspace


class DraftKeeper:
    """A form's drafts of one reviewer, read and kept through `ws.labelling` (an object with
    `load() -> dict` and `keep(dict)`, as `keep_drafts` asks)."""

    def __init__(self, workspace: Workspace, reviewer: str, form: str):
        self.labelling, self.reviewer, self.form = workspace.labelling, reviewer, form

    def load(self) -> dict[str, Any]:
        try:
            return self.labelling.draft(self.reviewer, self.form)
        except (StoreError, OSError, ValueError):  # a draft that cannot be read is no draft
            return {}

    def keep(self, answers: Mapping[str, Any]) -> None:
        try:
            self.labelling.keep_draft(self.reviewer, self.form, answers)
        except (StoreError, OSError, TypeError, ValueError):  # the session still holds it
            pass
