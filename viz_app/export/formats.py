"""The one registry of export formats, `FORMATS`, and the one way to write one,
`write_export(format, given, output)`: `orchviz labels export`, `ws.exports.write` and the app's
downloads all read it, so a new format is one more entry here. (What the formats are: the
package's face, `viz_app.export`.)"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from dataclasses import field as dataclass_field
from operator import itemgetter
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from viz_app.errors import OrchvizError
from viz_app.export.agent_lightning import triplet_rows
from viz_app.export.agent_rewards import matrix_rows
from viz_app.export.bookmarks import bookmark_records
from viz_app.export.empty import why_empty
from viz_app.export.consensus import ExportOptions, Selection, select
from viz_app.export.hf import TRACE_BATCH_ROWS
from viz_app.export.lengths import Lengths, Limit, Texts
from viz_app.export import lengths
from viz_app.export.openrlhf import NO_CONVERSATIONAL_PRM, prm_rows, rm_rows
from viz_app.export.decision_groups import decision_group_export
from viz_app.export.decision_pairs import decision_pair_export, openrlhf_rows
from viz_app.export.preference import preference_export, unplaced_pairs
from viz_app.export.prompts import NO_CONVERSATIONAL_STEPWISE, stepwise_rows, unpaired_rows
from viz_app.export.records import (flat_records, label_records, write_csv, write_jsonl,
                                    write_parquet, write_table)
from viz_app.export.rewards import reward_rows
from viz_app.export.rllm import episodes
from viz_app.export.steps import TraceSteps, all_trace_steps
from viz_app.export.suggestions import write_suggestions
from viz_app.export.traces import write_labelled_traces
from viz_app.export.verl import verl_rows, verl_schema
from viz_app.labels import FIELDS, LabelRecord, Rubric
from viz_app.model import Trace, paused_gc


OtherVersions = Literal["keep", "drop"]
"""What an export does with labels made on another version of their trace (`other_versions`)."""


@dataclass(frozen=True)
class ExportInput:
    """What an export is written from."""

    labels: Sequence[LabelRecord]
    """The current label records (`LabelStore.current_records`)."""
    traces: Mapping[str, Trace]
    """The labelled traces by id (empty for the formats that do not need them)."""
    rubric: Rubric | None
    """The rubric the labels were checked against (None for the bookmarks)."""
    bookmarks: Sequence[Mapping[str, Any]] = ()
    """The current bookmark records (`BookmarkStore.records`)."""
    suggestions: Sequence[Any] = ()
    """The stored suggestions (`SuggestionStore.all`), for the suggestions export only."""
    from_scores: bool = False
    """Preference: also pair the traces of one task by their scalar labels."""
    options: ExportOptions = ExportOptions()
    """How a training format chooses and shapes its rows."""
    versions: Mapping[str, frozenset[str]] = dataclass_field(default_factory=dict)
    """The versions (SHA-256) of each trace the library holds now, by id (two files may hold
    one id): a label whose `trace_sha256` is none of them was made on another version."""
    other_versions: OtherVersions | None = None
    """What to do with labels made on another version of their trace than the library holds:
    keep them (None too: each row names the version it was made on; a file written again with
    other bytes is another version) or drop them. Either way the export says so
    (`other_versions`)."""


@dataclass
class Shaped:
    """The rows of a training format, and what it left out."""

    rows: Iterable[dict[str, Any]]
    """The rows (possibly produced as they are written)."""
    left_out: list[str] = field(default_factory=list)
    """What it could not place or would not use, one sentence per reason."""
    notes: list[str] = field(default_factory=list)
    """What the reader of the export should know."""


@dataclass
class Written:
    """What writing an export did."""

    paths: list[Path]
    """Every file written."""
    rows: int | None = None
    """The rows written, where the format counts them."""
    left_out: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    empty: str = ""
    """Why nothing was written, in one sentence (`viz_app.export.empty`), when nothing was."""


Writer = Callable[[ExportInput, Path], object]
"""Writes one format to a path and returns the path (or paths) written."""

LeftOut = Callable[[Sequence[LabelRecord], Mapping[str, Trace]], list[str]]
"""What a format leaves out of the output, one sentence each."""

Rows = Callable[[ExportInput], Shaped]
"""A training format's rows."""


def _nothing_left_out(labels: Sequence[LabelRecord], traces: Mapping[str, Trace]) -> list[str]:
    return []


def _labels_off_traces(labels: Sequence[LabelRecord], traces: Mapping[str, Trace]) -> list[str]:
    return [f"labels on trace {trace_id} skipped: it is not among --traces"
            for trace_id in sorted({x["trace_id"] for x in labels} - set(traces))]


def _pairs_off_traces(labels: Sequence[LabelRecord], traces: Mapping[str, Trace]) -> list[str]:
    return [f"judgement of {first} vs {second} skipped: a trace is not among --traces"
            for first, second in unplaced_pairs(labels, traces)]


CONSENSUS = frozenset({"min_reviewers", "adjudicated_only", "disputed"})
"""The options every training format takes."""

LENGTHS = frozenset({"max_length", "tokenizer"})
"""The options every training format whose rows hold text takes (`texts`)."""


@dataclass(frozen=True)
class ExportFormat:
    """A file orchviz exports."""

    name: str
    """Short name, as `--format` takes it."""
    title: str
    """What it holds, in a phrase (the CLI's `--help` lists them)."""
    file_name: str
    """A name for its output when none is given (the app's downloads)."""
    write: Writer | None = None
    """Writes it (the formats that are not training shapes)."""
    needs_traces: bool = False
    """Whether it reads the labelled traces themselves (`--traces`), not only the labels."""
    writes_folder: bool = False
    """Whether its output is a folder of files rather than one file."""
    reads: Literal["labels", "bookmarks", "suggestions"] = "labels"
    """What it is made of: the current labels, the current bookmarks, or the producers'
    suggestions (never mixed into a labels format)."""
    unit: str = "current labels"
    """What the summary of an export counts (`12 current labels -> out.jsonl`)."""
    counts_rows: bool = False
    """Whether that count is the rows written (one per line) rather than the labels read."""
    left_out: LeftOut = field(default=_nothing_left_out)
    """What it cannot place, given the labels and the traces (labels whose trace is not among
    the traces given), one sentence each."""
    rows: Rows | None = None
    """A training format's rows: it takes the training options, can be written as a `datasets`
    folder, and `viz_app.export.readers` reads it back."""
    file_kind: Literal["jsonl", "parquet", "table"] = "jsonl"
    """How a training format's rows are written: JSON Lines, Parquet, or by the output's name
    (.csv, .parquet, else JSON Lines)."""
    framework: str = ""
    """The trainer (or family of trainers) whose shape it is."""
    options: frozenset[str] = frozenset()
    """The options it takes beyond `CONSENSUS` (threshold, prompt_with_system,
    conversational, from_scores)."""
    schema: Callable[[], Any] | None = None
    """The Arrow schema of its rows, where it is fixed (its Parquet is then written a batch at a
    time against it)."""
    batch_rows: int = 500
    """Rows turned into Arrow at a time when it is written as Parquet or a datasets folder
    (fewer for shapes whose row is a whole trace, to bound memory)."""
    refuses: Mapping[str, str] = field(default_factory=dict)
    """Options it cannot take for a reason worth saying (the framework defines no such form):
    option -> the one sentence that refuses it, naming the source."""
    trainer: str = ""
    """The released trainer (or reader) that consumes it today, with its version: what the
    CLI's `--help`, the dataset card and docs/trainers/ name."""
    texts: Texts | None = None
    """What its trainer reads of a row, to measure it (`viz_app.export.lengths`); None for a
    shape whose rows hold no text (it then takes no `--max-length` or `--tokenizer`)."""
    limit: Limit | None = None
    """Its trainer's default length limit, where it has one, and what it does past it."""
    json_columns: frozenset[str] = frozenset()
    """Columns written as JSON text in Parquet and `datasets` folders because their objects'
    keys vary by row (Arrow would make one struct of every row's keys, and a folder would read
    back with nulls its file does not have); the card lists them."""

    @property
    def training(self) -> bool:
        """Whether it is a training shape."""
        return self.rows is not None

    @property
    def accepts(self) -> frozenset[str]:
        """Every option it takes."""
        if not self.training:
            return self.options
        return CONSENSUS | self.options | (LENGTHS if self.texts is not None else frozenset())


# -- the training shapes ----------------------------------------------------------------------


def _selected(given: ExportInput) -> tuple[list[TraceSteps], Selection]:
    selection = select(given.labels, given.rubric, given.options)
    return all_trace_steps(given.traces, selection.by_trace(), given.rubric), selection


Unit = Literal["step", "trace with a step", "trace"]
"""What one row of a step-wise shape stands for."""


def _step_notes(all_steps: Sequence[TraceSteps], unit: Unit) -> list[str]:
    """What a step-wise shape has no row for, by its nature."""
    notes = []
    unplaced = sum(len(ts.unplaced) for ts in all_steps)
    if unplaced and unit != "trace":
        notes.append(f"{unplaced} answers on events with no rewarded answer (tags alone, a "
                     "pointer whose stop was left out) are not steps, and are in no row")
    elif unplaced:
        notes.append(f"{unplaced} answers on events with no rewarded answer (tags alone, a "
                     "pointer whose stop was left out) are not steps: only the provenance of "
                     "their trace's row has them")
    if unit == "step" and any(ts.outcome for ts in all_steps):
        outcome = sum(len(ts.outcome) for ts in all_steps)
        notes.append(f"{outcome} trace-level answers (the task's outcome) judge no step: rows "
                     "carry their mean as outcome_reward")
    stepless = sum(1 for ts in all_steps if not ts.steps and (ts.outcome or ts.unplaced))
    if unit == "trace with a step" and stepless:
        notes.append(f"{stepless} traces have answers but no step, and so no row")
    return notes


def _steps_shape(make: Callable[[list[TraceSteps], ExportOptions], Iterable[dict]],
                 unit: Unit) -> Rows:
    def rows(given: ExportInput) -> Shaped:
        all_steps, selection = _selected(given)
        return Shaped(rows=make(all_steps, given.options),
                      left_out=[*selection.left_out,
                                *_labels_off_traces(given.labels, given.traces)],
                      notes=[*selection.notes, *_step_notes(all_steps, unit)])
    return rows


def _preference(given: ExportInput) -> Shaped:
    found = preference_export(given.labels, given.traces, given.rubric, given.options,
                              from_scores=given.from_scores)
    return Shaped(rows=found.rows,
                  left_out=[*found.left_out, *_pairs_off_traces(given.labels, given.traces)],
                  notes=found.notes)


def _openrlhf_rm(given: ExportInput) -> Shaped:
    found = _preference(given)
    return Shaped(rows=rm_rows(list(found.rows)), left_out=found.left_out, notes=found.notes)


def _decision_pairs(given: ExportInput) -> Shaped:
    found = decision_pair_export(given.labels, given.traces, given.rubric, given.options)
    return Shaped(rows=found.rows, left_out=found.left_out, notes=found.notes)


def _openrlhf_decision_pairs(given: ExportInput) -> Shaped:
    found = _decision_pairs(given)
    return Shaped(rows=openrlhf_rows(found.rows), left_out=found.left_out, notes=found.notes)


def _decision_groups(given: ExportInput) -> Shaped:
    found = decision_group_export(given.labels, given.traces, given.rubric, given.options)
    return Shaped(rows=found.rows, left_out=found.left_out, notes=found.notes)


def _verl(given: ExportInput) -> Shaped:
    all_steps, selection = _selected(given)
    averaged = sum(1 for a in selection.answers if a.resolution == "mean")
    notes = [*selection.notes]
    if averaged:
        notes.append(f"{averaged} averaged disputed answers have no answer to learn: not in "
                     "verl rows")
    return Shaped(rows=verl_rows(all_steps, given.rubric, given.options),
                  left_out=[*selection.left_out, *_labels_off_traces(given.labels,
                                                                     given.traces)],
                  notes=notes)


def _matrix(given: ExportInput) -> Shaped:
    all_steps, selection = _selected(given)
    return Shaped(rows=matrix_rows(all_steps),
                  left_out=[*selection.left_out,
                            *_labels_off_traces(given.labels, given.traces)],
                  notes=[*selection.notes, *_step_notes(all_steps, "trace")])


PROMPTS = frozenset({"prompt_with_system"})
BOOL = frozenset({"threshold"})
CHAT = frozenset({"conversational"})
PAIRS = frozenset({"from_scores", "allow_cross_task"})
CONFIRM = frozenset({"confirmations"})


FORMATS: dict[str, ExportFormat] = {f.name: f for f in (
    ExportFormat("jsonl", "one row per label with every field (JSON Lines; "
                 "`orchviz labels import` reads it back)", "labels.jsonl",
                 lambda given, out: write_jsonl(label_records(given.labels), out)),
    ExportFormat("csv", "the same rows as CSV, each value as JSON text", "labels.csv",
                 lambda given, out: write_csv(flat_records(given.labels), out, FIELDS)),
    ExportFormat("parquet", "the same rows as Parquet", "labels.parquet",
                 lambda given, out: write_parquet(flat_records(given.labels), out, FIELDS)),
    ExportFormat("rewards", "per target, the mean reward over reviewers with count and spread",
                 "rewards.jsonl",
                 lambda given, out: write_table(reward_rows(given.labels, given.rubric), out)),
    ExportFormat("traces", "each labelled trace with its rewards filled, one file each in "
                 "the folder -o names",
                 "labelled", lambda given, out: write_labelled_traces(
                     given.traces, given.labels, given.rubric, out),
                 needs_traces=True, writes_folder=True, left_out=_labels_off_traces),
    ExportFormat("stepwise", "TRL stepwise supervision {prompt, completions, labels}, one row "
                 "per trace and one per stop pointer", "stepwise.jsonl", needs_traces=True, unit="rows",
                 counts_rows=True, rows=_steps_shape(stepwise_rows, "trace with a step"),
                 framework="TRL", options=PROMPTS | BOOL, batch_rows=TRACE_BATCH_ROWS,
                 refuses={"conversational": NO_CONVERSATIONAL_STEPWISE},
                 trainer="TRL 1.13 trl.experimental.prm.PRMTrainer (TRL 1.14.0 removed it: "
                 "no release after 1.13 trains this shape)",
                 texts=lengths.prompt_completions,
                 limit=Limit(1024, "PRMConfig.max_length", "cuts them at the end (and the "
                             "steps cut lose their labels)")),
    ExportFormat("unpaired", "TRL unpaired preference {prompt, completion, label}, one row per "
                 "step", "unpaired.jsonl", needs_traces=True, unit="rows", counts_rows=True,
                 rows=_steps_shape(unpaired_rows, "step"), framework="TRL",
                 options=PROMPTS | BOOL | CHAT, trainer="TRL 1.16 KTOTrainer",
                 texts=lengths.prompt_completion,
                 limit=Limit(1024, "KTOConfig.max_length", "cuts them at the end, and drops those whose prompt alone fills it")),
    ExportFormat("preference", "TRL preference {prompt, chosen, rejected, margin}, one row per "
                 "judged pair of traces", "preference.jsonl", needs_traces=True,
                 unit="preference pairs", counts_rows=True, rows=_preference, framework="TRL",
                 options=PROMPTS | CHAT | PAIRS,
                 trainer="TRL 1.16 RewardTrainer and DPOTrainer",
                 texts=lengths.prompt_chosen_rejected,
                 limit=Limit(1024, "RewardConfig.max_length", "drops them (DPOTrainer, with "
                             "DPOConfig.max_length 1024, cuts them)")),
    ExportFormat("openrlhf-rm", "OpenRLHF reward-model pairs {chosen, rejected, margin}, the "
                 "prompt inside each", "openrlhf-rm.jsonl", needs_traces=True,
                 unit="preference pairs", counts_rows=True, rows=_openrlhf_rm,
                 framework="OpenRLHF", options=PROMPTS | CHAT | PAIRS,
                 trainer="OpenRLHF 0.11.2 openrlhf.cli.train_rm (RewardDataset; 0.9.5 reads "
                 "the same columns)",
                 texts=lengths.chosen_rejected,
                 limit=Limit(512, "--data.max_len", "cuts them at the end")),
    ExportFormat("decision-pairs", "TRL preference {prompt, chosen, rejected} at each corrected "
                 "decision: the deciding agent's context, the correction, what it did",
                 "decision-pairs.jsonl", needs_traces=True, unit="decision pairs",
                 counts_rows=True, rows=_decision_pairs, framework="TRL",
                 options=PROMPTS | CHAT | CONFIRM,
                 trainer="TRL 1.16 RewardTrainer and DPOTrainer",
                 texts=lengths.prompt_chosen_rejected,
                 limit=Limit(1024, "RewardConfig.max_length", "drops them (DPOTrainer, with "
                             "DPOConfig.max_length 1024, cuts them)")),
    ExportFormat("openrlhf-decision-pairs", "OpenRLHF reward-model pairs {chosen, rejected} at "
                 "each corrected decision, the deciding agent's context inside each",
                 "openrlhf-decision-pairs.jsonl", needs_traces=True, unit="decision pairs",
                 counts_rows=True, rows=_openrlhf_decision_pairs, framework="OpenRLHF",
                 options=PROMPTS | CHAT | CONFIRM,
                 trainer="OpenRLHF 0.11.2 openrlhf.cli.train_rm (RewardDataset; 0.9.5 reads "
                 "the same columns)",
                 texts=lengths.chosen_rejected,
                 limit=Limit(512, "--data.max_len", "cuts them at the end")),
    ExportFormat("decision-groups", "the original decision and its replayed branches from one "
                 "fork point in one group, each with its labels' reward (GRPO-style groups)",
                 "decision-groups.jsonl", needs_traces=True, unit="groups", counts_rows=True,
                 rows=_decision_groups, framework="GRPO-style trainers", options=PROMPTS,
                 trainer="group-relative trainers (GRPO's completions with rewards and "
                 "advantages; no packaged reader)",
                 json_columns=frozenset({"rewards_by_question"}),
                 texts=lengths.prompt_each_completion),
    ExportFormat("openrlhf-prm", "OpenRLHF process-reward rows {input, label} with a "
                 "placeholder per step, one per trace and one per stop pointer", "openrlhf-prm.jsonl", needs_traces=True, unit="rows",
                 counts_rows=True, rows=_steps_shape(prm_rows, "trace with a step"),
                 framework="OpenRLHF", options=PROMPTS | BOOL, batch_rows=TRACE_BATCH_ROWS,
                 refuses={"conversational": NO_CONVERSATIONAL_PRM},
                 trainer="OpenRLHF 0.9.5 openrlhf.cli.train_prm (ProcessRewardDataset; "
                 "removed after 0.9.5)", texts=lengths.single_input,
                 limit=Limit(2048, "--max_len", "cuts them at the end (and the steps cut lose "
                             "their labels)")),
    ExportFormat("rllm", "rLLM episodes: a trajectory per agent, steps with rewards, signals",
                 "rllm.jsonl", needs_traces=True, unit="episodes", counts_rows=True,
                 rows=_steps_shape(episodes, "trace"), framework="rLLM", options=BOOL,
                 batch_rows=TRACE_BATCH_ROWS, json_columns=frozenset({"trajectories",
                                                                      "metrics"}),
                 trainer="rLLM Episode.from_dict (rllm-org/rllm 9beb6e0, rllm/types.py)",
                 texts=lengths.trajectories),
    ExportFormat("agent-lightning", "Agent Lightning triplets with their reward spans, one per "
                 "step", "agent-lightning.jsonl", needs_traces=True, unit="rows",
                 counts_rows=True, rows=_steps_shape(triplet_rows, "step"),
                 framework="Agent Lightning", options=PROMPTS | BOOL,
                 json_columns=frozenset({"reward_span"}),
                 trainer="Agent Lightning 0.3.0 Triplet and emit_reward",
                 texts=lengths.triplet),
    ExportFormat("verl", "verl Parquet rows {data_source, prompt, ability, reward_model, "
                 "extra_info} for a reward model or judge", "verl.parquet", needs_traces=True,
                 unit="rows", counts_rows=True, rows=_verl, file_kind="parquet",
                 framework="verl", options=PROMPTS, schema=verl_schema,
                 trainer="verl RLHFDataset and reward manager (volcengine/verl b178a3c)",
                 texts=lengths.prompt_only,
                 limit=Limit(512, "data.max_prompt_length", "stops on them (data.truncation "
                             "'error'; with data.filter_overlong_prompts it drops them)")),
    ExportFormat("agent-rewards", "one row per trace, one reward column per agent (MARTI-style)",
                 "agent-rewards.jsonl", needs_traces=True, unit="traces", counts_rows=True,
                 rows=_matrix, file_kind="table", framework="multi-agent trainers",
                 trainer="MARTI-style reward allocation (a reward array per problem; no "
                 "packaged reader)",
                 batch_rows=TRACE_BATCH_ROWS),
    ExportFormat("bookmarks", "the current bookmarks with their notes (JSON Lines)",
                 "bookmarks.jsonl",
                 lambda given, out: write_jsonl(bookmark_records(given.bookmarks), out),
                 reads="bookmarks", unit="current bookmarks", counts_rows=True),
    ExportFormat("suggestions", "the producers' suggested answers, apart from the labels (JSON "
                 "Lines)", "suggestions.jsonl",
                 lambda given, out: write_suggestions(given.suggestions, out),
                 reads="suggestions", unit="suggestions", counts_rows=True),
)}
"""Every export format, by name."""

NEEDS_TRACES = tuple(f.name for f in FORMATS.values() if f.needs_traces)
"""Formats that read the labelled traces themselves."""

WRITES_FOLDER = tuple(f.name for f in FORMATS.values() if f.writes_folder)
"""Formats whose output is a folder."""

TRAINING = tuple(f.name for f in FORMATS.values() if f.training)
"""The training shapes."""


class _Counted:
    """Counts the rows of an iterable as they are written."""

    def __init__(self, rows: Iterable[dict[str, Any]]):
        self.rows, self.count = rows, 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for row in self.rows:
            self.count += 1
            yield row


def _write_rows(found: ExportFormat, shaped: Shaped, output: Path) -> Written:
    if found.file_kind == "jsonl":
        counted = _Counted(shaped.rows)
        path = write_jsonl(counted, output)
        count = counted.count
    elif found.file_kind == "parquet":
        path, count = _write_arrow(shaped.rows, output, found.schema, found.batch_rows)
    else:
        rows = list(shaped.rows)
        path, count = write_table(rows, output), len(rows)
    return Written(paths=[Path(path)], rows=count, left_out=shaped.left_out,
                   notes=shaped.notes)


def _write_arrow(rows: Iterable[dict[str, Any]], output: Path,
                 schema: Callable[[], Any] | None, batch_rows: int = 500) -> tuple[Path, int]:
    from viz_app.export.hf import Spool, write_parquet_stream

    output.parent.mkdir(parents=True, exist_ok=True)
    if schema is not None:
        return output, write_parquet_stream(rows, output, schema())
    with Spool(rows, batch_rows=batch_rows) as spool:
        spool.write_parquet(output)
        return output, spool.num_rows


def _measure(found: ExportFormat, options: ExportOptions, shaped: Shaped) -> Lengths | None:
    """Measure the rows as they are written (`viz_app.export.lengths`): rows past
    `max_length` are held back, and once the last has passed, what was held back joins
    `left_out` and the length distribution joins `notes`."""
    if found.texts is None:
        return None
    measured = Lengths(found.texts, found.limit, found.trainer or found.framework,
                       options.tokenizer, options.max_length)

    def done() -> None:
        left_out, notes = measured.sentences()
        shaped.left_out.extend(left_out)
        shaped.notes.extend(notes)
    shaped.rows = measured.through(shaped.rows, done)
    return measured


def check_options(format: str, given: Iterable[str]) -> None:
    """OrchvizError when an option does not apply to a format."""
    found = FORMATS[format]
    wrong = sorted(set(given) - found.accepts)
    for name in wrong:
        if name in found.refuses:
            raise OrchvizError(found.refuses[name])
    if wrong:
        names = ", ".join("--" + w.replace("_", "-") for w in wrong)
        takes = ", ".join("--" + w.replace("_", "-") for w in sorted(found.accepts)) or "none"
        raise OrchvizError(f"{names} does not apply to --format {format} (it takes: {takes})")


def write_export(format: str, given: ExportInput, output: str | Path, *,
                 hf_dataset: bool = False) -> Written:
    """Write one format (or, with `hf_dataset`, a training format as a `datasets` folder).

    The cyclic garbage collector is paused meanwhile: an export builds many short-lived rows
    and no cycles, and the collector's full scans of the answers, steps and analyses it holds
    were a third of a 100,000-label export's time (bench/bench_exports.py)."""
    with paused_gc():
        written = _write_export(format, given, output, hf_dataset)
    nothing = written.rows == 0 if written.rows is not None else (
        FORMATS[format].reads == "labels" and not given.labels)
    if nothing:
        written.empty = why_empty(FORMATS[format], given, written.left_out)
    return written


def _write_export(format: str, given: ExportInput, output: str | Path,
                  hf_dataset: bool) -> Written:
    found = FORMATS.get(format)
    if found is None:
        raise OrchvizError(f"unknown export format {format!r} (known: {', '.join(FORMATS)})")
    given, said, kept = other_versions(format, given)
    written = _written(found, format, given, output, hf_dataset)
    if kept:
        written.notes[:0] = said
    else:
        written.left_out[:0] = said
    return written


def other_versions(format: str, given: ExportInput) -> tuple[ExportInput, list[str], bool]:
    """The input with the labels made on another version of their trace than the library
    holds now kept or dropped (`ExportInput.other_versions`), the sentence that says which,
    and whether they were kept. A label is on another version when its `trace_sha256` is none
    of the versions of its trace id the library holds (`versions`, and the traces given)."""
    current: dict[str, set[str]] = {t: set(v) for t, v in given.versions.items()}
    for trace_id, trace in given.traces.items():
        current.setdefault(trace_id, set()).add(trace.sha256)
    others = [r for r in given.labels if r.get("trace_sha256") and r["trace_id"] in current
              and r["trace_sha256"] not in current[r["trace_id"]]]
    if not others:
        return given, [], True
    keep = (given.other_versions or "keep") == "keep"
    traces = sorted({r["trace_id"] for r in others})
    shown = "; ".join(
        f"{t} (made on {next(r['trace_sha256'] for r in others if r['trace_id'] == t)[:12]}, "
        f"the library holds {', '.join(sorted(v[:12] for v in current[t]))})" for t in traces[:3])
    more = f" and {len(traces) - 3} more" if len(traces) > 3 else ""
    sentence = (f"{len(others)} label{'s' if len(others) != 1 else ''} on {len(traces)} "
                f"trace{'s' if len(traces) != 1 else ''} were made on another version of the "
                f"trace than the library holds now: {shown}{more}; ")
    if keep:
        return given, [sentence + "kept, each row naming the version it was made on "
                       "(trace_sha256); --other-versions drop leaves them out"], True
    ids = {id(r) for r in others}
    return (replace(given, labels=[r for r in given.labels if id(r) not in ids]),
            [sentence + "left out; --other-versions keep writes them, each row naming the "
             "version it was made on"], False)


def _written(found: ExportFormat, format: str, given: ExportInput, output: str | Path,
             hf_dataset: bool) -> Written:
    target = Path(output)
    if hf_dataset:
        if not found.training:
            raise OrchvizError(f"--hf-dataset writes the training shapes ({', '.join(TRAINING)})"
                               f", not {format}")
        from viz_app.export.hf import (Spool, settled, summary, write_hf_dataset,
                                       write_hf_inferred, write_hf_rows)
        from viz_app.export.readers import PROVENANCE

        shaped = found.rows(given)
        measured = _measure(found, given.options, shaped)
        used: set[str] = set()
        where = PROVENANCE[format]

        def noted() -> Iterator[dict[str, Any]]:
            label_id = itemgetter("label_id")
            for row in shaped.rows:
                used.update(map(label_id, where(row)))
                yield row

        def facts(rows: int) -> dict[str, Any]:
            return summary(format, found.framework, rows, list(given.labels), used,
                           given.rubric,
                           {**given.options.model_dump(), "from_scores": given.from_scores},
                           shaped.left_out, shaped.notes, trainer=found.trainer,
                           lengths=measured.facts() if measured is not None else None)

        schema = found.schema() if found.schema else None
        if schema is None:
            paths, count = write_hf_inferred(noted(), target, facts, found.batch_rows,
                                             as_json=set(found.json_columns))
            return Written(paths=paths, rows=count, left_out=shaped.left_out,
                           notes=shaped.notes)
        if settled(schema):
            paths, count = write_hf_rows(noted(), schema, target, facts, found.batch_rows)
            return Written(paths=paths, rows=count, left_out=shaped.left_out,
                           notes=shaped.notes)
        with Spool(noted(), schema, found.batch_rows) as spool:
            return Written(paths=write_hf_dataset(spool, target, facts(spool.num_rows)),
                           rows=spool.num_rows, left_out=shaped.left_out, notes=shaped.notes)
    if found.training:
        shaped = found.rows(given)
        _measure(found, given.options, shaped)
        return _write_rows(found, shaped, target)
    written = found.write(given, target)
    paths = [Path(p) for p in written] if isinstance(written, list) else [Path(written)]
    return Written(paths=paths, left_out=found.left_out(given.labels, given.traces))


def export(format: str, labels: Sequence[LabelRecord], traces: Mapping[str, Trace],
           rubric: Rubric | None, output: str | Path, *,
           bookmarks: Sequence[Mapping[str, Any]] = (), from_scores: bool = False,
           options: ExportOptions = ExportOptions(), hf_dataset: bool = False) -> object:
    """Write current label records (`LabelStore.current_records`), or bookmark records, in a
    format; returns the path written (a list of paths for a folder)."""
    given = ExportInput(labels=labels, traces=traces, rubric=rubric, bookmarks=bookmarks,
                        from_scores=from_scores, options=options)
    written = write_export(format, given, output, hf_dataset=hf_dataset)
    if hf_dataset or FORMATS[format].writes_folder:
        return written.paths
    return written.paths[0]


class ExportResult(BaseModel):
    """What an export wrote (`ws.exports.write`)."""

    format: str = Field(description="The format written (a key of FORMATS).")
    output: Path = Field(description="The file (or folder) written.")
    written: list[Path] = Field(description="Every file written.")
    count: int = Field(description="The labels read, or the rows written (see `counts_rows`).")
    left_out: list[str] = Field(default_factory=list, description="What could not be placed "
                                "or was not used, one sentence each (labels whose trace was "
                                "not given, disputed targets, ...).")
    notes: list[str] = Field(default_factory=list, description="What the reader of the export "
                             "should know (disputed targets averaged, ...).")
    hf_dataset: bool = Field(False, description="Whether it was written as a `datasets` folder.")
    empty: str = Field("", description="Why nothing was written, in one sentence, when nothing "
                       "was (`viz_app.export.empty`).")

    @property
    def text(self) -> str:
        """'6 current labels -> labels.jsonl', '3 traces in labelled/' for a folder."""
        found = FORMATS[self.format]
        why = f" · {self.empty}" if self.empty else ""
        if self.hf_dataset:
            return f"{self.count} {found.unit} -> {self.output} (a datasets folder){why}"
        where = f"{len(self.written)} traces in {self.output}" if found.writes_folder \
            else str(self.output)
        return f"{self.count} {found.unit} -> {where}{why}"
