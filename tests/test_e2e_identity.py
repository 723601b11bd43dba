"""End to end in Chromium, without sign-in: a link never carries or sets an identity. Ann types
her name once (her browser keeps it) and shares a link that still says `&reviewer=ann`, as links
orchviz made before did; the colleague who opens it is nobody until they type their own name,
their browser does not take hers, and their save neither records her name nor replaces her
answer. Ann's own browser stays ann whatever name a link carries."""

from __future__ import annotations

import re
from urllib.parse import unquote

import pytest

from conftest import REVIEWER_COOKIE, VIEWPORT, shot, wait_for_streamlit
from factories import PREMATURE, PREMATURE_ID, make_workspace

pytestmark = pytest.mark.browser
WAIT = 60_000


@pytest.fixture
def workspace(tmp_path):
    return make_workspace(tmp_path, traces=[PREMATURE])


def settle(page) -> None:
    wait_for_streamlit(page, timeout=120_000)


def name_box(page):
    return page.get_by_role("textbox", name="Reviewer")


def type_name(page, name: str) -> None:
    name_box(page).fill(name)
    name_box(page).press("Enter")
    settle(page)
    page.get_by_text(f"targets labelled by {name}").wait_for()


def save_the_aggregate(page, answer: str) -> None:
    form = page.locator(".st-key-ann-form")
    form.locator('[data-testid="stRadioOption"]').filter(has_text=answer).click()
    settle(page)
    form.get_by_role("button", name=re.compile("Save")).click()
    settle(page)
    page.get_by_text("Saved 2 answers on e12").wait_for()


def kept_name(context) -> str | None:
    found = [c["value"] for c in context.cookies() if c["name"] == REVIEWER_COOKIE]
    return unquote(found[0]) if found and found[0] else None


def test_a_shared_link_names_nobody_and_a_visitor_saves_only_as_the_name_they_type(
        chromium, app_server, workspace):
    base = app_server(workspace)
    ann_ctx = chromium.new_context(viewport=VIEWPORT)
    bob_ctx = chromium.new_context(viewport=VIEWPORT)
    try:
        ann, bob = ann_ctx.new_page(), bob_ctx.new_page()
        for page in (ann, bob):
            page.set_default_timeout(WAIT)

        ann.goto(f"{base}/trace?trace={PREMATURE_ID}")
        settle(ann)
        type_name(ann, "ann")
        save_the_aggregate(ann, "3 partial")
        assert "reviewer=" not in ann.url  # her address names nobody
        link = f"{base}/trace?trace={PREMATURE_ID}&event=e12&reviewer=ann"  # an older link

        bob.goto(link)
        settle(bob)
        assert name_box(bob).input_value() == ""
        assert bob.locator(".st-key-ann-form").count() == 0  # nothing to save as anyone
        assert "reviewer=" not in bob.url  # the app dropped the name from the address
        assert kept_name(bob_ctx) is None  # and did not keep hers
        shot(bob, "identity_01_link_names_nobody")

        type_name(bob, "bob")
        save_the_aggregate(bob, "1 drops or contradicts")
        bob.goto(link)  # the link again, later: still bob
        settle(bob)
        assert name_box(bob).input_value() == "bob"
        assert kept_name(bob_ctx) == "bob"
        shot(bob, "identity_02_visitor_keeps_own_name")

        ann.goto(f"{base}/trace?trace={PREMATURE_ID}&reviewer=mallory")
        settle(ann)
        assert name_box(ann).input_value() == "ann"

        answers = {(x.reviewer, x.value) for x in workspace.labelling.current()
                   if x.question == "aggregation_quality"}
        assert answers == {("ann", 3), ("bob", 1)}
    finally:
        ann_ctx.close()
        bob_ctx.close()
