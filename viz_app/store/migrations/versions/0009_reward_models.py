"""Reward models (reward_models): each model `orchviz reward train` fitted on the team's labels,
named by the hash of its training set, with that training set, the versions it was fitted with,
the hash of its fitted weights and its held-out figures.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the `reward_models` table."""
    op.create_table(
        "reward_models",
        sa.Column("model_id", sa.String(64), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("campaign", sa.String(256), nullable=False, server_default=""),
        sa.Column("features_version", sa.String(16), nullable=False),
        sa.Column("versions", sa.Text, nullable=False),
        sa.Column("weights_sha256", sa.String(64), nullable=False),
        sa.Column("decisions", sa.Integer, nullable=False),
        sa.Column("training", sa.Text, nullable=False),
        sa.Column("report", sa.Text, nullable=False),
        sa.Column("created_by", sa.String(256), nullable=False, server_default=""),
        sa.Column("created_at", sa.String(32), nullable=False),
    )
    op.create_index("reward_models_by_time", "reward_models", ["created_at"])


def downgrade() -> None:
    """Drop the `reward_models` table."""
    op.drop_index("reward_models_by_time", table_name="reward_models")
    op.drop_table("reward_models")
