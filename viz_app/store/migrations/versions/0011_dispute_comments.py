"""Dispute comments (dispute_comments): what reviewers and leads write on a disputed target of a
campaign, appended and never edited, so the reviewers' notes, the comments and the lead's
reason read as one thread.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the `dispute_comments` table."""
    op.create_table(
        "dispute_comments",
        sa.Column("comment_id", sa.String(64), primary_key=True),
        sa.Column("campaign", sa.String(256), nullable=False),
        sa.Column("trace_id", sa.String(512), nullable=False),
        sa.Column("event_id", sa.String(512), nullable=False),
        sa.Column("author", sa.String(256), nullable=False),
        sa.Column("identified_by", sa.String(16), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("trace_sha256", sa.String(64), nullable=False, server_default=""),
        sa.Column("created_at", sa.String(32), nullable=False),
    )
    op.create_index("dispute_comments_by_target", "dispute_comments",
                    ["campaign", "trace_id", "event_id", "created_at"])


def downgrade() -> None:
    """Drop the `dispute_comments` table."""
    op.drop_index("dispute_comments_by_target", table_name="dispute_comments")
    op.drop_table("dispute_comments")
