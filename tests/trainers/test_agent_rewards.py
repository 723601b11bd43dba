"""The per-agent reward matrix (MARTI style). MARTI is not on PyPI and its reward allocation
runs inside its Ray trainer, so no trainer code runs here: the reader is the one
docs/trainers/agent-rewards.md gives (`datasets` and NumPy), which must build the same problems x
agents array from the file and from the folder."""

from __future__ import annotations

import pytest

from reading import dataset, file_rows


def credit_matrix(rows, agents):
    """docs/trainers/agent-rewards.md's reader: local rewards, team credit where unlabelled."""
    import numpy as np

    local = np.array([[row[f"reward.{a}"] if row[f"reward.{a}"] is not None else np.nan
                       for a in agents] for row in rows])
    outcome = np.array([r if r is not None else np.nan for r in rows["outcome_reward"]])
    return local, outcome, np.where(np.isnan(local), outcome[:, None], local)


@pytest.mark.parametrize("source", ["folder", "arrow"])
def test_the_matrix_is_the_same_from_file_and_folder(shapes, source):
    import numpy as np

    export = shapes["agent-rewards"]
    expected = file_rows(export)
    agents = sorted({a for row in expected for a in row["agents"]})
    local, outcome, credit = credit_matrix(dataset(export, "file"), agents)
    assert local.shape == (len(expected), len(agents))
    assert not np.isnan(local).all()  # some agents' steps were labelled
    for want, got in zip((local, outcome, credit),
                         credit_matrix(dataset(export, source), agents)):
        assert np.array_equal(want, got, equal_nan=True)
    for row, line in zip(expected, local):
        assert [row["rewards"][row["agents"].index(a)] if a in row["agents"] else None
                for a in agents] == [None if np.isnan(v) else v for v in line]
