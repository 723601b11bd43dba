"""A hidden dispute comment shown again (dispute_comment_hidings.action): a lead's hiding and a
lead's showing again are both rows of `dispute_comment_hidings`, appended (who, how they were
known, when, why), the latest row of a comment deciding whether it is hidden; nothing is
updated or deleted. Rows written before are hidings (`hidden`).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add `action` (`hidden` or `shown`) to `dispute_comment_hidings`, `hidden` for the rows
    already there."""
    with op.batch_alter_table("dispute_comment_hidings") as table:
        table.add_column(sa.Column("action", sa.String(16), nullable=False,
                                   server_default="hidden"))


def downgrade() -> None:
    """Drop `action`: a comment shown again reads as hidden again (its rows of showing would
    read as hidings), so the downgrade keeps only the hidings."""
    op.execute("DELETE FROM dispute_comment_hidings WHERE action = 'shown'")
    with op.batch_alter_table("dispute_comment_hidings") as table:
        table.drop_column("action")
