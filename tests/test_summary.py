"""One summary of a trace (`viz_app.summary`): what every library row shows, computed once, from
models or from the compiled read path's records alike, without building any graph."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from factories import demo_paths
from viz_app.analysis import analyze
from viz_app.io.decode import decode
from viz_app.io.native import trace_from_dict, trace_from_json
from viz_app.labels.rubric import counted, default_rubric, targets
from viz_app.store.index import trace_record
from viz_app.store.pool_index import summarise_trace
from viz_app.summary import summarise

RUBRIC = default_rubric()


@pytest.mark.parametrize("path", demo_paths(), ids=lambda p: p.stem)
def test_a_demo_s_summary_holds_its_figures(path):
    trace = trace_from_json(path.read_bytes(), str(path))
    found = summarise(trace, RUBRIC)
    f = analyze(trace).figures
    assert (found.events, found.agents, found.depth, found.max_fanout) == (
        f.events, f.agents, f.depth, f.max_fanout)
    assert (found.makespan_s, found.parallelism, found.critical_path_s, found.tokens,
            found.cost_usd, found.warnings) == (f.makespan_s, f.parallelism, f.critical_path_s,
                                                f.tokens, f.cost_usd, len(f.warnings))
    assert found.targets == {t.key: t.required for t in targets(RUBRIC, analyze(trace))
                             if counted(t)}
    assert trace.trace_id in found.text and found.text == found.text.lower()


@pytest.mark.parametrize("path", demo_paths(), ids=lambda p: p.stem)
def test_the_compiled_and_the_general_path_summarise_alike(path):
    data = path.read_bytes()
    compiled = trace_from_json(data, str(path))
    assert decode(data) is not None
    general = trace_from_dict(json.loads(data), str(path))
    general._sha256 = compiled.sha256  # read from no bytes, it is known by its canonical JSON
    assert summarise(compiled, RUBRIC) == summarise(general, RUBRIC)


def test_the_folder_index_and_the_pool_index_keep_one_summary():
    path = demo_paths()[0]
    trace = trace_from_json(path.read_bytes(), str(path))
    folder, pooled = trace_record(trace, RUBRIC), summarise_trace(trace, "s", 0, RUBRIC)
    for key in ("trace_id", "events", "agents", "depth", "makespan_s", "parallelism", "tokens",
                "cost_usd", "sha256", "warnings", "targets"):
        assert folder[key] == pooled[key], key
    assert json.loads(pooled["targets"])


def test_the_pool_index_summarises_without_walking_the_critical_path():
    path = demo_paths()[0]
    trace = trace_from_json(path.read_bytes(), str(path))
    summarise_trace(trace, "s", 0, RUBRIC)
    assert not {"critical", "dependencies"} & set(vars(analyze(trace)))
    assert summarise(trace).critical_path_s == analyze(trace).figures.critical_path_s


def test_a_summary_builds_no_graph():
    path = demo_paths()[3]
    trace = trace_from_json(path.read_bytes(), str(path))
    summarise(trace, RUBRIC)
    built = vars(analyze(trace))
    assert not {"spawn_tree", "communication", "event_dag"} & set(built)
    assert analyze(trace).event_dag.number_of_nodes() == len(trace.events)  # asked: built


def test_summarising_a_pool_never_imports_networkx():
    script = ("import sys\n"
              "from viz_app.io.native import trace_from_json\n"
              "from viz_app.labels.rubric import default_rubric\n"
              "from viz_app.store.pool_index import summarise_trace\n"
              f"data = open({str(demo_paths()[3])!r}, 'rb').read()\n"
              "summarise_trace(trace_from_json(data, 'x'), 's', 0, default_rubric())\n"
              "print('networkx' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
