"""A judge: a producer that asks a language model, through any OpenAI-compatible endpoint (OpenAI,
a vLLM or Ollama server, a team's gateway), for a suggested answer to each rubric question on
each target of a trace.

For each target the rubric asks about (`viz_app.labels.rubric.targets`), and each of its
questions with an answer to suggest (every kind but free text; follow-up questions such as
`stop_should_have_been` are left to the reviewer), the prompt holds the question, its guidance
and anchors, and the context the labels panel shows (`viz_app.suggest.context`): an aggregate's
inputs beside its output, the events around a stop. Trace text is data: JSON between
`<trace_data>` delimiters, escaped by `viz_app.text.prompt_data` so it cannot close them. The
template is `judge_prompt.txt` beside this module; its SHA-256 is `Producer.prompt_sha256`, so a
changed prompt is a new producer and its suggestions are stored anew.

The answer is asked for as structured output (`response_format` of type `json_schema`, strict:
`value` on the question's own scale, `confidence`, `evidence` event ids, `explanation`) and
checked again here against the question (`check_answer`) and the trace. A timeout, an HTTP error,
a refusal, an answer that is not JSON or does not fit the question is a `SuggestionFailure`,
never a suggestion.

The API key is read from an environment variable (`OPENAI_API_KEY` by default), never given on
a command line; a local server that needs none gets a placeholder.

Re-running is cheap: given the targets it already answered on a trace version (`answered`:
stored suggestions of the same producer, model and prompt hash), the judge asks only about the
others (`ws.suggestions.run` passes them). A failure is not an answer: it is asked again.

Few-shot: `examples` (`Example`, chosen by `choose_examples` from the leads' adjudicated answers)
are put before each question of theirs as earlier turns, each the prompt that target would get
(its context escaped as any trace data is) and its adjudicated answer. They are part of the
prompt, so of its hash: a judge with other examples is another producer version. An example
from the trace being judged is left out of that trace's prompts (it would show the answer).
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import json
import os
from collections import defaultdict
from collections.abc import Collection, Coroutine, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib.resources import files
from string import Template
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from viz_app.analysis import Analysis, analyze
from viz_app.errors import LabelError, OrchvizError
from viz_app.labels import (LabelTarget, Producer, Question, Rubric, Suggestion, SuggestionFailure,
                            check_answer, targets)
from viz_app.model import Trace
from viz_app.suggest.context import TargetContext, target_context
from viz_app.text import brief, prompt_data, what_came

VERSION = "1"
"""The judge's own version (how it asks and checks); the prompt's hash is kept apart."""

PROMPT_FILE = "judge_prompt.txt"

JUDGED_KINDS = ("scale", "categorical", "boolean", "tags", "event")
"""Question kinds a judge suggests an answer to (free text is left to the reviewer)."""

TEXT_LIMIT = 4000
"""Characters of each event's text put in a prompt (the rest is counted as `text_cut`)."""

MAX_INPUTS = 24
"""Inputs of an aggregate put in a prompt (the rest are counted)."""

MAX_EVIDENCE = 20
"""Evidence ids kept from one answer."""

MAX_REPLY_BYTES = 4_000_000
"""Bytes of a reply read at most (an answer is a few hundred; a longer reply is cut off)."""

NO_KEY = "no-key"
"""The key sent when the environment variable holds none (a local server that needs no key)."""


def prompt_template() -> str:
    """The judge's prompt template, as shipped (its hash is the producer's `prompt_sha256`)."""
    return files("viz_app.suggest").joinpath(PROMPT_FILE).read_text("utf-8")


def prompt_sha256(template: str | None = None, examples: Sequence[Example] = ()) -> str:
    """SHA-256 of the prompt template's UTF-8 bytes; with few-shot examples, of the template
    and every example turn as sent (`example_messages`), so other examples are another
    version."""
    template = template if template is not None else prompt_template()
    if not examples:
        return hashlib.sha256(template.encode("utf-8")).hexdigest()
    turns = [example_messages(e, template) for e in examples]
    shown = json.dumps(turns, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(f"{template}\n=== examples ===\n{shown}".encode("utf-8")).hexdigest()


def _parts(template: str) -> tuple[str, str]:
    """The template's system and user parts (after the version line)."""
    _, _, rest = template.partition("=== system ===\n")
    system, _, user = rest.partition("=== user ===\n")
    return system.strip(), user.strip()


# -- the prompt -------------------------------------------------------------------------------


def _choices_text(question: Question) -> str:
    if question.kind == "event":
        return "- the id of one event of the data (a string)"
    lines = [f"- {json.dumps(c.value)} ({c.label})" + (f": {c.guidance}" if c.guidance else "")
             for c in question.choices]
    if question.kind == "tags":
        lines.insert(0, "a list of any of these values (empty when none applies):")
    return "\n".join(lines)


def _target_text(context: TargetContext) -> str:
    """The target in words of the rubric's own, never the trace's: its id is data, named only
    inside the delimited data (its `target` and the event whose role is `target`)."""
    if not context.event_id:
        return "the whole trace"
    kinds = " and ".join("inferred stop" if k == "stop" and context.inferred_stop else k
                         for k in context.kinds)
    return f"the event of the data whose role is `target` ({kinds})"


def _context_note(context: TargetContext) -> str:
    notes = []
    if "aggregate" in context.kinds:
        notes.append("the results the aggregate merged (role `input`) and what it produced "
                     "(role `target`)" + (f"; {context.inputs_left_out} more inputs left out"
                                          if context.inputs_left_out else ""))
    if "stop" in context.kinds:
        notes.append("the events just before and after the stop (roles `before`, `after`) "
                     "and the stop itself (role `target`)"
                     + ("; the trace has no explicit stop decision, this is the stop the "
                        "analysis inferred" if context.inferred_stop else ""))
    if not context.event_id:
        notes.append("the task id and the trace's last event (role `last`)")
    if not notes:
        notes.append("the event itself (role `target`)")
    return "; ".join(notes) + ". A `text_cut` says how many characters of an event's text " \
        "were left out."


def _data(context: TargetContext) -> dict[str, Any]:
    return {"trace_id": context.trace_id, "task_id": context.task_id,
            "target": context.event_id or None,
            "events": [{"id": e.event_id, "role": e.role, "type": e.type, "agent": e.agent,
                        "from": e.sender or None, "to": e.recipient or None, "t": e.t,
                        "text": e.text} | ({"text_cut": e.cut} if e.cut else {})
                       for e in context.events]}


def build_messages(question: Question, context: TargetContext,
                   template: str | None = None) -> list[dict[str, str]]:
    """The chat messages asking one question about one target: the system part of the
    template, and its user part filled with the question, its anchors and the context (as
    delimited, escaped JSON data)."""
    system, user = _parts(template if template is not None else prompt_template())
    filled = Template(user).substitute(
        question_id=question.id, prompt=question.prompt,
        guidance=" ".join((question.guidance or "-").split()), kind=question.kind,
        choices=_choices_text(question), target=_target_text(context),
        context_note=_context_note(context), data=prompt_data(_data(context)))
    return [{"role": "system", "content": system}, {"role": "user", "content": filled}]


# -- few-shot examples --------------------------------------------------------------------------


EXAMPLE_EXPLANATION = "The team's adjudicated answer on this target."
"""The explanation an example's answer turn gives (a lead's reason is not shown: it may quote
the trace at length)."""


class Example(BaseModel):
    """One adjudicated answer shown to the judge before a question of its own: the target's
    context, as the prompt of any target holds it, and the lead's final answer."""

    model_config = {"frozen": True}

    question: Question
    context: TargetContext
    value: Any


def example_messages(example: Example, template: str | None = None) -> list[dict[str, str]]:
    """An example as two chat turns: the user's prompt for its target (trace data delimited and
    escaped, `build_messages`) and the assistant's answer in the format asked (`prompt_data`:
    an event id answered is trace text too)."""
    _, user = build_messages(example.question, example.context, template)
    answer = {"value": example.value, "confidence": 1.0, "evidence": [],
              "explanation": EXAMPLE_EXPLANATION}
    return [user, {"role": "assistant", "content": prompt_data(answer)}]


def choose_examples(records: Iterable[Mapping[str, Any]], questions: Sequence[str], k: int
                    ) -> list[Mapping[str, Any]]:
    """Up to `k` adjudicated label records per question (current adjudications, `source`
    adjudication), spread over their answers: each answer's records in (trace, event) order,
    taken in turn across the answers (in the order first met in that sort) until `k`. The same
    records give the same choice."""
    chosen: list[Mapping[str, Any]] = []
    wanted = set(questions)
    by_question: dict[str, dict[str, list[Mapping[str, Any]]]] = defaultdict(dict)
    for record in sorted((r for r in records if r.get("source") == "adjudication"
                          and r["question"] in wanted),
                         key=lambda r: (r["trace_id"], r["event_id"] or "")):
        by_question[record["question"]].setdefault(json.dumps(record["value"], sort_keys=True,
                                                              default=str), []).append(record)
    for question in questions:
        groups = list(by_question.get(question, {}).values())
        taken = 0
        for turn in range(max((len(g) for g in groups), default=0)):
            for group in groups:
                if taken < k and turn < len(group):
                    chosen.append(group[turn])
                    taken += 1
    return chosen


def answer_schema(question: Question) -> dict[str, Any]:
    """The JSON schema of an answer to this question (strict structured output: every field
    required, no others)."""
    values = [c.value for c in question.choices]
    if question.kind == "scale":
        value: dict[str, Any] = {"type": "integer", "enum": values}
    elif question.kind == "boolean":
        value = {"type": "boolean"}
    elif question.kind == "categorical":
        types = sorted({{bool: "boolean", int: "integer", str: "string"}[type(v)]
                        for v in values})
        value = {"type": types[0] if len(types) == 1 else types, "enum": values}
    elif question.kind == "tags":
        value = {"type": "array", "items": {"type": "string", "enum": values}}
    else:
        value = {"type": "string"}
    return {"type": "object", "additionalProperties": False,
            "required": ["value", "confidence", "evidence", "explanation"],
            "properties": {
                "value": value | {"description": question.prompt},
                "confidence": {"type": "number", "description": "0 to 1"},
                "evidence": {"type": "array", "items": {"type": "string"},
                             "description": "Ids of the events that support the answer."},
                "explanation": {"type": "string",
                                "description": "One sentence naming the events that matter."}}}


# -- the answer -------------------------------------------------------------------------------


class JudgeAnswer(BaseModel):
    """What a judge model must answer."""

    model_config = {"extra": "forbid"}

    value: Any
    confidence: float = Field(ge=0.0, le=1.0)
    evidence: list[str]
    explanation: str


class Refused(Exception):
    """The judge gave no usable answer; the message says why in one sentence."""


def read_answer(content: str | None, rubric: Rubric, analysis: Analysis, question: Question,
                event_id: str | None) -> JudgeAnswer:
    """The answer a model gave, checked against the question and the trace; `Refused` saying
    why when it does not fit."""
    if not content or not content.strip():
        raise Refused("the answer was empty")
    try:
        raw = json.loads(content)
    except ValueError:
        raise Refused("the answer is not JSON") from None
    try:
        answer = JudgeAnswer.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        place = ".".join(map(str, first["loc"])) or "the answer"
        raise Refused(f"the answer does not fit its format ({place}: {first['msg']})") from None
    try:
        check_answer(rubric, analysis, question.id, event_id, answer.value)
    except LabelError as err:
        raise Refused(f"the answer does not fit the question: {err}") from None
    unknown = [e for e in answer.evidence if e not in analysis.trace.events_by_id]
    if unknown:
        raise Refused(f"the evidence names {len(unknown)} event(s) the trace does not have, "
                      f"such as “{brief(unknown[0], 40)}”")
    return answer


# -- the producer -----------------------------------------------------------------------------


class JudgeProducer:
    """Suggestions from a language model behind an OpenAI-compatible chat completions endpoint.

    `url` is the API's base URL (`https://api.openai.com/v1`, `http://localhost:11434/v1` for
    Ollama, `http://localhost:8000/v1` for vLLM); `model` the model's name there; the key is
    read from the environment variable `api_key_env` (none needed for a local server).
    `timeout` is the deadline of each question's whole call in seconds (connecting, retries
    and reading included), `max_retries` the client's retries of a failed
    request; `temperature` is sent when given (some reasoning models refuse it);
    `questions` limits the questions asked (default: every judged question of the rubric);
    `examples` are few-shot examples, each shown before the questions of its own question."""

    def __init__(self, url: str, model: str, api_key_env: str = "OPENAI_API_KEY", *,
                 timeout: float = 60.0, max_retries: int = 2, temperature: float | None = None,
                 max_tokens: int | None = None, questions: Sequence[str] | None = None,
                 examples: Sequence[Example] = ()):
        if not url.startswith(("http://", "https://")):
            raise OrchvizError(f"the judge's URL {url[:200]!r} is not an http(s) URL")
        if not model.strip():
            raise OrchvizError("the judge needs a model name (--judge-model)")
        self.url = url
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.max_retries = max_retries
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.questions = tuple(questions) if questions is not None else None
        self.template = prompt_template()
        self.examples = tuple(examples)
        self.producer = Producer(name="judge", version=VERSION, model=model,
                                 prompt_sha256=prompt_sha256(self.template, self.examples))

    def _openai(self):
        """The openai package (OrchvizError saying what to install without it)."""
        try:
            import openai
        except ImportError:
            raise OrchvizError("the judge needs the openai package: pip install "
                               "'orchviz[judge]'") from None
        return openai

    def asked(self, rubric: Rubric, target: LabelTarget) -> list[Question]:
        """The questions this judge answers on a target."""
        found = [rubric.question(q) for q in target.questions]
        return [q for q in found if q.kind in JUDGED_KINDS and q.ask_when is None
                and (self.questions is None or q.id in self.questions)]

    def _check_questions(self, rubric: Rubric) -> None:
        """OrchvizError for a question named that the rubric lacks or the judge does not ask."""
        for question_id in self.questions or ():
            question = rubric.question(question_id)  # LabelError naming the rubric's questions
            if question.kind not in JUDGED_KINDS or question.ask_when is not None:
                raise OrchvizError(f"the judge does not suggest answers to {question_id} (free "
                                   "text and follow-up questions are left to the reviewer)")

    def judged(self, rubric: Rubric) -> list[str]:
        """The ids of the questions this judge answers (rubric order)."""
        return [q.id for q in rubric.questions if q.kind in JUDGED_KINDS and q.ask_when is None
                and (self.questions is None or q.id in self.questions)]

    def produce(self, trace: Trace, rubric: Rubric,
                answered: Collection[tuple[str, str]] = ()
                ) -> tuple[list[Suggestion], list[SuggestionFailure]]:
        """Ask the model every judged question on every target of the trace but those
        `answered` ((event id or '', question) it answered before on this trace version, as
        this producer): the suggestions it gave, and a failure for each question it gave none
        usable on."""
        self._check_questions(rubric)
        analysis = analyze(trace)
        made: list[Suggestion] = []
        failed: list[SuggestionFailure] = []
        for target in targets(rubric, analysis):
            questions = self.asked(rubric, target)
            if not questions:
                continue
            context = target_context(analysis, target, text_limit=TEXT_LIMIT,
                                     max_inputs=MAX_INPUTS)
            for question in questions:
                if (target.key, question.id) in answered:
                    continue
                try:
                    answer = self._ask(rubric, analysis, question, target, context, trace)
                except Refused as why:
                    failed.append(SuggestionFailure(
                        trace_id=trace.trace_id, trace_sha256=trace.sha256,
                        event_id=target.key, question=question.id, producer=self.producer,
                        error=str(why)[:400]))
                    continue
                made.append(Suggestion(
                    trace_id=trace.trace_id, trace_sha256=trace.sha256, event_id=target.key,
                    question=question.id, value=answer.value, confidence=answer.confidence,
                    producer=self.producer,
                    evidence=tuple(dict.fromkeys(answer.evidence))[:MAX_EVIDENCE],
                    explanation=" ".join(answer.explanation.split())[:500]))
        return made, failed

    def _messages(self, question: Question, context: TargetContext, trace: Trace
                  ) -> list[dict[str, str]]:
        """The system turn, the examples of this question (none from this trace), and the
        question's own prompt."""
        system, user = build_messages(question, context, self.template)
        shown = [turn for e in self.examples
                 if e.question.id == question.id and e.context.trace_id != trace.trace_id
                 for turn in example_messages(e, self.template)]
        return [system, *shown, user]

    def _ask(self, rubric: Rubric, analysis: Analysis, question: Question,
             target: LabelTarget, context: TargetContext, trace: Trace) -> JudgeAnswer:
        openai = self._openai()
        extra: dict[str, Any] = {}
        if self.temperature is not None:
            extra["temperature"] = self.temperature
        if self.max_tokens is not None:
            extra["max_completion_tokens"] = self.max_tokens
        request = {"model": self.model,
                   "messages": self._messages(question, context, trace),
                   "response_format": {"type": "json_schema", "json_schema": {
                       "name": "suggested_answer", "strict": True,
                       "schema": answer_schema(question)}}} | extra
        try:
            reply = _within(self.timeout, self._complete(openai, request))
        except (TimeoutError, openai.APITimeoutError):
            raise Refused(f"the judge at {self.url} did not answer within {self.timeout:g} s"
                          ) from None
        except ReplyTooLarge:
            raise Refused(f"the judge at {self.url} sent a reply over "
                          f"{MAX_REPLY_BYTES // 1_000_000} MB, which was cut off unread"
                          ) from None
        except openai.APIStatusError as err:
            raise Refused(f"the judge at {self.url} answered HTTP {err.status_code}"
                          f" ({brief(err.message)})") from None
        except openai.APIConnectionError:
            raise Refused(f"the judge at {self.url} cannot be reached") from None
        except (openai.OpenAIError, ValueError) as err:
            raise Refused(f"the judge at {self.url} sent a reply that is not a chat "
                          f"completion ({brief(type(err).__name__)})") from None
        if not hasattr(reply, "choices"):  # a body that is not JSON, handed back as its text
            raise Refused(f"the judge at {self.url} answered HTTP 200 with {what_came(reply)}, "
                          "not a chat completion")
        choices = reply.choices
        if not choices:
            raise Refused("the judge's reply has no answer")
        choice = choices[0]
        message = choice.message
        if getattr(message, "refusal", None):
            raise Refused(f"the judge refused: {brief(message.refusal)}")
        if choice.finish_reason == "length":
            raise Refused("the answer was cut at the token limit")
        if choice.finish_reason == "content_filter":
            raise Refused("the endpoint's content filter stopped the answer")
        return read_answer(message.content, rubric, analysis, question, target.event_id)

    async def _complete(self, openai, request: dict[str, Any]):
        """One chat completion, through a client whose replies are cut at `MAX_REPLY_BYTES`
        (its connect and read timeouts are the deadline too, so a socket left open is
        closed)."""
        key = os.environ.get(self.api_key_env) or NO_KEY
        async with openai.AsyncOpenAI(
                base_url=self.url, api_key=key, timeout=self.timeout,
                max_retries=self.max_retries,
                http_client=_capped_client(openai, MAX_REPLY_BYTES, self.timeout)) as client:
            return await client.chat.completions.create(**request)


class ReplyTooLarge(Exception):
    """A reply longer than the judge reads."""


def _capped_client(openai, limit: int, timeout: float):
    """An async HTTP client for the openai package whose every response body is cut off,
    unread, at `limit` bytes: by its declared length at once, else as it streams in. The
    package's own client class is used (httpx, or httpx2 in newer releases), so its transport,
    proxies and certificates stay as the package sets them."""
    base = openai.DefaultAsyncHttpxClient
    http = importlib.import_module(base.__mro__[1].__module__.partition(".")[0])

    class Capped(http.AsyncByteStream):
        def __init__(self, inner):
            self.inner = inner

        async def __aiter__(self):
            seen = 0
            async for chunk in self.inner:
                seen += len(chunk)
                if seen > limit:
                    raise ReplyTooLarge
                yield chunk

        async def aclose(self) -> None:
            await self.inner.aclose()

    async def cap(response) -> None:
        length = response.headers.get("content-length", "")
        if length.isdigit() and int(length) > limit:
            raise ReplyTooLarge
        response.stream = Capped(response.stream)

    return base(timeout=timeout, event_hooks={"response": [cap]})


def _within(seconds: float, call: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine to its end or to the deadline (`TimeoutError`), whatever the server
    does meanwhile: a server that trickles a byte a second is cut off at `seconds`, not at
    `seconds` per read. From inside a running event loop (a notebook) it runs in a thread."""
    async def bounded():
        return await asyncio.wait_for(call, seconds)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(bounded())
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, bounded()).result()
