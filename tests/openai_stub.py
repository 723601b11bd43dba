"""A small OpenAI-compatible server on 127.0.0.1 for the judge's tests: it answers
`POST /v1/chat/completions` from a table keyed by the question id and the target the prompt
names ("Question id: ...", and the `target` of its delimited trace data; "" for the whole
trace), and can answer as a real endpoint misbehaves: slowly (a timeout), a byte at a time (a
trickle that never ends), with a reply of hundreds of megabytes, with a refusal, with an HTML page
(HTTP 200), with text that is not JSON, with an answer off the question's scale, or with HTTP 500. Every request it
receives is kept, so a test can read the prompt it was sent, and so is the count of bytes it
managed to send. A request the table has no row for (a continuation of a trace,
`viz_app.branch`, names no question) gets the next reply of `script`, in order; the last one is
repeated when the script runs out.

    with OpenAIStub({("stopping_correctness", "e13"): Reply.answer("premature", ...)}) as stub:
        JudgeProducer(stub.url, "stub-model", timeout=2)
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

QUESTION = re.compile(r"^Question id: (\S+)$", re.M)
DATA = re.compile(r"<trace_data>\n(.*)\n</trace_data>", re.S)


@dataclass
class Reply:
    """How the stub answers one (question, target)."""

    content: str | None = None
    refusal: str | None = None
    status: int = 200
    delay: float = 0.0
    finish_reason: str = "stop"
    trickle: float = 0.0
    """Seconds between single bytes of a reply that never ends (0: answer at once)."""
    size: int = 0
    """Bytes of a 200 reply sent without a length, in 1 MB chunks (0: the content as it is)."""
    html: str | None = None
    """A body sent as it is, as `text/html` (a proxy's sign-in page, a gateway's error page
    answered with HTTP `status`), instead of a chat completion."""

    @classmethod
    def answer(cls, value: Any, confidence: float = 0.9, evidence: tuple[str, ...] = (),
               explanation: str = "", **changes) -> Reply:
        """A well-formed structured answer."""
        return cls(content=json.dumps({"value": value, "confidence": confidence,
                                       "evidence": list(evidence),
                                       "explanation": explanation}), **changes)


    @classmethod
    def turn(cls, decision: str, text: str = "", to: str = "", tool: str = "", **changes
             ) -> Reply:
        """A well-formed orchestrator turn (a continuation's structured reply)."""
        return cls(content=json.dumps({"decision": decision, "text": text, "to": to,
                                       "tool": tool}), **changes)


@dataclass
class Received:
    """One request the stub was sent."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def prompt(self) -> str:
        """The last user message's text (the question asked; few-shot examples come before
        it as earlier turns)."""
        return [m["content"] for m in self.body["messages"] if m["role"] == "user"][-1]

    @property
    def system(self) -> str:
        """The system message's text."""
        return next(m["content"] for m in self.body["messages"] if m["role"] == "system")


@dataclass
class OpenAIStub:
    """The server; use it as a context manager (it serves on a free port of 127.0.0.1)."""

    table: dict[tuple[str, str], Reply] = field(default_factory=dict)
    script: list[Reply] = field(default_factory=list)
    default: Reply = field(default_factory=lambda: Reply(status=404, content="no such row"))
    received: list[Received] = field(default_factory=list)
    sent: int = 0
    """Bytes of reply bodies the stub sent before each client stopped reading."""

    def __enter__(self) -> OpenAIStub:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep the test output quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                stub.received.append(Received(self.path, dict(self.headers), body))
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._send(404, {"error": {"message": "not found"}})
                reply = stub.reply_for(body)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.trickle:
                    return self._trickle(reply.trickle)
                if reply.size:
                    return self._huge(reply.size)
                if reply.html is not None:
                    return self._page(reply.status, reply.html)
                if reply.status != 200:
                    return self._send(reply.status, {"error": {
                        "message": reply.content or "server error", "type": "server_error"}})
                self._send(200, {
                    "id": "chatcmpl-stub", "object": "chat.completion",
                    "created": int(time.time()), "model": body.get("model", ""),
                    "choices": [{"index": 0, "finish_reason": reply.finish_reason,
                                 "message": {"role": "assistant", "content": reply.content,
                                             "refusal": reply.refusal}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

            def _trickle(self, every: float) -> None:
                """Headers at once, then a byte every `every` seconds for up to 10 minutes."""
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "100000")
                    self.end_headers()
                    deadline = time.monotonic() + 600
                    while time.monotonic() < deadline:
                        self.wfile.write(b" ")
                        self.wfile.flush()
                        stub.sent += 1
                        time.sleep(every)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _huge(self, size: int) -> None:
                """A chat completion whose content is `size` bytes of "x", sent without a
                length (the body ends when the connection closes) and never held whole."""
                head = (b'{"id": "chatcmpl-stub", "object": "chat.completion", "created": 0, '
                        b'"model": "m", "choices": [{"index": 0, "finish_reason": "stop", '
                        b'"message": {"role": "assistant", "content": "')
                chunk = b"x" * 1_000_000
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(head)
                    for _ in range(size // len(chunk)):
                        self.wfile.write(chunk)
                        stub.sent += len(chunk)
                    self.wfile.write(b'"}}]}')
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _page(self, status: int, html: str) -> None:
                data = html.encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    @property
    def url(self) -> str:
        """The base URL a client is given (`http://127.0.0.1:PORT/v1`)."""
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def reply_for(self, body: dict) -> Reply:
        """The table's row for the question and target the request's prompt names (its last
        user turn: few-shot examples come before it)."""
        prompt = ([m.get("content", "") for m in body.get("messages", [])
                   if m.get("role") == "user"] or [""])[-1]
        question = QUESTION.search(prompt)
        data = DATA.search(prompt)
        target = (json.loads(data.group(1)).get("target") or "") if data else None
        if question and data and (question.group(1), target) in self.table:
            return self.table[(question.group(1), target)]
        if self.script:
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]
        return self.default
