"""orchviz's one migration history, run by Alembic: every table of `viz_app.store.tables`, from
the schema of the 0.1 release (revision 0001) to what this release queries (the head).

`viz_app.store.database` runs it; no alembic.ini is needed. To add a revision, change
`tables.py` and write the step beside the others in `versions/` (numbered, `down_revision` the
one before), for example starting from Alembic's draft:

    python -c "from alembic import command; from viz_app.store.database import alembic_config; \
command.revision(alembic_config(), 'what changes', rev_id='0005')"

A test checks that the head's schema is `tables.metadata`, on SQLite and PostgreSQL.
"""
