"""The labels panel is a component like the others: handed domain objects (a trace, its targets,
the reviewer's answers, the suggestions and the `OthersAnswers` the page gathered) and no
Workspace, it shows what it is given, hands the reviewer's answers to the page's `save`, and
returns the move to the next trace for the page to carry out."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _page(others_seen: bool):
    import streamlit as st

    from components.annotation import (OthersAnswers, labels_form, labels_head, others_answers,
                                       shown_target)
    from factories import PREMATURE
    from viz_app.analysis import analyze
    from viz_app.io import load_trace
    from viz_app.labels import Label, Reviewer, targets
    from viz_app.labels.rubric import default_rubric

    trace, rubric = load_trace(PREMATURE), default_rubric()
    analysis = analyze(trace)
    found = targets(rubric, analysis)
    target = shown_target(trace, found, {}, None)
    theirs = Label(label_id="b1", trace_id=trace.trace_id, trace_sha256=trace.sha256,
                   event_id=target.key, question=target.questions[0], value="premature",
                   reward=-1.0, reviewer="bob", created_at="2026-12-06T10:00:00.000000Z",
                   rubric_version=rubric.version, rubric_sha256=rubric.sha256)
    here = (OthersAnswers(others=[theirs], answered=1) if others_seen
            else OthersAnswers(answered=2, sealed=True))

    def save(values, comment, seconds):
        st.session_state["saved"] = (target.key, sorted(values), comment)
        return []

    choice = labels_head(trace, analysis, Reviewer(name="alice", via="self-declared"), found, {},
                         on_choose=lambda event_id: None)
    labels_form(trace, analysis, rubric, target, {}, [], False, save=save,
                on_choose=lambda event_id: None)
    others_answers(here)
    st.text(f"target={target.key} choice={choice.action if choice else None} "
            f"saved={st.session_state.get('saved')}")


def _said(page: AppTest) -> str:
    return page.text[-1].value


def test_the_panel_shows_the_others_answers_it_is_handed():
    page = AppTest.from_function(_page, args=(True,), default_timeout=60).run()
    assert not page.exception
    assert [e.label for e in page.expander if e.label.startswith("Other reviewers")] == \
        ["Other reviewers (1)"]
    assert "bob" in page.expander[0].dataframe[0].value["reviewer"].tolist()


def test_the_panel_counts_the_others_it_may_not_show():
    page = AppTest.from_function(_page, args=(False,), default_timeout=60).run()
    assert not page.exception
    assert any("Other reviewers: 2 · hidden until you save yours in its review campaign"
               in c.value for c in page.caption)
    assert not [e for e in page.expander if e.label.startswith("Other reviewers")]


def test_the_panel_returns_the_move_to_the_next_trace_and_hands_a_save_to_the_page():
    page = AppTest.from_function(_page, args=(True,), default_timeout=60).run()
    target = _said(page).split()[0]
    assert "choice=None" in _said(page) and "saved=None" in _said(page)
    page = page.button(key=next(b.key for b in page.button if b.label == "Next trace")).click().run()
    assert "choice=next-trace" in _said(page)
    save = next(b for b in page.button if b.label == "Save")
    page = save.click().run()
    assert not page.exception
    assert f"saved=('{target.removeprefix('target=')}'" in _said(page)
