"""Learned producers' models (learned_models): each trained model of `orchviz suggest train`,
named by the hash of its training set, with that training set and its cross-validated
agreement with held-out human labels.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the `learned_models` table."""
    op.create_table(
        "learned_models",
        sa.Column("model_id", sa.String(64), primary_key=True),
        sa.Column("question", sa.String(64), nullable=False),
        sa.Column("campaign", sa.String(256), nullable=False, server_default=""),
        sa.Column("features_version", sa.String(16), nullable=False),
        sa.Column("sklearn_version", sa.String(32), nullable=False),
        sa.Column("targets", sa.Integer, nullable=False),
        sa.Column("training", sa.Text, nullable=False),
        sa.Column("report", sa.Text, nullable=False),
        sa.Column("created_by", sa.String(256), nullable=False, server_default=""),
        sa.Column("created_at", sa.String(32), nullable=False),
    )
    op.create_index("learned_models_by_question", "learned_models", ["question", "created_at"])


def downgrade() -> None:
    """Drop the `learned_models` table."""
    op.drop_index("learned_models_by_question", table_name="learned_models")
    op.drop_table("learned_models")
