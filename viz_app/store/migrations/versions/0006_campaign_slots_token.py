"""A campaign slot keeps the secret its claim was issued with (campaign_slots.token), so a save,
a skip or a renewal is accepted only from the claim the store handed out.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add `campaign_slots.token` (NULL on older rows: a reservation made before it has no
    token, and its reviewer claims the slot again to get one)."""
    op.add_column("campaign_slots", sa.Column("token", sa.String(64), nullable=True))


def downgrade() -> None:
    """Drop `campaign_slots.token`."""
    with op.batch_alter_table("campaign_slots") as batch:
        batch.drop_column("token")
