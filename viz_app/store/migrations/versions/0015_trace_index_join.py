"""What the trace index keeps to join a trainer's rollout with the spans of the same rollout id
across the files of a folder library, as `orchviz import` joins the files it reads together
(`viz_app.io.rollouts.plan_join`): each row's join keys (`join_keys`: the rollout id a rollout
names, or the ids a span trace names, as JSON) and what the join made of it (`joined`: the
rollout a span row took in, or the span trace a rollout row was taken into).

A row indexed before has no keys (NULL): the index reads its file again at the next update
(`TraceIndex._known_files`), as it did for 0013's task; the rows themselves are left as they
were.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the `join_keys` and `joined` columns to the trace index."""
    with op.batch_alter_table("orchviz_trace_index") as table:
        table.add_column(sa.Column("join_keys", sa.Text, nullable=True))
        table.add_column(sa.Column("joined", sa.Text, nullable=True))


def downgrade() -> None:
    """Drop the `join_keys` and `joined` columns of the trace index."""
    with op.batch_alter_table("orchviz_trace_index") as table:
        table.drop_column("joined")
        table.drop_column("join_keys")
