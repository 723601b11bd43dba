"""The suggestions component: each suggestion as one line a reviewer reads, with its confidence
and its evidence as buttons that select the event; hidden until the reviewer has answered when
the page asks; trace text shown as text."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from components.suggestions import suggestion_text
from viz_app.labels.rubric import default_rubric
from viz_app.labels.suggestion import Producer, Suggestion

RUBRIC = default_rubric()


def suggestion(value="premature", explanation="e7 returned after the stop",
               evidence=("e7", "e9"), producer=Producer(name="rules", version="1"),
               **changes) -> Suggestion:
    return Suggestion(**{"trace_id": "t1", "trace_sha256": "0" * 64, "event_id": "e9",
                         "question": "stopping_correctness", "value": value, "confidence": 0.8,
                         "producer": producer, "evidence": evidence,
                         "explanation": explanation} | changes)


def test_a_suggestion_reads_producer_answer_and_why():
    assert suggestion_text(suggestion(), RUBRIC) == \
        "rules: premature — e7 returned after the stop"


def test_an_explanation_that_repeats_the_answer_is_not_said_twice():
    found = suggestion_text(suggestion(explanation="premature: e7 returned after the stop"), RUBRIC)
    assert found == "rules: premature — e7 returned after the stop"


def test_a_judge_names_its_model_and_a_scale_shows_the_choice_label():
    judged = suggestion(question="aggregation_quality", value=2, explanation="",
                        producer=Producer(name="judge", version="1", model="m-small"))
    assert suggestion_text(judged, RUBRIC) == "judge (m-small): 2 major gaps"


def _page(items, hidden):
    import streamlit as st

    from components.suggestions import suggestions_view
    from viz_app.labels.rubric import default_rubric

    def chosen(event_id):
        st.session_state["selected"] = event_id

    suggestions_view(items, default_rubric(), key="t1:e9", on_select_event=chosen,
                     hidden=hidden)
    st.text(f"selected={st.session_state.get('selected')}")


def test_evidence_buttons_select_their_event():
    page = AppTest.from_function(_page, args=([suggestion()], False), default_timeout=30).run()
    assert not page.exception
    assert "confidence 0.80" in page.markdown[1].value
    [button] = [b for b in page.button if b.label == "e7"]
    page = button.click().run()
    assert page.text[0].value == "selected=e7"


def test_hidden_suggestions_show_only_their_count():
    page = AppTest.from_function(_page, args=([suggestion()], True), default_timeout=30).run()
    assert not page.exception and not page.button
    assert "1 suggested answer" in page.caption[0].value
    assert "premature" not in " ".join(m.value for m in page.markdown)


def test_trace_text_in_an_explanation_is_shown_as_text():
    hostile = suggestion(explanation="see [here](javascript:alert(1)) <script>x</script>",
                         evidence=("[e7](http://x)",))
    page = AppTest.from_function(_page, args=([hostile], False), default_timeout=30).run()
    line = page.markdown[1].value
    assert "<script>" not in line and "](javascript" not in line
    assert all("](http" not in b.label for b in page.button)
