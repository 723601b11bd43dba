"""End to end: a Claude Code session uploaded in the library page is converted on load, listed
with its source format, and opens on the trace page with its spawn tree."""

import json

import pytest
from conftest import shot, wait_for_streamlit
from factories import make_workspace
from importing import FIXTURES

from viz_app.synth import HOSTILE_MARKER

SESSION = FIXTURES / "claude_session.jsonl"
PAYLOAD = (f'<img src=x onerror="window.{HOSTILE_MARKER}=1">'
           f'<script>window.{HOSTILE_MARKER}=1</script>')


def hostile_session(path):
    """The fixture session with a script payload in every text, tool name and sub-agent type."""
    lines = []
    for raw in SESSION.read_text().splitlines():
        line = json.loads(raw)
        for block in (line.get("message") or {}).get("content") or []:
            if isinstance(block, dict):
                for key in ("text", "thinking", "name"):
                    if key in block and block[key] not in ("Task", "Agent"):
                        block[key] = PAYLOAD
                if isinstance(block.get("input"), dict) and "subagent_type" in block["input"]:
                    block["input"]["subagent_type"] = PAYLOAD
        lines.append(json.dumps(line))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.browser
def test_uploaded_claude_code_session_is_listed_and_opens_its_tree(app_server, page, tmp_path):
    empty = tmp_path / "library"
    empty.mkdir()
    base = app_server(make_workspace(tmp_path, traces=[empty]))  # uploads in tmp_path
    page.goto(base)
    wait_for_streamlit(page)

    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(SESSION))
    page.get_by_text("1 of 1 traces", exact=False).wait_for(timeout=60_000)
    wait_for_streamlit(page)
    grid = page.locator('[data-testid="stDataFrame"]').first
    grid.get_by_text("claude_code", exact=True).first.wait_for(state="attached", timeout=30_000)
    assert grid.get_by_text("s-1111", exact=True).count() >= 1
    shot(page, "import-library-upload")

    box = grid.bounding_box()
    page.mouse.click(box["x"] + 16, box["y"] + 36 + 17)  # the first row's selection box
    page.wait_for_url("**/trace?trace=s-1111*", timeout=30_000)
    wait_for_streamlit(page, timeout=60_000)
    page.get_by_text("format claude_code", exact=False).first.wait_for(timeout=30_000)
    tree = page.locator(".js-plotly-plot").first
    tree.wait_for(timeout=30_000)
    labels = " ".join(tree.locator("text").all_text_contents())
    assert "main" in labels
    assert "researcher-a1" in labels and "researcher-b2" in labels
    shot(page, "import-trace-tree")


@pytest.mark.browser
def test_script_payloads_in_an_imported_session_never_run(app_server, page, tmp_path):
    library = tmp_path / "library"
    library.mkdir()
    hostile_session(library / "hostile.jsonl")
    base = app_server(make_workspace(tmp_path, traces=[library]))
    page.goto(f"{base}/trace?trace=s-1111")
    wait_for_streamlit(page, timeout=60_000)
    tree = page.locator(".js-plotly-plot").first
    tree.wait_for(timeout=30_000)
    assert "onerror" in " ".join(tree.locator("text").all_text_contents())  # shown as text
    page.wait_for_timeout(1500)
    assert page.evaluate(f"() => [window, ...Array.from(document.querySelectorAll('iframe'))"
                         f".map(f => f.contentWindow)].some(w => w && w.{HOSTILE_MARKER})") is False
    shot(page, "import-hostile-tree")


@pytest.mark.browser
def test_a_codex_sessions_folder_in_the_library_opens_each_root_with_its_children(
        app_server, page, tmp_path):
    """The library reads its folders file by file: a child rollout is read with its root
    thread, whose tree holds the child once, without the phantom of its copied spawn call."""
    import shutil

    library = tmp_path / "library"
    shutil.copytree(FIXTURES / "codex_spawn_call", library / "sessions")
    base = app_server(make_workspace(tmp_path, traces=[library]))
    page.goto(f"{base}/trace?trace=019904b8-2100-7000-8aaa-0000000000a1")
    wait_for_streamlit(page, timeout=60_000)
    page.get_by_text("format codex", exact=False).first.wait_for(timeout=30_000)
    tree = page.locator(".js-plotly-plot").first
    tree.wait_for(timeout=30_000)
    labels = tree.locator("text").all_text_contents()
    assert "main" in " ".join(labels) and "Ada" in " ".join(labels)
    assert not [t for t in labels if t.startswith("agent-")]
    shot(page, "import-codex-tree")
    page.goto(f"{base}/trace?trace=019904b8-254c-7000-8bbb-0000000000b2")
    wait_for_streamlit(page, timeout=60_000)
    page.get_by_text("019904b8-254c", exact=False).first.wait_for(timeout=30_000)
    assert page.get_by_text("format codex", exact=False).count() == 0  # not a trace of its own
