"""Drafts (drafts): the answers and note a reviewer has given on a form but not saved, per
reviewer and form, so that a reload or a closed tab brings them back. Never a label: nothing in
it is exported, counted or shown to anyone else.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the `drafts` table."""
    op.create_table(
        "drafts",
        sa.Column("reviewer", sa.String(256), primary_key=True),
        sa.Column("form", sa.String(512), primary_key=True),
        sa.Column("answers", sa.Text, nullable=False),
        sa.Column("updated_at", sa.String(32), nullable=False),
    )


def downgrade() -> None:
    """Drop the `drafts` table."""
    op.drop_table("drafts")
