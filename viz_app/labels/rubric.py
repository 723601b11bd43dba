"""The rubric: which questions a reviewer answers, about which parts of a trace, and what each
answer is worth as a reward.

A rubric is a YAML file (the default ships beside this module as `default_rubric.yaml`). Each
question names a *target* (the trace itself, its aggregate events, its stop decisions, its
messages, spawns, delegations, or events picked by type and condition), a *kind* of answer, the reward each answer
maps to in [-1, 1], and its place in the taxonomy (reward family, credit unit, sub-decision).
`targets(rubric, analysis)` turns the questions into the concrete things to label in one trace;
`check_answer` is the one gate every label passes before it is stored.
"""

from __future__ import annotations

import hashlib
import json
import weakref
from importlib.resources import files
from pathlib import Path
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from viz_app.analysis import Analysis
from viz_app.errors import LabelError, RubricError
from viz_app.labels.correction import ACTIONS, LATER_THAN_RECORDED, parse_correction

REWARD_FAMILIES: dict[str, str] = {
    "R1": "team", "R2": "agent", "R3": "role", "R4": "process",
    "R5": "tool", "R6": "debate", "R7": "orchestration", "R8": "hybrid",
}
"""The reward families of TAXONOMY.md, each with the reward channel its labels fill."""

CREDIT_UNITS = ("team", "orchestrator", "role", "agent", "turn", "message", "tool call", "token")
"""The eight credit-bearing units of TAXONOMY.md, top to bottom."""

SUB_DECISIONS = ("O1", "O2", "O3", "O4", "O5")
"""The five orchestration sub-decisions of TAXONOMY.md (spawn, delegate, communicate,
aggregate, stop)."""

Kind = Literal["scale", "categorical", "tags", "boolean", "text", "event", "correction"]

ORDINAL_KINDS = ("scale",)
"""Kinds whose answers are ordered (Krippendorff's alpha at the ordinal level)."""


# -- targets --------------------------------------------------------------------------------


class TraceTarget(BaseModel):
    """The whole trace (one target per trace; its labels have no event)."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["trace"] = "trace"


class AggregateTarget(BaseModel):
    """Every aggregate event, with the inputs the analysis found for it."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["aggregate"] = "aggregate"


class StopTarget(BaseModel):
    """Every stop decision; when a trace has none, the stop the analysis infers."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["stop"] = "stop"


class MessageTarget(BaseModel):
    """Every message event."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["message"] = "message"


class SpawnTarget(BaseModel):
    """Every spawn event (the decision to start a sub-agent, O1)."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["spawn"] = "spawn"


class DelegateTarget(BaseModel):
    """Every delegation: an orchestrator decision `delegate` that names the agent (O2)."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["delegate"] = "delegate"


class DecisionTarget(BaseModel):
    """Every orchestrator decision but a stop: a point where a spawn or a message may have been
    missing (O1, O3)."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["decision"] = "decision"


class EventsTarget(BaseModel):
    """Events of the given types whose fields equal the given values (a list means any of)."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["events"] = "events"
    types: list[str] = Field(min_length=1, description="Event types to consider.")
    where: dict[str, Any] = Field(default_factory=dict,
                                  description="Field (or extra key) -> required value or values.")


Target = Annotated[TraceTarget | AggregateTarget | StopTarget | MessageTarget | SpawnTarget
                   | DelegateTarget | DecisionTarget | EventsTarget, Field(discriminator="kind")]


# -- questions ------------------------------------------------------------------------------


class Choice(BaseModel):
    """One answer a reviewer can give, with what it means and what it is worth."""

    model_config = ConfigDict(extra="forbid")
    value: int | str | bool = Field(description="The answer as stored (a scale point, a category).")
    label: str = Field(description="The short name shown on the widget.")
    guidance: str = Field("", description="When to pick this answer (the anchor).")
    reward: float | None = Field(None, ge=-1, le=1, description="Reward of the answer in [-1, 1].")
    pointer: Literal["later", "earlier"] | None = Field(
        None, description="When a follow-up `event` question points at an event, it must come "
        "later (a premature stop) or earlier (a late stop) than the target.")


class AskWhen(BaseModel):
    """A follow-up question is asked only when another question got one of some answers."""

    model_config = ConfigDict(extra="forbid")
    question: str = Field(description="The question this one follows.")
    values: list[int | str | bool] = Field(min_length=1, description="Answers that ask it.")


class Question(BaseModel):
    """One question of the rubric."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$", description="Stable id stored with each label.")
    prompt: str = Field(description="The question as the reviewer reads it.")
    guidance: str = Field("", description="How to answer, in a sentence or two.")
    target: Target = Field(description="What in a trace the question is asked about.")
    kind: Kind = Field(description="scale, categorical, tags (multi-select), boolean, text, "
                       "event (a pointer to an event of the trace), or correction (the decision "
                       "it should have made instead: `viz_app.labels.correction`).")
    choices: list[Choice] = Field(default_factory=list,
                                  description="The answers of a scale, categorical, tags or "
                                  "boolean question, in display order.")
    actions: list[str] = Field(default_factory=list,
                               description="The corrections a correction question takes (keys "
                               "of `viz_app.labels.correction.ACTIONS`), in display order.")
    optional: bool = Field(False, description="Whether a target counts as labelled without it.")
    ask_when: AskWhen | None = Field(None, description="Ask only after these answers elsewhere.")
    family: str | None = Field(None, description="Reward family R1-R8 (TAXONOMY.md).")
    credit_unit: str | None = Field(None, description="Credit unit, team ... token.")
    sub_decision: str | None = Field(None, description="Orchestration sub-decision O1-O5.")
    channel: str | None = Field(None, description="The `rewards` channel of a labelled trace; "
                                "default: the family's channel, a dot, and the question id.")

    @model_validator(mode="after")
    def _coherent(self) -> Question:
        if self.kind in ("scale", "categorical", "tags", "boolean") and not self.choices:
            raise ValueError(f"a {self.kind} question needs choices")
        if self.kind in ("text", "event", "correction") and self.choices:
            raise ValueError(f"a {self.kind} question takes no choices")
        if self.kind == "correction":
            unknown = [a for a in self.actions if a not in ACTIONS]
            if not self.actions or unknown:
                raise ValueError(f"a correction question takes actions among "
                                 f"{', '.join(ACTIONS)}" + (f" (not {unknown[0]!r})"
                                                            if unknown else ""))
        elif self.actions:
            raise ValueError("only a correction question takes actions")
        if self.kind == "scale" and not all(isinstance(c.value, int) and
                                            not isinstance(c.value, bool) for c in self.choices):
            raise ValueError("the choices of a scale are integers")
        if self.kind == "boolean" and sorted(c.value for c in self.choices) != [False, True]:
            raise ValueError("a boolean question has exactly the choices true and false")
        values = [c.value for c in self.choices]
        if len(set(map(repr, values))) != len(values):
            raise ValueError("two choices have the same value")
        if self.family is not None and self.family not in REWARD_FAMILIES:
            raise ValueError(f"family {self.family!r} is not one of R1-R8")
        if self.credit_unit is not None and self.credit_unit not in CREDIT_UNITS:
            raise ValueError(f"credit_unit {self.credit_unit!r} is not one of "
                             f"{', '.join(CREDIT_UNITS)}")
        if self.sub_decision is not None and self.sub_decision not in SUB_DECISIONS:
            raise ValueError(f"sub_decision {self.sub_decision!r} is not one of O1-O5")
        return self

    @property
    def rewarded(self) -> bool:
        """Whether answers to this question carry a reward."""
        return any(c.reward is not None for c in self.choices)

    @property
    def reward_channel(self) -> str:
        """The `rewards` channel this question's labels fill in a labelled trace."""
        if self.channel:
            return self.channel
        family = REWARD_FAMILIES.get(self.family or "", "labels")
        return f"{family}.{self.id}"

    def choice(self, value: Any) -> Choice | None:
        """The choice with this stored value, if any (1 and True are not the same answer)."""
        for c in self.choices:
            if c.value == value and type(c.value) is type(value):
                return c
        return None


class Rubric(BaseModel):
    """A versioned set of questions."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="A name for people.")
    version: str = Field(min_length=1, description="Recorded with every label made under it.")
    description: str = Field("", description="What the rubric is for.")
    questions: list[Question] = Field(min_length=1, description="The questions, in display order.")
    sha256: str = Field("", description="SHA-256 of the rubric's canonical JSON (set on load).")

    @model_validator(mode="after")
    def _links(self) -> Rubric:
        ids = [q.id for q in self.questions]
        if len(set(ids)) != len(ids):
            raise ValueError("two questions have the same id")
        for q in self.questions:
            if q.ask_when is None:
                continue
            base = self.questions_by_id.get(q.ask_when.question)
            if base is None:
                raise ValueError(f"{q.id}: ask_when names an unknown question "
                                 f"{q.ask_when.question!r}")
            if base.target != q.target:
                raise ValueError(f"{q.id}: ask_when must name a question on the same target")
            missing = [v for v in q.ask_when.values if base.choice(v) is None]
            if missing:
                raise ValueError(f"{q.id}: ask_when values {missing} are not answers of "
                                 f"{base.id}")
        return self

    @property
    def questions_by_id(self) -> dict[str, Question]:
        """Questions keyed by id."""
        return {q.id: q for q in self.questions}

    def question(self, question_id: str) -> Question:
        """The question with this id; LabelError when the rubric has none."""
        found = self.questions_by_id.get(question_id)
        if found is None:
            raise LabelError(f"the rubric {self.name} {self.version} has no question "
                             f"{question_id!r} (it has {', '.join(self.questions_by_id)})")
        return found


def rubric_from_dict(obj: Any, file: str = "<rubric>") -> Rubric:
    """A rubric from parsed YAML, its hash set; RubricError naming the place of any problem."""
    if not isinstance(obj, dict):
        raise RubricError(file, "", "a rubric is a mapping with name, version and questions")
    obj = {k: v for k, v in obj.items() if k != "sha256"}
    try:
        rubric = Rubric.model_validate(obj)
    except ValidationError as err:
        first = err.errors()[0]
        place = _place(obj, first["loc"])
        raise RubricError(file, place, first["msg"].removeprefix("Value error, ")) from None
    canonical = json.dumps(rubric.model_dump(mode="json", exclude={"sha256"}), sort_keys=True)
    rubric.sha256 = hashlib.sha256(canonical.encode()).hexdigest()
    return rubric


def _place(obj: dict, loc: tuple) -> str:
    """A readable place such as `questions[2] (stopping_correctness).choices[0].reward`."""
    parts: list[str] = []
    node: Any = obj
    for key in loc:
        if isinstance(key, int):
            label = f"[{key}]"
            if isinstance(node, list) and key < len(node) and isinstance(node[key], dict) \
                    and "id" in node[key]:
                label += f" ({node[key]['id']})"
            parts.append(label)
            node = node[key] if isinstance(node, list) and key < len(node) else None
        else:
            parts.append(f".{key}" if parts else str(key))
            node = node.get(key) if isinstance(node, dict) else None
    return "".join(parts)


def load_rubric(path: str | Path | None = None) -> Rubric:
    """The rubric in a YAML file, or the default rubric when `path` is None."""
    if path is None:
        text = files("viz_app.labels").joinpath("default_rubric.yaml").read_text("utf-8")
        return rubric_from_yaml(text, "default_rubric.yaml")
    try:
        text = Path(path).read_text("utf-8")
    except OSError as err:
        raise RubricError(str(path), "", f"cannot be read ({err.strerror or err})") from None
    return rubric_from_yaml(text, str(path))


def rubric_from_yaml(text: str, file: str = "<rubric>") -> Rubric:
    """A rubric from YAML text."""
    try:
        obj = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        place = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise RubricError(file, place, f"is not valid YAML ({getattr(err, 'problem', err)})") \
            from None
    return rubric_from_dict(obj, file)


def default_rubric() -> Rubric:
    """The rubric that ships with orchviz."""
    return load_rubric(None)


# -- targets of one trace ---------------------------------------------------------------------


class LabelTarget(BaseModel):
    """One thing to label in one trace: the trace itself or one event, with its questions."""

    event_id: str | None = Field(description="The event; None for the trace itself.")
    kinds: list[str] = Field(description="What it is: trace, aggregate, stop, message, spawn, "
                             "delegate, decision, events "
                             "(an event can be two, such as an aggregate that is the stop).")
    t: float | None = Field(description="When the event happened; None for the trace.")
    agent: str | None = Field(description="The agent the event belongs to.")
    questions: list[str] = Field(description="Ids of the questions asked about it, rubric order.")
    required: list[str] = Field(description="The questions that must be answered for the target "
                                "to count as labelled (follow-ups excluded).")
    inferred: bool = Field(False, description="A stop inferred, not decided explicitly.")
    inputs: list[str] = Field(default_factory=list, description="For an aggregate, what it merged.")

    @property
    def key(self) -> str:
        """The target's event id, or '' for the trace (as the store keeps it)."""
        return self.event_id or ""


def _matches(event, where: dict[str, Any]) -> bool:
    """Whether an event's fields (or extra keys) hold the values a target's `where` asks for."""
    for key, wanted in where.items():
        if key in event.extras:
            value = event.extras[key]
        else:
            value = getattr(event, "from_" if key == "from" else key, None)
        options = wanted if isinstance(wanted, list) else [wanted]
        if value not in options:
            return False
    return True


_NO_FACTS: dict[str, Any] = {}
"""No extra target facts (read, never written)."""


def _events_for(target, analysis: Analysis, facts: bool = True
                ) -> list[tuple[str, dict[str, Any]]]:
    """(event id, extra target facts) for each event a target kind picks, in time order;
    without `facts`, the ids alone (with no facts): an aggregate's inputs are not found."""
    of_type = analysis.of_type
    if isinstance(target, AggregateTarget):
        if not facts:
            return [(e.id, _NO_FACTS) for e in of_type.get("aggregate", ())]
        return [(p.event_id, {"inputs": p.inputs}) for p in analysis.aggregates]
    if isinstance(target, StopTarget):
        events, inferred = analysis.stop_events
        return [(e.id, {"inferred": inferred}) for e in events]
    if isinstance(target, MessageTarget):
        return [(e.id, _NO_FACTS) for e in of_type.get("message", ())]
    if isinstance(target, SpawnTarget):
        return [(e.id, _NO_FACTS) for e in of_type.get("spawn", ())]
    if isinstance(target, DelegateTarget):
        return [(e.id, _NO_FACTS) for e in of_type.get("orchestrator_decision", ())
                if e.decision == "delegate"]
    if isinstance(target, DecisionTarget):
        return [(e.id, _NO_FACTS) for e in of_type.get("orchestrator_decision", ())
                if e.decision != "stop"]
    if isinstance(target, EventsTarget):
        return [(e.id, _NO_FACTS) for e in analysis.order
                if e.type in target.types and _matches(e, target.where)]
    return []


def targets(rubric: Rubric, analysis: Analysis) -> list[LabelTarget]:
    """Everything to label in one trace: its events in time order (each once, with every
    question that targets it), then the trace itself."""
    events, actor = analysis.trace.events_by_id, analysis.actor
    return [LabelTarget(event_id=None, t=None, agent=None, **found)
            if event_id is None else
            LabelTarget(event_id=event_id, t=float(events[event_id].t), agent=actor[event_id],
                        **found)
            for event_id, found in _targets(rubric, analysis)]


def required_questions(rubric: Rubric, analysis: Analysis) -> dict[str, list[str]]:
    """The targets that count towards progress (`counted`), by key, each with the questions
    that must be answered: what an index keeps of `targets`, found without building them."""
    return {event_id or "": found["required"]
            for event_id, found in _targets(rubric, analysis, only_required=True)}


def _targets(rubric: Rubric, analysis: Analysis, only_required: bool = False
             ) -> list[tuple[str | None, dict[str, Any]]]:
    """(event id, or None for the trace; the target's kinds, questions, required questions and
    facts) for each target of `targets`, in its order; `only_required`: only the targets with
    a required question, found from those questions alone (what counts towards progress)."""
    found: dict[str, dict[str, Any]] = {}
    trace_questions: list[str] = []
    trace_required: list[str] = []
    for q in rubric.questions:
        required = not q.optional and q.ask_when is None
        if only_required and not required:
            continue
        if isinstance(q.target, TraceTarget):
            trace_questions.append(q.id)
            if required:
                trace_required.append(q.id)
            continue
        kind = q.target.kind
        for event_id, facts in _events_for(q.target, analysis, facts=not only_required):
            item = found.get(event_id)
            if item is None:
                item = found[event_id] = {"kinds": [], "questions": [], "required": []}
            if kind not in item["kinds"]:
                item["kinds"].append(kind)
            item["questions"].append(q.id)
            if required:
                item["required"].append(q.id)
            if facts and facts.get("inferred"):
                item["inferred"] = True
            if facts and facts.get("inputs"):
                item["inputs"] = facts["inputs"]
    position = analysis.position
    ordered: list[tuple[str | None, dict[str, Any]]] = sorted(
        found.items(), key=lambda item: position[item[0]])
    if trace_questions:
        ordered.append((None, {"kinds": ["trace"], "questions": trace_questions,
                               "required": trace_required}))
    return ordered


def counted(target: LabelTarget) -> bool:
    """Whether a target counts towards progress (it has a question that must be answered)."""
    return bool(target.required)


# -- answers ------------------------------------------------------------------------------------


def reward_of(question: Question, value: Any) -> float | None:
    """The reward an answer maps to: the choice's reward; for tags, the mean reward of the
    tags picked that carry one (none picked: None); text, event and correction answers carry
    none."""
    if question.kind in ("scale", "categorical", "boolean"):
        choice = question.choice(value)
        return choice.reward if choice is not None else None
    if question.kind == "tags":
        rewards = [c.reward for v in value if (c := question.choice(v)) and c.reward is not None]
        return max(-1.0, min(1.0, sum(rewards) / len(rewards))) if rewards else None
    return None


_ASKED: weakref.WeakKeyDictionary[Analysis, dict[str, dict[str, set[str | None]]]] = \
    weakref.WeakKeyDictionary()


def _asked_about(rubric: Rubric, analysis: Analysis) -> dict[str, set[str | None]]:
    """question id -> the event ids (None: the trace) it is asked about, kept per analysis and
    rubric: an import checks thousands of records against one trace."""
    per_rubric = _ASKED.setdefault(analysis, {})
    key = rubric.sha256 or str(id(rubric))  # a rubric built in code may have no hash
    found = per_rubric.get(key)
    if found is None:
        found = {}
        for target in targets(rubric, analysis):
            for question_id in target.questions:
                found.setdefault(question_id, set()).add(target.event_id)
        per_rubric[key] = found
    return found


def check_answer(rubric: Rubric, analysis: Analysis, question_id: str, event_id: str | None,
                 value: Any, answers: dict[str, Any] | None = None) -> float | None:
    """Refuse (LabelError) an answer that the rubric or the trace does not allow; return its
    reward. `answers` are the other answers on the same target, for follow-up questions."""
    question = rubric.question(question_id)
    trace = analysis.trace
    event_id = event_id or None
    if event_id is not None and event_id not in trace.events_by_id:
        raise LabelError(f"trace {trace.trace_id} has no event {event_id!r}")
    wanted = _asked_about(rubric, analysis).get(question_id, set())
    if event_id not in wanted:
        where = f"event {event_id}" if event_id else "the trace itself"
        raise LabelError(f"question {question_id} is not asked about {where} of trace "
                         f"{trace.trace_id} (its target is {question.target.kind})")
    _check_value(rubric, question, value, analysis, event_id, answers or {})
    return reward_of(question, value)


def _check_value(rubric: Rubric, question: Question, value: Any, analysis: Analysis,
                 event_id: str | None, answers: dict[str, Any]) -> None:
    if question.kind == "event":
        _check_pointer(rubric, question, value, analysis, event_id, answers)
    elif question.kind == "correction":
        parse_correction(value, question.actions, analysis)
    else:
        check_value(question, value)


def check_value(question: Question, value: Any) -> None:
    """Refuse (LabelError) a value a question does not take, judged without its trace: one of
    the choices of a scale, category or boolean, distinct tags of the question, text, or (an
    event question) an event id as text; whether the trace has that event is `check_answer`'s
    to say. What a campaign's gold answers are checked by before it is created."""
    allowed = ", ".join(repr(c.value) for c in question.choices)
    if question.kind in ("scale", "categorical", "boolean"):
        if question.choice(value) is None:
            raise LabelError(f"{value!r} is not an answer to {question.id} (allowed: {allowed})")
    elif question.kind == "tags":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise LabelError(f"{question.id} takes a list of tags, not {value!r}")
        unknown = [v for v in value if question.choice(v) is None]
        if unknown or len(set(value)) != len(value):
            raise LabelError(f"{unknown or value!r} are not distinct tags of {question.id} "
                             f"(allowed: {allowed})")
    elif question.kind == "text":
        if not isinstance(value, str):
            raise LabelError(f"{question.id} takes text, not {value!r}")
    elif question.kind == "event":
        if not isinstance(value, str) or not value:
            raise LabelError(f"{question.id} takes an event id, not {value!r}")
    elif question.kind == "correction":
        if not isinstance(value, Mapping) or value.get("action") not in question.actions:
            raise LabelError(f"{question.id} takes a correction: an object whose action is one "
                             f"of {', '.join(question.actions)}")


def _pointer_choice(rubric: Rubric, question: Question, answers: Mapping[str, Any]
                    ) -> Choice | None:
    """The answer a pointer follows, when that answer says which way it points."""
    if question.ask_when is None:
        return None
    base = rubric.questions_by_id[question.ask_when.question]
    given = answers.get(base.id)
    choice = base.choice(given) if given is not None else None
    return choice if choice is not None and choice.pointer is not None else None


def pointer_optional(rubric: Rubric, question: Question, answers: Mapping[str, Any],
                     analysis: Analysis | None, event_id: str | None) -> bool:
    """Whether a pointer follow-up may be left unanswered: it must point later (a premature
    stop) and no event comes after the target (the run ended there), so there is nothing to
    point at; the answer on its own is saved, and `LATER_THAN_RECORDED` may still be given."""
    if question.kind != "event" or analysis is None or not event_id:
        return False
    choice = _pointer_choice(rubric, question, answers)
    return (choice is not None and choice.pointer == "later"
            and analysis.position.get(event_id, -1) == len(analysis.order) - 1)


def _check_pointer(rubric: Rubric, question: Question, value: Any, analysis: Analysis,
                   event_id: str | None, answers: dict[str, Any]) -> None:
    trace = analysis.trace
    if value == LATER_THAN_RECORDED and value not in trace.events_by_id and event_id:
        choice = _pointer_choice(rubric, question, answers)
        if choice is None or choice.pointer != "later":
            raise LabelError(f"{question.id}: 'later than this run recorded' answers only a "
                             "stop that came too early")
        return
    if not isinstance(value, str) or value not in trace.events_by_id:
        raise LabelError(f"{question.id} points at an event of trace {trace.trace_id}; it has no "
                         f"event {value!r}")
    if question.ask_when is None or event_id is None:
        return
    base = rubric.questions_by_id[question.ask_when.question]
    given = answers.get(base.id)
    choice = base.choice(given) if given is not None else None
    if choice is None or choice.pointer is None:
        return
    here, there = analysis.position[event_id], analysis.position[value]
    if choice.pointer == "later" and there <= here:
        raise LabelError(f"{base.id} {choice.value} at {event_id} means it should have stopped "
                         f"later, but {value} does not come after {event_id}")
    if choice.pointer == "earlier" and there >= here:
        raise LabelError(f"{base.id} {choice.value} at {event_id} means it should have stopped "
                         f"earlier, but {value} does not come before {event_id}")


def asked(question: Question, answers: dict[str, Any]) -> bool:
    """Whether a follow-up question applies given the other answers on its target."""
    if question.ask_when is None:
        return True
    given = answers.get(question.ask_when.question)
    return any(given == v and type(given) is type(v) for v in question.ask_when.values)
