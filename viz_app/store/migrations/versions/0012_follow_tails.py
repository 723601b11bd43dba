"""Where the library's followed rollout files were left (orchviz_follow_tails): a file's byte
offset, lines and traces read, the hash of its head and its inode, size and modification time,
so that `orchviz app --follow` started again reads only what a trainer wrote since.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the `orchviz_follow_tails` table."""
    op.create_table(
        "orchviz_follow_tails",
        sa.Column("path", sa.String(2048), primary_key=True),
        sa.Column("tail", sa.Text, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    """Drop the `orchviz_follow_tails` table."""
    op.drop_table("orchviz_follow_tails")
