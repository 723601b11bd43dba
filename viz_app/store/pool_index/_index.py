"""The index of one pool, assembled from its rooms: its files and versions (`_files`), its
updates (`_update`) and its queries (`_queries`)."""

from __future__ import annotations

from viz_app.store.pool_index._queries import Queries
from viz_app.store.pool_index._update import Indexing


class PoolIndex(Indexing, Queries):
    """The index of one pool: a DuckDB file (summary rows) and a SQLite FTS5 file (words).

    Any number of processes read it while one updates it. The DuckDB file is never written in
    place: an update (serialised by an exclusive `flock` on `<index>.lock`) writes a copy beside
    it and `os.replace`s the live file with it, and readers, which open the live file read-only,
    notice the new file (its inode, by `os.stat` before each query) and open it, an open
    connection reading the old version meanwhile. The word index (in WAL mode: reading and
    writing never wait for each other) takes new words under new doc numbers (never reused)
    before the swap, and forgets the words of replaced rows after it, so a reader's search joins
    only docs its DuckDB version holds; while its words are not exact (the `dirty` flag of its
    `state` table) searches are counted through DuckDB, not by the word index alone."""

    kind = "pool"
    """Its name among the library's storage kinds (`viz_app.store.library.STORAGES`)."""

    @staticmethod
    def handles(location: str) -> bool:
        """Whether a location of the library is a pool (docs/pools.md): one `io.pool.is_pool`
        calls a pool that has orchviz's manifest or Parquet shards (a folder of JSON Lines
        files alone stays a library folder, read as a pool of one shard a file)."""
        from viz_app.errors import OrchvizError
        from viz_app.io.pool import is_pool, read_manifest, shards

        try:
            return is_pool(location) and (read_manifest(location) is not None or any(
                s.format == "parquet" for s in shards(location)))
        except OrchvizError:
            return False
