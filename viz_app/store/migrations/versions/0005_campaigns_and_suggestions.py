"""Review campaigns (members, campaigns, targets, slots, skips), retractions, suggestions; labels
name their campaign and whether suggestions were in view; reviewers' identities renamed to what
they mean (`oidc`, `self-declared`).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

RENAMED = {"login": "oidc", "name": "self-declared"}
"""Old `identified_by` values and their names from this revision on."""


def upgrade() -> None:
    """Add the campaign and suggestion tables and the two label columns, and rename the two
    identities (the rows keep their meaning: `login` was always the app's OpenID Connect
    sign-in, `name` a name typed in the sidebar)."""
    op.add_column("labels", sa.Column("campaign", sa.String(256), nullable=False,
                                      server_default=""))
    op.add_column("labels", sa.Column("suggestions_visible", sa.Boolean, nullable=True))
    labels = sa.table("labels", sa.column("identified_by", sa.String))
    for old, new in RENAMED.items():
        op.execute(labels.update().where(labels.c.identified_by == old)
                   .values(identified_by=new))
    op.create_table(
        "retractions",
        sa.Column("retraction_id", sa.String(64), primary_key=True),
        sa.Column("label_id", sa.String(64), nullable=False, index=True),
        sa.Column("lead", sa.String(256), nullable=False),
        sa.Column("identified_by", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("campaign", sa.String(256), nullable=False, server_default=""),
        sa.Column("created_at", sa.String(32), nullable=False),
    )
    op.create_table(
        "members",
        sa.Column("email", sa.String(256), primary_key=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("added_by", sa.String(256), nullable=False),
        sa.Column("added_at", sa.String(32), nullable=False),
    )
    op.create_table(
        "campaigns",
        sa.Column("campaign_id", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(256), nullable=False, unique=True),
        sa.Column("rubric_version", sa.String(64), nullable=False),
        sa.Column("rubric_sha256", sa.String(64), nullable=False),
        sa.Column("questions", sa.Text, nullable=False),
        sa.Column("per_target", sa.Integer, nullable=False),
        sa.Column("selection", sa.Text, nullable=False),
        sa.Column("assisted", sa.Boolean, nullable=False, server_default="0"),
        sa.Column("queue_order", sa.String(32), nullable=False, server_default="sample"),
        sa.Column("lease_seconds", sa.Integer, nullable=False, server_default="600"),
        sa.Column("created_by", sa.String(256), nullable=False),
        sa.Column("created_at", sa.String(32), nullable=False),
        sa.Column("closed_at", sa.String(32), nullable=True),
    )
    op.create_table(
        "campaign_targets",
        sa.Column("target_id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("campaign_id", sa.String(64), nullable=False),
        sa.Column("trace_id", sa.String(512), nullable=False),
        sa.Column("trace_sha256", sa.String(64), nullable=False),
        sa.Column("event_id", sa.String(512), nullable=False),
        sa.Column("questions", sa.Text, nullable=False),
        sa.Column("required", sa.Integer, nullable=False),
        sa.Column("gold", sa.Boolean, nullable=False, server_default="0"),
        sa.Column("gold_answers", sa.Text, nullable=True),
        sa.Column("priority", sa.Float, nullable=False, server_default="0"),
        sa.UniqueConstraint("campaign_id", "trace_id", "event_id", name="uq_campaign_target"),
    )
    op.create_table(
        "campaign_slots",
        sa.Column("slot_id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("campaign_id", sa.String(64), nullable=False),
        sa.Column("target_id", sa.Integer, nullable=False),
        sa.Column("slot", sa.Integer, nullable=False),
        sa.Column("priority", sa.Float, nullable=False, server_default="0"),
        sa.Column("state", sa.String(16), nullable=False, server_default="open"),
        sa.Column("reviewer", sa.String(256), nullable=True),
        sa.Column("leased_until", sa.Float, nullable=True),
        sa.Column("claimed_at", sa.String(32), nullable=True),
        sa.Column("completed_at", sa.String(32), nullable=True),
        sa.UniqueConstraint("target_id", "slot", name="uq_campaign_slot"),
        sa.UniqueConstraint("target_id", "reviewer", name="uq_campaign_slot_reviewer"),
    )
    op.create_index("campaign_slots_queue", "campaign_slots",
                    ["campaign_id", "state", "priority", "slot_id"])
    op.create_table(
        "campaign_skips",
        sa.Column("skip_id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("campaign_id", sa.String(64), nullable=False),
        sa.Column("target_id", sa.Integer, nullable=False),
        sa.Column("reviewer", sa.String(256), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("created_at", sa.String(32), nullable=False),
    )
    op.create_index("campaign_skips_by_reviewer", "campaign_skips",
                    ["campaign_id", "reviewer", "target_id"])
    op.create_table(
        "suggestions",
        sa.Column("suggestion_id", sa.String(64), primary_key=True),
        sa.Column("trace_id", sa.String(512), nullable=False),
        sa.Column("trace_sha256", sa.String(64), nullable=False),
        sa.Column("event_id", sa.String(512), nullable=False),
        sa.Column("question", sa.String(64), nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("confidence", sa.Float, nullable=False),
        sa.Column("producer", sa.String(64), nullable=False),
        sa.Column("producer_version", sa.String(32), nullable=False),
        sa.Column("model", sa.String(256), nullable=False, server_default=""),
        sa.Column("prompt_sha256", sa.String(64), nullable=False, server_default=""),
        sa.Column("evidence", sa.Text, nullable=False),
        sa.Column("explanation", sa.Text, nullable=False),
        sa.Column("created_at", sa.String(32), nullable=False),
    )
    op.create_index("suggestions_by_target", "suggestions", ["trace_id", "event_id", "question"])
    op.create_table(
        "suggestion_failures",
        sa.Column("failure_id", sa.String(64), primary_key=True),
        sa.Column("trace_id", sa.String(512), nullable=False),
        sa.Column("trace_sha256", sa.String(64), nullable=False),
        sa.Column("event_id", sa.String(512), nullable=False),
        sa.Column("question", sa.String(64), nullable=False),
        sa.Column("producer", sa.String(64), nullable=False),
        sa.Column("producer_version", sa.String(32), nullable=False),
        sa.Column("model", sa.String(256), nullable=False, server_default=""),
        sa.Column("prompt_sha256", sa.String(64), nullable=False, server_default=""),
        sa.Column("error", sa.Text, nullable=False),
        sa.Column("created_at", sa.String(32), nullable=False),
    )


def downgrade() -> None:
    """Drop what `upgrade` added and give the identities their old names."""
    for name in ("suggestion_failures", "suggestions", "campaign_skips", "campaign_slots",
                 "campaign_targets", "campaigns", "members", "retractions"):
        op.drop_table(name)
    labels = sa.table("labels", sa.column("identified_by", sa.String))
    for old, new in RENAMED.items():
        op.execute(labels.update().where(labels.c.identified_by == new)
                   .values(identified_by=old))
    with op.batch_alter_table("labels") as batch:
        batch.drop_column("suggestions_visible")
        batch.drop_column("campaign")
