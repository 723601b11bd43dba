"""The 0.1 schema: labels, bookmarks and the trace index as the 0.1 release created them.

Revision ID: 0001
Revises:
Create Date: 2026-12-04

A database written by 0.1 never runs this step: it is adopted (see `legacy.finish`) and stamped
with this revision instead.
"""

from __future__ import annotations

from alembic import op

from viz_app.store.migrations import legacy

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the 0.1 tables (a database that already has one is not orchviz's to take over)."""
    legacy.schema.create_all(op.get_bind(), checkfirst=False)


def downgrade() -> None:
    """Drop the 0.1 tables, and with them every label and bookmark."""
    legacy.schema.drop_all(op.get_bind(), checkfirst=False)
