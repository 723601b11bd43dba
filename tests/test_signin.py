"""Who is who in the app: with Streamlit's sign-in configured (`[auth]` in the secrets) the
reviewer is the signed-in e-mail (`oidc`) and there is no name to type; without it, the typed
name (`self-declared`), and the page says names are not verified. Pages run in AppTest, whose
`at.secrets` and `at.user` stand in for the secrets file and the identity cookie; the
browser journey against a real provider is tests/test_e2e_signin.py."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from factories import APP, PREMATURE, PREMATURE_ID, app_env, make_workspace
from viz_app.cli.app import secrets_flags
from viz_app.errors import OrchvizError
from viz_app.labels.label import Reviewer

AUTH = {"auth": {"redirect_uri": "http://127.0.0.1:8501/oauth2callback",
                 "cookie_secret": "a-cookie-secret-long-enough",
                 "client_id": "orchviz", "client_secret": "s3cret",
                 "server_metadata_url": "http://127.0.0.1:1/.well-known/openid-configuration"}}
LEAD = "lead@example.org"
REV = "rev@example.org"


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    return app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE]))


def page(user: dict | None = None, *, signed_in_app: bool, trace: str | None = PREMATURE_ID,
         **params: str) -> AppTest:
    """The app at a trace, on a server with or without sign-in, as `user` (st.user)."""
    at = AppTest.from_file(str(APP), default_timeout=120)
    if signed_in_app:
        at.secrets = dict(AUTH)
    at.user = user if user is not None else {}
    if trace:
        at.query_params["trace"] = trace
    for name, value in params.items():
        at.query_params[name] = value
    return at.run()


def signed_in(email: str, **claims) -> dict:
    return {"is_logged_in": True, "email": email, "email_verified": True, "name": "x"} | claims


def name_boxes(at: AppTest) -> list:
    return [t for t in at.text_input if t.key == "_reviewer_box"]


def sidebar_text(at: AppTest) -> str:
    return "\n".join([c.value for c in at.sidebar.caption] + [m.value for m in at.sidebar.markdown]
                     + [w.value for w in at.sidebar.warning])


def plain(markdown: str) -> str:
    """Markdown as read: without the escapes and word joiners markdown_literal adds."""
    return markdown.replace("\\", "").replace("\u2060", "")


def save_buttons(at: AppTest) -> list:
    return [b for b in at.button if b.label == "Save"]


def label_and_save(at: AppTest, workspace) -> AppTest:
    trace = workspace.library.trace(PREMATURE_ID)
    at.radio(key=f"ann:{PREMATURE_ID}:{trace.sha256[:12]}:e12:aggregation_quality").set_value(2)
    save_buttons(at)[0].click().run()
    assert not at.exception, at.exception
    return at


# -- without sign-in -----------------------------------------------------------------------------


def test_without_sign_in_the_sidebar_asks_for_a_name_and_says_names_are_not_verified(workspace):
    at = page(signed_in_app=False)
    assert not at.exception, at.exception
    assert len(name_boxes(at)) == 1
    assert "Names are not verified" in sidebar_text(at)
    assert not [b for b in at.sidebar.button if b.label in ("Sign in", "Sign out")]


def test_without_sign_in_a_label_records_the_typed_name_as_self_declared(workspace):
    at = page(signed_in_app=False)
    name_boxes(at)[0].input("ann").run()
    label_and_save(at, workspace)
    assert {(x.reviewer, x.identified_by) for x in workspace.labelling.current()} == {
        ("ann", "self-declared")}


def test_without_sign_in_a_links_reviewer_neither_names_the_visitor_nor_stays_in_the_url(
        workspace):
    at = page(signed_in_app=False, reviewer="ann")
    assert not at.exception, at.exception
    assert name_boxes(at)[0].value == ""
    assert not save_buttons(at)
    assert "reviewer" not in at.query_params
    assert not at.session_state["reviewer"]


def test_without_sign_in_a_link_does_not_replace_the_name_the_visitor_typed(workspace):
    at = page(signed_in_app=False)
    name_boxes(at)[0].input("bob").run()
    at.query_params["reviewer"] = "ann"  # bob opens a link ann shared
    at.run()
    assert name_boxes(at)[0].value == "bob"
    assert "reviewer" not in at.query_params
    label_and_save(at, workspace)
    assert {x.reviewer for x in workspace.labelling.current()} == {"bob"}


@pytest.mark.parametrize("where", ["app_pages/review.py", "app_pages/adjudicate.py"])
def test_with_sign_in_review_and_adjudicate_ask_a_visitor_to_sign_in_not_for_a_name(
        workspace, where):
    from viz_app.labels.campaign import CampaignSpec

    workspace.library.update_index()
    workspace.campaigns.create(CampaignSpec(name="stops", questions=["stopping_correctness"]),
                              Reviewer(name="admin", via="cli"))
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.secrets = dict(AUTH)
    at.user = {"is_logged_in": False}
    at.switch_page(where)
    at.run()
    assert not at.exception, at.exception
    said = " ".join(i.value for i in at.info)
    assert "Sign in" in said
    assert "name" not in said.lower()
    assert not name_boxes(at)


def test_with_sign_in_the_trace_page_asks_a_visitor_to_sign_in_not_for_a_name(workspace):
    at = page({"is_logged_in": False}, signed_in_app=True)
    assert [i.value for i in at.info] == ["Sign in (in the sidebar) to label this trace."]


def test_without_sign_in_an_identity_cookie_is_not_trusted(workspace):
    # st.user can carry fields from a host platform; only the app's own sign-in counts
    at = page(signed_in(LEAD), signed_in_app=False)
    assert len(name_boxes(at)) == 1
    assert LEAD not in sidebar_text(at)


# -- with sign-in --------------------------------------------------------------------------------


def test_with_sign_in_a_visitor_sees_sign_in_and_cannot_save(workspace):
    at = page({"is_logged_in": False}, signed_in_app=True, reviewer="ann")
    assert not at.exception, at.exception
    assert not name_boxes(at)
    assert [b.label for b in at.sidebar.button] == ["Sign in"]
    assert not save_buttons(at)
    assert "reviewer" not in at.query_params  # a name in the URL is no identity


def test_with_sign_in_the_reviewer_is_the_signed_in_e_mail_and_the_url_name_is_ignored(
        workspace):
    at = page(signed_in("Lead@Example.org"), signed_in_app=True, reviewer="mallory")
    assert not name_boxes(at)
    assert f"Signed in as **{LEAD}**" in plain(sidebar_text(at))
    assert [b.label for b in at.sidebar.button] == ["Sign out"]
    label_and_save(at, workspace)
    assert {(x.reviewer, x.identified_by) for x in workspace.labelling.current()} == {(LEAD, "oidc")}


def test_an_e_mail_the_provider_has_not_verified_signs_nothing(workspace):
    at = page(signed_in(REV, email_verified=False), signed_in_app=True)
    assert "no verified e-mail" in sidebar_text(at)
    assert not save_buttons(at)
    assert [b.label for b in at.sidebar.button] == ["Sign out"]


@pytest.mark.parametrize("claim", ["false", "true", "False", 1, None])
def test_only_a_true_boolean_verifies_an_e_mail(workspace, claim):
    # some providers send the claim as text; "false" once let an unverified lead adjudicate
    user = signed_in(REV) | {"email_verified": claim}
    if claim is None:
        del user["email_verified"]
    at = page(user, signed_in_app=True)
    assert "no verified e-mail" in sidebar_text(at)
    assert not save_buttons(at)


def test_an_unverified_lead_address_does_not_open_the_adjudicate_page(workspace):
    workspace.campaigns.add_member(LEAD, "lead", by=Reviewer(name="admin", via="cli"))
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.secrets = dict(AUTH)
    at.user = signed_in(LEAD, email_verified="false")
    at.switch_page("app_pages/adjudicate.py")
    at.run()
    assert not at.exception, at.exception
    assert _lead_check(True, signed_in(LEAD, email_verified="false")).text[0].value == \
        "lead=False"
    assert not at.metric and not at.dataframe
    assert any("Sign in" in i.value for i in at.info)


def test_a_sign_in_without_an_e_mail_signs_nothing(workspace):
    at = page({"is_logged_in": True, "sub": "1234", "name": "No Mail"}, signed_in_app=True)
    assert "no verified e-mail" in sidebar_text(at)
    assert not save_buttons(at)


def test_sign_out_leaves_a_visitor_who_can_sign_in_again(workspace):
    at = page(signed_in(REV), signed_in_app=True)
    at.sidebar.button(key="_sign_out").click().run()
    at.run()
    assert not at.exception, at.exception
    assert at.user.get("is_logged_in") is False
    assert [b.label for b in at.sidebar.button] == ["Sign in"]
    assert not save_buttons(at)


# -- roles -----------------------------------------------------------------------------------


def _lead_check(signed_in_app: bool, user: dict) -> AppTest:
    def script():
        import streamlit as st

        from viz_app.ui import session

        st.text(f"lead={session.is_lead(session.reviewer())}")

    at = AppTest.from_function(script, default_timeout=60)
    if signed_in_app:
        at.secrets = dict(AUTH)
    at.user = user
    return at.run()


def test_with_sign_in_only_a_member_whose_role_is_lead_is_a_lead(workspace):
    workspace.campaigns.add_member(LEAD, "lead", by=Reviewer(name="admin", via="cli"))
    workspace.campaigns.add_member(REV, "reviewer", by=Reviewer(name="admin", via="cli"))
    assert _lead_check(True, signed_in(LEAD)).text[0].value == "lead=True"
    assert _lead_check(True, signed_in(REV)).text[0].value == "lead=False"
    assert _lead_check(True, signed_in("stranger@example.org")).text[0].value == "lead=False"
    assert _lead_check(True, {"is_logged_in": False}).text[0].value == "lead=False"


def test_without_sign_in_everyone_is_their_own_lead(workspace):
    assert _lead_check(False, {}).text[0].value == "lead=True"


# -- orchviz app --secrets ---------------------------------------------------------------------


def _write(tmp_path, text: str, name: str = "secrets.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_app_secrets_passes_the_file_to_streamlit_and_says_sign_in_is_on(tmp_path):
    path = _write(tmp_path, "[auth]\n" + "".join(f'{k} = "{v}"\n' for k, v in AUTH["auth"].items()))
    flags, said = secrets_flags(str(path))
    assert flags == [f"--secrets.files={path.resolve()}"]
    assert "sign-in: on" in said


def test_app_secrets_refuses_named_providers_alone_the_sign_in_button_uses_the_default(
        tmp_path):
    path = _write(tmp_path, '[auth]\nredirect_uri = "http://x/oauth2callback"\n'
                  'cookie_secret = "c"\n[auth.okta]\nclient_id = "a"\nclient_secret = "b"\n'
                  'server_metadata_url = "https://okta/.well-known/openid-configuration"\n')
    with pytest.raises(OrchvizError, match="lacks client_id, client_secret, server_metadata_url"):
        secrets_flags(str(path))


def test_app_secrets_without_auth_leaves_sign_in_off(tmp_path):
    path = _write(tmp_path, 'api_key = "x"\n')
    assert secrets_flags(str(path))[1].startswith("sign-in: off")


@pytest.mark.parametrize("text, name, says", [
    (None, "secrets.toml", "cannot be read"),
    ('[auth\n', "secrets.toml", "not valid TOML"),
    ('[auth]\nredirect_uri = "x"\n', "secrets.toml", "lacks cookie_secret, client_id"),
    ('[auth]\n', "secrets.txt", "must be a .toml file"),
])
def test_app_secrets_refuses_a_file_streamlit_could_not_use_in_one_sentence(tmp_path, text, name,
                                                                           says):
    path = tmp_path / name if text is None else _write(tmp_path, text, name)
    with pytest.raises(OrchvizError, match=says) as err:
        secrets_flags(str(path))
    assert str(err.value).count(". ") == 0 and str(path) in str(err.value)


def test_app_secrets_with_auth_refuses_to_start_without_authlib(tmp_path, monkeypatch):
    import importlib.util

    path = _write(tmp_path, "[auth]\n" + "".join(f'{k} = "{v}"\n' for k, v in AUTH["auth"].items()))
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "authlib" else real(name, *a))
    with pytest.raises(OrchvizError, match=r"needs Authlib: pip install 'orchviz\[auth\]'"):
        secrets_flags(str(path))


def test_a_server_without_authlib_says_so_instead_of_a_sign_in_button(workspace, monkeypatch):
    from streamlit import auth_util

    monkeypatch.setattr(auth_util, "is_authlib_installed", lambda: False)
    at = page({"is_logged_in": False}, signed_in_app=True)
    assert not at.sidebar.button
    assert "Authlib is missing" in at.sidebar.error[0].value


def test_orchviz_app_with_a_missing_secrets_file_prints_one_line_and_exits_1(tmp_path, capsys):
    from viz_app.cli import main

    missing = tmp_path / "nowhere" / "secrets.toml"
    assert main(["app", "--secrets", str(missing), "--db", str(tmp_path / "o.db")]) == 1
    said = capsys.readouterr()
    assert said.out == ""
    assert said.err.count("\n") == 1 and "cannot be read" in said.err
