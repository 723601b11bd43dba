"""The reward server: a reward model behind HTTP, in the shapes the trainers send (FastAPI on
uvicorn; the optional extra `reward`).

Routes:

- `POST /get_reward` (and `POST /`): OpenRLHF's remote reward protocol, as its `serve_rm`
  speaks it and its `--remote_rm_url` client sends it: `{"query": [text, ...], "prompts":
  [...], "labels": [...]}` answered `{"rewards": [...], "scores": [...], "extra_logs":
  {"orchviz_decisions": [...]}, "model_version": "..."}`, one reward per query (`Scorer.score_texts`; a query that
  begins with its prompt is scored from where the prompt ends; OpenRLHF turns every
  `extra_logs` value into a tensor, so it holds numbers only: the decisions each query held).
  Queries of requests
  that arrive together are scored in one batch (`Batcher`).
- `POST /score`: a whole rollout: the body is a trace, or any file `orchviz import` reads (a
  pool's JSON Lines, an OpenTelemetry export, a Claude Code session...), JSON or bytes
  (`?format=` names the format where detection cannot, `?name=` the file's name). Answered `{"model_version": ...,
  "rollouts": [{"trace_id", "team_reward", "decisions": [{"event_id", "sub_decision",
  "agent", "reward"}]}]}`.
- `GET /health`: the model's version and kind.

Limits: a body over `max_body_bytes` is refused while it is read (413), a request with more
than `max_queries` queries or a query longer than `max_query_chars` is refused (413), a request
not scored within `deadline` seconds is answered 503 and nothing of it is logged. Every refusal
is one sentence in `{"error": ...}`, never a traceback, and the server keeps serving. With a
`token`, every route but `/health` asks for it (`Authorization: Bearer TOKEN`, or `?token=` in
the URL for clients that send no headers, as OpenRLHF's does).

`audit` (an `AuditLog`) logs every scored rollout to a pool with the model's version and its
rewards, for reviewers to label what the model rewarded."""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from fastapi import Request  # at module level: FastAPI reads the routes' annotations here

from viz_app.errors import OrchvizError
from viz_app.reward.scoring import Scorer, load_scorer

log = logging.getLogger("viz_app.reward.server")

ENV = "ORCHVIZ_REWARD_SERVE"
"""The environment variable carrying a `ServeSettings` (JSON) to every uvicorn worker."""


@dataclass
class ServeSettings:
    """How a server serves (the options of `orchviz reward serve`)."""

    model: str = ""
    db: str | None = None
    hf: bool = False
    token: str = ""
    max_body_bytes: int = 8 * 1024 * 1024
    max_queries: int = 1024
    max_query_chars: int = 200_000
    deadline: float = 30.0
    batch_wait: float = 0.005
    max_batch: int = 256
    audit: str | None = None
    audit_every: int = 64

    def to_env(self) -> str:
        return orjson.dumps(self.__dict__).decode()

    @classmethod
    def from_env(cls, text: str) -> ServeSettings:
        return cls(**orjson.loads(text))


class Refused(Exception):
    """A request answered with a status and one sentence."""

    def __init__(self, status: int, sentence: str):
        super().__init__(sentence)
        self.status = status
        self.sentence = sentence


class Batcher:
    """Queries of concurrent requests scored together: a request's queries wait up to
    `wait` seconds (or until `max_batch` queries are waiting) and are scored in one call of
    the scorer, in a worker thread; each request gets its own rewards back."""

    def __init__(self, scorer: Scorer, wait: float, max_batch: int):
        self.scorer = scorer
        self.wait = wait
        self.max_batch = max_batch
        self.pending: list[tuple[list[str], list[str], asyncio.Future]] = []
        self.flusher: asyncio.Task | None = None
        self.lock = asyncio.Lock()

    async def score(self, texts: list[str], prompts: list[str]) -> list[float]:
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self.pending.append((texts, prompts, future))
        if sum(len(t) for t, _, _ in self.pending) >= self.max_batch:
            await self._flush()
        elif self.flusher is None or self.flusher.done():
            self.flusher = asyncio.create_task(self._later())
        return await future

    async def _later(self) -> None:
        # A request that arrives while a batch is being scored sees this task still running and
        # starts none of its own: so the task goes round again until nothing is left waiting.
        while True:
            await asyncio.sleep(self.wait)
            await self._flush()
            if not self.pending:
                return

    async def _flush(self) -> None:
        async with self.lock:
            taken, self.pending = self.pending, []
            if not taken:
                return
            texts = [t for batch, _, _ in taken for t in batch]
            prompts = [p for _, batch, _ in taken for p in batch]
            try:
                rewards = await asyncio.to_thread(self.scorer.score_texts, texts, prompts)
            except Exception as err:  # every waiting request hears of it
                for _, _, future in taken:
                    if not future.done():
                        future.set_exception(err)
                return
            at = 0
            for batch, _, future in taken:
                if not future.done():
                    future.set_result(rewards[at:at + len(batch)])
                at += len(batch)


def create_app(scorer: Scorer, settings: ServeSettings, audit: Any = None):
    """The FastAPI application serving `scorer` under `settings`."""
    from fastapi import FastAPI
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException as StarletteHTTPException

    app = FastAPI(title="orchviz reward server", version=scorer.version,
                  docs_url=None, redoc_url=None, openapi_url=None)
    batcher = Batcher(scorer, settings.batch_wait, settings.max_batch)
    app.state.scorer, app.state.settings, app.state.audit = scorer, settings, audit

    def refusal(status: int, sentence: str) -> JSONResponse:
        return JSONResponse({"error": sentence}, status_code=status)

    @app.exception_handler(Refused)
    async def _refused(request: Request, err: Refused):
        return refusal(err.status, err.sentence)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, err: RequestValidationError):
        return refusal(422, "the request is not what this route reads: "
                       + _first_error(err.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, err: StarletteHTTPException):
        sentences = {404: f"no route {request.url.path} (routes: POST /get_reward, POST /score,"
                     " GET /health)", 405: f"{request.method} is not accepted on "
                     f"{request.url.path}"}
        return refusal(err.status_code, sentences.get(err.status_code, str(err.detail)))

    @app.exception_handler(Exception)
    async def _failed(request: Request, err: Exception):
        log.exception("scoring failed")
        return refusal(500, f"scoring failed ({type(err).__name__}); nothing was logged, and "
                       "the server keeps serving")

    @app.middleware("http")
    async def guard(request: Request, call_next):
        if settings.token and request.url.path != "/health":
            given = request.headers.get("authorization", "")
            given = given[7:] if given.lower().startswith("bearer ") else \
                request.query_params.get("token", "")
            if not hmac.compare_digest(given.encode(), settings.token.encode()):
                return refusal(401, "this reward server asks for its token: send "
                               "`Authorization: Bearer TOKEN` or add `?token=TOKEN` to the URL")
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() \
                and int(declared) > settings.max_body_bytes:
            return refusal(413, f"the body is {int(declared):,} bytes, over this server's "
                           f"limit of {settings.max_body_bytes:,} (--max-body-bytes)")
        try:
            return await asyncio.wait_for(call_next(request), settings.deadline)
        except asyncio.TimeoutError:
            return refusal(503, f"the request was not scored within the deadline of "
                           f"{settings.deadline:g} s (--deadline); nothing of it was logged")
        except Refused as err:
            return refusal(err.status, err.sentence)

    async def body(request: Request) -> bytes:
        """The body, read up to the limit (a client that sends more than it declared, or
        declares nothing, is stopped at the limit)."""
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > settings.max_body_bytes:
                raise Refused(413, f"the body is over this server's limit of "
                              f"{settings.max_body_bytes:,} bytes (--max-body-bytes)")
            chunks.append(chunk)
        return b"".join(chunks)

    @app.get("/health")
    async def health():
        return {"status": "ok", "model_version": scorer.version, "kind": scorer.kind,
                "worker": os.getpid()}

    async def get_reward(request: Request):
        data = _json(await body(request))
        queries = data.get("query") if isinstance(data, dict) else None
        if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
            raise Refused(422, 'the body must be a JSON object whose "query" is a list of '
                          'texts, as OpenRLHF sends: {"query": ["...", ...]}')
        if len(queries) > settings.max_queries:
            raise Refused(413, f"{len(queries):,} queries in one request, over this server's "
                          f"limit of {settings.max_queries:,} (--max-queries)")
        long = next((i for i, q in enumerate(queries) if len(q) > settings.max_query_chars),
                    None)
        if long is not None:
            raise Refused(413, f"query {long} is {len(queries[long]):,} characters, over this "
                          f"server's limit of {settings.max_query_chars:,} (--max-query-chars)")
        prompts = data.get("prompts")
        if not isinstance(prompts, list) or len(prompts) != len(queries):
            prompts = []
        prompts = [p if isinstance(p, str) else "" for p in prompts] or [""] * len(queries)
        rewards = await batcher.score(queries, prompts) if queries else []
        return {"rewards": rewards, "scores": rewards,
                "extra_logs": {"orchviz_decisions": decisions_of(queries, prompts)},
                "model_version": scorer.version}

    app.post("/get_reward")(get_reward)
    app.post("/")(get_reward)

    @app.post("/score")
    async def score(request: Request):
        raw = await body(request)
        if not raw.strip():
            raise Refused(422, "the body is empty: send a trace, or any file `orchviz "
                          "import` reads")
        fmt = request.query_params.get("format")
        name = request.query_params.get("name") or (
            "request.jsonl" if raw.lstrip().startswith(b"{") and b"\n{" in raw.strip()
            else "request.json")
        traces = await asyncio.to_thread(_read_rollout, raw, fmt, name,
                                         settings.max_body_bytes)
        scored = await asyncio.to_thread(scorer.score_rollouts, traces)
        if audit is not None:
            await asyncio.to_thread(audit.add, traces, scored)
        return {"model_version": scorer.version,
                "rollouts": [s.model_dump() for s in scored]}

    @app.on_event("shutdown")
    async def _close():
        if audit is not None:
            await asyncio.to_thread(audit.close)

    return app


def decisions_of(queries: Sequence[str], prompts: Sequence[str]) -> list[int]:
    """How many decisions each query was scored on (0: read as one free text)."""
    from viz_app.reward.decisions import ANY, text_decisions

    found = []
    for query, prompt in zip(queries, prompts):
        text = query[len(prompt):] if prompt and query.startswith(prompt) else query
        decisions = text_decisions(text, "")
        found.append(0 if decisions and decisions[0].sub_decision == ANY else len(decisions))
    return found


def _json(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise Refused(400, f"the body is not JSON ({err})") from None


def _read_rollout(raw: bytes, fmt: str | None, name: str, max_bytes: int) -> list:
    """The traces of a body, read as a file called `name` (`?name=` gives the file's own
    name, whose ending some formats are told by)."""
    from viz_app.io.detect import read_any

    try:
        traces = read_any(raw, name=name, fmt=fmt, max_bytes=max_bytes)
    except OrchvizError as err:
        raise Refused(422, str(err).replace("with --from", "with ?format=")) from None
    if not traces:
        raise Refused(422, "the request body holds no trace")
    return traces


def _first_error(errors: Sequence[dict]) -> str:
    if not errors:
        return "it could not be read"
    first = errors[0]
    where = ".".join(str(x) for x in first.get("loc", ()) if x != "body")
    return f"{where or 'the body'}: {first.get('msg', 'invalid')}"


def app_from_environment():
    """The application a uvicorn worker builds (`uvicorn --factory`), from `ServeSettings` in
    ORCHVIZ_REWARD_SERVE: each worker loads the model itself."""
    settings = ServeSettings.from_env(os.environ[ENV])
    scorer = load_scorer(settings.model, db=settings.db, hf=settings.hf)
    if scorer.kind == "transformers":
        # one thread a worker: two workers' torch threads contending for two cores (and
        # with anything else on the machine) made a tiny model ten times slower; more
        # workers, not more threads, score more at once
        import torch

        torch.set_num_threads(1)
    audit = None
    if settings.audit:
        from viz_app.reward.audit import AuditLog

        audit = AuditLog(settings.audit, every=settings.audit_every)
    return create_app(scorer, settings, audit)


WORKER_START = 120
"""Seconds a worker may take to answer its supervisor's first health check: it loads the model
(and scikit-learn) first, which on a busy machine takes longer than uvicorn's 5 s default, and
a worker killed for it is started again, and killed again, for ever."""


def serve(settings: ServeSettings, host: str = "127.0.0.1", port: int = 8000,
          workers: int = 1, log_level: str = "info") -> None:
    """Run the server with uvicorn until it is stopped; `workers` processes share the port
    (uvicorn's own supervisor), each with its own copy of the model."""
    import uvicorn

    load_scorer(settings.model, db=settings.db, hf=settings.hf)  # a bad --model fails here
    os.environ[ENV] = settings.to_env()
    uvicorn.run("viz_app.reward.server:app_from_environment", factory=True, host=host,
                port=port, workers=workers, log_level=log_level,
                limit_concurrency=max(64, 16 * workers), timeout_keep_alive=5,
                timeout_worker_healthcheck=WORKER_START)
