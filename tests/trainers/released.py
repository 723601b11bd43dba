"""Importing one module of a released package whose package `__init__` needs a GPU.

OpenRLHF's `openrlhf/models/__init__.py` imports its model wrappers, which import flash-attn
(CUDA only), and `openrlhf/datasets/__init__.py` and `openrlhf/utils/__init__.py` import every
dataset and helper beside the one a test needs. `module("openrlhf.models.loss")` registers the
packages on the way as bare packages (their folders, no `__init__` run) and then imports the
module itself, unchanged, with its own imports."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types


def module(name: str) -> types.ModuleType:
    """The released module `name`, its parent packages' `__init__` files not run."""
    parts = name.split(".")
    for depth in range(1, len(parts)):
        package = ".".join(parts[:depth])
        if package in sys.modules:
            continue
        spec = importlib.util.find_spec(package)
        if spec is None or spec.submodule_search_locations is None:
            raise ModuleNotFoundError(package)
        bare = types.ModuleType(package)
        bare.__path__ = list(spec.submodule_search_locations)
        bare.__file__ = spec.origin
        sys.modules[package] = bare
    return importlib.import_module(name)
