"""One summary of a trace: what a row of the library (a folder's or a pool's index) shows of it.

`summarise(trace, rubric)` is the one pass over a trace's events that gives its figures (from
`Analysis.numbers`, the function the trace page's `Figures` take them from too), its label
targets under a rubric and its words for search. The folder index (`store.index`) and the pool
index (`store.pool_index`) keep what it gives, and both answer with the one row type,
`LibraryRow`. It builds no graph.
"""

from __future__ import annotations

from operator import attrgetter
from typing import TYPE_CHECKING, Any

import msgspec
from pydantic import AliasChoices, BaseModel, Field

from viz_app.analysis import analyze, task_words
from viz_app.io.rollouts import rollout_of, trainer_reward
from viz_app.labels import Rubric, required_questions
from viz_app.search import fold
from viz_app.text import brief

if TYPE_CHECKING:
    from viz_app.model import Trace

SEARCH_TEXT_LIMIT = 200_000
"""Characters of event content kept per trace for search (agent names always fit before it)."""

TASK_LIMIT = 300
"""Characters of the task's words an index keeps (a table cell, a tooltip: not a prompt)."""


class Summary(msgspec.Struct, frozen=True):
    """What the library shows of one trace, without reading it again."""

    trace_id: str
    task_id: str
    system: str
    """'' when the trace does not say."""
    topology: str
    """'' when the trace does not say."""
    source_format: str
    sha256: str
    events: int
    agents: int
    """Agents (tools are not agents)."""
    depth: int
    """Depth of the spawn tree; a lone root is 0."""
    max_fanout: int
    """Most children any agent spawned."""
    makespan_s: float
    parallelism: float
    critical_path_s: float | None
    """None when not asked for (`summarise(critical_path=False)`): the pool index keeps none."""
    tokens: float
    cost_usd: float
    warnings: int
    rewards: dict[str, float]
    targets: dict[str, list[str]] | None
    """Target key -> the questions that must be answered; None when read without a rubric."""
    text: str
    """The folded words a search looks in (`search_text`)."""
    rollout_step: int | None = None
    """The training step of a trainer's rollout (`io.rollouts.rollout_of`); None otherwise."""
    rollout_group: str | None = None
    """The group of siblings sampled for one prompt at one step; None for another trace."""
    trainer_reward: float | None = None
    """The reward the trainer gave the rollout (`io.rollouts.trainer_reward`), never a label."""
    task: str = ""
    """The task in the trace's own words (`analysis.task_words`), on one line and at most
    `TASK_LIMIT` characters; '' when the trace records only the task's id."""


class LibraryRow(BaseModel):
    """What the library shows of one trace without reading it again: a row of a folder's index
    (a file, and the trace's place in it) or of a pool's (a shard, and the trace's row in it)."""

    path: str = Field(description="The file the trace is in: a library file, or a pool's shard "
                      "(its URL).")
    position: int = Field(description="Its place among the traces of that file (0 for JSON; "
                          "its row in a shard).")
    trace_id: str = Field(description="The trace's id.")
    task_id: str = Field(description="The task the run attempted; its rollouts make a GRPO "
                         "group.")
    system: str = Field(description="The system that produced it ('' if not given).")
    topology: str = Field(description="Its topology ('' if not given).")
    source_format: str = Field(description="`orchviz`, or the importer that converted it.")
    events: int = Field(description="Number of events.")
    agents: int = Field(description="Number of agents.")
    depth: int = Field(description="Depth of the spawn tree.")
    makespan_s: float = Field(description="From the first event to the end of the last.")
    parallelism: float = Field(description="Sum of agent lifetimes over the makespan.")
    tokens: float = Field(description="Tokens the run used.")
    cost_usd: float = Field(description="What the run cost in dollars.")
    sha256: str = Field(description="Hash of the trace's bytes (labels record it).")
    warnings: int = Field(description="How many structural warnings loading it gave.")
    targets: dict[str, list[str]] | None = Field(
        None, description="What the rubric asks to label in it: target key ('' for the trace) "
        "-> the questions that must be answered; None when indexed without a rubric.")
    rewards: dict[str, float] = Field(default_factory=dict, description="The reward channels "
                                      "it carries (a pool's index keeps them).")
    pool: str | None = Field(None, description="The pool it is a row of (the pool's location), "
                             "whose index reads it; None for a row of the library's folders.")
    rollout_step: int | None = Field(
        None, description="The training step a trainer's rollout was sampled at (None for "
        "another trace).")
    rollout_group: str | None = Field(
        None, description="The group of siblings sampled for one prompt at one step.")
    trainer_reward: float | None = Field(
        None, description="The reward the trainer gave the rollout (a reward the trace "
        "carries, not a label).")
    task: str = Field("", description="The task in the trace's own words (`Summary.task`); '' "
                      "when it records only the task's id.")

    @property
    def task_shown(self) -> str:
        """What the library's task column shows: the task's words, else its id."""
        return self.task or self.task_id

    @property
    def group(self) -> str:
        """Its group of rollouts: the trainer's group of siblings when it says, else the task
        (a GRPO group: the rollouts of one task)."""
        return self.rollout_group or self.task_id

    def labelled(self, answered: dict[str, set[str]]) -> int:
        """How many of its targets have every required question answered (`answered`: target
        key -> questions with a current label, as `LabelStore.answered` gives for a trace)."""
        return sum(1 for key, required in (self.targets or {}).items()
                   if set(required) <= answered.get(key, set()))


class Bin(BaseModel):
    """One bar of a histogram of the library: [low, high) and how many traces fall in it."""

    low: float
    high: float
    count: int


class LibraryFailure(BaseModel):
    """What the library lists beside its traces for what it could not read: a file of the
    folders or a shard of a pool (the folder library is a pool of one shard a file), or one row
    of it, with the sentence saying where and what."""

    path: str = Field(validation_alias=AliasChoices("path", "shard"), description="The file "
                      "or shard that failed (a pool's shard by its URL).")
    row: int = Field(-1, description="The row of a pool's shard that failed; -1 for the whole "
                     "file, or when the error names the place (a file's line).")
    error: str = Field(description="The sentence saying where and what (a TraceError's).")

    @property
    def shard(self) -> str:
        """The shard (or file) that failed: its `path`."""
        return self.path


def summarise(trace: Trace, rubric: Rubric | None = None,
              text_limit: int = SEARCH_TEXT_LIMIT, critical_path: bool = True) -> Summary:
    """The summary of a trace (its `Analysis` is kept on it, as `analyze` keeps it).
    `critical_path=False` leaves out the critical path, the dearest figure (the event
    dependencies it walks cost as much as the rest of the figures)."""
    analysis = analyze(trace)
    numbers = analysis.numbers(critical_path)
    rollout = rollout_facts(trace)
    return Summary(
        trace_id=trace.trace_id, task_id=trace.task_id, system=trace.system or "",
        topology=trace.topology or "", source_format=trace.source_format,
        sha256=trace.sha256, events=numbers["events"], agents=numbers["agents"],
        depth=numbers["depth"], max_fanout=numbers["max_fanout"],
        makespan_s=numbers["makespan_s"], parallelism=numbers["parallelism"],
        critical_path_s=numbers["critical_path_s"], tokens=numbers["tokens"],
        cost_usd=numbers["cost_usd"], warnings=len(analysis.warnings),
        rewards={k: float(v) for k, v in (trace.rewards or {}).items()},
        targets=None if rubric is None else required_questions(rubric, analysis),
        text=search_text(trace, text_limit), rollout_step=rollout[0], rollout_group=rollout[1],
        trainer_reward=rollout[2], task=brief(task_words(trace) or "", TASK_LIMIT))


def rollout_facts(trace: Trace) -> tuple[int | None, str | None, float | None]:
    """(step, group, trainer's reward) of a trainer's rollout, as both indexes keep them; Nones
    for another trace. A trace orchviz wrote itself keeps its rollout, if any, on its first
    event's extra keys: one without any is no rollout (and is not searched for one)."""
    if not trace.events or (trace.source_format == "orchviz" and not trace.events[0].other):
        return None, None, trainer_reward(trace)
    found = rollout_of(trace)
    return (found.step, found.group, trainer_reward(trace)) if found is not None else \
        (None, None, trainer_reward(trace))


def search_text(trace: Any, limit: int = SEARCH_TEXT_LIMIT) -> str:
    """The text a search looks in, folded as the one search compares it (`viz_app.search.fold`:
    lower-cased, accents off): ids, task, system, agent names, roles, tools, then event content
    up to `limit` characters in all."""
    analysis = analyze(trace)
    head = [trace.trace_id, trace.task_id, trace.system or "", trace.topology or "",
            trace.source_format]
    head += analysis.agents
    head += sorted({analysis.role_of(a) for a in analysis.agents})
    head += sorted(set(filter(None, map(_TOOL, trace.events))))
    text = "\n".join(head)
    budget = max(0, limit - len(text))
    texts = list(map(_TEXT, analysis.order))
    if sum(map(len, texts)) + len(texts) <= budget:  # all of it fits, as it mostly does
        return fold(text + "\n" + "\n".join(texts))
    parts = []
    for piece in texts:
        if budget <= 0:
            break
        piece = piece[:budget]
        parts.append(piece)
        budget -= len(piece) + 1
    return fold(text + "\n" + "\n".join(parts))


_TOOL, _TEXT = attrgetter("tool"), attrgetter("text")
