"""Uploads: trace files a reviewer adds in the app, checked by the rule `orchviz validate` applies
(`checked_traces`: a file is accepted whole or not at all) and saved, when accepted only, under
safe names that never overwrite another file."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from viz_app.errors import TraceError
from viz_app.io.files import TRACE_SUFFIXES
from viz_app.model import Trace
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


class Checked(BaseModel):
    """A trace file read by the one rule an upload and `orchviz validate` share
    (`checked_traces`): every trace it holds, and every failure (a pool's bad line each)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    traces: list[Trace] = Field(default_factory=list, description="The traces read.")
    errors: list[TraceError] = Field(default_factory=list, description="Every failure: the "
                                     "file's own, or one per bad line of a JSON Lines pool.")
    format: str = Field("", description="The format it was read in ('' when unreadable).")

    @property
    def accepted(self) -> bool:
        """A file is accepted whole or not at all: one bad line refuses the file, as
        `orchviz validate` does (its good lines would stand in the library beside a failure
        row every visitor sees)."""
        return not self.errors and bool(self.traces)


def checked_traces(source: str | os.PathLike | bytes, *, name: str | None = None,
                   fmt: str | None = None, max_bytes: int | None = None) -> Checked:
    """Read a trace file (a path, or uploaded bytes under the name the user gave) by the rule
    an upload and `orchviz validate` share: every line of a pool read, each bad one a failure
    naming its line; the format detected unless `fmt` names it (as `orchviz import --from`)."""
    from viz_app.io.detect import read_any
    from viz_app.io.native import DEFAULT_MAX_BYTES

    found = Checked()

    def heard(_label: str, chosen: str) -> None:
        found.format = chosen

    try:
        found.traces = read_any(source, name=name, on_error=found.errors.append, fmt=fmt,
                                max_bytes=max_bytes or DEFAULT_MAX_BYTES, on_format=heard)
    except TraceError as err:
        found.errors.append(err)
    except Exception as err:  # noqa: BLE001 - an importer's bug is this file's failure
        found.errors.append(TraceError(name or str(source)[:200], "",
                                       f"could not be read ({err!r})"))
    return found


def add_upload(uploads_dir: str | os.PathLike, name: str, data: bytes,
               fmt: str | None = None) -> tuple[Checked, Path | None]:
    """Check an upload (`checked_traces`, under the name the user gave it) and save it into
    the uploads folder only when it is accepted: a refused upload is never kept, so it is
    never indexed again nor listed to a later visitor. Read in a format the user chose
    (`fmt`, as `orchviz import --from`), it is saved converted, as orchviz's own JSON (JSON
    Lines for several traces), so the library reads it as the user chose. (checked, path
    saved or None)."""
    from viz_app.io.native import dump_trace

    checked = checked_traces(data, name=name, fmt=fmt)
    if not checked.accepted:
        return checked, None
    if fmt and checked.format != "orchviz":
        stem = Path(name.replace("\\", "/")).name.split(".")[0] or "upload"
        if len(checked.traces) == 1:
            return checked, save_upload(uploads_dir, f"{stem}.json",
                                        dump_trace(checked.traces[0]))
        lines = b"\n".join(dump_trace(t, indent=False) for t in checked.traces) + b"\n"
        return checked, save_upload(uploads_dir, f"{stem}.jsonl", lines)
    return checked, save_upload(uploads_dir, name, data)


def remove_upload(uploads_dir: str | os.PathLike, path: str | os.PathLike) -> bool:
    """Remove a file from the uploads folder (a failed upload kept by an earlier orchviz);
    nothing outside that folder is ever removed. Whether a file was removed."""
    folder, target = Path(uploads_dir).resolve(), Path(path).resolve()
    if folder not in target.parents or not target.is_file():
        return False
    target.unlink()
    return True


def relative_to(path: str | os.PathLike, roots: list[Path]) -> str:
    """A file's path as every viewer may read it: relative to the library folder (or uploads
    folder) it is in, else its name alone; never the server's full path."""
    target = Path(path).resolve()
    for root in roots:
        root = Path(root).resolve()
        if root != target and root in target.parents:
            return target.relative_to(root).as_posix()
    return target.name
