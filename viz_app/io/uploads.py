"""Uploads: trace files a reviewer adds in the app, saved under safe names that never overwrite
another file."""

from __future__ import annotations

import os
from pathlib import Path

from viz_app.io.files import TRACE_SUFFIXES
from viz_app.text import file_name


class _HeldByOthers:
    """The names in a folder that hold bytes other than these (a name that holds the same bytes
    is free: the file is reused)."""

    def __init__(self, folder: Path, data: bytes):
        self.folder, self.data = folder, data

    def __contains__(self, name: object) -> bool:
        path = self.folder / str(name)
        return path.exists() and not (path.is_file() and path.read_bytes() == self.data)


def save_upload(uploads_dir: str | os.PathLike, name: str, data: bytes) -> Path:
    """Save uploaded bytes into the uploads folder under a safe name, and return the path.

    The name is the upload's last path part made safe by `viz_app.text.file_name`, with its
    trace ending (`.json` when it has none). The same bytes under the same name reuse the file
    already saved; different bytes under a name already taken get the next free numbered name
    (`run-2.json`), so an upload never overwrites another.
    """
    folder = Path(uploads_dir)
    folder.mkdir(parents=True, exist_ok=True)
    base = Path(name.replace("\\", "/")).name
    ending = next((s for s in sorted(TRACE_SUFFIXES, key=len, reverse=True)
                   if base.lower().endswith(s)), "")
    stem = base[: len(base) - len(ending)]
    target = folder / file_name(stem, _HeldByOthers(folder, data), ending=ending or ".json")
    if target.exists():
        return target
    partial = target.with_name(f".{target.name}.part")
    partial.write_bytes(data)
    partial.replace(target)
    return target
