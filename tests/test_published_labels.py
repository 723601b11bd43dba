"""Published annotations become imported labels that say how sure their mapping is."""

from __future__ import annotations

from factories import make_workspace
from viz_app.io.whowhen import import_whowhen

from tests.test_import_whowhen import FIXTURES


def _run():
    (trace,) = import_whowhen(FIXTURES / "whowhen_magentic_unterminated.json")
    return trace


def _record(trace, mapping: str) -> dict:
    return {"trace_id": trace.trace_id, "event_id": "", "question": "task_outcome",
            "value": "failure", "reviewer": "Who&When", "mapping": mapping,
            "comment": "[uncertain mapping: the annotation blames another agent] ..."}


def test_an_uncertain_mapping_is_kept_on_the_stored_label(tmp_path):
    trace = _run()
    ws = make_workspace(tmp_path, traces=[trace])
    ws.labelling.import_labels([_record(trace, "uncertain")], {trace.trace_id: trace}, "whowhen.json")
    (label,) = ws.labelling.current(trace.trace_id)
    assert (label.source, label.mapping) == ("import", "uncertain")
    assert label.comment.startswith("[uncertain mapping:")


def test_a_person_s_label_has_no_mapping(tmp_path):
    trace = _run()
    ws = make_workspace(tmp_path, traces=[trace])
    ws.labelling.save(trace, "task_outcome", "failure", "ann")
    (label,) = ws.labelling.current(trace.trace_id)
    assert label.mapping == ""


def test_published_annotations_arrive_with_their_mapping(tmp_path):
    trace = _run()
    ws = make_workspace(tmp_path, traces=[trace])
    assert ws.labelling.import_published([trace]) >= 1
    mappings = {x.question: x.mapping for x in ws.labelling.current(trace.trace_id)}
    assert mappings["task_outcome"] == "certain"
