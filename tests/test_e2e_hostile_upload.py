"""End to end in Chromium (issue 39, items 1, 5 and 8): the 400-digit trace uploaded beside good
ones is refused by the upload box, naming the file as the user named it, and not kept; the
Library lists the good ones; a 400-digit trace already in a library folder is one failure row,
by its path in the library, and never a broken page."""

import json

import pytest
from conftest import shot, wait_for_streamlit
from factories import PREMATURE, PREMATURE_ID, make_workspace

from test_hostile_numbers import HUGE, minimal

WAIT = 90_000  # ms: two cores shared by many processes can be slow to run a page


@pytest.mark.browser
def test_the_400_digit_trace_beside_good_ones_lists_the_good_and_one_failure(
        app_server, page, tmp_path):
    library = tmp_path / "library"
    library.mkdir()
    (library / PREMATURE.name).write_bytes(PREMATURE.read_bytes())
    (library / "on-disk-huge.json").write_text(json.dumps(minimal("on-disk", tokens=HUGE)))
    (library / "edge.json").write_text(json.dumps(minimal("edge", tokens=1e308,
                                                          end_t=1.7976931348623157e308)))
    uploads = tmp_path / "to-upload"
    uploads.mkdir()
    files = []
    for name, raw in (("good one.json", minimal("good-1")), ("good two.json", minimal("good-2")),
                      ("Huge Tokens (400 digits).json", minimal("huge", tokens=HUGE))):
        (uploads / name).write_text(json.dumps(raw))
        files.append(str(uploads / name))
    ws = make_workspace(tmp_path, traces=[library])
    base = app_server(ws)
    page.goto(base)
    wait_for_streamlit(page, timeout=WAIT)
    assert page.get_by_text("Files that failed to load (1)").count() == 1  # the one on disk

    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(files)
    page.get_by_text("4 of 4 traces", exact=False).wait_for(timeout=WAIT)
    wait_for_streamlit(page, timeout=WAIT)
    refusal = page.locator('[data-testid="stAlert"]').filter(
        has_text="Huge Tokens (400 digits).json")
    refusal.wait_for(timeout=WAIT)
    said = refusal.inner_text()
    assert "was not added, and nothing of it was kept" in said
    assert "events[1].tokens: 9999…9999 (400 digits)" in said and str(tmp_path) not in said
    assert "Read as" in page.locator('[data-testid="stSelectbox"]').first.inner_text()
    grid = page.locator('[data-testid="stDataFrame"]').first
    for trace_id in ("good-1", "good-2", PREMATURE_ID, "edge"):
        grid.get_by_text(trace_id, exact=True).first.wait_for(state="attached", timeout=WAIT)
    failures = page.locator('[data-testid="stDataFrame"]').nth(1)
    failures.get_by_text("on-disk-huge.json", exact=True).first.wait_for(state="attached")
    assert page.get_by_text("Files that failed to load (1)").count() == 1
    assert str(tmp_path) not in page.locator("body").inner_text()
    assert sorted(p.name for p in (tmp_path / "uploads").iterdir()) == ["good_one.json",
                                                                        "good_two.json"]
    page.locator('[data-testid="stMain"]').evaluate("main => main.scrollTo(0, 0)")
    shot(page, "hostile_upload_01_good_listed_huge_refused")

    page.get_by_role("button", name="Dismiss").click()  # the user drops the failed file's word
    wait_for_streamlit(page, timeout=WAIT)
    assert page.locator('[data-testid="stAlert"]').filter(
        has_text="Huge Tokens (400 digits).json").count() == 0
