"""The trainers' suite: each export shape read by the released code of its trainer.

It runs in a virtual environment of its own, which `bash .ci/trainers` makes (and caches) and
names in ORCHVIZ_TRAINERS_ENV. In any other Python every module here is skipped with the reason,
without being imported; the main suite does not collect this folder at all (tests/conftest.py).

The session builds one review campaign, exports every training shape from it with the CLI (file
and `--hf-dataset` folder), and trains a tokenizer and tiny models on the exported text: nothing
is downloaded."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ENV = os.environ.get("ORCHVIZ_TRAINERS_ENV", "")
IN_ENV = bool(ENV) and Path(sys.prefix).resolve() == Path(ENV).resolve()
ABSENT = ("the trainers' environment is absent (this Python is not the one `bash .ci/trainers` "
          "makes, which runs this folder in it)")


class _Absent(pytest.Module):
    """A test module of this folder, skipped unread outside the trainers' environment."""

    def collect(self):
        pytest.skip(ABSENT)


def pytest_pycollect_makemodule(module_path, parent):
    if not IN_ENV:
        return _Absent.from_parent(parent, path=module_path)
    return None



if IN_ENV:
    from review_campaign import Shapes, build_shapes  # noqa: E402
    from tiny import Tiny, build_tiny  # noqa: E402

    @pytest.fixture(scope="session")
    def shapes(tmp_path_factory) -> Shapes:
        """The campaign and every training shape exported from it, as file and folder."""
        return build_shapes(tmp_path_factory.mktemp("campaign"))

    @pytest.fixture(scope="session")
    def tiny(shapes, tmp_path_factory) -> Tiny:
        """A BPE tokenizer trained on the exported text, and tiny model configs beside it."""
        return build_tiny(shapes.texts(), tmp_path_factory.mktemp("tiny"))
