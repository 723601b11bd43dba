"""The case-study report: one self-contained file that opens with no network, draws its
figures, lists labels, bookmarks (in the order of the run, notes rendered safely) and warnings,
and runs no script that came from a trace or a note."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import shot
from factories import PREMATURE, make_workspace, premature
from viz_app.analysis import analyze
from viz_app.cli import main
from viz_app.export.report import note_html, report_html, report_markdown
from viz_app.io.native import load_trace, trace_from_dict
from viz_app.synth import HOSTILE_MARKER, hostile_trace
PAYLOAD = "<img src=x onerror=window.__pwned=1><script>window.__pwned=1</script>"


@pytest.fixture
def trace():
    return premature()


@pytest.fixture
def hostile(tmp_path):
    import json

    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(hostile_trace()), "utf-8")
    return load_trace(path)


def case_db(tmp_path, trace, payload: str = "") -> str:
    """A store with labels and three bookmarks on a trace, written out of their order in the run."""
    ws = make_workspace(tmp_path, db=tmp_path / "case.db")
    labels, marks = ws.labelling, ws.bookmarks
    aggregate, stop = analysis_points(trace)
    labels.save(trace, "aggregation_quality", 2, "ann", aggregate, comment="drops it" + payload)
    labels.save(trace, "task_outcome", "failure", "bob" + payload)
    marks.add(trace, "bob", "**Stops** here" + payload, event_id=stop)
    marks.add(trace, "ann", "The merge" + payload, event_id=aggregate)
    marks.add(trace, "ann", "The start" + payload, start_s=0.0, end_s=1.0)
    return ws.settings.db_url


def analysis_points(trace) -> tuple[str, str]:
    from viz_app.analysis import analyze

    a = analyze(trace)
    return a.aggregates[0].event_id, a.stops[-1].event_id


def write(tmp_path, trace, url: str | None, *extra) -> Path:
    source = tmp_path / "trace.json"
    source.write_text(__import__("json").dumps(trace.to_dict()), "utf-8")
    out = tmp_path / "case.html"
    args = ["report", str(source), "-o", str(out), *extra]
    if url:
        args += ["--db", url]
    assert main(args) == 0
    return out


# -- what the page holds ---------------------------------------------------------------------


SCRIPT = re.compile(r"<script[^>]*>(.*?)</script>", re.DOTALL)


def test_the_report_inlines_plotly_and_references_no_host(tmp_path, trace):
    page = report_html(trace)
    assert "Plotly" in page and len(page) > 1_000_000  # the library itself, not a link to it
    markup = SCRIPT.sub("", page)
    assert not re.search(r"\b(src|href)\s*=", markup) and "@import" not in markup
    assert "url(" not in markup  # no web font, no background image


def test_every_script_of_the_report_is_plotly_or_draws_a_figure(tmp_path, hostile):
    page = write(tmp_path, hostile, case_db(tmp_path, hostile, PAYLOAD)).read_text("utf-8")
    bodies = SCRIPT.findall(page)
    assert len(bodies) >= 3
    ours = ("/**", "window.PLOTLYENV", "window.addEventListener('beforeprint'")
    assert all(b.startswith(ours) or "Plotly.newPlot" in b for b in bodies)
    assert all(HOSTILE_MARKER not in b or "Plotly.newPlot" in b for b in bodies)
    assert all("</" not in b for b in bodies if "Plotly.newPlot" in b)  # JSON with <\/ escaped


def test_the_report_allows_only_its_own_scripts(trace):
    page = report_html(trace)
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    assert "default-src 'none'" in policy and "connect-src 'none'" in policy
    assert policy.count("'sha256-") == len(SCRIPT.findall(page))


def test_the_report_lists_bookmarks_in_the_order_of_the_run_with_their_notes(tmp_path, trace):
    out = write(tmp_path, trace, case_db(tmp_path, trace))
    page = out.read_text("utf-8")
    notes = [page.index(n) for n in ("The start", "The merge", "<strong>Stops</strong> here")]
    assert notes == sorted(notes)
    assert 'id="bookmark-3"' in page and 'id="bookmark-4"' not in page


def test_the_report_lists_labels_with_their_reviewers_and_the_warnings(tmp_path, trace):
    page = write(tmp_path, trace, case_db(tmp_path, trace)).read_text("utf-8")
    labels = page[page.index('id="labels"'):page.index('id="warnings"')]
    assert "aggregation_quality" in labels and "<td>ann</td>" in labels
    assert "task_outcome" in labels and "<td>bob</td>" in labels
    assert "Warnings (0)" in page


def test_a_trace_with_warnings_shows_each_warning(tmp_path):
    raw = load_trace(PREMATURE).to_dict()
    raw["events"].append({"id": "late-spawn", "t": 40, "type": "spawn", "agent": "orchestrator",
                          "to": "db_analyst", "role": "analyst"})
    odd = trace_from_dict(raw, "odd.json")
    warnings = analyze(odd).warnings
    assert warnings
    page = report_html(odd)
    assert f"Warnings ({len(warnings)})" in page
    assert all(w.code in page for w in warnings)


def test_without_a_store_the_report_says_it_has_no_labels(tmp_path, trace, capsys):
    out = write(tmp_path, trace, None, "--db", str(tmp_path / "missing.db"))
    assert "No labels." in out.read_text("utf-8") and "No bookmarks." in out.read_text("utf-8")
    assert not (tmp_path / "missing.db").exists()
    assert "no label store" in capsys.readouterr().err


STAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC")  # the minute a report was made in


def test_the_cli_report_is_the_workspace_case_study(tmp_path, trace):
    url = case_db(tmp_path, trace)
    page = write(tmp_path, trace, url).read_text("utf-8")
    labels, bookmarks = make_workspace(tmp_path, db=tmp_path / "case.db").bookmarks.case_study(trace)
    assert len(labels) == 2 and len(bookmarks) == 3
    made = report_html(load_trace(tmp_path / "trace.json"), labels, bookmarks)
    assert STAMP.sub("", page) == STAMP.sub("", made)


def test_the_apps_report_button_downloads_what_the_cli_writes(tmp_path, trace):
    # one case study (ws.exports) behind `orchviz report` and the trace page's Report button
    url = case_db(tmp_path, trace)
    written = write(tmp_path, trace, url).read_text("utf-8")
    ws = make_workspace(tmp_path, db=tmp_path / "case.db")
    made = ws.exports.report_html(load_trace(tmp_path / "trace.json"))
    assert STAMP.sub("", made) == STAMP.sub("", written)
    assert "The merge" in written and "drops it" in written


def test_a_trace_file_that_is_not_there_is_one_line_and_exit_1(tmp_path, capsys):
    assert main(["report", str(tmp_path / "gone.json"), "--db", str(tmp_path / "o.db")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gone.json" in err


def test_the_report_has_a_print_stylesheet(trace):
    page = report_html(trace)
    assert "@media print" in page and "break-inside: avoid" in page


def test_every_trace_string_is_escaped(tmp_path, hostile):
    page = write(tmp_path, hostile, case_db(tmp_path, hostile, PAYLOAD)).read_text("utf-8")
    markup = SCRIPT.sub("", page)
    assert HOSTILE_MARKER in markup  # the payloads are there, as text
    assert not re.search(r"<(img|svg|iframe|object|embed|input|form|a )", markup, re.I)
    assert not re.search(r"<details[^>]*\bopen", markup, re.I)
    assert markup.count("<details>") == 2  # the two bookmarked events' content, closed


# -- notes ------------------------------------------------------------------------------------


def test_a_note_renders_a_safe_subset_of_markdown():
    rendered = note_html("# Title\n\nSome **bold**, *italic* and `code`.\n\n- one\n- two\n\n"
                         "1. first\n\n> quoted\n\n```\nx < y\n```\n[docs](https://example.org/a)")
    rendered = re.sub(r"\s*\n\s*", "", rendered)  # markdown-it puts blocks on their own lines
    for piece in ("<h3>Title</h3>", "<strong>bold</strong>", "<em>italic</em>",
                  "<code>code</code>", "<ul><li>one</li><li>two</li></ul>", "<ol><li>first</li></ol>",
                  "<blockquote><p>quoted</p></blockquote>", "<pre><code>x &lt; y</code></pre>",
                  '<a href="https://example.org/a" rel="noopener noreferrer">docs</a>'):
        assert piece in rendered, piece


@pytest.mark.parametrize("raw", [
    "<script>alert(1)</script>", "<img src=x onerror=alert(1)>",
    "[click](javascript:alert(1))", "[x](https://a.b/\"onmouseover=alert(1))",
    "**<b>bold</b>**", "`<script>`", "<details open ontoggle=alert(1)>",
])
def test_raw_html_in_a_note_shows_as_text(raw):
    rendered = note_html(raw)
    tags = {t.lower() for t in re.findall(r"</?([a-zA-Z][a-zA-Z0-9]*)", rendered)}
    assert tags <= {"p", "br", "strong", "em", "code", "pre", "ul", "ol", "li", "blockquote",
                    "h3", "h4", "h5", "h6", "a"}
    for href in re.findall(r'href="([^"]*)"', rendered):
        assert href.startswith(("https://", "http://"))
        assert '"' not in href and "&quot;" not in href  # the quote is %22: no attribute ends
    assert not re.search(r"<[^>]*\son\w+=", rendered)  # no event handler in any tag


def test_the_markdown_report_keeps_notes_but_makes_their_html_inert(trace):
    from viz_app.labels.bookmark import Bookmark

    mark = Bookmark(version_id="v", bookmark_id="b", trace_id=trace.trace_id, trace_sha256="",
                    event_id=None, start_s=0.0, end_s=0.0, note="**bold** <script>x</script>",
                    reviewer="ann", created_at="2026-01-01T00:00:00.000000Z")
    text = report_markdown(trace, [], [mark])
    assert "**bold** &lt;script>x&lt;/script>" in text and "<script" not in text


def test_the_markdown_report_embeds_png_figures_when_chromium_renders_them(tmp_path, trace,
                                                                        chromium):
    out = tmp_path / "case.md"
    source = tmp_path / "trace.json"
    source.write_text(__import__("json").dumps(trace.to_dict()), "utf-8")
    assert main(["report", str(source), "--format", "md", "-o", str(out), "--db",
                 case_db(tmp_path, trace)]) == 0
    text = out.read_text("utf-8")
    for name in ("tree", "timeline"):
        assert f"(case_files/{name}.png)" in text
        png = tmp_path / "case_files" / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    assert text.index("The start") < text.index("The merge") < text.index("Stops")


# -- in a browser, offline -----------------------------------------------------------------------


def open_offline(page, path: Path) -> list[str]:
    """Open a file with every non-file request aborted; returns the requests attempted."""
    attempted: list[str] = []

    def guard(route):
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            attempted.append(route.request.url)
            route.abort()

    page.route("**/*", guard)
    page.goto(path.as_uri())
    page.wait_for_selector("#orchviz-timeline .main-svg", timeout=30_000)
    page.wait_for_timeout(500)
    return attempted


@pytest.mark.browser
def test_the_report_opens_offline_and_draws_its_figures(page, tmp_path, trace):
    out = write(tmp_path, trace, case_db(tmp_path, trace))
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    attempted = open_offline(page, out)
    assert attempted == []
    for div in ("orchviz-tree", "orchviz-timeline"):
        assert page.locator(f"#{div} .main-svg").count() >= 1
        assert page.locator(f"#{div} .scatterlayer .trace").count() >= 3  # drawn, not empty
    assert page.locator(".bookmark").count() == 3
    assert errors == []
    shot(page, "report_offline")


@pytest.mark.browser
def test_the_hostile_report_runs_no_script_from_the_trace_or_notes(page, tmp_path, hostile):
    out = write(tmp_path, hostile, case_db(tmp_path, hostile, PAYLOAD))
    attempted = open_offline(page, out)
    plot = page.locator("#orchviz-timeline")
    plot.scroll_into_view_if_needed()
    box = plot.bounding_box()
    for fx in (0.1, 0.3, 0.5, 0.7, 0.9):  # sweep the pointer: hover boxes show event text
        for fy in (0.3, 0.5, 0.7):
            page.mouse.move(box["x"] + fx * box["width"], box["y"] + fy * box["height"])
    page.locator("details").first.evaluate("d => d.open = true")
    page.wait_for_timeout(300)
    assert page.evaluate(f"typeof window.{HOSTILE_MARKER}") == "undefined"
    assert attempted == []  # an <img src=x> that ran would have asked for x
    assert page.locator("#bookmarks").inner_text().count("window.__pwned=1") >= 3  # shown as text
    shot(page, "report_hostile")


@pytest.mark.browser
def test_the_report_prints(page, tmp_path, trace):
    out = write(tmp_path, trace, case_db(tmp_path, trace))
    open_offline(page, out)
    page.emulate_media(media="print")
    assert page.evaluate("getComputedStyle(document.querySelector('.modebar-container') "
                         "|| document.body).display") in ("none", "block")
    pdf = page.pdf(format="A4", landscape=True)
    assert pdf[:4] == b"%PDF" and len(pdf) > 20_000
    assert page.evaluate("[...document.querySelectorAll('details')].every(d => d.open)")


STRANGERS = {"return-from-nobody": ("e7", {"from": "nobody"}),
             "message-from-nobody": ("e4", {"from": "nobody"}),
             "delegate-to-nobody": ("e1", {"decision": "delegate", "to": "nobody"})}


@pytest.mark.parametrize("event_id, changes", STRANGERS.values(), ids=STRANGERS.keys())
def test_a_link_naming_no_agent_still_draws_the_timeline_and_the_report(event_id, changes,
                                                                         tmp_path):
    """The schema lets `from` and `to` hold any text: a return from an agent the trace never
    names is drawn from the lane of the agent that recorded it."""
    from factories import example_dict, write_json
    from viz_app.charts import timeline_figure

    raw = example_dict()
    next(e for e in raw["events"] if e["id"] == event_id).update(changes)
    odd = trace_from_dict(raw, "odd.json")
    figure = timeline_figure(analyze(odd))
    assert len(figure.data) > 1
    out = tmp_path / "odd.html"
    code = main(["report", str(write_json(tmp_path, raw, "odd.json")), "-o", str(out),
                 "--db", str(tmp_path / "none.db")])
    assert code == 0 and "<html" in out.read_text("utf-8")


def _labels_section(page: str) -> str:
    return page[page.index('id="labels"'):page.index('id="warnings"')]


def test_a_correction_reads_as_words_and_the_adjudicated_answer_is_marked_final(tmp_path, trace):
    ws = make_workspace(tmp_path, db=tmp_path / "case.db")
    aggregate, _stop = analysis_points(trace)
    ws.labelling.save(trace, "aggregation_quality", 2, "ann", aggregate)
    ws.labelling.save(trace, "merge_correction", {"action": "merge", "text": "keep the dropped one"},
                   "ann", aggregate)
    records = ws.labelling.current_records()
    lead = {**next(r for r in records if r["question"] == "aggregation_quality"),
            "label_id": "lead-1", "reviewer": "lea", "value": 3, "source": "adjudication"}
    page = report_html(trace, [*records, lead])
    labels = _labels_section(page)
    assert "{&#x27;action" not in labels and "&quot;action&quot;" not in labels
    assert "the merge it should have made: keep the dropped one" in labels
    assert labels.count('class="final"') == 1  # the lead's answer alone
    markdown = report_markdown(trace, [*records, lead])
    assert "3 (final: adjudicated)" in markdown.replace("\\", "") and "2 (final" not in markdown


def test_the_labels_table_wraps_between_words_only():
    page = report_html(premature())
    css = page[page.index("<style>"):page.index("</style>")]
    cells = css[css.index("th, td {"):]
    assert "overflow-wrap: anywhere" not in cells[:cells.index("}")]
    assert "word-break: normal" in cells[:cells.index("}")]


def test_a_who_and_when_report_names_the_question_not_its_id():
    from viz_app.io.detect import read_any

    found = read_any(Path(__file__).parent / "fixtures" / "importers" / "whowhen_magentic.json")
    trace = getattr(found, "traces", found)[0]
    page = report_html(trace)
    assert "task <strong>How many studio albums did the band release before 2000?</strong> " \
           "(id ww-demo-1)" in page
    assert "task **How many studio albums did the band release before 2000?** (id ww\\-demo\\-1)" \
        in report_markdown(trace)
