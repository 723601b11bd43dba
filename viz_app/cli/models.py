"""What `orchviz reward` and `orchviz suggest` share about the models they train on the team's
labels: the store and training options, opening the store for training, and the table of
stored models (`reward models`, `suggest models`) with one set of columns."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from dataclasses import dataclass

from viz_app.cli.traces import add_traces_option, progress_bar
from viz_app.cli.workspace import open_workspace, store_options
from viz_app.errors import OrchvizError
from viz_app.text import terminal_text
from viz_app.workspace import Workspace


def training_options(p: argparse.ArgumentParser) -> None:
    """What a model is trained on and how it is measured: `--campaign`, `--traces`, the store,
    `--folds`, `--resamples`, `--seed` and `--json`."""
    p.add_argument("--campaign", metavar="C", help="learn from one campaign's labels only "
                   "(default: every label in the store)")
    add_traces_option(p, help="a folder (or file) of the labelled traces (default: the "
                      "traces the store's index knows)")
    store_options(p)
    p.add_argument("--folds", type=int, default=5, help="held-out folds, each a set of whole "
                   "traces (default: 5; fewer when there are fewer traces)")
    p.add_argument("--resamples", type=int, default=1000,
                   help="bootstrap resamples for the intervals (default: 1000)")
    p.add_argument("--seed", type=int, default=0, help="the folds' and bootstrap's seed "
                   "(default: 0)")
    p.add_argument("--json", action="store_true", help="print the model's report as JSON")


def training_workspace(args: argparse.Namespace) -> Workspace:
    """The store a model is trained from, its `--traces` indexed first; one sentence when a
    count is out of range."""
    if args.resamples < 0:
        raise OrchvizError("--resamples is a count: 0 or more")
    if args.folds < 2:
        raise OrchvizError("--folds is a count: 2 or more")
    ws = open_workspace(args)
    if args.traces:
        ws.library.update_index(progress_bar("indexing traces"))
    return ws


@dataclass(frozen=True)
class ModelLine:
    """One stored model as the table shows it."""

    version: str
    campaign: str
    """'' when it learnt from every label of the store."""
    created_at: str
    learnt: str
    """What it learnt from ("412 targets", "310 answered, 44 pairs")."""
    alpha: str
    """Its held-out agreement with the team, as said ("held-out alpha 0.52 [...]")."""
    question: str | None = None
    """The question it answers (a learned producer's model), None for one of every question."""
    mark: str = ""
    """A note after the line: in use, stale, refused."""


def print_model_table(lines: Iterable[ModelLine | str], *, none: str) -> None:
    """The stored models, one a line, newest first, in the same columns for every kind: version,
    question (where a model has one), campaign, when trained, what it learnt from, held-out
    alpha, and its mark; a `str` in the list is a row that could not be read, said in its
    place. `none` is what is said when no model is stored."""
    lines = list(lines)
    if not lines:
        print(none)
        return
    for m in lines:
        if isinstance(m, str):
            print(terminal_text(m))
            continue
        question = f"{terminal_text(m.question):<22} " if m.question is not None else ""
        print(f"{m.version}  {question}{terminal_text(m.campaign or 'all labels'):<16} "
              f"{terminal_text(m.created_at)[:19]}  {terminal_text(m.learnt)}  "
              f"{terminal_text(m.alpha)}{m.mark}")
