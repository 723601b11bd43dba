"""The `orchviz` trace verbs: validate, inspect, schema, synth."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from factories import DEMO_DIR, EXAMPLE_PATH, reference_validator
from viz_app.cli import main


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_console_script_answers_help_on_every_verb():
    for verb in ["validate", "inspect", "schema", "synth", "app"]:
        done = subprocess.run([sys.executable, "-m", "viz_app", verb, "--help"],
                              capture_output=True, text=True, check=True)
        assert "usage: orchviz" in done.stdout


def test_validate_says_ok_for_each_demo_trace_and_exits_0(capsys):
    code, out, _ = run(capsys, "validate", str(DEMO_DIR))
    assert code == 0
    assert out.count(": ok") == len(list(DEMO_DIR.glob("*.json")))


def test_validate_reports_the_bad_file_with_its_place_and_exits_1(capsys, tmp_path):
    (tmp_path / "good.json").write_bytes(EXAMPLE_PATH.read_bytes())
    (tmp_path / "bad.json").write_text('{"trace_id": "x"', "utf-8")
    code, out, _ = run(capsys, "validate", str(tmp_path / "*.json"))
    assert code == 1
    assert "good.json: ok" in out
    assert "bad.json: line 1, column" in out


def test_validate_json_gives_a_machine_readable_report(capsys, tmp_path):
    (tmp_path / "bad.json").write_text("[]", "utf-8")
    code, out, _ = run(capsys, "validate", "--json", str(tmp_path))
    report = json.loads(out)
    assert code == 1 and report["valid"] is False
    [entry] = report["files"]
    assert entry["errors"][0]["place"] == "top level"


def test_inspect_json_has_the_promised_keys(capsys):
    code, out, _ = run(capsys, "inspect", "--json", str(EXAMPLE_PATH))
    figures = json.loads(out)
    assert code == 0
    for key in ["trace_id", "events", "agents", "depth", "max_fanout", "mean_fanout", "messages",
                "tool_calls", "makespan_s", "parallelism", "critical_path_s", "tokens",
                "aggregates", "stops", "warnings"]:
        assert key in figures
    assert figures["stops"][0]["inferred"] is True


def test_inspect_prints_a_readable_summary(capsys):
    code, out, _ = run(capsys, "inspect", str(EXAMPLE_PATH))
    assert code == 0
    assert "aggregate e8 by orchestrator" in out and "inferred" in out


def test_inspect_of_a_bad_file_prints_the_error_and_exits_1(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("", "utf-8")
    code, _, err = run(capsys, "inspect", str(bad))
    assert code == 1 and "the file is empty" in err


def test_schema_prints_the_reference_schema_with_the_extension_keys(capsys):
    code, out, _ = run(capsys, "schema")
    schema = json.loads(out)
    event = schema["$defs"]["event"]
    assert code == 0 and event["additionalProperties"] is True
    assert {"content", "end_t", "tokens", "cost_usd", "model", "decision"} <= set(event["properties"])


@pytest.mark.parametrize("topology", ["swarm", "hierarchical"])
def test_synth_writes_a_trace_that_validates_against_the_reference_schema(capsys, tmp_path, topology):
    out_file = tmp_path / "big.json"
    code, out, _ = run(capsys, "synth", "--agents", "50", "--events", "1000", "--topology",
                       topology, "-o", str(out_file))
    raw = json.loads(out_file.read_text("utf-8"))
    assert code == 0 and "1000 events" in out
    reference_validator().validate(raw)
