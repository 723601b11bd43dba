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


FOLDERS = ("issue 25: a --hf-dataset folder turns nested dicts whose keys vary by row into one "
           "struct with the union of the keys, so rows read back with nulls the file lacks")
ALTERNATE = ("issue 25: conversations put two turns of one role in a row, which strict chat "
             "templates (Llama 2's, Mistral's) refuse")
PENDING = {
    "test_folders.py::test_the_folder_is_the_data_of_the_file[rllm-folder]": FOLDERS,
    "test_folders.py::test_the_folder_is_the_data_of_the_file[rllm-arrow]": FOLDERS,
    "test_folders.py::test_the_folder_is_the_data_of_the_file[agent-lightning-folder]": FOLDERS,
    "test_folders.py::test_the_folder_is_the_data_of_the_file[agent-lightning-arrow]": FOLDERS,
    "test_rllm.py::test_every_trajectory_validates_with_its_signals[folder]": FOLDERS,
    "test_agent_lightning.py::test_the_rewards_replay_with_their_links[folder]": FOLDERS,
    "test_rllm.py::test_no_step_follows_a_trajectorys_own_stop": (
        "issue 25: the should-have-stopped pointer is a step on the orchestrator's trajectory "
        "after its real stop"),
    "test_agent_lightning.py::test_prompts_alternate_roles_as_chat_templates_require[file]":
        ALTERNATE,
    "test_agent_lightning.py::test_prompts_alternate_roles_as_chat_templates_require[folder]":
        ALTERNATE,
    "test_trl.py::test_unpaired_trains_kto[file-unpaired+conversational]": ALTERNATE,
    "test_trl.py::test_unpaired_trains_kto[folder-unpaired+conversational]": ALTERNATE,
    "legacy/test_prm.py::test_openrlhf_prm_trains_openrlhf_0_9_5[file-soft_label]": (
        "issue 25: OpenRLHF 0.9.5 puts soft_label's floats into an integer tensor"),
    "legacy/test_prm.py::test_openrlhf_prm_trains_openrlhf_0_9_5[folder-soft_label]": (
        "issue 25: OpenRLHF 0.9.5 puts soft_label's floats into an integer tensor"),
    "test_folders.py::test_a_folder_exported_again_reads_back_its_new_rows": (
        "datasets keys a folder's cache by its card's configs, so load_dataset(FOLDER) after a "
        "re-export returns the old rows"),
}
"""Tests that fail today for a known reason, each expected to fail until its fix lands (then
it shows as XPASS in the summary, and its line here goes). One place, so none is forgotten."""


def pytest_collection_modifyitems(items):
    for item in items:
        reason = PENDING.get(item.nodeid.split("tests/trainers/", 1)[-1])
        if reason:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=False))


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
