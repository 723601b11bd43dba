"""The library's one sampler: which of the traces a filter and search select are drawn, the
same over a folder's files and a pool's shards.

The candidates come in the library's order (a folder's files then their positions; a pool's
shards then their rows), each with its stratum (one for all when the draw is not stratified).
`draw` picks `n` of them without replacement: each stratum gives n / k, a small stratum all it
has, and what it could not give goes to the others (water filling, `even_quota`); within a
stratum the draw is numpy's seeded choice. The picks come stratum by stratum in turn (the first
of each stratum in the strata's order, then the second of each...), so the head of a review
queue already spans every stratum. The same candidates, strata, n and seed give the same picks.

A trainer's rollouts are drawn by whole groups, N of each training step (`per_step_groups`),
each step's groups in an order seeded by the seed and the step alone, so a step that arrives
later is drawn as it would have been at first.

A numeric field is stratified by its quantiles: `ntile` splits the candidates, ordered by the
value (missing values last) then by their place, into k runs of equal size, as SQL's
`ntile(k) OVER (ORDER BY value, place)` does in a pool's index.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any


def even_quota(sizes: dict[Any, int], n: int) -> dict[Any, int]:
    """n split as evenly as the sizes allow (water filling): no stratum gives more than it has."""
    quota = {k: 0 for k in sizes}
    left = min(n, sum(sizes.values()))
    open_ = sorted(sizes, key=lambda k: (sizes[k], str(k)))
    while left > 0 and open_:
        share = max(1, left // len(open_))
        for k in list(open_):
            take = min(share, sizes[k] - quota[k], left)
            quota[k] += take
            left -= take
            if quota[k] >= sizes[k]:
                open_.remove(k)
            if left == 0:
                break
    return quota


def draw(strata: Sequence[Hashable] | Any, n: int, seed: int = 0) -> list[int]:
    """The places (0-based, among the candidates) of `n` candidates drawn without replacement,
    evenly over their strata (`strata[i]`: candidate i's; all equal for a plain random draw),
    in the order described above. Takes any sequence or array of strata."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    codes, names = pd.factorize(pd.Series(strata, dtype=object), use_na_sentinel=False)
    if not len(codes):
        return []
    order = np.argsort(codes, kind="stable")  # candidates grouped by stratum, in their order
    sizes = np.bincount(codes, minlength=len(names))
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    quota = even_quota({j: int(sizes[j]) for j in range(len(sizes))}, max(0, int(n)))
    drawn: list[list[int]] = []
    for j in sorted(range(len(sizes)), key=lambda j: (names[j] is None, str(names[j]))):
        if quota[j]:
            members = order[starts[j]:starts[j] + sizes[j]]
            drawn.append(members[rng.choice(len(members), quota[j], replace=False)].tolist())
    return [picks[i] for i in range(max(map(len, drawn), default=0)) for picks in drawn
            if i < len(picks)]


def ntile(values: Sequence[Any], k: int) -> list[int]:
    """Each value's quantile run, 1 to k: the values ordered (None last, ties by place) and cut
    into k runs whose sizes differ by one at most, the longer first (SQL's `ntile`)."""
    k = max(1, int(k))
    ranked = sorted(range(len(values)), key=lambda i: (values[i] is None, values[i]
                                                       if values[i] is not None else 0, i))
    size, extra = divmod(len(values), k)
    found = [0] * len(values)
    place = 0
    for tile in range(1, k + 1):
        length = size + (1 if tile <= extra else 0)
        for i in ranked[place:place + length]:
            found[i] = tile
        place += length
    return found


def per_step_rows(rows: Sequence[Any], n: int, seed: int,
                  taken: Mapping[int, set[str]] | None = None) -> list[Any]:
    """Whole groups of a trainer's rollouts, N of each training step (rows without a step or
    group are left out), drawn as `per_step_groups` draws them; each group's rows in library
    order."""
    members: dict[tuple[int, str], list[Any]] = defaultdict(list)
    for row in rows:
        step, group = getattr(row, "rollout_step", None), getattr(row, "rollout_group", None)
        if step is not None and group is not None:
            members[step, group].append(row)
    return [row for key in per_step_groups(members, n, seed, taken) for row in members[key]]


def per_step_groups(groups: Iterable[tuple[int, str]], n: int, seed: int,
                    taken: Mapping[int, set[str]] | None = None) -> list[tuple[int, str]]:
    """(step, group) of N whole groups of each training step, steps in order: each step's
    groups in an order seeded by the seed and the step alone, so that a step sampled now and a
    step that arrives later are drawn alike, folders and pools alike. `taken` holds the groups
    of each step a campaign already has: a step is topped up to N (a step still being written
    gets its other groups as they come), never sampled twice."""
    steps: dict[int, set[str]] = defaultdict(set)
    for step, group in groups:
        steps[step].add(group)
    chosen: list[tuple[int, str]] = []
    for step in sorted(steps):
        have = set((taken or {}).get(step, ()))
        names = sorted(steps[step])
        random.Random(f"{seed}:{step}").shuffle(names)
        wanted = [g for g in names if g not in have][:max(0, n - len(have))]
        chosen += [(step, group) for group in wanted]
    return chosen
