"""Alembic's entry into the history: runs the revisions on the connection that
`viz_app.store.database` hands over in `config.attributes["connection"]`. That connection holds
the schema lock and its transaction; every step runs inside it and commits with it."""

from __future__ import annotations

from alembic import context

from viz_app.store.tables import metadata


def run_migrations() -> None:
    """Run the revisions Alembic was asked for, on the handed-over connection."""
    connection = context.config.attributes.get("connection")
    if connection is None:
        raise RuntimeError("orchviz migrates through viz_app.store.database (orchviz db upgrade), "
                           "which hands Alembic a locked connection")
    context.configure(connection=connection, target_metadata=metadata,
                      # SQLite alters a table by copying it: drafts of new steps should say so
                      render_as_batch=connection.dialect.name == "sqlite")
    with context.begin_transaction():
        context.run_migrations()


run_migrations()
