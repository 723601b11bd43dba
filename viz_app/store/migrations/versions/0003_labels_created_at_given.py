"""Imported labels keep the time their record gave when another is stored (created_at_given).

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add `labels.created_at_given` (null on every older row: their times were stored as
    given)."""
    op.add_column("labels", sa.Column("created_at_given", sa.Text, nullable=True))


def downgrade() -> None:
    """Drop `labels.created_at_given`."""
    with op.batch_alter_table("labels") as batch:
        batch.drop_column("created_at_given")
