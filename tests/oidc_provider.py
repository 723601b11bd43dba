"""A small OpenID Connect provider for tests, on 127.0.0.1 at a free port.

It does what Streamlit's `st.login()` (Authlib's Starlette client) asks of a real provider, and
checks what a real provider checks: the discovery document, the authorization code flow with
`state`, `nonce` and PKCE (S256), client authentication at the token endpoint (HTTP Basic or in
the form), a redirect URI registered for the client, single-use codes that expire, an RS256
identity token (`iss`, `aud`, `sub`, `email`, `email_verified`, `nonce`, `iat`, `exp`) signed
with a key published at `/jwks`, `/userinfo` for the access token, and an end-session endpoint.
The JOSE work is joserfc's (Authlib's own JOSE library, which Authlib depends on).

`/authorize` shows a page that lists the users, one link each; a `login_hint` naming a user
skips the page, as a provider does when the user is already signed in there. Nothing asks for
a password: a test picks who signs in.

    with OidcProvider(users=[OidcUser("lead@example.org", "Lea Lead")]) as provider:
        provider.allow_redirect("http://127.0.0.1:8501/oauth2callback")
        provider.secrets_toml("http://127.0.0.1:{port}/oauth2callback")  # for the app
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

CODE_SECONDS = 60
TOKEN_SECONDS = 3600


@dataclass(frozen=True)
class OidcUser:
    """Someone the provider can sign in."""

    email: str
    name: str = ""
    verified: bool = True

    @property
    def sub(self) -> str:
        """A stable subject identifier that is not the e-mail (as real providers do)."""
        return hashlib.sha256(self.email.encode()).hexdigest()[:24]


@dataclass
class _Grant:
    user: OidcUser
    client_id: str
    redirect_uri: str
    nonce: str | None
    challenge: str | None
    scope: str
    expires: float


@dataclass
class OidcProvider:
    """The provider: start it (or use it as a context manager), register the app's redirect
    URI, and point the app's `[auth]` secrets at `metadata_url`."""

    users: list[OidcUser]
    client_id: str = "orchviz-test"
    client_secret: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    redirect_uris: set[str] = field(default_factory=set)
    issued: list[dict[str, Any]] = field(default_factory=list)
    """Every identity token's claims, in order (a test can see who was signed in)."""
    signed_out: int = 0
    """How many times the end-session endpoint sent someone back to the app."""
    forge: bool = False
    """Sign identity tokens with a key the provider does not publish (a forged token: an app
    must refuse it)."""

    def __post_init__(self) -> None:
        from joserfc.jwk import RSAKey  # Authlib's JOSE library (imported here: tests that
        # need the provider check that Authlib is installed first)

        self._key = RSAKey.generate_key(2048, parameters={"kid": secrets.token_hex(8),
                                                          "use": "sig", "alg": "RS256"})
        self._codes: dict[str, _Grant] = {}
        self._tokens: dict[str, OidcUser] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # -- running ---------------------------------------------------------------------------

    def start(self) -> OidcProvider:
        """Serve on 127.0.0.1 at a free port, in a daemon thread."""
        provider = self

        class Handler(_Handler):
            owner = provider

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True,
                         name="oidc-provider").start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> OidcProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def issuer(self) -> str:
        """The provider's URL (`iss` of every token)."""
        assert self._server is not None, "start the provider first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def metadata_url(self) -> str:
        """The discovery document's URL (`server_metadata_url` in the app's secrets)."""
        return f"{self.issuer}/.well-known/openid-configuration"

    def allow_redirect(self, uri: str) -> None:
        """Register a redirect URI for the client (the app's `.../oauth2callback`)."""
        self.redirect_uris.add(uri)

    def secrets_toml(self, redirect_uri: str, cookie_secret: str | None = None) -> str:
        """A Streamlit `secrets.toml` whose `[auth]` signs in with this provider."""
        auth = {"redirect_uri": redirect_uri,
                "cookie_secret": cookie_secret or secrets.token_urlsafe(32),
                "client_id": self.client_id, "client_secret": self.client_secret,
                "server_metadata_url": self.metadata_url}
        return "[auth]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in auth.items())

    # -- the protocol ----------------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        """The discovery document."""
        base = self.issuer
        return {
            "issuer": base,
            "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": f"{base}/token",
            "userinfo_endpoint": f"{base}/userinfo",
            "jwks_uri": f"{base}/jwks",
            "end_session_endpoint": f"{base}/logout",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "scopes_supported": ["openid", "email", "profile"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic",
                                                      "client_secret_post"],
            "claims_supported": ["sub", "iss", "aud", "exp", "iat", "nonce", "email",
                                 "email_verified", "name"],
            "code_challenge_methods_supported": ["S256"],
        }

    def jwks(self) -> dict[str, Any]:
        """The public signing keys."""
        from joserfc.jwk import KeySet

        return KeySet([self._key]).as_dict(private=False)

    def user(self, email: str | None) -> OidcUser | None:
        """The user with this e-mail, if any."""
        return next((u for u in self.users if email and u.email == email), None)

    def authorize(self, query: dict[str, str], email: str) -> str:
        """Issue a code for `email` and return where to send the browser (raises ValueError
        for a request a provider must refuse)."""
        self._check_client_request(query)
        user = self.user(email)
        if user is None:
            raise ValueError("unknown user")
        code = secrets.token_urlsafe(24)
        challenge = query.get("code_challenge")
        if challenge and query.get("code_challenge_method", "plain") != "S256":
            raise ValueError("only S256 code challenges")
        with self._lock:
            self._codes[code] = _Grant(user, query["client_id"], query["redirect_uri"],
                                       query.get("nonce"), challenge,
                                       query.get("scope", "openid"), time.time() + CODE_SECONDS)
        back = {"code": code} | ({"state": query["state"]} if "state" in query else {})
        return _with_query(query["redirect_uri"], back)

    def _check_client_request(self, query: dict[str, str]) -> None:
        if query.get("client_id") != self.client_id:
            raise ValueError("unknown client")
        if query.get("redirect_uri") not in self.redirect_uris:
            raise ValueError("redirect_uri not registered")
        if query.get("response_type") != "code":
            raise ValueError("only the code flow")
        if "openid" not in query.get("scope", "").split():
            raise ValueError("scope must include openid")

    def token(self, form: dict[str, str], authorization: str | None) -> dict[str, Any]:
        """Exchange a code for tokens (raises ValueError with an OAuth error code)."""
        client_id, client_secret = form.get("client_id"), form.get("client_secret")
        if authorization and authorization.startswith("Basic "):
            raw = base64.b64decode(authorization[6:]).decode()
            client_id, client_secret = (unquote(part) for part in raw.partition(":")[::2])
        if client_id != self.client_id or not secrets.compare_digest(
                client_secret or "", self.client_secret):
            raise ValueError("invalid_client")
        if form.get("grant_type") != "authorization_code":
            raise ValueError("unsupported_grant_type")
        with self._lock:
            grant = self._codes.pop(form.get("code", ""), None)  # a code works once
        if grant is None or grant.expires < time.time() or grant.client_id != client_id \
                or grant.redirect_uri != form.get("redirect_uri"):
            raise ValueError("invalid_grant")
        if grant.challenge is not None:
            verifier = form.get("code_verifier", "")
            digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
            if digest.rstrip(b"=").decode() != grant.challenge:
                raise ValueError("invalid_grant")
        now = int(time.time())
        claims = {"iss": self.issuer, "aud": client_id, "sub": grant.user.sub,
                  "email": grant.user.email, "email_verified": grant.user.verified,
                  "name": grant.user.name or grant.user.email, "iat": now,
                  "exp": now + TOKEN_SECONDS}
        if grant.nonce is not None:
            claims["nonce"] = grant.nonce
        from joserfc import jwt

        key = self._key
        if self.forge:
            from joserfc.jwk import RSAKey

            key = RSAKey.generate_key(2048, parameters={"kid": self._key.kid})
        id_token = jwt.encode({"alg": "RS256", "kid": self._key.kid}, claims, key)
        access = secrets.token_urlsafe(24)
        with self._lock:
            self._tokens[access] = grant.user
            self.issued.append(claims)
        return {"access_token": access, "token_type": "Bearer", "expires_in": TOKEN_SECONDS,
                "id_token": id_token, "scope": grant.scope}

    def userinfo(self, authorization: str | None) -> dict[str, Any]:
        """The claims of the access token's user (raises ValueError for a bad token)."""
        token = (authorization or "").removeprefix("Bearer ").strip()
        with self._lock:
            user = self._tokens.get(token)
        if user is None:
            raise ValueError("invalid_token")
        return {"sub": user.sub, "email": user.email, "email_verified": user.verified,
                "name": user.name or user.email}

    def login_page(self, query: dict[str, str]) -> str:
        """The page `/authorize` shows: one link per user."""
        links = "".join(
            f'<li><a id="as-{html.escape(u.sub)}" href="/authorize?'
            f'{html.escape(urlencode(query | {"login_hint": u.email}))}">'
            f"{html.escape(u.name or u.email)} &lt;{html.escape(u.email)}&gt;</a></li>"
            for u in self.users)
        return ("<!doctype html><html><head><title>Test identity provider</title></head>"
                "<body style='font-family:sans-serif;margin:3rem'>"
                "<h1>Test identity provider</h1><p>Sign in as:</p>"
                f"<ul>{links}</ul></body></html>")


def _with_query(uri: str, params: dict[str, str]) -> str:
    joiner = "&" if urlsplit(uri).query else "?"
    return f"{uri}{joiner}{urlencode(params)}"


class _Handler(BaseHTTPRequestHandler):
    owner: OidcProvider

    def log_message(self, format: str, *args: Any) -> None:  # quiet in test output
        pass

    def _send(self, status: int, body: str | dict[str, Any], content_type: str | None = None,
              headers: dict[str, str] | None = None) -> None:
        data = (json.dumps(body) if isinstance(body, dict) else body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type or (
            "application/json" if isinstance(body, dict) else "text/html; charset=utf-8"))
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _redirect(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        provider = self.owner
        if url.path == "/.well-known/openid-configuration":
            self._send(200, provider.metadata())
        elif url.path == "/jwks":
            self._send(200, provider.jwks())
        elif url.path == "/userinfo":
            try:
                self._send(200, provider.userinfo(self.headers.get("Authorization")))
            except ValueError as err:
                self._send(401, {"error": str(err)})
        elif url.path == "/authorize":
            hint = query.get("login_hint")
            try:
                if provider.user(hint) is None:
                    provider._check_client_request(query)
                    self._send(200, provider.login_page(
                        {k: v for k, v in query.items() if k != "login_hint"}))
                else:
                    self._redirect(provider.authorize(query, hint))
            except ValueError as err:
                self._send(400, f"<p>Refused: {html.escape(str(err))}</p>")
        elif url.path == "/logout":
            back = query.get("post_logout_redirect_uri")
            if back in provider.redirect_uris:
                with provider._lock:
                    provider.signed_out += 1
                self._redirect(back)
            else:
                self._send(200, "<p>Signed out.</p>")
        else:
            self._send(404, {"error": "not_found"})

    def do_POST(self) -> None:  # noqa: N802
        url = urlsplit(self.path)
        length = min(int(self.headers.get("Content-Length") or 0), 1 << 16)
        form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
        if url.path == "/token":
            try:
                self._send(200, self.owner.token(form, self.headers.get("Authorization")))
            except ValueError as err:
                self._send(401 if str(err) == "invalid_client" else 400, {"error": str(err)})
        else:
            self._send(404, {"error": "not_found"})
