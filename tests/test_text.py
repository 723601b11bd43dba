"""Trace text made safe for each medium (`viz_app.text`): hostile input stays text."""

from __future__ import annotations

import re

from viz_app.text import (NAME_LIMIT, file_name, html_text, identifier_markdown,
                          markdown_literal, plotly_preview, plotly_text, terminal_text)

SCRIPT = "<script>window.__pwned=1</script>"
ANSI_RED = "\x1b[31mred\x1b[0m"
OSC52 = "\x1b]52;c;cm0gLXJmIH4=\x07"  # write "rm -rf ~" to the clipboard
TROJAN = "admin\u202e\u2066 // not admin\u2069\u2066"


# -- Markdown ---------------------------------------------------------------------------------


def test_markdown_literal_keeps_no_tag():
    assert "<" not in markdown_literal(SCRIPT) and "&lt;script&gt;" in markdown_literal(SCRIPT)


def test_markdown_literal_opens_no_link():
    shown = markdown_literal("[click](javascript:alert(1))")
    assert not re.search(r"(?<!\\)[\[\]()]", shown)


def test_markdown_literal_shows_no_image():
    assert markdown_literal("![x](https://evil.example/t.png)").startswith("\\!\\[x\\]\\(")


def test_markdown_literal_starts_no_block():
    for start in ("# heading", "> quote", "- item", "1. item", "+ item", "=== ", "| a | b |"):
        assert not re.match(r"[#>+\-=|]|\d+[.)]", markdown_literal(start)), start


def test_markdown_literal_makes_no_formula_colour_or_emphasis():
    assert markdown_literal("$x$ :red[y] *z* _w_ `v`") == \
        "\\$x\\$ \\:red\\[y\\] \\*z\\* \\_w\\_ \\`v\\`"


def test_markdown_literal_escapes_an_entity_so_it_shows_as_written():
    assert markdown_literal("&lt;b&gt;") == "&amp;lt;b&amp;gt;"


def test_markdown_literal_is_one_line_without_control_or_bidi_characters():
    assert markdown_literal(f"a\nb\r\x1b[2J{TROJAN}", None) == "a b \\[2Jadmin // not admin"


def test_markdown_literal_shortens_before_escaping():
    shown = markdown_literal("<" * 100, 10)
    assert shown == "&lt;" * 9 + "…"


def test_markdown_literal_with_no_limit_keeps_everything():
    assert markdown_literal("x" * 500, None) == "x" * 500


# -- HTML ---------------------------------------------------------------------------------------


def test_html_text_keeps_no_tag():
    assert html_text(SCRIPT) == "&lt;script&gt;window.__pwned=1&lt;/script&gt;"


def test_html_text_ends_no_attribute():
    assert html_text('x" onmouseover="alert(1)') == "x&quot; onmouseover=&quot;alert(1)"
    assert "'" not in html_text("x' onload='y")


def test_html_text_keeps_lines_and_tabs_for_pre():
    assert html_text("a\n\tb") == "a\n\tb"


def test_html_text_drops_control_and_bidi_characters():
    assert html_text(f"{ANSI_RED}{TROJAN}\x00") == "[31mred[0madmin // not admin"


def test_html_text_shortens_to_the_limit():
    assert html_text("abcdef", 4) == "abc…"


# -- Plotly ---------------------------------------------------------------------------------------


def test_plotly_text_keeps_no_tag():
    assert "<" not in plotly_text('<a href="javascript:alert(1)">x</a>')


def test_plotly_text_keeps_quotes_as_written():
    assert plotly_text('say "hi"') == 'say "hi"'


def test_plotly_preview_is_short_wrapped_and_escaped():
    shown = plotly_preview("<b>x</b> " * 200, width=40, lines=2)
    assert shown.count("<br>") == 1 and shown.endswith("…") and "<b>" not in shown


def test_plotly_preview_cuts_before_escaping():
    assert plotly_preview("<" * 10, width=4, lines=1) == "&lt;" * 4 + "…"


def test_plotly_preview_of_blank_text_is_empty():
    assert plotly_preview(" \n\u200b\t ") == ""


# -- terminal -------------------------------------------------------------------------------------


def test_terminal_text_shows_an_ansi_escape():
    assert terminal_text(ANSI_RED) == "\\x1b[31mred\\x1b[0m"


def test_terminal_text_shows_an_osc52_clipboard_write():
    shown = terminal_text(OSC52)
    assert "\x1b" not in shown and "\x07" not in shown and shown.startswith("\\x1b]52;")


def test_terminal_text_forges_no_line():
    assert terminal_text("ok\r\nfile.json: ok") == "ok\\x0d\\x0afile.json: ok"


def test_terminal_text_shows_a_c1_csi():
    assert terminal_text("\x9b31m") == "\\x9b31m"


def test_terminal_text_shows_bidi_overrides():
    assert terminal_text("a\u202eb") == "a\\u202eb"


def test_terminal_text_leaves_plain_text_alone():
    assert terminal_text("démo-01 · ok") == "démo-01 · ok"


# -- file names -----------------------------------------------------------------------------------


def test_file_name_never_leaves_the_folder():
    for hostile in ("../../etc/passwd", "..\\..\\boot.ini", "/abs/path", "a/../../b"):
        name = file_name(hostile)
        assert "/" not in name and "\\" not in name and not name.startswith("."), name


def test_file_name_makes_no_hidden_file():
    assert file_name(".bashrc") == "bashrc"


def test_file_name_of_nothing_safe_is_trace():
    assert file_name("../..", ending=".json") == "trace.json"


def test_file_name_keeps_plain_characters_and_the_ending():
    assert file_name("demo-01 run:2", ending=".json") == "demo-01_run_2.json"


def test_file_name_is_at_most_the_limit_before_its_ending():
    assert file_name("x" * 500, ending=".json") == "x" * NAME_LIMIT + ".json"


def test_a_taken_file_name_gets_the_next_number():
    taken = {"a_b.json", "a_b-2.json"}
    assert file_name("a/b", taken, ending=".json") == "a_b-3.json"


def test_a_numbered_long_file_name_stays_within_the_limit():
    long = "y" * 500
    name = file_name(long, {"y" * NAME_LIMIT}, ending="")
    assert name == "y" * (NAME_LIMIT - 2) + "-2"


# -- the one rule where orchviz writes files ------------------------------------------------------


def test_labelled_traces_whose_ids_make_one_name_are_both_written(tmp_path):
    from factories import example_trace
    from viz_app.export.traces import write_labelled_traces
    from viz_app.labels.rubric import default_rubric

    traces = {t: example_trace(t) for t in ("a/b", "a_b")}
    labels = [{"trace_id": t, "event_id": "", "question": "task_outcome", "reward": 1.0}
              for t in traces]
    written = write_labelled_traces(traces, labels, default_rubric(), tmp_path)
    assert sorted(p.name for p in written) == ["a_b-2.json", "a_b.json"]


def test_an_upload_under_a_taken_name_gets_the_next_number(tmp_path):
    from viz_app.io.uploads import save_upload

    names = [save_upload(tmp_path, "../run.json", data).name for data in (b"1", b"2", b"1")]
    assert names == ["run.json", "run-2.json", "run.json"]


def test_an_identifier_wraps_after_its_underscores_and_reads_the_same():
    shown = identifier_markdown("stop_should_have_been")
    assert shown == "stop\\_\u200bshould\\_\u200bhave\\_\u200bbeen"
    assert identifier_markdown("a<b>_c") == "a&lt;b&gt;\\_\u200bc"  # escaped first
