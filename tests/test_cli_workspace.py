"""The `orchviz` command over a Workspace: `--traces` takes one folder or file and repeats, so
positionals may follow it; files under it that hold no trace are counted in one line; what
orchviz cannot do is said in one line with exit code 1, never a traceback; every verb answers
`--help`."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from factories import DROPPED, DROPPED_ID, PREMATURE, PREMATURE_ID
from viz_app.cli import build_parser, main
from viz_app.settings import DEMO_TRACES
from viz_app.workspace import Workspace


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def folder_of(tmp_path: Path, name: str, *traces: Path) -> Path:
    """A folder holding copies of trace files."""
    folder = tmp_path / name
    folder.mkdir()
    for path in traces:
        shutil.copy(path, folder / path.name)
    return folder


def labels_file(path: Path, *records: dict) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return path


def record(trace_id: str = PREMATURE_ID, value: int = 2, reviewer: str = "ann") -> dict:
    return {"trace_id": trace_id, "event_id": "e12", "question": "aggregation_quality",
            "value": value, "reviewer": reviewer}


# -- --traces --------------------------------------------------------------------------------


def test_labels_import_takes_its_files_after_traces(tmp_path, capsys):
    folder = folder_of(tmp_path, "traces", PREMATURE)
    labels = labels_file(tmp_path / "ann.jsonl", record())
    code, out, err = run(capsys, "labels", "import", "--db", tmp_path / "o.db",
                         "--traces", folder, labels)
    assert code == 0, err
    assert f"{labels}: 1 records, 1 new labels" in out
    (label,) = Workspace.open(tmp_path / "o.db").labelling.all()
    assert (label.reviewer, label.value, label.identified_by) == ("ann", 2, "import")


def test_traces_repeats_for_several_folders(tmp_path, capsys):
    first = folder_of(tmp_path, "a", PREMATURE)
    second = folder_of(tmp_path, "b", DROPPED)
    labels = labels_file(tmp_path / "l.jsonl", record(), record(DROPPED_ID, 4))
    code, out, err = run(capsys, "labels", "import", "--db", tmp_path / "o.db",
                         "--traces", first, "--traces", second, labels)
    assert code == 0, err
    assert "2 records, 2 new labels" in out
    code, out, _ = run(capsys, "labels", "progress", "--db", tmp_path / "o.db",
                       "--traces", first, "--traces", DROPPED)  # a folder, then a file
    assert code == 0
    assert {line.split(":")[0] for line in out.splitlines()} == {PREMATURE_ID, DROPPED_ID}


def test_one_traces_value_still_reads_as_before(tmp_path, capsys):
    code, out, _ = run(capsys, "labels", "progress", "--db", tmp_path / "o.db",
                       "--traces", PREMATURE)
    assert code == 0 and out.startswith(f"{PREMATURE_ID}: 0 of ")


def test_the_export_reads_traces_from_every_traces_given(tmp_path, capsys):
    db = tmp_path / "o.db"
    labels = labels_file(tmp_path / "l.jsonl", record(), record(DROPPED_ID, 4))
    assert main(["labels", "import", "--db", str(db), "--traces", str(PREMATURE),
                 "--traces", str(DROPPED), str(labels)]) == 0
    out = tmp_path / "labelled"
    code, printed, err = run(capsys, "labels", "export", "--db", db, "--format", "traces",
                             "--traces", PREMATURE, "--traces", DROPPED, "-o", out)
    assert code == 0 and "2 traces in" in printed and "skipped" not in err
    assert len(list(out.glob("*.json"))) == 2


@pytest.mark.parametrize("given, listed", [
    ([], [DEMO_TRACES]), (["--traces", "a"], ["a"]), (["--traces", "a", "--traces", "b"],
                                                     ["a", "b"])])
def test_the_app_lists_every_traces_given_or_the_demos(monkeypatch, capsys, given, listed):
    from viz_app.cli import app

    seen: dict = {}
    monkeypatch.setattr(app.os, "execve", lambda path, command, env: seen.update(env))
    assert main(["app", *given, "--db", "x.db"]) == 0
    assert seen["ORCHVIZ_TRACES"].split(os.pathsep) == [str(Path(p).resolve()) for p in listed]


def test_files_that_are_not_traces_are_counted_in_one_line(tmp_path, capsys):
    folder = folder_of(tmp_path, "traces", PREMATURE, DROPPED)
    labels = labels_file(folder / "labels.jsonl", record())  # beside the traces
    (folder / "notes.json").write_text('{"note": "not a trace"}', "utf-8")
    (folder / "config.json").write_text("[1, 2, 3]", "utf-8")
    code, out, err = run(capsys, "labels", "import", "--db", tmp_path / "o.db",
                         "--traces", folder, labels)
    assert code == 0 and "1 records, 1 new labels" in out
    lines = [line for line in err.splitlines() if "skipped" in line]
    assert len(lines) == 1 and "skipped 3 files under --traces" in lines[0]
    assert "config.json" in lines[0] and "and 1 more" in lines[0]
    assert "no format orchviz reads" not in err


# -- errors ----------------------------------------------------------------------------------


def one_line_error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def orchviz(*argv) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "viz_app", *map(str, argv)],
                          capture_output=True, text=True, timeout=120)


def test_a_bad_rubric_file_is_one_line_and_exit_1(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nquestions: [\n  - id: q\n", "utf-8")
    line = one_line_error(orchviz("labels", "progress", "--db", tmp_path / "o.db",
                                  "--rubric", bad, "--traces", PREMATURE))
    assert "bad.yaml: line" in line
    assert "bad.yaml: line" in one_line_error(orchviz("labels", "rubric", "--rubric", bad))


def test_a_label_naming_an_unknown_trace_is_one_line_and_exit_1(tmp_path):
    labels = labels_file(tmp_path / "l.jsonl", record("no-such-trace"))
    line = one_line_error(orchviz("labels", "import", "--db", tmp_path / "o.db",
                                  "--traces", PREMATURE, labels))
    assert "nothing imported" in line and "no-such-trace" in line


@pytest.mark.parametrize("argv", [
    ["labels", "progress", "--traces", "{tmp}/absent"],
    ["labels", "export", "--format", "stepwise", "--traces", "{tmp}/absent", "-o", "{tmp}/o"],
    ["labels", "import", "--traces", str(PREMATURE), "{tmp}/absent.jsonl"],
    ["report", "{tmp}/absent.json", "--db", "{tmp}/o.db"],
    ["import", str(PREMATURE), "--db", "{tmp}/o.db", "--rubric", "{tmp}/absent.yaml",
     "-o", "{tmp}/t.json"],
])
def test_a_file_that_is_not_there_is_one_line_and_exit_1(tmp_path, capsys, argv):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    if argv[0] == "labels":
        argv[2:2] = ["--db", str(tmp_path / "o.db")]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 1
    assert len([line for line in err.splitlines() if "absent" in line]) == 1, err
    assert "Traceback" not in err


def test_a_database_written_by_a_newer_orchviz_is_one_line_and_exit_1(tmp_path):
    import sqlite3

    db = tmp_path / "o.db"
    Workspace.open(db)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE alembic_version SET version_num = 'from_the_future'")
    line = one_line_error(orchviz("labels", "agreement", "--db", db))
    assert "newer orchviz" in line


# -- help ------------------------------------------------------------------------------------


def verbs(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    """Every verb of the command line, as the words that name it."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*prefix, name)
                yield from verbs(sub, (*prefix, name))


ALL_VERBS = list(verbs(build_parser()))


def test_the_verbs_include_every_group():
    assert {("labels", "import"), ("labels", "export"), ("report",), ("app",),
            ("import",)} <= set(ALL_VERBS)


@pytest.mark.parametrize("verb", ALL_VERBS, ids=" ".join)
def test_every_verb_answers_help(verb, capsys):
    with pytest.raises(SystemExit) as done:
        main([*verb, "--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: orchviz {' '.join(verb)}")


def test_the_help_of_labels_import_shows_the_natural_order(capsys):
    with pytest.raises(SystemExit):
        main(["labels", "import", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--traces DIR FILE" in text and "--traces a --traces b" in text


def test_the_console_script_answers_help():
    done = subprocess.run([sys.executable, "-m", "viz_app", "--help"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "usage: orchviz" in done.stdout


def test_every_verb_declares_the_store_and_the_rubric_in_one_place():
    """`--db` and `--rubric` are declared and the Workspace opened by viz_app/cli/workspace.py
    alone; every verb with a store or a rubric says what it is in its `--help`."""
    cli = Path(__file__).resolve().parent.parent / "viz_app" / "cli"
    written = [p.name for p in cli.glob("*.py") if p.name != "workspace.py" and any(
        said in p.read_text("utf-8") for said in ('"--db"', '"--rubric"', "Workspace.open(",
                                                  "Workspace("))]
    assert written == []
    with_store = 0
    for verb in ALL_VERBS:
        parser = build_parser()
        for word in verb:
            parser = next(a for a in parser._actions
                          if isinstance(a, argparse._SubParsersAction)).choices[word]
        options = {o: a for a in parser._actions for o in a.option_strings}
        if "--db" in options:
            with_store += 1
            assert "SQLAlchemy URL or a SQLite file" in options["--db"].help, verb
        if "--rubric" in options:
            assert "default: the packaged rubric" in options["--rubric"].help, verb
    assert with_store >= 30  # campaign, labels, db, app, pool, replay, report, reward, suggest


def test_a_command_loads_its_rubric_before_it_opens_the_store(tmp_path):
    """A rubric that cannot be used stops the command before the SQLite file is made; a pool's
    index opens whatever the rubric says and keeps why it cannot judge (`rubric_error`)."""
    from viz_app.cli.workspace import open_workspace
    from viz_app.errors import RubricError

    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nquestions: [\n", "utf-8")
    args = argparse.Namespace(db=str(tmp_path / "o.db"), rubric=str(bad))
    with pytest.raises(RubricError):
        open_workspace(args)
    assert not (tmp_path / "o.db").exists()
    ws = open_workspace(args, rubric_first=False)
    assert ws.rubric_error is not None and "bad.yaml" in str(ws.rubric_error)
    fine = open_workspace(argparse.Namespace(db=str(tmp_path / "p.db"), traces=[str(PREMATURE)]))
    assert ws.settings.traces == [] and fine.settings.traces == [PREMATURE]
    assert fine.rubric.questions
