"""Persistence: every table, one migration history, and the stores over them (labels, bookmarks,
the trace index). Only this package writes SQL; the Workspace hands its stores to everyone else."""
