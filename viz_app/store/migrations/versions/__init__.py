"""The revisions, oldest first by number; Alembic reads them from here (see the package docs)."""
