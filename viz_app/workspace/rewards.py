"""The rewards facet (`ws.rewards`): reward models trained on the team's labels (the answers
of O1-O5 questions and the decision pairs), listed, and measured beside the other producers on
the Agreement page (their held-out answers: `ws.suggestions.reward_answers`; `viz_app.reward`;
docs/trainers)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from viz_app.errors import OrchvizError
from viz_app.labels import now
from viz_app.workspace.campaigns import Campaigns
from viz_app.workspace.ground import Ground
from viz_app.workspace.library import Library
from viz_app.workspace.suggestions import Suggestions

if TYPE_CHECKING:
    from viz_app.reward.train import RewardModel
    from viz_app.store import RewardModelStore


class Rewards:
    """Reward models trained on the workspace's labels. The facet does the `viz_app.reward`
    work and hands the store plain rows (`viz_app.reward.stored`), so the store stays below
    the models it keeps."""

    def __init__(self, ground: Ground, library: Library, campaigns: Campaigns,
                 suggestions: Suggestions):
        self._ground = ground
        self._library = library
        self._campaigns = campaigns
        self._suggestions = suggestions

    @property
    def _store(self) -> RewardModelStore:
        from viz_app.store import RewardModelStore

        return RewardModelStore(self._ground.engine)

    def train(self, campaign: str | None = None, *, folds: int | None = None,
              resamples: int = 1000, seed: int = 0, created_by: str = "",
              progress: Callable[[int, int, str], None] | None = None,
              say: Callable[[str], None] | None = None) -> tuple[RewardModel, bool]:
        """Fit the reward model on the store's labels (of one campaign, or all): the answers of
        O1-O5 questions as rewards and the decision-pairs export's pairs as preferences;
        measure it on held-out traces and store it under its training set's hash
        (`viz_app.reward.train`). Returns the model and whether it was stored now."""
        from viz_app.export import decision_pair_rows
        from viz_app.reward.stored import model_row
        from viz_app.reward.train import FOLDS, train

        if campaign is not None:
            self._campaigns.get(campaign)  # one sentence when there is no such campaign
        rubric = self._ground.rubric
        records = self._ground.labels.current_records(campaign=campaign)
        ids = list(dict.fromkeys(r["trace_id"] for r in records))
        traces: dict[str, Any] = {}
        for done, trace_id in enumerate(ids):
            if progress is not None:
                progress(done, len(ids), trace_id)
            try:
                traces[trace_id] = self._library.trace(trace_id)
            except OrchvizError:
                traces[trace_id] = None
        if progress is not None and ids:
            progress(len(ids), len(ids), "")
        readable = {k: v for k, v in traces.items() if v is not None}
        pairs = decision_pair_rows(records, readable, rubric)
        model = train(rubric, records, self._suggestions.all(), traces, pair_rows=pairs,
                      campaign=campaign or "", folds=folds or FOLDS, resamples=resamples,
                      seed=seed, created_by=created_by, created_at=now(), progress=say)
        return model, self._store.add(model_row(model))

    def models(self) -> list[RewardModel]:
        """Every stored reward model, newest first."""
        from viz_app.reward.stored import stored_model

        return [stored_model(row) for row in self._store.all()]
