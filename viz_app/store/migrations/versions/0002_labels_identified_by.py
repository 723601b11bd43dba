"""Labels say how their reviewer was known (identified_by); the 0.1 ledger is gone.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from viz_app.store.migrations.legacy import LEDGER

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add `labels.identified_by` ('' on every older row: nobody recorded how) and drop the
    0.1 release's version ledger, which Alembic's `alembic_version` replaces."""
    # development builds between 0.1 and this revision created the column without a revision
    if "identified_by" not in {c["name"] for c in sa.inspect(op.get_bind()).get_columns("labels")}:
        op.add_column("labels", sa.Column("identified_by", sa.String(16), nullable=False,
                                          server_default=""))
    op.execute(f"DROP TABLE IF EXISTS {LEDGER}")


def downgrade() -> None:
    """Drop `labels.identified_by` (the ledger is not written back: 0.1 cannot open a database
    Alembic manages in any case)."""
    with op.batch_alter_table("labels") as batch:
        batch.drop_column("identified_by")
