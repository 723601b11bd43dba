"""Persistence: every table, one Alembic migration history, and the stores over them (labels,
bookmarks, campaigns, members, suggestions, learned models, the folder index and the pool
index). Only this package writes SQL; the Workspace hands its stores to everyone else.

Callers import from this face, never from its modules, so the modules can split without moving a
caller. The face is lazy (`viz_app.face`): a pool's worker that imports the pool index's rows does
not load SQLAlchemy and the label stores with it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from viz_app.face import lazy

if TYPE_CHECKING:  # the face: what callers import from viz_app.store, each from its module
    from viz_app.store.bookmarks import BookmarkStore
    from viz_app.store.comments import CommentStore
    from viz_app.store.campaign_moves import SavedTarget
    from viz_app.store.campaigns import CampaignStore
    from viz_app.store.database import (HEAD, SchemaState, alembic_config, check, close, connect,
                                        engine_for, sqlite_file, state, upgrade)
    from viz_app.store.drafts import DraftStore
    from viz_app.store.index import IndexProgress, IndexResult, TraceIndex, trace_record
    from viz_app.store.labels import LabelStore
    from viz_app.store.library import STORAGES, Folders, Storage, storage_kind
    from viz_app.store.learned import LearnedModelStore
    from viz_app.store.members import Member, MemberStore
    from viz_app.store.pool_index import (IndexBusy, PAGE_SIZE, POOL_TEXT_LIMIT, PoolIndex,
                                          PoolUpdate, default_index_path, join_ray,
                                          shard_stamp, summarise_shard, summarise_trace)
    from viz_app.store.suggestions import SuggestionStore
    from viz_app.store.tables import campaign_skips_table, labels_table, metadata
    from viz_app.store.rewards import RewardModelStore

__getattr__, __dir__ = lazy(__name__, __file__)
