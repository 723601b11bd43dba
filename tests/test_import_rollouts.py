"""The rollout files RL trainers write become traces that keep the training step, the group of
siblings sampled for one prompt, the trainer's reward (a reward the trace carries, never a
label) and the checkpoint where the file says it; a line the trainer is still writing is waited
for; a rollout with spans of the same id is one trace."""

import json
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from importing import FIXTURES as IMPORTERS
from importing import assert_reference_valid, returns, spawns, stop_agents

from viz_app.errors import TraceError
from viz_app.io.detect import choose_format, read_any, read_folder
from viz_app.io.rollouts import ROLLOUT_KEY, complete_lines, rollout_of, trainer_reward

ROLLOUTS = Path(__file__).resolve().parent / "fixtures" / "rollouts"
VERL = ROLLOUTS / "verl" / "gsm8k-grpo" / "rollout_data" / "3.jsonl"
OPENRLHF = ROLLOUTS / "openrlhf" / "poem-ppo" / "rollout_data_rank_0_1313.jsonl"
ART = (ROLLOUTS / "art" / ".art" / "email-agent" / "models" / "agent-7b" / "trajectories"
       / "train" / "0003.jsonl")
SKYRL = ROLLOUTS / "skyrl" / "export"
RLLM = ROLLOUTS / "rllm"


def groups(traces):
    found = defaultdict(list)
    for trace in traces:
        found[rollout_of(trace).group].append(trace)
    return found


@pytest.mark.parametrize("path,fmt", [
    (VERL, "verl"), (OPENRLHF, "openrlhf"), (ART, "art"),
    (SKYRL / "dumped_trajectories" / "global_step_2.jsonl", "skyrl"),
    (SKYRL / "dumped_evals" / "global_step_2_evals" / "openai_gsm8k.jsonl", "skyrl"),
    (RLLM / "solver-judge" / "episodes" / "episode_000000_task7.json", "rllm"),
    (RLLM / "ui_episodes.jsonl", "rllm")])
def test_each_trainers_file_is_detected_and_every_trace_validates(path, fmt):
    assert choose_format(path.read_bytes(), str(path)) == fmt
    traces = read_any(path)
    assert traces
    for trace in traces:
        assert_reference_valid(trace)
        assert trace.source_format == fmt
        found = rollout_of(trace)
        assert found is not None and found.trainer == fmt
        assert "trainer" in trace.rewards
        assert len(stop_agents(trace)) == 1 and trace.events[-1].decision == "stop"


def test_verl_samples_of_one_step_with_the_same_input_are_one_group():
    traces = read_any(VERL)
    assert len(traces) == 6
    by_group = groups(traces)
    assert sorted(len(g) for g in by_group.values()) == [3, 3]
    assert {rollout_of(t).step for t in traces} == {3}
    first = traces[1]
    assert first.rewards == {"trainer": 0.0, "trainer.acc": 0.0}
    prompt, response = first.events[0], first.events[1]
    assert prompt.type == "human_intervention" and "Natalia" in prompt.content
    assert prompt.extras["ground_truth"] == "72"
    assert response.content.endswith("#### 144")
    assert response.extras["reward_extra_info"] == {"pred": "144"}
    assert len({t.trace_id for t in traces}) == 6


def test_verl_validation_dumps_are_their_own_split_and_keep_the_request_id():
    (trace,) = read_any(ROLLOUTS / "verl" / "gsm8k-grpo" / "validation_data" / "3.jsonl")
    found = rollout_of(trace)
    assert (found.split, found.rollout_id, trace.trace_id) == ("val", "req-val-0", "req-val-0")
    assert found.group.startswith("val:3:")


def test_openrlhf_keeps_step_group_reward_and_the_kl_of_each_sample():
    traces = read_any(OPENRLHF)
    assert [rollout_of(t).step for t in traces] == [4, 4, 4, 5]
    assert sorted(len(g) for g in groups(traces).values()) == [1, 1, 2]
    second = traces[1]
    assert second.rewards["trainer"] == 1.0
    assert second.rewards["trainer.with_kl_penalty"] == pytest.approx(1.0007)
    assert second.metrics["kl"] == pytest.approx(0.4 + 0.3)
    assert second.events[1].tokens == 3 and "福星" in second.events[1].content


def test_art_trajectories_of_a_group_are_siblings_and_additional_histories_are_spawned():
    traces = read_any(ART)
    assert [t.trace_id for t in traces] == [
        "art/agent-7b/train/3/g0/t0", "art/agent-7b/train/3/g0/t1",
        "art/agent-7b/train/3/g1/t0", "art/agent-7b/train/3/g1/t1"]
    first = traces[0]
    found = rollout_of(first)
    assert (found.step, found.group, found.checkpoint, found.index) == (
        3, "train:3:g0", "agent-7b@0003", 0)
    assert first.task_id == "sc-118" and first.rewards == {"trainer": 1.0}
    assert first.metrics == {"correct": 1.0, "num_turns": 2.0}
    assert spawns(first) == [("policy", "history-1")]
    assert returns(first) == [("history-1", "policy")]
    call = next(e for e in first.events if e.type == "tool_call")
    result = next(e for e in first.events if e.type == "tool_result")
    assert call.tool == "search_inbox" and "Tokyo offsite" in result.content
    assert any(e.src == call.id and e.dst == result.id and e.type == "tool_dependency"
               for e in first.edges)
    assert first.events[0].extras["system_prompt"].startswith("You are an email")
    assert [e.type for e in first.events][-3:] == ["message", "return", "orchestrator_decision"]
    assert traces[2].events[0].extras["art_logs"] == ["judge: partially grounded"]


def _art_parquet(path: Path, groups_: list[dict], version: int) -> None:
    """A Parquet log as ART's `write_trajectory_groups_parquet` writes it: format 2 (whole
    trajectories as JSON), or the flattened rows of format 1 (messages as structs)."""
    rows = []
    for g, group in enumerate(groups_):
        for i, trajectory in enumerate(group["trajectories"]):
            messages = []
            for m in trajectory["messages_and_choices"]:
                inner = m.get("message", m)
                messages.append({"role": inner["role"], "content": inner.get("content"),
                                 "tool_calls": json.dumps(inner["tool_calls"])
                                 if inner.get("tool_calls") else None,
                                 "tool_call_id": m.get("tool_call_id"),
                                 "trainable": "finish_reason" in m})
            row = {"group_index": g, "reward": trajectory["reward"],
                   "metrics": json.dumps(trajectory["metrics"]),
                   "metadata": json.dumps(trajectory["metadata"]), "tools": None,
                   "logs": trajectory["logs"] or None, "messages": messages,
                   "group_metadata": None, "group_metrics": None, "group_logs": None}
            if version == 2:
                row.update(format_version=2, trajectory_index=i,
                           group_json=json.dumps({"metadata": {}, "metrics": {}, "logs": []}),
                           trajectory_json=json.dumps(trajectory))
            rows.append(row)
    pq.write_table(pa.Table.from_pylist(rows), path, compression="zstd")


@pytest.mark.parametrize("version", [1, 2])
def test_art_parquet_logs_read_as_their_jsonl_did(tmp_path, version):
    folder = tmp_path / "models" / "agent-7b" / "trajectories" / "train"
    folder.mkdir(parents=True)
    groups_ = [json.loads(line) for line in ART.read_text("utf-8").splitlines()]
    log = folder / "0003.parquet"
    _art_parquet(log, groups_, version)
    assert choose_format(log.read_bytes(), str(log)) == "art"
    traces = read_any(log)
    legacy = read_any(ART)
    assert [t.trace_id for t in traces] == [t.trace_id for t in legacy]
    assert [t.rewards for t in traces] == [t.rewards for t in legacy]
    assert [rollout_of(t).group for t in traces] == [rollout_of(t).group for t in legacy]
    for trace in traces:
        assert_reference_valid(trace)
    assert len(read_folder(tmp_path)) == len(traces)  # a log under trajectories/ is found
    (tmp_path / "pool").mkdir()
    shutil.copy(log, tmp_path / "pool" / "shard-0.parquet")  # Parquet elsewhere is not a log
    assert len(read_folder(tmp_path)) == len(traces)
    # format 2 keeps the additional histories the flattened columns leave out
    assert spawns(traces[0]) == ([("policy", "history-1")] if version == 2 else [])


def test_skyrl_training_dump_sums_token_rewards_and_keeps_the_closing_turn():
    traces = read_any(SKYRL / "dumped_trajectories" / "global_step_2.jsonl")
    assert [trainer_reward(t) for t in traces] == [1.0, 0.0, 0.4]
    assert [t.system for t in traces] == ["gsm8k", "gsm8k", "negotiation"]
    assert sorted(len(g) for g in groups(traces).values()) == [1, 2]
    closing = traces[2].events[2]
    assert (closing.agent, closing.content) == ("environment", "<accept>Deal.</accept>")
    assert traces[1].events[1].extras["stop_reason"] == "length"


def test_skyrl_evaluation_dump_is_one_split_per_dataset_and_its_metrics_file_holds_none():
    folder = SKYRL / "dumped_evals" / "global_step_2_evals"
    traces = read_any(folder / "openai_gsm8k.jsonl")
    assert {(rollout_of(t).step, rollout_of(t).split) for t in traces} == {(2, "openai/gsm8k")}
    assert len(groups(traces)) == 1
    assert read_any(folder / "aggregated_results.jsonl") == []


def test_rllm_episode_agents_are_trajectories_the_judge_spawned_by_the_solver():
    (trace,) = read_any(RLLM / "solver-judge" / "episodes" / "episode_000000_task7.json")
    found = rollout_of(trace)
    assert (trace.trace_id, trace.task_id, trace.system) == ("task7:0", "task7", "solver-judge")
    assert (found.group, found.index, found.checkpoint) == ("-:task7", 0, "weights v12")
    assert spawns(trace) == [("solver", "judge")]
    assert trace.rewards == {"trainer": 0.75, "trainer.solver": 1.0, "trainer.judge": 0.5,
                             "trainer.accuracy": 1.0}
    assert trace.metrics == {"solver_acc": 1.0, "task_success": 1.0}


def test_rllm_training_episodes_posted_with_their_step_are_grouped_by_task():
    traces = read_any(RLLM / "ui_episodes.jsonl")
    assert [t.trace_id for t in traces] == ["task9:3@40", "task9:4@40"]
    assert {rollout_of(t).group for t in traces} == {"40:task9"}
    assert [trainer_reward(t) for t in traces] == [0.0, 1.0]


def test_a_half_written_last_line_is_waited_for_not_reported(tmp_path):
    whole = OPENRLHF.read_bytes()
    lines = whole.splitlines(keepends=True)
    growing = tmp_path / "rollout_data_rank_0_1.jsonl"
    growing.write_bytes(b"".join(lines[:2]) + lines[2][:40])
    assert complete_lines(growing.read_bytes())[1] is True
    traces = read_any(growing)
    assert len(traces) == 2
    assert [w.code for w in traces[-1].reader_warnings] == ["last_line_pending"]
    growing.write_bytes(b"".join(lines[:3]))
    assert len(read_any(growing)) == 3
    bad = tmp_path / "rollout_data_rank_1.jsonl"
    bad.write_bytes(lines[0] + b"{not json\n" + lines[1])
    with pytest.raises(TraceError, match="line 2"):
        read_any(bad, fmt="openrlhf")


def test_a_rollout_with_agent_lightning_spans_of_its_id_is_one_trace(tmp_path):
    shutil.copy(ROLLOUTS / "verl" / "sql-agent" / "rollout_data" / "7.jsonl", tmp_path)
    shutil.copy(IMPORTERS / "agentlightning_rollout.json", tmp_path)
    (trace,) = read_folder(tmp_path)
    assert trace.trace_id == "ro-5f2c1a" and trace.source_format == "agentlightning"
    assert spawns(trace) == [("sql_agent", "checker")]
    found = rollout_of(trace)
    assert (found.trainer, found.step, found.rollout_id) == ("verl", 7, "ro-5f2c1a")
    assert trace.rewards["trainer"] == 1.0 and trace.rewards["reward"] == 1.0
    assert "rollout_joined" in [w.code for w in trace.reader_warnings]
    assert_reference_valid(trace)
    assert ROLLOUT_KEY in min(trace.events, key=lambda e: e.t).extras


def test_orchviz_import_names_the_trainers_formats(tmp_path):
    out = tmp_path / "out.jsonl"
    done = subprocess.run([sys.executable, "-m", "viz_app", "import", "--from", "verl", str(VERL),
                           "-o", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "read as verl" in done.stderr
    written = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert len(written) == 6 and written[0]["rewards"]["trainer"] == 1.0
    assert written[0]["events"][0][ROLLOUT_KEY]["step"] == 3
    helped = subprocess.run([sys.executable, "-m", "viz_app", "import", "--help"],
                            capture_output=True, text=True).stdout
    for name in ("verl", "openrlhf", "art", "skyrl", "rllm"):
        assert name in helped


def test_a_format_2_row_without_its_whole_trajectory_is_read_from_its_columns(tmp_path):
    # format 2 is read without its flattened columns (the messages), unless a row lacks its
    # trajectory_json: then every column is read, and that row from them
    folder = tmp_path / "models" / "agent-7b" / "trajectories" / "train"
    folder.mkdir(parents=True)
    groups_ = [json.loads(line) for line in ART.read_text("utf-8").splitlines()]
    log = folder / "0003.parquet"
    _art_parquet(log, groups_, 2)
    table = pq.read_table(log)
    whole = table.column("trajectory_json").to_pylist()
    whole[1] = None
    pq.write_table(table.set_column(table.column_names.index("trajectory_json"),
                                    "trajectory_json", pa.array(whole, pa.string())), log)
    traces = read_any(log)
    legacy = read_any(ART)
    assert [t.trace_id for t in traces] == [t.trace_id for t in legacy]
    assert [t.rewards for t in traces] == [t.rewards for t in legacy]
    assert spawns(traces[0]) == [("policy", "history-1")]  # read whole
    assert traces[1].events[0].content == legacy[1].events[0].content  # from its columns
    assert rollout_of(traces[1]).group == rollout_of(legacy[1]).group


def test_a_format_2_log_read_a_column_at_a_time_gives_each_row_the_trace_it_holds(
        tmp_path, monkeypatch):
    # format 2 is read a batch of rows at a time, a column at a time; a row that is not plain
    # (no index, no group JSON) goes the general way, a group's sentinel row is skipped:
    # across batches and row groups, and with the JSON stored as large strings, the traces
    # are those of the plain log
    from viz_app.io import art as art_reader

    groups_ = [json.loads(line) for line in ART.read_text("utf-8").splitlines()]
    logs = []
    for run in ("plain", "odd"):
        folder = tmp_path / run / "models" / "agent-7b" / "trajectories" / "train"
        folder.mkdir(parents=True)
        logs.append(folder / "0003.parquet")
    plain, odd = logs
    _art_parquet(plain, groups_, 2)
    rows = pq.read_table(plain).to_pylist()
    rows[0]["trajectory_index"] = None
    rows[-1]["group_json"] = None
    rows.append({"group_index": len(groups_), "format_version": 2})  # a group kept none
    table = pa.Table.from_pylist(rows)
    table = table.set_column(table.column_names.index("trajectory_json"), "trajectory_json",
                             table.column("trajectory_json").cast(pa.large_string()))
    pq.write_table(table, odd, row_group_size=3)
    monkeypatch.setattr(art_reader, "ROWS_AT_ONCE", 2)
    expected, got = read_any(plain), read_any(odd)
    assert len(expected) == len(groups_[0]["trajectories"]) + len(groups_[1]["trajectories"])
    assert [(t.trace_id, t.sha256) for t in got] == [(t.trace_id, t.sha256) for t in expected]


def test_the_traces_a_reader_makes_join_the_collectors_oldest_generation(tmp_path):
    """A reader's traces are kept, and acyclic: when the reading ends they join the oldest
    generation as they are, not scanned as young objects; objects someone froze stay frozen."""
    import gc

    dump = tmp_path / "rollout_data" / "1.jsonl"
    dump.parent.mkdir()
    dump.write_text("".join(json.dumps({"input": f"q{i // 4}", "output": "a", "score": 1.0,
                                        "gts": "a", "step": 1}) + "\n" for i in range(400)))
    gc.collect()
    young = gc.get_stats()[0]["collections"]
    traces = read_any(dump)
    assert gc.get_stats()[0]["collections"] == young  # none scanned when the reading ended
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert all(id(t) in oldest and id(t.events) in oldest for t in traces)
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert len(read_any(dump)) == len(traces) == 400
        assert gc.get_freeze_count() == frozen  # left as they were
    finally:
        gc.unfreeze()


def test_the_art_readers_quick_path_makes_the_trace_a_chat_makes(monkeypatch):
    """Most ART trajectories are one exchange (system turns, a user turn, the assistant's
    Choice): the reader builds their trace straight, as fast as the rest of a line's reading.
    It is the trace the general path (a `Chat`) makes of them, byte for byte and hash for
    hash; every other shape takes the general path."""
    import orjson

    from viz_app.io import art as art_reader

    system = {"role": "system", "content": "You answer arithmetic."}
    user = {"role": "user", "content": "What is 6 * 7?"}

    def choice(content="42", finish="stop", **message):
        return {"finish_reason": finish, "index": 0,
                "message": {"role": "assistant", "content": content, **message}}

    shapes = {
        "plain": [user, choice()],
        "with a system turn": [system, user, choice()],
        "two system turns and an empty one": [system, {"role": "developer", "content": ""},
                                              {"role": "system", "content": "Be brief."},
                                              user, choice()],
        "no answer text": [system, user, choice(content=None)],
        "no finish reason": [system, user, choice(finish=None)],
        "a finish reason that is not text": [user, choice(finish=3)],
        "a finish_reason key missing": [user, {"message": {"role": "assistant",
                                                           "content": "42"}}],
        "content parts": [system, {"role": "user", "content": [{"type": "text",
                                                                "text": "6 * 7?"}]}, choice()],
        "a tool call": [user, choice(tool_calls=[{"id": "c1", "type": "function", "function": {
            "name": "calc", "arguments": "{}"}}])],
        "a plain assistant turn": [user, {"role": "assistant", "content": "42"}],
        "two user turns": [user, user, choice()],
    }
    log = art_reader._log("run/models/agent-7b/trajectories/train/0003.jsonl")
    quick: list[str] = []
    for name, messages in shapes.items():
        for extra in ({}, {"additional_histories": [{"messages_and_choices": [user, choice()]}]},
                      {"tools": [{"type": "function", "function": {"name": "calc"}}],
                       "metadata": {"scenario_id": "s1", "rollout_id": "r1"}, "logs": ["x"]}):
            trajectory = {"reward": 1.0, "metrics": {"correct": True}, "metadata": {},
                          "messages_and_choices": messages, **extra}
            group = {"metadata": {"dataset": "gsm8k"}}
            made = art_reader._trace(trajectory, group, 2, 1, "line 3", log, "train:3:g2")
            if art_reader._exchange(messages) is not None and "additional_histories" not in extra:
                quick.append(name)
            with monkeypatch.context() as patched:
                patched.setattr(art_reader, "_exchange", lambda _messages: None)
                chat = art_reader._trace(trajectory, group, 2, 1, "line 3", log, "train:3:g2")
            assert orjson.dumps(made.to_dict(), option=orjson.OPT_SORT_KEYS) == orjson.dumps(
                chat.to_dict(), option=orjson.OPT_SORT_KEYS), name
            assert (made.sha256, made.source, made.source_format, made.reader_warnings) == (
                chat.sha256, chat.source, chat.source_format, chat.reader_warnings), name
    assert set(quick) == {"plain", "with a system turn", "two system turns and an empty one",
                          "no answer text", "no finish reason"}
