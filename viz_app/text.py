"""Every way trace text is made safe for the medium it goes into: one function per medium.

Every string in a trace came from a model or a tool, so it is hostile: it may hold Markdown that
would turn into a link or an image, HTML that would run a script, terminal escapes that would
rewrite the screen or the clipboard, or a path that would write outside a folder. Whatever shows
or stores trace text passes it through the function named for where it goes:

- `markdown_literal`: a Markdown label (Streamlit's `st.markdown`, captions, widget labels, and
  the Markdown report);
- `html_text`: the text of an HTML element or an attribute value (the HTML report, pyvis);
- `plotly_text` and `plotly_preview`: a Plotly label or hover box;
- `canvas_text`: text drawn as text, read as no markup (the communication graph's node labels,
  drawn on a canvas, and its tooltips, which vis-network fills as text);
- `terminal_text`: a line the CLI prints;
- `prompt_data`: trace text sent to a language model as data, between delimiters (the judge);
- `csv_cell`: a cell of a CSV file (which a spreadsheet may read as a formula);
- `file_name`: a file name.

A reviewer's note is Markdown the reviewer means (emphasis, lists, links), but it is shared with
every other reviewer and put into reports, so it is made safe too: `note_markdown` for Markdown
(the app's `st.markdown`, the Markdown report) and `note_html` for HTML (the HTML report). Both
follow one rule, decided by one library (markdown-it-py in its safe mode): raw HTML is text, no
image is fetched, and only http(s) links stay links.

Each one removes (or shows) the characters that are invisible or that steer a display: control
characters, zero-width characters and bidirectional overrides (which make text read differently
from what it holds). Pure functions: no Streamlit, nothing read or written.
"""

from __future__ import annotations

import functools
import html
import json
import re
from collections.abc import Container
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

_INVISIBLE = "\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069"
"""Control characters (C0 but tab and newline, DEL, C1), zero-width characters and bidi controls."""

_HIDDEN = re.compile(f"[{_INVISIBLE}]")
_HIDDEN_OR_BREAK = re.compile(f"[{_INVISIBLE}\t\n]")

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~$:=\"'^@%])")
"""Characters that Markdown, GitHub Flavoured Markdown, Streamlit's LaTeX (`$`), emoji
shortcodes and coloured text (`:`) give a meaning; `<`, `>` and `&` become entities instead."""


_AUTOLINK = re.compile(r"(?<=:)(?=//)|(?<=[wW]{3})(?=\.)|(?=@)")
"""Where GitHub Flavoured Markdown would see a bare link in plain text (`https://…`, `www.…`,
`name@host`): Streamlit's Markdown makes those live links even when every character around
them is escaped, so `markdown_literal` puts an invisible WORD JOINER (U+2060) there."""

WORD_JOINER = "\u2060"


def _shortened(value: str, limit: int | None) -> str:
    if limit is not None and len(value) > limit:
        return value[: max(1, limit - 1)] + "…"
    return value


def brief(text: object, limit: int = 200) -> str:
    """A message's or error's text on one line and at most `limit` characters, for a sentence
    that quotes it (a model's refusal, an endpoint's error)."""
    return _shortened(" ".join(str(text).split()), limit)


_TITLE = re.compile(r"<title[^>]*>(.*?)</title", re.I | re.S)


def what_came(body: object) -> str:
    """What an endpoint sent instead of a chat completion, in a few words for a sentence: the
    openai package hands back a reply whose type is not JSON (a proxy's sign-in page, a
    gateway's error page) as its text. "an HTML page (“Sign in”)", "text (“…”)"."""
    text = str(body)
    if re.search(r"<!doctype html|<html[\s>]|<head[\s>]|<body[\s>]", text[:4096], re.I):
        title = _TITLE.search(text[:65536])
        named = brief(html.unescape(re.sub(r"<[^>]*>", "", title.group(1))), 60) if title else ""
        return f"an HTML page (“{named}”)" if named else "an HTML page"
    shown = brief(text, 60)
    return f"text (“{shown}”)" if shown else "an empty body"


def markdown_literal(text: object, limit: int | None = 80) -> str:
    """Trace text for Markdown, shown exactly as written: on one line (control, zero-width and
    bidi characters become spaces), shortened to `limit` characters (None: whole), every
    character Markdown gives a meaning backslash-escaped and `&`, `<`, `>` as HTML entities.

    So `[x](javascript:…)` and `![x](http://…)` stay text (no link, no image that fetches),
    `<script>` stays text in any renderer (entities also hold where a renderer ignores a
    backslash before `<`), `$…$` is no formula and `:red[x]` no colour. A bare URL, `www.`
    address or e-mail address is no link either: GFM's autolinks ignore escapes, so an
    invisible word joiner (U+2060) goes after `:` before `//`, after `www` and before `@`
    (the text reads the same; a copy of it carries the joiner). For Streamlit (whose labels
    are Markdown) and for the Markdown report alike."""
    value = " ".join(_HIDDEN_OR_BREAK.sub(" ", str(text)).split())
    value = _AUTOLINK.sub(WORD_JOINER, _shortened(value, limit))
    value = _MARKDOWN_SPECIAL.sub(r"\\\1", value)
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def identifier_markdown(text: object, limit: int | None = 80) -> str:
    """An identifier (`stopping_correctness`) for Markdown as `markdown_literal` writes it,
    with an invisible break opportunity (U+200B) after each underscore: a narrow column then
    wraps it between its words ("stopping_" / "correctness"), never mid-word."""
    return markdown_literal(text, limit).replace("\\_", "\\_\u200b")


def html_text(text: object, limit: int | None = None) -> str:
    """Trace text for HTML, as an element's text or an attribute's value (quotes escaped too):
    control, zero-width and bidi characters removed (tabs and newlines kept, for `<pre>`),
    shortened to `limit` characters, then `&`, `<`, `>`, `"` and `'` as entities, so no tag
    opens and no attribute ends. For the HTML report and pyvis's labels and titles."""
    return html.escape(_shortened(_HIDDEN.sub("", str(text)), limit), quote=True)


def plotly_text(text: object, limit: int | None = None) -> str:
    """Trace text for a Plotly label, tick or hover box (which read a little HTML: `<br>`,
    `<b>`, `<a href>`): control, zero-width and bidi characters removed, shortened to `limit`
    characters, then `&`, `<` and `>` as entities. Quotes stay as they are: Plotly would show
    `&quot;` literally, and no text of a label goes into an attribute."""
    return html.escape(_shortened(_HIDDEN.sub("", str(text)), limit), quote=False)


def plotly_preview(text: str, width: int = 60, lines: int = 4) -> str:
    """The start of a long text for a Plotly hover box: on one line, cut into at most `lines`
    lines of `width` characters joined by `<br>`, each escaped as `plotly_text` does (after
    cutting, so no entity is cut in two), with `…` when there was more."""
    shown = width * lines
    head = text[: 4 * shown]  # enough for the preview unless the text is mostly blank
    flat = " ".join(_HIDDEN.sub("", head).split())
    if not flat:
        return ""
    chunks = [flat[i:i + width] for i in range(0, min(len(flat), shown), width)]
    body = "<br>".join(html.escape(c, quote=False) for c in chunks)
    return body + ("…" if len(flat) > shown or len(head) < len(text) else "")


def canvas_text(text: object, limit: int | None = None, *, one_line: bool = False) -> str:
    """Trace text for a place that shows characters and reads no markup: a label vis-network
    (pyvis) draws on its canvas, or a tooltip it fills as text (`innerText`). Control,
    zero-width and bidi characters removed (with `one_line`, tabs and newlines too, and runs of
    space made one), shortened to `limit` characters; nothing escaped, since an entity would
    show as `&lt;`. Where the text goes into a page as data (pyvis writes it as JSON inside a
    script), that writer escapes it for its own medium."""
    value = str(text)
    value = " ".join(_HIDDEN_OR_BREAK.sub(" ", value).split()) if one_line \
        else _HIDDEN.sub("", value)
    return _shortened(value, limit)


_TERMINAL = re.compile(f"[{_INVISIBLE}\t\n\u2028\u2029]")


def _visible(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_text(text: object) -> str:
    """Trace text for a line the CLI prints: every control character (ESC, BEL, CR, newline,
    tab, the C1 controls), zero-width and bidi character and line separator shown as its escape
    (`\\x1b`, `\\u202e`), so an ANSI sequence cannot recolour or clear the screen, an OSC 52
    sequence cannot write the clipboard, a CR cannot overwrite the line, and a newline cannot
    forge a line of output."""
    return _TERMINAL.sub(_visible, str(text))


_PROMPT_ESCAPED = re.compile(f"[<>&{_INVISIBLE}\u2028\u2029]")


def prompt_data(value: object) -> str:
    """Trace content for a language model's prompt, where it is data between delimiters: the
    value as JSON (strings quoted, quotes and control characters escaped, non-ASCII kept
    readable), and then `<`, `>`, `&`, zero-width, bidi and line-separator characters as JSON
    escapes (`\\u003c`), so no text of the trace can close the delimiter (`</trace_data>`),
    open a tag of its own, or hide characters the reader of the prompt cannot see. The result
    is valid JSON that reads back to the same value."""
    text = json.dumps(value, ensure_ascii=False, indent=1, default=str)
    return _PROMPT_ESCAPED.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""What makes a spreadsheet read a cell as a formula (OWASP's list for CSV injection)."""

_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def csv_cell(value: object) -> object:
    """A value for a cell of a CSV file that a spreadsheet opens: text that starts with `=`,
    `+`, `-`, `@`, a tab or a carriage return gets a single quote in front, as OWASP
    recommends against CSV (formula) injection, so `=HYPERLINK(...)` or `@SUM(...)` in a
    trace id, a reviewer's name or a comment is shown as text and never evaluated. Numbers
    stay numbers: a value that is not text is returned as it is, and so is text that is a
    plain number (`-1`, `+0.5`, `-2e3`: a spreadsheet reads it as that number, and a value's
    JSON text stays JSON). Text that already starts with a quote gets one more, so that
    `csv_value` reads every cell back exactly. Control characters are shown as their
    pictures (`visible_text`): a raw ESC in a comment would run when the file is `cat`."""
    if not isinstance(value, str) or not value:
        return value
    if _CSV_CONTROL.search(value) or _STEERING.search(value):  # as `visible_text`, CR kept
        value = _CSV_CONTROL.sub(_control_picture, _STEERING.sub("", value))
    if value[0] == "'" or (value[0] in _FORMULA_START and not _PLAIN_NUMBER.fullmatch(value)):
        return "'" + value
    return value


def csv_value(cell: str) -> str:
    """The text a cell written by `csv_cell` held: one leading quote dropped."""
    return cell[1:] if cell.startswith("'") else cell


_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
NAME_LIMIT = 120
"""Most characters of a file name before its ending (well inside every file system's 255)."""


def file_name(text: str, taken: Container[str] = (), *, ending: str = "") -> str:
    """A file name made from trace text (a trace id, an uploaded file's name): every run of
    characters other than ASCII letters, digits, `.`, `_` and `-` becomes `_` (so no `/`, `\\`
    or `..` can leave the folder), leading and trailing dots and underscores go (no hidden
    file), at most `NAME_LIMIT` characters, `trace` when nothing is left, then `ending` (such
    as `.json`; it comes from code and is not changed).

    When the name is in `taken` (names, with their ending, that must not be written over),
    a number is added, `-2`, `-3` and so on, until it is free. The caller adds the name it uses
    to `taken`. For uploads, labelled-trace exports and `orchviz import --out-dir`."""
    base = _UNSAFE_NAME.sub("_", text).strip("._") or "trace"
    name, number = base[:NAME_LIMIT], 2
    while name + ending in taken:
        tag = f"-{number}"
        name, number = base[: NAME_LIMIT - len(tag)] + tag, number + 1
    return name + ending


# -- a reviewer's note ------------------------------------------------------------------------------

def is_web_link(url: str) -> bool:
    """Whether a link may stay a link in a note: an absolute http(s) URL, nothing else (no
    `javascript:`, `data:`, `file:`, relative or mailto link)."""
    return url.strip().lower().startswith(("http://", "https://"))


_CONTROL = re.compile("[\u0000-\u0008\u000b-\u001f\u007f-\u009f]")
_CSV_CONTROL = re.compile("[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]")
"""The controls a CSV cell shows as pictures: a CR is the cell's own, and is kept."""
_STEERING = re.compile("[\u200b\u200c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _control_picture(match: re.Match) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # ␛ for ESC, ␇ for BEL, ␍ for a lone CR
    return "\u2421" if code == 0x7f else "\ufffd"  # ␡ for DEL; C1 controls have no picture


def visible_text(text: object) -> str:
    """A reviewer's text (a note, a comment) with what would steer a display made visible:
    each control character but tab and newline as its Unicode control picture (ESC as ␛,
    BEL as ␇, a lone CR as ␍, DEL as ␡, a C1 control as �), so no terminal that shows the
    file runs an escape sequence and no page shows an empty box; bidi overrides and
    zero-width spaces removed (a zero-width joiner stays: emoji are made of it); CR LF read
    as a newline. `note_markdown`, `note_html` and `csv_cell` apply it."""
    text = str(text).replace("\r\n", "\n")
    return _CONTROL.sub(_control_picture, _STEERING.sub("", text))


@functools.cache
def _note_parser(*, checking: bool = False) -> MarkdownIt:
    """markdown-it-py as notes are read: CommonMark with GitHub's tables and strikethrough, raw
    HTML off (it shows as text), line breaks kept, no image, links only to http(s). With
    `checking`, every link and image is kept, so that `note_markdown` can see them all."""
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark", {"html": False, "breaks": True})
    parser.enable(["table", "strikethrough"])
    if checking:
        parser.validateLink = lambda url: True
    else:
        parser.disable("image")
        parser.validateLink = is_web_link
    return parser


def note_html(text: str, headings_below: int = 0) -> str:
    """A reviewer's Markdown note as HTML (for the HTML report): raw HTML shown as text, no
    image, links only to http(s) (with `rel="noopener noreferrer"`; any other becomes its text,
    as in `note_markdown`), headings moved `headings_below` levels down (at most h6), so a note
    sits under the heading it is shown beneath. markdown-it-py in its safe mode decides what
    becomes a tag."""
    if not (text or "").strip():
        return ""
    text = visible_text(text)
    parser = _note_parser()
    tokens = parser.parse(_outside_code(text, _links_as_text))
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(6, int(token.tag[1]) + headings_below)}"
        for child in token.children or ():
            if child.type == "link_open":
                child.attrSet("rel", "noopener noreferrer")
    return parser.renderer.render(tokens, parser.options, {}).strip()


_CODE = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?(?:^ {0,3}\1[ \t]*$|\Z)"  # a fenced block
                   r"|(?<!`)(`+)(?!`).+?(?<!`)\2(?!`)",  # a code span
                   re.MULTILINE | re.DOTALL)
_IMAGE = re.compile(r"!(?=\[)")
_INLINE_LINK = re.compile(
    r"\[((?:[^\[\]\\]|\\.)*)\]"  # [label]
    r"\(\s*(<[^<>\n]*>|(?:[^\s()\\]|\\.|\((?:[^\s()\\]|\\.)*\))*)"  # (destination
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^()]*\)))?\s*\)")  # "title")
_DEFINITION = re.compile(r"^( {0,3})\[((?:[^\[\]\\]|\\.)+)\]:([ \t]*\n?[ \t]*)(<[^<>\n]*>|\S+)",
                         re.MULTILINE)
_NOTE_HEADING = re.compile(r"^( {0,3})(#{1,6})(?=\s|$)", re.MULTILINE)
_LINK_SYNTAX = re.compile(r"([\[\]!])")


def _outside_code(text: str, change) -> str:
    """`change` applied to the parts of a Markdown text outside code (fenced blocks and code
    spans, which Markdown shows as written and never makes a link of)."""
    parts: list[str] = []
    last = 0
    for match in _CODE.finditer(text):
        parts += [change(text[last:match.start()]), match.group(0)]
        last = match.end()
    return "".join(parts + [change(text[last:])])


def _destination(raw: str) -> str:
    return raw[1:-1] if raw.startswith("<") and raw.endswith(">") else raw


def _links_as_text(text: str) -> str:
    """Markdown (outside code) with no image (`![x](…)` is `!` and a link) and every inline link
    or link definition that is not to http(s) made text: `[click](javascript:…)` -> `click`."""
    text = _IMAGE.sub(r"\\!", text)
    text = _INLINE_LINK.sub(lambda m: m.group(0) if is_web_link(_destination(m.group(2)))
                            else m.group(1), text)
    return _DEFINITION.sub(lambda m: m.group(0) if is_web_link(_destination(m.group(4)))
                           else f"{m.group(1)}\\[{m.group(2)}\\]:{m.group(3)}{m.group(4)}", text)


def _inert(text: str) -> str:
    """Markdown (outside code) safe in any renderer: links as `_links_as_text` leaves them, `<`
    as an entity (no HTML tag, no `<data:…>` autolink), a word joiner before `@` (no `mailto:`
    autolink of an address)."""
    return _links_as_text(text).replace("<", "&lt;").replace("@", WORD_JOINER + "@")


def _only_web_links(markdown: str) -> bool:
    """Whether a Markdown text, read as CommonMark, holds no image and no link but to http(s)."""
    def bad(tokens) -> bool:
        for token in tokens:
            if token.type == "image" or (token.type == "link_open"
                                         and not is_web_link(str(token.attrGet("href") or ""))):
                return True
            if token.children and bad(token.children):
                return True
        return False

    return not bad(_note_parser(checking=True).parse(markdown))


def note_markdown(text: str, headings_below: int = 0) -> str:
    """A reviewer's Markdown note for Markdown (the app's `st.markdown`, the Markdown report),
    its Markdown kept but made safe: raw HTML inert (`<` as an entity, so no tag can open), no
    image (`![x](…)` stays a plain link, or text), every link that is not to http(s) made its
    text (`[click](javascript:…)`, `[x](data:…)`, a reference to such a link, `<data:…>`), an
    e-mail address no `mailto:` link (a word joiner before `@`, as in `markdown_literal`), and
    headings moved `headings_below` levels down (at most ######). Code (fenced blocks, code
    spans) is left exactly as written: Markdown makes no link or tag in it.

    markdown-it-py then reads the result as CommonMark: if it still finds an image or a link
    that is not to http(s) (a form the rewriting missed), every `[`, `]`, `!` and `<` is made
    text everywhere, and the note has no link at all."""
    if not (text or "").strip():
        return ""
    text = visible_text(text)
    safe = _outside_code(text, _inert)
    if not _only_web_links(safe):
        safe = _LINK_SYNTAX.sub(r"\\\1", text.replace("<", "&lt;").replace("@", WORD_JOINER + "@"))
    if headings_below:
        safe = _NOTE_HEADING.sub(lambda m: m.group(1) + "#" * min(6, len(m.group(2))
                                                                  + headings_below), safe)
    return safe
