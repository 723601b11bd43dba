"""No number can crash a reader, the index, a page or an export (issue 39, item 1): an integer
beyond 64 bits is refused in one sentence naming the file and the place; a finite number at the
float's edge (1e308, an `end_t` near the largest float, -0.0) loads and is shown sensibly; and a
file that fails while being indexed is one failure row, never a broken library."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from factories import APP, REPO, app_env, copy_demos, make_workspace
from viz_app.analysis import analyze, figure_rows, figure_text
from viz_app.errors import TraceError
from viz_app.export import FORMATS
from viz_app.io.detect import read_any
from viz_app.io.native import dump_trace, trace_from_dict, trace_from_json

HUGE = int("9" * 400)
"""A 400-digit integer: valid JSON, beyond any float."""


def minimal(trace_id: str = "t", **changes) -> dict:
    """A valid trace of three events (a spawn, a message, an aggregate and a stop decision),
    with `changes` made to its second event."""
    events = [
        {"id": "e0", "t": 0, "type": "spawn", "agent": "orch", "to": "w"},
        {"id": "e1", "t": 1, "type": "message", "agent": "w", "to": "orch", "content": "hi"},
        {"id": "e2", "t": 2, "type": "aggregate", "agent": "orch", "content": "merged"},
        {"id": "e3", "t": 3, "type": "orchestrator_decision", "agent": "orch",
         "decision": "stop", "content": "done"},
    ]
    events[1].update(changes)
    return {"trace_id": trace_id, "task_id": "k", "events": events,
            "edges": [{"src": "e1", "dst": "e2", "type": "aggregate"}], "rewards": {},
            "costs": {"tokens": 0, "wall_clock_s": 3}}


def with_top(key: str, value) -> dict:
    raw = minimal()
    raw[key] = value
    return raw


REFUSED = {
    "tokens": (minimal(tokens=HUGE), "events[1].tokens"),
    "negative cost": (minimal(cost_usd=-HUGE), "events[1].cost_usd"),
    "t": (minimal(t=HUGE), "events[1].t"),
    "end_t": (minimal(end_t=HUGE), "events[1].end_t"),
    "call id": (minimal(call_id=HUGE), "events[1].call_id"),
    "token ids": (minimal(prompt_token_ids=[1, 2, HUGE]), "events[1].prompt_token_ids[2]"),
    "extra key": (minimal(score={"deep": [1, HUGE]}), "events[1].score.deep[1]"),
    "costs": (with_top("costs", {"tokens": HUGE, "wall_clock_s": 1}), "costs.tokens"),
    "rewards": (with_top("rewards", {"r": HUGE}), "rewards.r"),
    "metrics": (with_top("metrics", {"m": 2**64}), "metrics.m"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_an_integer_beyond_64_bits_is_refused_naming_the_file_and_the_place(case):
    raw, place = REFUSED[case]
    text = json.dumps(raw).encode()
    for read in (lambda: trace_from_json(text, "huge.json"),
                 lambda: trace_from_dict(json.loads(text), "huge.json")):
        with pytest.raises(TraceError) as caught:
            read()
        assert caught.value.file == "huge.json" and caught.value.place == place
        assert "beyond the 64 bits" in caught.value.problem
        assert len(str(caught.value)) < 300  # the 400 digits are not printed


def test_the_largest_64_bit_integer_still_loads():
    trace = trace_from_json(json.dumps(minimal(tokens=2**63 - 1)).encode(), "big.json")
    assert trace.events[1].tokens == float(2**63 - 1)


EDGE_OF_FLOAT = {
    "1e308 tokens and dollars": minimal(tokens=1e308, cost_usd=1e308),
    "end_t near the largest float": minimal(end_t=1.7976931348623157e308),
    "a t near the largest float": {**minimal(), "events": [
        *minimal()["events"][:3], {**minimal()["events"][3], "t": 1.7e308}]},
    "-0.0": minimal(t=-0.0, tokens=-0.0, cost_usd=-0.0),
    "tiny": minimal(tokens=5e-324, end_t=1.0000000000000002),
    "sums past the largest float": {**minimal(tokens=1e308, cost_usd=1e308), "events": [
        {**e, "tokens": 1.5e308, "cost_usd": 1.5e308} for e in minimal()["events"]]},
}


@pytest.mark.parametrize("case", sorted(EDGE_OF_FLOAT))
def test_a_number_at_the_edge_of_the_float_loads_and_is_shown_in_a_few_characters(case):
    trace = trace_from_json(json.dumps(EDGE_OF_FLOAT[case]).encode(), "edge.json")
    for row in figure_rows(analyze(trace).figures):
        assert len(row.value) <= 24, (row.name, row.value)
        assert "inf" not in row.value and "nan" not in row.value


def test_figure_text_writes_a_long_number_with_an_exponent_and_says_when_a_sum_overflowed():
    assert figure_text("makespan", 1.7e308) == "1.7e+308s"
    assert figure_text("cost", 1e308) == "$1e+308"
    assert figure_text("tokens", float("inf")) == "more than 1.8e+308"
    assert figure_text("cost", -float("inf")) == "-more than $1.8e+308"
    assert figure_text("tokens", 12_345) == "12,345"  # ordinary numbers as before


# -- the library, inspect, report ---------------------------------------------------------------


@pytest.fixture
def hostile_folder(tmp_path) -> Path:
    """Two demo traces, the 400-digit trace, and a trace at each edge of the float."""
    folder = copy_demos(tmp_path / "library", ["01_centralized_research_faithful",
                                               "10_review_premature_stop"])
    (folder / "huge.json").write_text(json.dumps(minimal("huge", tokens=HUGE)))
    for number, (case, raw) in enumerate(sorted(EDGE_OF_FLOAT.items())):
        (folder / f"edge{number}.json").write_text(json.dumps({**raw, "trace_id": f"edge{number}"}))
    return folder


def test_the_index_lists_the_good_traces_and_one_failure_row_for_the_400_digit_trace(
        hostile_folder, tmp_path):
    ws = make_workspace(tmp_path, traces=[hostile_folder])
    for _ in range(2):  # indexed, then listed from the index
        result = ws.library.update_index()
        assert len(result.rows) == 2 + len(EDGE_OF_FLOAT)
        (failure,) = result.failures
        assert failure.path.endswith("huge.json")
        assert "events[1].tokens" in failure.error and "64 bits" in failure.error


def test_a_trace_that_fails_after_its_reader_is_one_failure_row_and_the_others_list(
        hostile_folder, tmp_path, monkeypatch):
    import viz_app.store.index as index

    real = index.summarise

    def summarise(trace, *args, **kwargs):
        if trace.trace_id == "edge0":
            raise OverflowError("int too large to convert to float")
        return real(trace, *args, **kwargs)

    monkeypatch.setattr(index, "summarise", summarise)
    result = make_workspace(tmp_path, traces=[hostile_folder]).library.update_index()
    assert len(result.rows) == 1 + len(EDGE_OF_FLOAT)
    assert sorted(Path(f.path).name for f in result.failures) == ["edge0.json", "huge.json"]
    assert any("OverflowError" in f.error for f in result.failures)


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "viz_app", *args], capture_output=True,
                          text=True, timeout=180, cwd=cwd, env={**os.environ,
                                                                "PYTHONPATH": str(REPO)})


def test_inspect_and_report_say_one_sentence_for_the_400_digit_trace(hostile_folder, tmp_path):
    huge = hostile_folder / "huge.json"
    for args in (["inspect", str(huge)], ["report", str(huge), "-o", str(tmp_path / "r.html")]):
        done = cli(*args, cwd=tmp_path)
        assert done.returncode == 1
        assert "Traceback" not in done.stderr
        (line,) = done.stderr.strip().splitlines()
        assert f"{huge}: events[1].tokens: 9999…9999 (400 digits)" in line


def test_inspect_and_report_show_the_traces_at_the_edge_of_the_float(hostile_folder, tmp_path,
                                                                       capsys, monkeypatch):
    """In this process (`main`, which `python -m viz_app` calls), as the command itself is
    run by the test above: twelve commands' start-up would be most of this test's time."""
    from viz_app.cli import main

    monkeypatch.chdir(tmp_path)
    for path in sorted(hostile_folder.glob("edge*.json")):
        capsys.readouterr()
        code = main(["inspect", str(path)])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert not any(len(line) > 120 for line in out.splitlines()), out
        report = tmp_path / f"{path.stem}.html"
        code = main(["report", str(path), "-o", str(report)])
        assert code == 0, capsys.readouterr().err
        assert "Traceback" not in report.read_text("utf-8")


def test_the_library_page_lists_the_good_traces_and_one_failure_row(hostile_folder, tmp_path,
                                                                     monkeypatch):
    app_env(monkeypatch, make_workspace(tmp_path, traces=[hostile_folder]))
    for _ in range(2):  # the first visit indexes, the second lists from the index
        at = AppTest.from_file(str(APP), default_timeout=120).run()
        assert not at.exception
        listed = at.dataframe[0].value["trace id"].tolist()
        assert len(listed) == 2 + len(EDGE_OF_FLOAT) and "huge" not in listed
        shown = " ".join([*(str(m.value) for m in [*at.markdown, *at.caption, *at.error,
                                                   *at.warning]),
                          *(frame.value.to_csv() for frame in at.dataframe[1:])])
        assert "huge.json" in shown and "events[1].tokens" in shown


# -- every export --------------------------------------------------------------------------------


def test_every_export_writes_the_traces_at_the_edge_of_the_float(hostile_folder, tmp_path):
    ws = make_workspace(tmp_path, traces=[hostile_folder])
    ws.library.update_index()
    traces = {t: ws.library.trace(t) for t in (f"edge{n}" for n in range(len(EDGE_OF_FLOAT)))}
    for trace in traces.values():
        ws.labelling.save(trace, "task_outcome", "success", "ann")
        ws.labelling.save(trace, "aggregation_quality", 2, "ann", "e2")
        ws.labelling.save(trace, "stopping_correctness", "premature", "ann", "e3")
        ws.bookmarks.add(trace, "ann", "a huge one", event_id="e1")
    for name, found in FORMATS.items():
        output = tmp_path / "out" / (name if found.writes_folder else f"{name}.out")
        result = ws.exports.write(name, output, traces=traces)  # no exception escapes
        assert result.format == name
    lines = (tmp_path / "out" / "rewards.out").read_text().splitlines()
    assert len(lines) == 3 * len(EDGE_OF_FLOAT)


def test_read_any_refuses_the_400_digit_trace_in_a_jsonl_pool_by_its_line(tmp_path):
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps(minimal("a")) + "\n" + json.dumps(minimal("b", tokens=HUGE))
                    + "\n")
    errors: list[TraceError] = []
    (trace,) = read_any(pool, on_error=errors.append)
    assert trace.trace_id == "a"
    (error,) = errors
    assert error.place == "line 2: events[1].tokens"


# -- every reader ---------------------------------------------------------------------------------

IMPORTER_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "importers"
LITERALS = {"a 400-digit integer": "9" * 400, "1e308": "1e308", "-1e308": "-1e308",
            "-0.0": "-0.0", "a huge exponent": "1e999999", "2**64": str(2**64)}
_SLOT = "\ue000number\ue000"


def _numbers_replaced(tree, slot: str):
    if isinstance(tree, bool) or tree is None:
        return tree
    if isinstance(tree, (int, float)):
        return slot
    if isinstance(tree, dict):
        return {key: _numbers_replaced(value, slot) for key, value in tree.items()}
    if isinstance(tree, list):
        return [_numbers_replaced(value, slot) for value in tree]
    return tree


def every_number_as(path: Path, literal: str) -> bytes:
    """The file with every number in it (timestamps, token counts, ids...) written as
    `literal`; a line of a JSON Lines file that is not JSON stays as it is."""
    text = path.read_text("utf-8")
    lines = text.splitlines() if path.suffix == ".jsonl" else [text]
    written = []
    for line in lines:
        try:
            written.append(json.dumps(_numbers_replaced(json.loads(line), _SLOT)))
        except ValueError:
            written.append(line)
    return "\n".join(written).replace(json.dumps(_SLOT), literal).encode()


@pytest.mark.parametrize("fixture", sorted(
    p.name for p in IMPORTER_FIXTURES.iterdir() if p.suffix in (".json", ".jsonl")))
def test_every_reader_refuses_or_reads_every_hostile_number_and_its_figures_stand(fixture):
    for literal in LITERALS.values():
        data = every_number_as(IMPORTER_FIXTURES / fixture, literal)
        errors: list[TraceError] = []
        try:
            traces = read_any(data, name=fixture, on_error=errors.append)
        except TraceError as err:
            assert err.file == fixture and "Traceback" not in str(err)
            continue
        for trace in traces:  # what was read is figured and written back without a crash
            for row in figure_rows(analyze(trace).figures):
                assert len(row.value) <= 24
            trace_from_json(dump_trace(trace), "again.json")


def test_a_pool_of_the_traces_at_the_edge_of_the_float_is_written_indexed_and_listed(
        hostile_folder, tmp_path, capsys):
    from viz_app.cli import main

    for path in hostile_folder.glob("*.json"):
        if not path.name.startswith("edge"):
            path.unlink()
    pool, db = str(tmp_path / "pool"), str(tmp_path / "pool.db")
    assert main(["pool", "write", str(hostile_folder), "-o", pool]) == 0
    assert main(["pool", "index", pool, "--db", db]) == 0
    capsys.readouterr()
    assert main(["pool", "ls", pool, "--db", db]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == 1 + len(EDGE_OF_FLOAT)
    assert all(len(line) < 120 for line in listed), listed
    assert any("1e+308" in line for line in listed)
