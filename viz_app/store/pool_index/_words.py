"""The copy of a trace's words the word index keeps beside FTS5, packed in the worker that
read the trace and unpacked by the writer (or when the words are forgotten)."""

from __future__ import annotations

import zlib

import pyarrow as pa

_LZ4 = pa.Codec("lz4")


def pack_words(text: str) -> bytes:
    """The copy of a trace's words the word index keeps (FTS5 forgets a doc of a contentless
    table only when given the text it was added with): their UTF-8 compressed with LZ4, behind
    a tag, `L`, and their length, which LZ4 needs to decompress. LZ4 costs a fifth of the CPU
    of zlib at level 1 on these words (12 against 57 us for 15 KB), for a copy about a third
    larger; it is made in the worker, as the writer is one process."""
    data = text.encode()
    return b"L" + len(data).to_bytes(4, "little") + _LZ4.compress(data, asbytes=True)


def unpack_words(packed: bytes) -> str:
    """The words `pack_words` kept; or, from an index written before it, their zlib copy
    (whose first byte is never `L`)."""
    return _unpacked_utf8(packed).decode()


def _unpacked_utf8(packed: bytes) -> bytes:
    """The words `pack_words` kept, as their UTF-8: FTS5 reads a value's UTF-8 whether it is
    bound as text or as bytes (the same tokens, hits and ranks: tested), so the writer hands
    them over undecoded (0.004 ms of CPU a trace less of the writer's, in decoding and in
    sqlite3 encoding them again)."""
    if packed[:1] == b"L":
        size = int.from_bytes(packed[1:5], "little")
        return _LZ4.decompress(packed[5:], size, asbytes=True)
    return zlib.decompress(packed)
