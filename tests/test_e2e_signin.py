"""End to end in Chromium: the app signs people in with Streamlit's own OpenID Connect login
against a provider this test starts on 127.0.0.1 (tests/oidc_provider.py). Two people in two
browser contexts, one a lead: each signs in, sees only themselves in the sidebar, has no name
box to type another name into, and every label they save records their e-mail, identified by
`oidc`; only the lead gets past the Adjudicate page's door. A visitor who has not signed in can
look but not save."""

from __future__ import annotations

import importlib.util
import re

import pytest

from conftest import VIEWPORT, need, shot, wait_for_streamlit
from factories import PREMATURE, PREMATURE_ID, make_workspace
from oidc_provider import OidcProvider, OidcUser
from viz_app.labels.label import Reviewer

pytestmark = pytest.mark.browser

LEAD = OidcUser("lead@example.org", "Lea Lead")
REV = OidcUser("rev@example.org", "Rev Viewer")
BOSS = OidcUser("boss@example.org", "Unverified Boss", verified="false")  # type: ignore[arg-type]
"""A lead's address whose provider sends `email_verified` as the text "false"."""


@pytest.fixture
def provider():
    if importlib.util.find_spec("authlib") is None:
        need("Authlib is not installed, and Streamlit's sign-in needs it (pip install -e '.[test]')")
    with OidcProvider(users=[LEAD, REV, BOSS]) as running:
        yield running


@pytest.fixture
def signed_in_app(app_server, provider, tmp_path):
    """The app on demo 10 with sign-in through the provider; the lead is a lead member.
    Returns (base URL, workspace)."""
    workspace = make_workspace(tmp_path, traces=[PREMATURE])
    admin = Reviewer(name="admin", via="cli")
    workspace.campaigns.add_member(LEAD.email, "lead", by=admin)
    workspace.campaigns.add_member(REV.email, "reviewer", by=admin)
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(provider.secrets_toml("http://127.0.0.1:{port}/oauth2callback"))
    base = app_server(workspace, extra_args=["--secrets", str(secrets)])
    provider.allow_redirect(f"{base}/oauth2callback")
    return base, workspace


def settle(page) -> None:
    """Wait for the app's run to finish (generously: the first run of the trace page on a
    loaded machine takes a while)."""
    wait_for_streamlit(page, timeout=120_000)


def new_context(chromium):
    context = chromium.new_context(viewport=VIEWPORT)
    context.set_default_timeout(60_000)
    return context


def sidebar(page):
    return page.locator('[data-testid="stSidebar"]')


def sidebar_text(page) -> str:
    """The sidebar's text as read (an e-mail is shown with a word joiner, so it is no link)."""
    return sidebar(page).inner_text().replace("\u2060", "")


def sign_in(page, base: str, user: OidcUser, shot_name: str | None = None,
            verified: bool = True) -> None:
    """Press Sign in, pick the user on the provider's page, and come back signed in (or, for
    an address the provider does not vouch for, signed in with nothing to save as)."""
    page.goto(f"{base}/trace?trace={PREMATURE_ID}")
    settle(page)
    sidebar(page).get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/authorize\?"))
    assert page.get_by_text("Test identity provider").is_visible()
    if shot_name:
        shot(page, shot_name)
    page.get_by_role("link", name=re.compile(re.escape(user.email))).click()
    page.wait_for_url(re.compile(re.escape(base) + r"/?(\?.*)?$"))  # back at the app
    settle(page)
    page.goto(f"{base}/trace?trace={PREMATURE_ID}")
    settle(page)
    sidebar(page).get_by_text("Signed in as" if verified else "no verified e-mail",
                              exact=False).wait_for()


def label_the_aggregate(page) -> None:
    form = page.locator(".st-key-ann-form")
    page.get_by_text("Labels", exact=True).click()  # focus on the page, not a text field
    page.keyboard.press("2")
    settle(page)
    form.get_by_role("button", name=re.compile("Save")).click()
    settle(page)
    page.get_by_text("Saved 2 answers on e12").wait_for()


def test_two_people_each_sign_in_and_sign_only_as_themselves(chromium, signed_in_app, provider):
    base, workspace = signed_in_app
    lead_ctx = new_context(chromium)
    rev_ctx = new_context(chromium)
    try:
        a, b = lead_ctx.new_page(), rev_ctx.new_page()

        # not signed in: a Sign in button, no name box, nothing to save
        a.goto(f"{base}/trace?trace={PREMATURE_ID}&reviewer=mallory")
        settle(a)
        assert sidebar(a).get_by_role("button", name="Sign in").is_visible()
        assert a.get_by_role("textbox", name="Reviewer").count() == 0
        assert a.locator(".st-key-ann-form").count() == 0
        shot(a, "signin_01_visitor")

        sign_in(a, base, LEAD, "signin_02_provider")
        assert "lead@example.org" in sidebar_text(a)
        assert a.get_by_role("textbox", name="Reviewer").count() == 0
        assert sidebar(a).get_by_role("button", name="Sign out").is_visible()
        label_the_aggregate(a)
        shot(a, "signin_03_lead_saved")

        sign_in(b, base, REV)
        b.goto(f"{base}/trace?trace={PREMATURE_ID}&reviewer={LEAD.email}")  # no way to be A
        settle(b)
        assert "rev@example.org" in sidebar_text(b)
        assert "lead@example.org" not in sidebar_text(b)
        assert b.get_by_role("textbox", name="Reviewer").count() == 0
        label_the_aggregate(b)
        shot(b, "signin_04_reviewer_saved")

        labels = workspace.labelling.current()
        assert {(x.reviewer, x.question, x.identified_by) for x in labels} == {
            (who, question, "oidc") for who in (LEAD.email, REV.email)
            for question in ("aggregation_quality", "aggregation_issues")}
        # the provider signed each in once, with the nonce Streamlit sent
        assert [c["email"] for c in provider.issued] == [LEAD.email, REV.email]
        assert all(c["nonce"] for c in provider.issued)

        # A is still A after B signed in (separate cookies, separate sessions)
        a.reload()
        settle(a)
        assert "lead@example.org" in sidebar_text(a)

        # the Adjudicate page: its lead controls are for the lead, not for B
        b.goto(f"{base}/adjudicate")
        settle(b)
        b.get_by_text("Only a campaign's leads adjudicate").wait_for()
        shot(b, "signin_05_reviewer_not_a_lead")
        a.goto(f"{base}/adjudicate")
        settle(a)
        assert a.get_by_text("Only a campaign's leads adjudicate").count() == 0
        a.get_by_text("no review campaign yet", exact=False).wait_for()

        # signing out: back to a visitor who cannot save
        sidebar(a).get_by_role("button", name="Sign out").click()
        # Streamlit clears its cookie, the provider ends its session, and both send the
        # browser back to the app's root
        a.wait_for_url(re.compile(re.escape(base) + r"/?$"))
        assert provider.signed_out == 1
        a.goto(f"{base}/trace?trace={PREMATURE_ID}")
        settle(a)
        assert sidebar(a).get_by_role("button", name="Sign in").is_visible()
        assert a.locator(".st-key-ann-form").count() == 0
        shot(a, "signin_06_signed_out")
    finally:
        lead_ctx.close()
        rev_ctx.close()


def test_an_identity_token_the_provider_did_not_sign_signs_nobody_in(chromium, signed_in_app,
                                                                    provider):
    base, workspace = signed_in_app
    provider.forge = True  # the token's signature is not the published key's
    context = new_context(chromium)
    try:
        page = context.new_page()
        page.goto(f"{base}/trace?trace={PREMATURE_ID}")
        settle(page)
        sidebar(page).get_by_role("button", name="Sign in").click()
        page.wait_for_url(re.compile(r"/authorize\?"))
        page.get_by_role("link", name=re.compile(re.escape(LEAD.email))).click()
        page.wait_for_url(re.compile(re.escape(base) + r"/?(\?.*)?$"))
        settle(page)
        assert [c["email"] for c in provider.issued] == [LEAD.email]  # a token was issued
        page.goto(f"{base}/trace?trace={PREMATURE_ID}")
        settle(page)
        assert sidebar(page).get_by_role("button", name="Sign in").is_visible()
        assert "Signed in as" not in sidebar_text(page)
        assert page.locator(".st-key-ann-form").count() == 0
        assert not [c for c in context.cookies() if c["name"].startswith("_streamlit_user")]
    finally:
        context.close()


def test_the_agreement_page_and_its_downloads_are_for_leads_only(chromium, signed_in_app):
    base, workspace = signed_in_app
    workspace.campaigns.add_member(BOSS.email, "lead", by=Reviewer(name="admin", via="cli"))
    trace = workspace.library.trace(PREMATURE_ID)
    workspace.labelling.save_answers(trace, "e12", {"aggregation_quality": 1}, Reviewer(
        name="ann@example.org", via="oidc"), comment="ANNS-NOTE")
    contexts = [new_context(chromium) for _ in range(4)]
    try:
        visitor, rev, boss, lead = (c.new_page() for c in contexts)
        refused = "for this workspace's leads"

        visitor.goto(f"{base}/agreement")
        settle(visitor)
        visitor.get_by_text(refused, exact=False).wait_for()

        sign_in(rev, base, REV)
        rev.goto(f"{base}/agreement")
        settle(rev)
        rev.get_by_text(refused, exact=False).wait_for()
        assert rev.locator('[data-testid="stDownloadButton"]').count() == 0
        assert rev.locator('[data-testid="stDataFrame"]').count() == 0
        assert "ANNS-NOTE" not in rev.content() and "ann@example.org" not in rev.content()
        shot(rev, "signin_07_agreement_refused_to_a_reviewer")

        sign_in(boss, base, BOSS, verified=False)  # a lead member, but "false" as text
        boss.goto(f"{base}/agreement")
        settle(boss)
        boss.get_by_text(refused, exact=False).wait_for()
        assert boss.locator('[data-testid="stDownloadButton"]').count() == 0
        boss.goto(f"{base}/adjudicate")
        settle(boss)
        assert boss.get_by_text("Sign in (in the sidebar) to adjudicate").is_visible()

        sign_in(lead, base, LEAD)
        lead.goto(f"{base}/agreement")
        settle(lead)
        lead.get_by_text("Download the labels").wait_for()
        assert lead.get_by_text(refused, exact=False).count() == 0
        assert lead.locator('[data-testid="stDownloadButton"]').count() >= 1
        shot(lead, "signin_08_agreement_for_the_lead")
    finally:
        for context in contexts:
            context.close()
