"""Hidden dispute comments (dispute_comment_hidings): a lead hides a comment of a dispute's
thread by appending a row (who, how they were known, when, why); the comment's row and its text
are kept as they were. Reviewers then read "hidden by LEAD: reason" in its place.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the `dispute_comment_hidings` table."""
    op.create_table(
        "dispute_comment_hidings",
        sa.Column("hiding_id", sa.String(64), primary_key=True),
        sa.Column("comment_id", sa.String(64), nullable=False),
        sa.Column("campaign", sa.String(256), nullable=False),
        sa.Column("hidden_by", sa.String(256), nullable=False),
        sa.Column("identified_by", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("created_at", sa.String(32), nullable=False),
    )
    op.create_index("dispute_comment_hidings_by_campaign", "dispute_comment_hidings",
                    ["campaign", "comment_id"])


def downgrade() -> None:
    """Drop the `dispute_comment_hidings` table."""
    op.drop_index("dispute_comment_hidings_by_campaign", table_name="dispute_comment_hidings")
    op.drop_table("dispute_comment_hidings")
