"""Uploads: trace files a reviewer adds in the app, saved under safe names that never overwrite
another file."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from viz_app.io.files import TRACE_SUFFIXES

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def safe_file_name(name: str) -> str:
    """A file name that is safe to write: its last path part, plain characters, a trace ending."""
    base = _UNSAFE_NAME.sub("_", Path(name.replace("\\", "/")).name).strip("._") or "upload"
    if not base.lower().endswith(TRACE_SUFFIXES):
        base += ".json"
    return base[-180:]


def save_upload(uploads_dir: str | os.PathLike, name: str, data: bytes) -> Path:
    """Save uploaded bytes into the uploads folder under a safe name, and return the path.

    The same bytes under the same name reuse the file already saved; different bytes under a name
    already taken get a new name (`name-<hash>.json`), so an upload never overwrites another.
    """
    folder = Path(uploads_dir)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / safe_file_name(name)
    if target.exists():
        if target.read_bytes() == data:
            return target
        digest = hashlib.sha256(data).hexdigest()[:12]
        suffix = next(s for s in sorted(TRACE_SUFFIXES, key=len, reverse=True)
                      if target.name.lower().endswith(s))
        target = folder / f"{target.name[:-len(suffix)]}-{digest}{suffix}"
        if target.exists() and target.read_bytes() == data:
            return target
    partial = target.with_name(f".{target.name}.part")
    partial.write_bytes(data)
    partial.replace(target)
    return target
