"""The task in each indexed trace's own words (`analysis.task_words`), kept in the trace index
so the library's task column shows what was asked, not only the task's id.

A row indexed before has no task (NULL): the index reads its file again at the next update
(`TraceIndex._known_files`), so no row keeps an empty task for long; the rows themselves are
left as they were.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the `task` column to the trace index (empty for traces indexed before)."""
    with op.batch_alter_table("orchviz_trace_index") as table:
        table.add_column(sa.Column("task", sa.Text, nullable=True))


def downgrade() -> None:
    """Drop the `task` column of the trace index."""
    with op.batch_alter_table("orchviz_trace_index") as table:
        table.drop_column("task")
