"""Every training shape's `--hf-dataset` folder reads back as the data of its file, both ways a
user loads it; only the columns its card lists as JSON text differ, as that text."""

from __future__ import annotations

import pytest

from reading import file_rows, first_difference, rows
from review_campaign import VARIANTS, export


@pytest.mark.parametrize("source", ["folder", "arrow"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_folder_is_the_data_of_the_file(shapes, variant, source):
    export = shapes[variant]
    expected = file_rows(export)
    assert expected, f"{variant}: the campaign exported no rows"
    got = rows(export, source)
    assert got == expected, f"{variant} {source}: {first_difference(got, expected)}"


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_shape_has_rows_from_the_campaign(shapes, variant):
    """The campaign reaches every shape: a shape with no rows would prove nothing below."""
    assert len(file_rows(shapes[variant])) >= 2


def test_a_folder_exported_again_reads_back_its_new_rows(shapes, tmp_path):
    """A team re-exports after changing an option (or labelling more) into the same folder and
    loads it by name, `datasets`' cache left where it is: they must train on the new rows, not
    on the cached old ones. (`datasets` keys a folder's cache by its card's `configs`, not by
    its files, so two loads of one folder share a cache whatever the folder now holds.)"""
    from datasets import load_dataset

    cache = str(tmp_path / "datasets-cache")  # the user's one cache, as ~/.cache/huggingface
    first = export(shapes.campaign, "stepwise", tmp_path, "--adjudicated-only")
    fewer = len(load_dataset(str(first.folder), split="train", cache_dir=cache))
    assert fewer == len(file_rows(first))
    again = export(shapes.campaign, "stepwise", tmp_path)
    assert again.folder == first.folder and len(file_rows(again)) > fewer
    assert len(load_dataset(str(again.folder), split="train", cache_dir=cache)) == \
        len(file_rows(again))
