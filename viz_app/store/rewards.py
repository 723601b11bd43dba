"""The reward models' rows, each stored once under the hash of its training set: the training
set, versions, weights' hash and report as JSON, never a pickled object. The store only stores
plain rows; `viz_app.reward.stored` turns a `RewardModel` into one and back (the rewards facet,
`ws.rewards`, does that work)."""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import Engine, func, insert, select

from viz_app.labels import now
from viz_app.store.tables import reward_models_table

_JSON = ("versions", "training", "report")
"""The columns that hold JSON: a row hands and gets them as plain values."""


def _encoded(row: dict[str, Any], at: str) -> dict[str, Any]:
    found = {**row, "created_at": row.get("created_at") or at}
    for column in _JSON:
        found[column] = orjson.dumps(row[column], option=orjson.OPT_NON_STR_KEYS).decode()
    return found


def _decoded(row) -> dict[str, Any]:
    found = dict(row._mapping)
    for column in _JSON:
        found[column] = orjson.loads(found[column])
    return found


class RewardModelStore:
    """The reward models' rows in one database: `model_id`, `kind`, `campaign`,
    `features_version`, `versions`, `weights_sha256`, `decisions`, `training`, `report`,
    `created_by`, `created_at` (`viz_app.reward.stored.model_row` makes one)."""

    def __init__(self, engine: Engine):
        self.engine = engine

    def add(self, row: dict[str, Any]) -> bool:
        """Store a model's row unless one with its id (the same training set) is stored, its
        `created_at` now when it has none; whether it was added."""
        with self.engine.begin() as conn:
            held = conn.execute(select(reward_models_table.c.model_id).where(
                reward_models_table.c.model_id == row["model_id"])).first()
            if held is not None:
                return False
            conn.execute(insert(reward_models_table), [_encoded(row, now())])
        return True

    def all(self) -> list[dict[str, Any]]:
        """Every stored model's row, newest first."""
        c = reward_models_table.c
        with self.engine.connect() as conn:
            return [_decoded(row) for row in conn.execute(
                select(reward_models_table).order_by(c.created_at.desc(), c.model_id))]

    def count(self) -> int:
        """How many models are stored (what a cached agreement figure is keyed by)."""
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(reward_models_table))
                       .scalar_one())

    def held_out(self) -> list[tuple[str, str, list[dict[str, Any]]]]:
        """(version, created_at, held-out answers) of every stored model, oldest first, read
        without the training sets (what the Agreement page measures)."""
        c = reward_models_table.c
        with self.engine.connect() as conn:
            rows = conn.execute(select(c.model_id, c.created_at, c.report)
                                .order_by(c.created_at, c.model_id)).all()
        return [(r.model_id[:16], r.created_at, orjson.loads(r.report)["held_out"])
                for r in rows]

    def newest(self) -> dict[str, Any] | None:
        found = self.all()
        return found[0] if found else None

    def find(self, version: str) -> dict[str, Any] | None:
        """The row of the model whose id starts with a version (16 hex digits, as scores
        carry)."""
        if not version or any(ch not in "0123456789abcdef" for ch in version.lower()):
            return None
        c = reward_models_table.c
        with self.engine.connect() as conn:
            row = conn.execute(select(reward_models_table).where(
                c.model_id.like(f"{version.lower()}%")).order_by(c.model_id)).first()
        return _decoded(row) if row is not None else None
