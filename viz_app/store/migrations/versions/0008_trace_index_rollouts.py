"""What a trainer's rollout file says of each indexed trace (the training step, the group of
siblings, the trainer's reward), kept in the trace index so the library lists, filters and
samples rollouts by step and group without reading them again.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

COLUMNS = (("rollout_step", sa.Integer), ("rollout_group", sa.Text), ("trainer_reward", sa.Float))


def upgrade() -> None:
    """Add the rollout columns to the trace index (empty for traces indexed before)."""
    with op.batch_alter_table("orchviz_trace_index") as table:
        for name, kind in COLUMNS:
            table.add_column(sa.Column(name, kind, nullable=True))


def downgrade() -> None:
    """Drop the rollout columns of the trace index."""
    with op.batch_alter_table("orchviz_trace_index") as table:
        for name, _ in COLUMNS:
            table.drop_column(name)
