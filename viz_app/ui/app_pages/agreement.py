"""The agreement page: Krippendorff's alpha per question, how many targets two or more reviewers
labelled, the targets they disagree on most (one click from their trace), how far each
producer's suggestions agree with the labels made without them in view (alpha, kappa, 95 %
intervals, a confusion matrix), each producer version's alpha over time with a warning when a
new version leaves the previous one's interval, and the exports. With sign-in configured only leads see it (it
shows everyone's answers and lets them download every label); without, names are not verified
and everyone is their own lead."""

from __future__ import annotations


import pandas as pd
import streamlit as st

from viz_app.ui import session
from viz_app.export import FORMATS, NEEDS_TRACES
from viz_app.charts import agreement_history_figure
from viz_app.labels import REVIEWERS, correction_agreements, rubric_agreement
from viz_app.errors import RubricError
from viz_app.text import markdown_literal

viewer = session.reviewer()
st.title("Agreement")
if session.sign_in_configured() and not session.is_lead(viewer):
    # everyone's answers, adjudications with their reasons and the downloads: for leads only
    st.warning("The agreement page and its downloads are for this workspace's leads. "
               + (session.identify_first("see them") if viewer is None else
                  "A lead adds you with `orchviz campaign members add EMAIL --role lead`."))
    st.stop()
try:
    rubric = session.workspace().rubric
except RubricError as err:
    st.error(f"The rubric cannot be used: {markdown_literal(err, 400)}")
    st.stop()
records = session.workspace().labelling.current_records()
reviewers = sorted({r["reviewer"] for r in records})
st.caption(f"{len(records):,} current labels by {len(reviewers)} reviewer"
           f"{'s' if len(reviewers) != 1 else ''} · rubric "
           f"{markdown_literal(rubric.name, 60)} {markdown_literal(rubric.version, 20)}"
           " · alpha is ordinal for scales, nominal for "
           "categories; only targets with two or more reviewers count")
report = rubric_agreement(rubric, records)
summary = pd.DataFrame([{
    "question": q.question, "level": q.level, "alpha": q.alpha, "reviewers": q.reviewers,
    "targets labelled": q.targets, "targets with 2+ reviewers": q.shared_targets,
    "note": q.note} for q in report])
st.dataframe(summary, hide_index=True, width="stretch",
             column_config={"alpha": st.column_config.NumberColumn(format="%.3f"),
                            "note": st.column_config.TextColumn(width="large")})

st.subheader("Where reviewers disagree most")
disputes = [(q.question, d) for q in report for d in q.disagreements]
disputes.sort(key=lambda item: -item[1].spread)
if not disputes:
    st.caption("No target has two reviewers who disagree.")
else:
    frame = pd.DataFrame([{
        "question": question, "trace": d.trace_id, "event": d.event_id or "(whole trace)",
        "spread": d.spread,
        "answers": " · ".join(f"{r}: {v}" for r, v in sorted(d.answers.items()))}
        for question, d in disputes])
    st.caption("Click a row to open that target in its trace.")
    picked = st.dataframe(frame, key="agreement_disputes", hide_index=True, width="stretch",
                          on_select="rerun", selection_mode="single-row",
                          column_config={"spread": st.column_config.ProgressColumn(
                              min_value=0.0, max_value=1.0, format="%.2f"),
                              "answers": st.column_config.TextColumn(width="large")})
    if picked is not None and picked.selection.rows:
        _question, chosen = disputes[picked.selection.rows[0]]
        session.open_trace(chosen.trace_id, chosen.event_id or None)

corrections = correction_agreements(rubric, records)
if any(c.corrected.value for c in corrections):  # someone corrected something
    st.subheader("Corrections")
    st.caption("Free-text corrections get no alpha: the share of reviewers of a target who "
               "corrected it, and how alike two reviewers' corrections of one target are (0 for "
               "another decision, else the similarity of their words), with bootstrap 95 % "
               "intervals over targets.")

    def _shown(found) -> str:
        if found.value is None:
            return ""
        return f"{found.value:.2f}" + ("" if found.low is None else
                                       f" [{found.low:.2f}, {found.high:.2f}]")

    st.dataframe(pd.DataFrame([{
        "question": c.question, "reviewers": c.reviewers, "targets": c.targets,
        "corrected (share)": _shown(c.corrected), "targets with 2+ corrections":
        c.compared_targets, "similarity": _shown(c.similarity), "note": c.note}
        for c in corrections if c.targets]), hide_index=True, width="stretch")

st.subheader("Suggestions against blind labels")
producers = session.workspace().suggestions.agreement()


def _interval(found) -> str:
    return "" if found.low is None else f"[{found.low:.2f}, {found.high:.2f}]"


measured = [r for r in producers.rows if r.pairs]
waiting = sorted({r.question for r in producers.rows if r.rater != REVIEWERS and not r.pairs})
if not any(r.rater != REVIEWERS for r in producers.rows):
    st.caption("No suggestions are stored yet: `orchviz suggest --traces DIR --db ...` runs "
               "the rules (or a judge) and stores them.")
else:
    st.caption(f"Each producer's suggestions against the labels made **without suggestions in "
               f"view** ({producers.blind_labels:,} labels; left out: "
               f"{producers.left_out_visible:,} made with suggestions in view, "
               f"{producers.left_out_unknown:,} of unknown visibility made after them, "
               f"{producers.left_out_other:,} adjudications), beside the reviewers among "
               f"themselves. 95 % intervals from {producers.resamples:,} resamples of the "
               "targets; kappa is linearly weighted on scales.")
    if measured:
        st.dataframe(pd.DataFrame([{
            "question": r.question, "compared": f"{r.rater} vs reviewers", "targets": r.targets,
            "pairs": r.pairs, "alpha": r.alpha.value, "alpha 95 %": _interval(r.alpha),
            "kappa": r.kappa.value, "kappa 95 %": _interval(r.kappa), "note": r.note}
            for r in measured]), key="agreement_producers", hide_index=True, width="stretch",
            column_config={"alpha": st.column_config.NumberColumn(format="%.3f"),
                           "kappa": st.column_config.NumberColumn(format="%.3f"),
                           "note": st.column_config.TextColumn(width="medium")})
    if waiting:
        st.caption("No blind answer to compare a producer with yet on: "
                   + ", ".join(markdown_literal(q, 40) for q in waiting))
    if measured:
        chosen = st.selectbox(
            "Confusion matrix", range(len(measured)), key="agreement_confusion",
            format_func=lambda i: f"{measured[i].question} · {measured[i].rater} vs "
                                  "reviewers")
        picked = measured[chosen]
        st.dataframe(pd.DataFrame(
            picked.confusion, index=[f"reviewer: {x}" for x in picked.labels],
            columns=[f"{'other reviewer' if picked.rater == REVIEWERS else 'suggested'}: {x}"
                     for x in picked.labels]), width="stretch")
        st.caption("Rows: the reviewers' answers; columns: the producer's"
                   + (" (between reviewers each pair counts both ways)."
                      if picked.rater == REVIEWERS else "."))

    st.subheader("Each producer version over time")
    history = session.workspace().suggestions.agreement_history()
    for shift in history.shifts:
        st.warning(markdown_literal(shift.text, 400), icon=":material/trending_down:"
                   if shift.direction == "below" else ":material/trending_up:")
    asked = list(dict.fromkeys(p.question for p in history.points
                               if p.alpha.value is not None))
    if not asked:
        st.caption("No producer version has an alpha against blind labels yet.")
    else:
        shown_q = st.selectbox("Question", asked, key="agreement_history_question",
                               index=next((i for i, q in enumerate(asked)
                                           if any(s.question == q for s in history.shifts)), 0))
        among = next((r.alpha.value for r in producers.rows
                      if r.question == shown_q and r.rater == REVIEWERS), None)
        st.plotly_chart(agreement_history_figure(
            history.points, shown_q, shifted={(s.rater, s.version) for s in history.shifts
                                              if s.question == shown_q},
            reviewers=among), key="agreement_history_chart", config={"displaylogo": False})
        st.caption("Each version of a producer measured alone against the blind labels (a "
                   "retrained learned model, a judge's new prompt or examples, new rules), at "
                   "the time its first suggestion was stored, with its bootstrap 95 % "
                   f"interval ({history.resamples:,} resamples of the targets). A ring marks a "
                   "version whose alpha is outside the interval of the version before it; "
                   "versions may be measured on different targets (hover for the counts).")

st.subheader("Download the labels")
formats = [f for f in FORMATS.values() if f.reads == "labels" and not f.needs_traces]
columns = st.columns(len(formats))
for column, fmt in zip(columns, formats):
    column.download_button(fmt.name, session.workspace().exports.download(fmt.name),
                           file_name=fmt.file_name, key=f"download:{fmt.name}",
                           width="stretch", disabled=not records, icon=":material/download:")
st.caption("The exports that need the traces are written by the command line: "
           f"`orchviz labels export --format {'|'.join(NEEDS_TRACES)} --traces DIR -o OUT`.")
