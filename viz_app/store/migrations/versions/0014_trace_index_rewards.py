"""The reward channels each indexed trace carries, kept in the trace index (JSON), so the
folder library filters, sorts, histograms and samples by `reward.NAME` as a pool's index does
(the folder library is a pool of one shard a file: one filter language for both).

A row indexed before has none (NULL): the index reads its file again at the next update
(`TraceIndex._known_files`), as it did for 0013's task; the rows themselves are left as they
were.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the `rewards` column to the trace index (empty for traces indexed before)."""
    with op.batch_alter_table("orchviz_trace_index") as table:
        table.add_column(sa.Column("rewards", sa.Text, nullable=True))


def downgrade() -> None:
    """Drop the `rewards` column of the trace index."""
    with op.batch_alter_table("orchviz_trace_index") as table:
        table.drop_column("rewards")
