"""Judged pairs across tasks: a preference row's prompt is one task, so a pair whose traces
attempt different tasks is left out and counted unless `--allow-cross-task` asks for it."""

from __future__ import annotations

import json

from test_preference_export import (export, folder, save_preference, traces,  # noqa: F401
                                    url, ws)

from viz_app.cli import main


def test_a_cross_task_pair_is_left_out_and_counted(ws, traces, folder, url, tmp_path, capsys):
    save_preference(ws, traces["run-a"], traces["run-z"], "run-a", "ann", "a finishes")
    save_preference(ws, traces["run-a"], traces["run-b"], "run-a", "ann", "a waits")
    rows = export(url, folder, tmp_path / "pref.jsonl")
    assert [(r["chosen_trace_id"], r["rejected_trace_id"]) for r in rows] == [("run-a",
                                                                              "run-b")]
    err = capsys.readouterr().err
    assert "1 judged pairs left out because their two traces attempt different tasks" in err
    assert "run-a vs run-z (t1 vs t2)" in err


def test_allow_cross_task_writes_them_and_says_how_many(ws, traces, folder, url, tmp_path,
                                                        capsys):
    save_preference(ws, traces["run-a"], traces["run-z"], "run-z", "ann", "z finishes")
    rows = export(url, folder, tmp_path / "pref.jsonl", "--allow-cross-task")
    (row,) = rows
    assert row["chosen_trace_id"] == "run-z" and row["prompt"] == "Task: t2\n"
    assert row["same_task"] is False
    assert "1 judged pairs across tasks written (--allow-cross-task)" in capsys.readouterr().err


def test_allow_cross_task_is_refused_by_shapes_without_pairs(ws, folder, url, tmp_path, capsys):
    code = main(["labels", "export", "--db", url, "--format", "unpaired", "--traces",
                 str(folder), "-o", str(tmp_path / "u.jsonl"), "--allow-cross-task"])
    assert code == 2
    assert "--allow-cross-task does not apply to --format unpaired" in capsys.readouterr().err


def test_openrlhf_rm_refuses_cross_task_pairs_too(ws, traces, folder, url, tmp_path):
    save_preference(ws, traces["run-a"], traces["run-z"], "run-a", "ann", "a finishes")
    out = tmp_path / "rm.jsonl"
    assert main(["labels", "export", "--db", url, "--format", "openrlhf-rm", "--traces",
                 str(folder), "-o", str(out)]) == 0
    assert out.read_text() == ""
    assert main(["labels", "export", "--db", url, "--format", "openrlhf-rm", "--traces",
                 str(folder), "-o", str(out), "--allow-cross-task"]) == 0
    assert json.loads(out.read_text())["chosen_trace_id"] == "run-a"
