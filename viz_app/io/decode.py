"""The compiled read path: trace bytes decoded by msgspec straight into typed structs.

`decode(data)` gives the `model.Trace` (its events, edges and the rest msgspec structs, checked
against the reference schema in C) when the text is plain: every key one the structs know
(the schema's, and the extension keys orchviz reads, of the types it documents), no key twice,
every number finite, and no event giving the name `Event.other` is written under. For anything
else it gives None, and the general path of `io.native` reads the text as it always did: it
keeps every extra key, and it says in one sentence, naming the file and the place, why a text
is refused. So the compiled path refuses nothing and accepts
nothing on its own: it is a faster way to the same trace.

The app, the library API, the analysis and the pool index all hold what it gives: there is one
kind of trace.

Why the structs are proof of what the text holds: msgspec refuses a number beyond the finite
(1e400) and any key of a closed object that its struct does not name, but it keeps the last of
a key given twice. Written back, the structs hold one colon for each key they kept, and the
colons inside their strings; the text holds one for each key it gave, and the same colons inside
its strings. So the counts are equal exactly when no key was dropped, unless an escape spells a
colon (`\\u003a`), which sends the text to the general path.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

import msgspec
import numpy as np

from viz_app.model import Trace

_DECODER = msgspec.json.Decoder(Trace)
_OTHER = attrgetter("other")
_ENCODER = msgspec.json.Encoder()
_COSTS_REQUIRED = ("tokens", "wall_clock_s")
_COSTS_NON_NEGATIVE = ("tokens", "wall_clock_s", "tool_calls", "messages")


def costs_plain(costs: dict[str, Any]) -> bool:
    """Whether a trace's costs give what the schema asks of the channels it names (`tokens`
    and `wall_clock_s`, none of the four negative): msgspec holds them as an open dict of
    numbers, so these are checked here, on either path (a value of another type is left to
    msgspec's check of the dict)."""
    for key in _COSTS_REQUIRED:
        if key not in costs:
            return False
    for key in _COSTS_NON_NEGATIVE:
        value = costs.get(key)
        if value is not None and value.__class__ in (int, float) and value < 0:
            return False
    return True


_COLON = ord(":")


PIECE = 1 << 16
"""Bytes compared at a time: a piece's comparison stays in the cache and in memory the process
already holds, where a whole 10 MB text's would take 10 MB afresh (2,500 page faults, as dear
as the comparison itself)."""


def colons(data: bytes | bytearray) -> int:
    """How many colons the bytes hold (numpy counts at memory speed, a piece at a time;
    `bytes.count` is a third as fast)."""
    text = np.frombuffer(data, dtype=np.uint8)
    found = 0
    for start in range(0, len(text), PIECE):
        found += int(np.count_nonzero(text[start:start + PIECE] == _COLON))
    return found


_BACKSLASH, _U, _ZERO, _THREE = (ord(c) for c in "\\u03")


def _colons_unless_escaped(data: bytes) -> int | None:
    """How many colons the bytes hold; None when an escape may spell one (`\\u003a`, or any
    `\\u003` to be quick): the text's colons then do not say how many its strings hold. The
    escapes are looked for among the few `\\u` of a text (a backslash alone is common in
    text: every newline and quote in a string), a piece at a time (see `PIECE`)."""
    text = np.frombuffer(data, dtype=np.uint8)
    last = len(text) - 4  # an escape starts before the text's last four bytes
    found = 0
    for start in range(0, len(text), PIECE):
        end = min(start + PIECE, last)
        if end > start:
            window = text[start:end + 4]
            escapes = np.flatnonzero((window[:-4] == _BACKSLASH) & (window[1:-3] == _U)) + start
            if len(escapes) and ((text[escapes + 2] == _ZERO) & (text[escapes + 3] == _ZERO)
                                 & (text[escapes + 4] == _THREE)).any():
                return None
        found += int(np.count_nonzero(text[start:start + PIECE] == _COLON))
    return found


WRITTEN_IN_PIECES = 1 << 20
"""Texts from this size on are written back a piece at a time for their colons to be counted
(`_colons_written_back`); smaller ones at once."""
_ITEMS = 256
"""Events (or edges) written back at a time: about 100 KB, from memory already held."""


def _colons_written_back(record: Trace, size: int) -> int:
    """The colons of the records written back: `colons(_ENCODER.encode(record))`, counted for a
    large text a piece at a time into one small buffer, not into a copy as large as the text.
    The same count: JSON is written part by part, and what joins the parts (brackets, commas)
    holds no colon."""
    if size < WRITTEN_IN_PIECES:
        return colons(_ENCODER.encode(record))
    buffer = bytearray()
    _ENCODER.encode_into(msgspec.structs.replace(record, events=[], edges=[]), buffer)
    found = colons(buffer)
    for items in (record.events, record.edges):
        for start in range(0, len(items), _ITEMS):
            _ENCODER.encode_into(items[start:start + _ITEMS], buffer)
            found += colons(buffer)
    return found


def decode(data: bytes) -> Trace | None:
    """The trace the bytes hold, when the text is plain (see the module's note);
    None when only the general path can read it or say why not. References (duplicate event
    ids, edges to no event) are not checked here: `io.native` checks them on either path."""
    given = _colons_unless_escaped(data)
    if given is None:
        return None  # an escaped colon: the count below would not prove anything
    try:
        record = _DECODER.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    if not costs_plain(record.costs_):
        return None
    events = record.events
    if list(map(_OTHER, events)).count(None) != len(events):
        return None  # an event gave the name `other` is written under: it is no plain key
    if _colons_written_back(record, len(data)) != given:
        return None
    return record
