"""OpenPipe ART's trajectory logs:
`.art/<project>/models/<model>/trajectories/<split>/<step>.parquet` (`NNNN` the model's step,
the checkpoint that sampled them), written by the backend's `_log` through
`write_trajectory_groups_parquet` (art/utils/trajectory_logging.py), and the legacy JSON Lines
files the same folders held before (`<step>.jsonl`, one trajectory group a line:
`{trajectories: [{reward, metrics, metadata, messages_and_choices, tools, additional_histories,
logs}]}`, art/utils/trajectory_migration.py).

The Parquet log holds a row per trajectory: `group_index`, `reward`, `metrics`, `metadata` and
`tools` (JSON text), `logs`, `messages` (flattened: role, content, tool_calls as JSON text,
tool_call_id, trainable), with the group's `group_metadata`, `group_metrics`, `group_logs`;
format 2 adds `trajectory_index` and the whole trajectory as `trajectory_json` (with its
`additional_histories`, which the flattened columns leave out), and files migrated from JSON
Lines keep `additional_histories` as JSON text. Each trajectory is a trace: its chat, the
policy's generations (ART's Choices, `trainable`) as messages with their tool calls, and each
additional history (a sub-agent's conversation in a multi-agent rollout) as a spawned agent
that returns to the policy. The trajectories of one group (one scenario) are siblings; `reward`
is the trainer's reward, the numeric `metrics` the trace's metrics.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import PurePath
from typing import Any, NamedTuple

import orjson

from viz_app.errors import TraceError
from viz_app.io.native import Source, read_source
from viz_app.io.records import first_value
from viz_app.io.rollouts import (ONE_EXCHANGE_COSTS, POLICY, POLICY_STOP, ROLLOUT_KEY,
                                 TRAINER_REWARD, Chat, OnError, as_text, generation, group_id,
                                 number, pending_note, prompt_key, rollout_lines, step_in_name,
                                 with_note)
from viz_app.model import Event, Trace, paused_gc

NAME = "art"
PARQUET_MAGIC = b"PAR1"


def detect(data: bytes, name: str = "") -> float:
    """How sure it is that the bytes are an ART trajectory log (0 to 1)."""
    if data[:4] == PARQUET_MAGIC:
        return 1.0 if b"group_index" in data[-65536:] else 0.0
    first = first_value(data)
    if isinstance(first, dict) and isinstance(first.get("trajectories"), list):
        head = first["trajectories"][0] if first["trajectories"] else {}
        if isinstance(head, dict) and "messages_and_choices" in head:
            return 1.0
    return 0.0


def where(label: str) -> tuple[str, str, int | None]:
    """(model, split, step) from a log's path: `models/<model>/trajectories/<split>/<step>`."""
    path = PurePath(label)
    parts = path.parts
    split = path.parent.name or "train"
    model = parts[-4] if len(parts) >= 4 and parts[-3] == "trajectories" else ""
    return model, split, step_in_name(path.stem)


class _Log(NamedTuple):
    """What a log's path says of all its trajectories (`where`), worked out once a file."""

    label: str
    model: str
    split: str
    step: int | None
    checkpoint: str | None
    prefix: str
    """The trace ids' beginning: `art/<model>/<split>/<step>`."""


def _log(label: str) -> _Log:
    model, split, step = where(label)
    parts = "/".join(p for p in (model, split) if p)
    return _Log(label, model, split, step,
                f"{model}@{step:04d}" if model and step is not None else None,
                f"art/{parts}/{step}")


def import_art(source: Source, *, name: str | None = None,
               first_line: int = 1, on_error: OnError | None = None) -> list[Trace]:
    """One trace per trajectory of an ART trajectory log (Parquet or legacy JSON Lines)."""
    data, label = read_source(source, name)
    log = _log(label)
    traces: list[Trace] = []
    if data[:4] == PARQUET_MAGIC:
        with paused_gc(keep=True):
            keys: dict[int, str] = {}
            for n, (group, index, trajectory, group_info) in enumerate(_parquet(data, label)):
                key = keys.get(group)
                if key is None:
                    key = keys[group] = group_id(log.split, log.step, f"g{group}")
                traces.append(_trace(trajectory, group_info, group, index, f"row {n + 1}", log,
                                     key))
    else:
        with paused_gc(keep=True):
            for line, row in rollout_lines(data, label, first_line, on_error):
                if not isinstance(row.get("trajectories"), list):
                    raise TraceError(label, f"line {line}", "is not an ART trajectory group "
                                     "(no trajectories)")
                place = f"line {line}"
                group = group_id(log.split, log.step, f"g{line - 1}")  # once for its siblings
                for index, trajectory in enumerate(t for t in row["trajectories"]
                                                   if t.__class__ is dict):
                    traces.append(_trace(trajectory, row, line - 1, index, place, log, group))
        traces = with_note(traces, pending_note(data, label))
    if not traces:
        raise TraceError(label, "", "holds no ART trajectories yet")
    return traces


ROWS_AT_ONCE = 1024
"""Rows of a Parquet log turned into Python values at a time."""
WHOLE_COLUMNS = frozenset({"group_index", "trajectory_index", "trajectory_json", "group_json",
                           "group_metadata", "group_metrics", "group_logs"})
"""The columns of a format 2 log the reader needs while each row keeps its whole trajectory
(`trajectory_json`): its place, the trajectory, its group. A row without one (a group's
sentinel, or a trajectory kept only flattened) has every column read."""


def _json(value: Any) -> Any:
    if isinstance(value, (str, bytes, memoryview)) and value:
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return None
    return value


def _parquet(data: bytes, label: str):
    """(group index, trajectory index, trajectory dict, group dict) of each row of a Parquet
    log, in the shape the legacy JSON Lines gives them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        log = pq.ParquetFile(pa.BufferReader(data))
        names = log.schema_arrow.names
        if "group_index" not in names:
            raise TraceError(label, "", "is a Parquet file but not an ART trajectory log (no "
                             "group_index column)")
        if "trajectory_json" not in names:  # format 1: the flattened columns are the rows
            rows = _Rows(data)
            for row in log.read().to_pylist():
                found = rows.item(row)
                if found is not None:
                    yield found
            return
        # format 2 keeps each trajectory whole as JSON: its flattened columns (the messages,
        # above all) are not read, and the rows are read a batch at a time, so only a batch
        # of the log is ever held decompressed (the whole table at once took as much memory
        # again as the traces, and the kernel's time to hand it over as much as the reading);
        # in this thread: Arrow's threads took more CPU for a column a batch than they saved
        batches = log.iter_batches(batch_size=ROWS_AT_ONCE, use_threads=False,
                                   columns=[n for n in names if n in WHOLE_COLUMNS])
        yield from _format2(batches, _Rows(data))
    except (pa.ArrowException, OSError) as err:
        raise TraceError(label, "", f"is not a Parquet file orchviz can read ({err})") from None


def _format2(batches, rows: _Rows):
    """`_parquet`'s items from format 2's batches, a column at a time: the whole trajectory's
    JSON parsed where Arrow holds it (`_texts`), its group's JSON once a group. A row that is
    not plain (no whole trajectory, a group not given as JSON, no index) goes the general way
    (`_Rows.item`)."""
    for batch in batches:
        columns = dict(zip(batch.schema.names, batch.columns))
        texts = _texts(columns.pop("trajectory_json"))
        values = {name: column.to_pylist() for name, column in columns.items()}
        group_indexes = values["group_index"]
        indexes = values.get("trajectory_index") or [None] * len(texts)
        group_texts = values.get("group_json") or [None] * len(texts)
        groups, seen = rows.groups, rows.seen
        for k, text in enumerate(texts):
            whole = _json(text)
            group_text = group_texts[k]
            group_info = groups.get(group_text) if group_text.__class__ is str else None
            index = indexes[k]
            if whole.__class__ is dict and group_info is not None and index.__class__ is int:
                group = group_indexes[k] or 0
                rows.place += 1
                seen[group] = index + 1
                yield group, index, whole, group_info
                continue
            found = rows.item({name: column[k] for name, column in values.items()}, whole,
                              narrow=True)
            if found is not None:
                yield found


def _texts(column) -> list[Any]:
    """The values of a column of text as views of Arrow's buffer (memoryviews: not copied, nor
    decoded into Python text only to be parsed); Python values where a value is missing or
    the column is of another type."""
    import numpy as np
    import pyarrow as pa

    kind = column.type
    if column.null_count or not (pa.types.is_string(kind) or pa.types.is_binary(kind)
                                 or pa.types.is_large_string(kind)
                                 or pa.types.is_large_binary(kind)):
        return column.to_pylist()
    _valid, offsets, body = column.buffers()
    if body is None or not len(column):
        return column.to_pylist()
    wide = pa.types.is_large_string(kind) or pa.types.is_large_binary(kind)
    ends = np.frombuffer(offsets, dtype=np.int64 if wide else np.int32)[
        column.offset:column.offset + len(column) + 1].tolist()
    view = memoryview(body)
    return [view[start:end] for start, end in pairwise(ends)]


class _Rows:
    """The rows of a Parquet log read so far: each group's JSON read once (`groups`), the next
    index of each group (`seen`), the row's place (`place`), and every column of the log,
    read once a row of format 2 needs them (`data`: the log)."""

    __slots__ = ("data", "every", "groups", "place", "seen")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.every: list[dict[str, Any]] | None = None
        self.groups: dict[str, Any] = {}
        self.seen: dict[int, int] = {}
        self.place = 0

    def item(self, row: dict[str, Any], whole: Any = None,
             narrow: bool = False) -> tuple[int, int, dict[str, Any], Any] | None:
        """(group index, trajectory index, trajectory dict, group dict) of the next row (None
        for a group's sentinel): `whole` its trajectory parsed from its JSON, where the log
        keeps one (format 2), `narrow` when the row holds only the columns format 2 needs (the
        whole row is then read for a row without its whole trajectory)."""
        n = self.place
        self.place += 1
        group = row.get("group_index") or 0
        if isinstance(whole, dict):
            trajectory = whole
        else:
            if narrow:  # a row of format 2 without its whole trajectory: every column
                row = self._whole_row(n)
            if row.get("reward") is None and row.get("messages") is None:
                return None  # a group sentinel: the group kept no trajectory
            trajectory = {"reward": row.get("reward"), "metrics": _json(row.get("metrics")),
                          "metadata": _json(row.get("metadata")),
                          "tools": _json(row.get("tools")), "logs": row.get("logs"),
                          "messages_and_choices": row.get("messages") or [],
                          "additional_histories": _json(row.get("additional_histories"))}
        text = row.get("group_json")
        group_info = self.groups.get(text) if text.__class__ is str else None
        if group_info is None:
            group_info = _json(text) or {
                "metadata": _json(row.get("group_metadata")),
                "metrics": _json(row.get("group_metrics")), "logs": row.get("group_logs")}
            if text.__class__ is str:  # the rows of a group share it: read once
                self.groups[text] = group_info
        index = row.get("trajectory_index")
        if index.__class__ is not int:
            index = self.seen.get(group, 0)
        self.seen[group] = index + 1
        return group, index, trajectory, group_info

    def _whole_row(self, n: int) -> dict[str, Any]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if self.every is None:
            self.every = pq.read_table(pa.BufferReader(self.data)).to_pylist()
        return self.every[n]


def _trace(trajectory: dict[str, Any], group_info: dict[str, Any], group: int, index: int,
           place: str, log: _Log, key: str) -> Trace:
    """The trace of one trajectory, the `index`-th of group `group` (whose id is `key`)."""
    metadata = trajectory.get("metadata")
    if metadata.__class__ is not dict:
        metadata = {}
    rollout: dict[str, Any] = {"trainer": NAME, "group": key}
    if log.step is not None:  # as `rollouts.rollout_dict` keeps it
        rollout["step"] = log.step
    rollout["index"] = index
    rollout_id = metadata.get("rollout_id") or metadata.get("trace_id")
    if rollout_id is not None:
        rollout["rollout_id"] = as_text(rollout_id)
    if log.checkpoint is not None:
        rollout["checkpoint"] = log.checkpoint
    rollout["split"] = log.split
    rollout["source"] = place
    reward = number(trajectory.get("reward"))
    rewards = {} if reward is None else {TRAINER_REWARD: reward}
    metrics = trajectory.get("metrics")
    metrics = {k: found for k, v in metrics.items() if (found := number(v)) is not None} \
        if metrics.__class__ is dict else None
    messages = trajectory.get("messages_and_choices") or []
    histories = trajectory.get("additional_histories")
    trace_id = f"{log.prefix}/g{group}/t{index}"
    exchange = None if histories else _exchange(messages)
    if exchange is not None:  # most trajectories: the trace a Chat builds, built straight
        system, prompt, answer, finish = exchange
        head = _first_keys(trajectory, metadata, group_info,
                           {"system_prompt": system} if system else {})
        head[ROLLOUT_KEY] = rollout
        scenario = metadata.get("scenario_id")
        trace = Trace(
            trace_id=trace_id, task_id=str(scenario or f"prompt-{prompt_key(prompt)}") or "task",
            system=log.model or "art", events=[
                Event(id="e1", t=0.0, type="human_intervention", agent=POLICY, from_="user",
                      content=prompt, other=head),
                Event(id="e2", t=1.0, type="message", agent=POLICY, content=answer,
                      other=generation(True, finish)),
                POLICY_STOP],
            edges=[], rewards=rewards, costs_=ONE_EXCHANGE_COSTS, metrics=metrics or None)
        trace._source = log.label
        trace._source_format = NAME
        return trace
    chat = Chat()
    chat.messages(messages)
    opening = chat.opening or ""
    if histories:
        for n, history in enumerate(histories, start=1):
            if isinstance(history, dict):
                chat.spawn(f"history-{n}", history.get("messages_and_choices") or [])
    return chat.trace(label=log.label, source_format=NAME, trace_id=trace_id,
                      task_id=str(metadata.get("scenario_id") or f"prompt-{prompt_key(opening)}"),
                      rollout=rollout, rewards=rewards, system=log.model or "art",
                      metrics=metrics, first=_first_keys(trajectory, metadata, group_info, {}))


def _first_keys(trajectory: dict[str, Any], metadata: dict[str, Any], group_info: Any,
                keys: dict[str, Any]) -> dict[str, Any]:
    """`keys` given what a trajectory's first event keeps beside its rollout, those it has:
    its metadata, logs, the names of its tools, its group's metadata."""
    if metadata:
        keys["art_metadata"] = metadata
    logs = trajectory.get("logs")
    if logs:
        keys["art_logs"] = logs
    tools = trajectory.get("tools")
    if isinstance(tools, list):
        names = [t.get("function", t).get("name") for t in tools
                 if isinstance(t, dict) and isinstance(t.get("function", t), dict)]
        if names:
            keys["tools"] = names
    group_metadata = group_info.get("metadata") if group_info else None
    if group_metadata:
        keys["group_metadata"] = group_metadata
    return keys


def _exchange(messages: Any) -> tuple[str, str, str, str | None] | None:
    """(system prompt, prompt, answer, finish reason) of a trajectory that is the plainest
    chat: system turns, one user turn, one Choice of the assistant without tool calls, all of
    text; None for any other (read by `Chat`, which gives such a chat the same trace). The
    system turns are joined as `Chat.messages` joins them ('' for none)."""
    if messages.__class__ is not list or len(messages) < 2:
        return None
    *head, user, choice = messages
    system = []
    for item in head:
        if item.__class__ is not dict or item.get("message").__class__ is dict \
                or item.get("role") not in ("system", "developer"):
            return None
        text = item.get("content")
        if text.__class__ is not str:
            return None
        if text:
            system.append(text)
    if user.__class__ is not dict or user.get("message").__class__ is dict \
            or user.get("role") != "user":
        return None
    prompt = user.get("content")
    if prompt.__class__ is not str or not prompt or choice.__class__ is not dict:
        return None
    message = choice.get("message")
    finish = choice.get("finish_reason", _NO_FINISH)
    if message.__class__ is not dict or finish is _NO_FINISH or \
            finish.__class__ not in (str, type(None)) or message.get("role") != "assistant" \
            or message.get("tool_calls"):
        return None
    answer = message.get("content")
    if answer is None:
        answer = ""
    elif answer.__class__ is not str:
        return None
    return "\n\n".join(system), prompt, answer, finish


_NO_FINISH = object()
