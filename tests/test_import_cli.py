"""`orchviz import`: detection said on stderr, outputs, --from, --redact, errors."""

import json
import subprocess
import sys
from pathlib import Path

from importing import FIXTURES

from viz_app.cli import main
from viz_app.io.native import load_trace, load_traces


def test_help_lists_every_option_and_format(capsys):
    try:
        main(["import", "--help"])
    except SystemExit:
        pass
    text = capsys.readouterr().out
    for word in ("--from", "--out-dir", "--redact", "-o", "claude_code", "whowhen"):
        assert word in text


def test_import_one_file_says_what_it_detected(tmp_path, capsys):
    out = tmp_path / "session.json"
    assert main(["import", str(FIXTURES / "claude_session.jsonl"), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "read as claude_code" in err
    assert load_trace(out).trace_id == "s-1111"


def test_out_dir_writes_one_valid_file_per_trace(tmp_path, capsys):
    sources = [FIXTURES / "claude_code_project", FIXTURES / "codex_rollouts",
               FIXTURES / "otlp_genai_hex.json", FIXTURES / "inspect_handoff.eval"]
    assert main(["import", *map(str, sources), "--out-dir", str(tmp_path)]) == 0
    written = sorted(p.name for p in tmp_path.glob("*.json"))
    assert len(written) == 4
    assert all(load_trace(p) for p in tmp_path.glob("*.json"))


def test_many_traces_to_jsonl(tmp_path, capsys):
    out = tmp_path / "all.jsonl"
    assert main(["import", str(FIXTURES / "openai_agents.jsonl"),
                 str(FIXTURES / "whowhen_magentic.json"), "-o", str(out)]) == 0
    assert len(list(load_traces(out))) == 2


def test_from_overrides_detection_and_fails_clearly_on_a_mismatch(tmp_path, capsys):
    code = main(["import", str(FIXTURES / "whowhen_magentic.json"), "--from", "otlp",
                 "-o", str(tmp_path / "x.json")])
    assert code == 1
    assert "resourceSpans" in capsys.readouterr().err


def test_redact_flag_leaves_only_hashes(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["import", str(FIXTURES / "claude_session.jsonl"), "--redact", "-o",
                 str(out)]) == 0
    data = json.loads(out.read_text())
    assert all("content" not in e for e in data["events"])
    assert any(e.get("content_ref", "").startswith("sha256:") for e in data["events"])


def test_a_truncated_file_fails_with_file_and_line(tmp_path, capsys):
    code = main(["import", str(FIXTURES / "claude_truncated.jsonl"), "-o",
                 str(tmp_path / "t.json")])
    err = capsys.readouterr().err
    assert code == 1
    assert "claude_truncated.jsonl: line 7" in err


def test_stdout_gets_the_trace_when_no_output_is_named():
    done = subprocess.run([sys.executable, "-m", "viz_app", "import",
                           str(FIXTURES / "otlp_genai_base64.json")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert json.loads(done.stdout)["trace_id"] == "5b8efff798038103d269b633813fc60c"
    assert "read as otlp" in done.stderr


def test_db_stores_the_who_and_when_annotation_once_as_imported_labels(tmp_path, capsys):
    from viz_app.workspace import Workspace

    db = tmp_path / "orchviz.db"
    args = ["import", str(FIXTURES / "whowhen_magentic.json"), "--db", str(db), "-o",
            str(tmp_path / "w.json")]
    assert main(args) == 0 and main(args) == 0
    err = capsys.readouterr().err
    assert "stored 1 published label in" in err and "stored 0 published labels in" in err
    (label,) = Workspace.open(db).labelling.all()
    assert (label.source, label.origin, label.question, label.identified_by) == (
        "import", "Who&When", "task_outcome", "import")


def test_db_checks_the_annotation_against_the_rubric_named(tmp_path, capsys):
    import yaml

    from viz_app.workspace import Workspace

    packaged = Path(__file__).resolve().parent.parent / "viz_app" / "labels" / "default_rubric.yaml"
    raw = yaml.safe_load(packaged.read_text("utf-8"))
    raw["version"] = "9.9"
    rubric = tmp_path / "team.yaml"
    rubric.write_text(yaml.safe_dump(raw), "utf-8")
    db = tmp_path / "orchviz.db"
    assert main(["import", str(FIXTURES / "whowhen_magentic.json"), "--db", str(db),
                 "--rubric", str(rubric), "-o", str(tmp_path / "w.json")]) == 0
    (label,) = Workspace.open(db, rubric=rubric).labelling.all()
    assert label.rubric_version == "9.9"
