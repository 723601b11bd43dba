"""Trainers that current releases removed, run at their last release: TRL 1.13's PRMTrainer
(removed in TRL 1.14.0) and OpenRLHF 0.9.5's process reward dataset and PRMLoss (removed after
0.9.5). `bash .ci/trainers` installs them into `$ORCHVIZ_TRAINERS_ENV/legacy` and runs this
folder with that first on PYTHONPATH; anywhere else its modules skip with the reason."""

from __future__ import annotations

import os
from importlib.metadata import version
from pathlib import Path

import pytest

ENV = os.environ.get("ORCHVIZ_TRAINERS_ENV", "")
LEGACY = Path(ENV) / "legacy"
RELEASES = {"trl": "1.13.0", "openrlhf": "0.9.5"}


def _found() -> dict[str, str | None]:
    import importlib.util

    found = {}
    for name in RELEASES:
        spec = importlib.util.find_spec(name)
        origin = Path(spec.origin).resolve() if spec and spec.origin else None
        found[name] = version(name) if origin and LEGACY.resolve() in origin.parents else None
    return found


MISSING = [f"{n} {v}" for n, v in RELEASES.items() if _found()[n] != v] if ENV else []
"""Outside the trainers' environment tests/trainers/conftest.py gives the reason instead."""


class _NotLegacy(pytest.Module):
    def collect(self):
        pytest.skip(f"{', '.join(MISSING)} not first on the path (bash .ci/trainers runs this "
                    f"folder with {LEGACY} first on PYTHONPATH)")


def pytest_pycollect_makemodule(module_path, parent):
    if MISSING:
        return _NotLegacy.from_parent(parent, path=module_path)
    return None
