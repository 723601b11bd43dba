"""The Workspace's reward models (`ws.rewards`): train one on the team's labels, list them, and
measure them beside the other producers on the Agreement page."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from viz_app.errors import OrchvizError
from viz_app.labels import now

if TYPE_CHECKING:
    from viz_app.reward.train import RewardModel
    from viz_app.store import RewardModelStore
    from viz_app.workspace import Workspace


class Rewards:
    """The reward-model facet of a Workspace."""

    def __init__(self, ws: Workspace):
        self.ws = ws

    @property
    def store(self) -> RewardModelStore:
        from viz_app.store import RewardModelStore

        return RewardModelStore(self.ws.engine)

    def train(self, campaign: str | None = None, *, folds: int | None = None,
              resamples: int = 1000, seed: int = 0, created_by: str = "",
              progress: Callable[[int, int, str], None] | None = None,
              say: Callable[[str], None] | None = None) -> tuple[RewardModel, bool]:
        """Fit the reward model on the store's labels (of one campaign, or all): the answers of
        O1-O5 questions as rewards and the decision-pairs export's pairs as preferences;
        measure it on held-out traces and store it under its training set's hash
        (`viz_app.reward.train`). Returns the model and whether it was stored now."""
        from viz_app.export import decision_pair_rows
        from viz_app.reward.train import FOLDS, train

        ws = self.ws
        if campaign is not None:
            ws.campaign(campaign)  # one sentence when there is no such campaign
        records = ws.labels.current_records(campaign=campaign)
        ids = list(dict.fromkeys(r["trace_id"] for r in records))
        traces: dict[str, Any] = {}
        for done, trace_id in enumerate(ids):
            if progress is not None:
                progress(done, len(ids), trace_id)
            try:
                traces[trace_id] = ws.trace(trace_id)
            except OrchvizError:
                traces[trace_id] = None
        if progress is not None and ids:
            progress(len(ids), len(ids), "")
        readable = {k: v for k, v in traces.items() if v is not None}
        pairs = decision_pair_rows(records, readable, ws.rubric)
        model = train(ws.rubric, records, ws.suggestion_store.all(), traces, pair_rows=pairs,
                      campaign=campaign or "", folds=folds or FOLDS, resamples=resamples,
                      seed=seed, created_by=created_by, created_at=now(), progress=say)
        return model, self.store.add(model)

    def models(self) -> list[RewardModel]:
        """Every stored reward model, newest first."""
        return self.store.all()

    def held_out_suggestions(self) -> list[Any]:
        """Every stored model's held-out answers as suggestions of the producer
        `reward-model` (one version per model, placed at its training time): what the
        Agreement page measures against the blind labels, beside the other producers."""
        from viz_app.reward.train import held_out_suggestions

        return [s for version, at, held in self.store.held_out()
                for s in held_out_suggestions(held, version, created_at=at)]
