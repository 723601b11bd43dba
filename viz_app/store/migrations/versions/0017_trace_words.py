"""The folder index's word index (orchviz_trace_words): a row for each word (a run of letters
and digits, folded, cut to 64 characters: `viz_app.search.index_words`) of each trace's search
text, keyed by the word then the trace's row, so that a search reads the range of words each
typed word begins instead of every trace's text (as a pool's FTS5 index does, but portable: a
plain table and B-tree, the same on SQLite and PostgreSQL, where the word is compared in the
"C" collation so a prefix is one range). `words` on the trace index says how many words of a
row the word index keeps; a row indexed before has none (NULL), and the index adds its words
from the search text it kept at the next update (`TraceIndex.update`), without reading its
file again.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

WORD = sa.String(256).with_variant(sa.String(256, collation="C"), "postgresql")


def upgrade() -> None:
    """Add the `orchviz_trace_words` table and the trace index's `words` column."""
    op.create_table(
        "orchviz_trace_words",
        sa.Column("word", WORD, primary_key=True),
        sa.Column("doc", sa.Integer, primary_key=True),
        sqlite_with_rowid=False,
    )
    op.create_index("ix_orchviz_trace_words_doc", "orchviz_trace_words", ["doc"])
    with op.batch_alter_table("orchviz_trace_index") as table:
        table.add_column(sa.Column("words", sa.Integer, nullable=True))


def downgrade() -> None:
    """Drop the word index and the trace index's `words` column."""
    with op.batch_alter_table("orchviz_trace_index") as table:
        table.drop_column("words")
    op.drop_index("ix_orchviz_trace_words_doc", "orchviz_trace_words")
    op.drop_table("orchviz_trace_words")
