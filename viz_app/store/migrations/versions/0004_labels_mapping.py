"""Imported labels say how sure their mapping onto a rubric question is (labels.mapping).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add `labels.mapping` ('' on every older row: no import before it said how sure it was)."""
    op.add_column("labels", sa.Column("mapping", sa.String(16), nullable=False,
                                      server_default=""))


def downgrade() -> None:
    """Drop `labels.mapping`."""
    with op.batch_alter_table("labels") as batch:
        batch.drop_column("mapping")
