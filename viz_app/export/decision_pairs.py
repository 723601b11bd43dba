"""Counterfactual decision pairs: at each node where reviewers corrected the orchestrator, the
decision it should have made (chosen) against the one it made (rejected), in the deciding
agent's own context. The rows of `--format decision-pairs` (TRL preference with an explicit
prompt, standard or `--conversational`) and `--format openrlhf-decision-pairs` (OpenRLHF's
reward-model shape, the prompt inside `chosen` and `rejected`).

- **Which pairs.** Every correction answer (`viz_app.labels.correction`) makes a pair at its
  event; a stop answered *premature* makes the pair "continue (waiting for the event pointed
  at) rather than stop" at the stop, and with a pointer the pair "stop rather than go on" at the
  event pointed at; *late* with a pointer makes the pair at the pointer "stop rather than what it
  did next". The stop's optional correction gives the final answer of that stop.
- **Which labels.** The answers are chosen as every training shape chooses them
  (`viz_app.export.consensus.select`: `--min-reviewers`, `--adjudicated-only`, `--disputed`).
  Corrections are disputed when reviewers chose different decisions; reviewers who chose the
  same decision in their own words each make a row (identical words once), so a trainer sees
  every phrasing they agreed on. An adjudicated correction makes one row, the lead's.
- **Prompt.** The deciding agent's context at the node: the task, then the events it had seen
  before deciding (its own events, and the spawns, messages and returns addressed to it), one
  line each as every prompt of orchviz writes events (`[t=12.5] orchestrator aggregate: ...`).
  At a pointer the event pointed at is included (the decision to stop comes after it).
  Conversational: its own events are `assistant` turns, the rest `user` turns; roles
  alternate across prompt and answer (its own events right before the decision open both
  answers' assistant turn, as `viz_app.export.prompts.alternate` does).
- **Chosen and rejected.** Rejected is the decision made, in the orchestrator's own words (the
  event's recorded text) when the trace holds them, else the canonical form; chosen is the
  reviewer's own words for a merge, message, spawned task or final answer, else the canonical
  form (`Decision.canonical`, documented in docs/trainers/decision-pairs.md). The columns
  `chosen_form` and `rejected_form` say which (`reviewer_words`, `own_words`, `canonical`);
  `chosen_decision` and `rejected_decision` hold both decisions as structures (JSON text).
- A pair whose chosen reads the same as its rejected (a merge left as it was) is never written;
  it is reported.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from viz_app.analysis import Analysis, analyze
from viz_app.export.consensus import (ADJUDICATED, ADJUDICATION, SHOWN, Answer, ExportOptions,
                                      dumps, provenance, select)
from viz_app.export.prompts import header
from viz_app.export.steps import event_lines
from viz_app.labels.correction import Decision, DecisionPair, decision_pairs
from viz_app.labels.label import LabelRecord
from viz_app.labels.rubric import Rubric
from viz_app.model import Trace

DECISION_PAIR_FIELDS = ("prompt", "chosen", "rejected", "chosen_form", "rejected_form",
                        "trace_id", "task_id", "event_id", "corrected_at", "agent",
                        "sub_decision", "question", "origin", "chosen_decision",
                        "rejected_decision", "reviewers", "disputed", "resolution",
                        "provenance")
"""The keys of every decision-pairs row, in order."""

TEXT_ANSWERS = ("merge", "send", "spawn", "stop")
"""Corrections whose chosen side is the reviewer's own words (when they wrote some)."""


@dataclass
class DecisionRows:
    """The rows of a decision-pairs export (made as they are written), and what it left out."""

    rows: Iterable[dict[str, Any]]
    left_out: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class _Context:
    """One trace's prompt lines and, per agent, the positions of the events it saw."""

    def __init__(self, trace: Trace, options: ExportOptions):
        self.trace = trace
        self.analysis = analyze(trace)
        self.lines = event_lines(self.analysis)
        self.head = header(trace, options.prompt_with_system)
        self.conversational = options.conversational
        self._seen: dict[str, list[int]] = {}
        self.provenance: dict[tuple, tuple[list, list]] = {}
        """The labels and provenance entries of a target's rows, by the answers they rest on
        (cleared at each target)."""
        self.last_turn = ""
        """The assistant turn the last conversational prompt ended with (moved to the answers)."""

    def seen(self, agent: str) -> list[int]:
        """Positions of the events `agent` saw: its own, and those addressed to it (made for
        every agent in one pass over the trace)."""
        if not self._seen:
            actor = self.analysis.actor
            for i, e in enumerate(self.analysis.order):
                who = actor[e.id]
                self._seen.setdefault(who, []).append(i)
                to = e.to
                if to is not None and to != who:
                    self._seen.setdefault(to, []).append(i)
        return self._seen.get(agent, [])

    def prompt(self, agent: str, stop: int) -> str | list[dict[str, str]]:
        """The agent's context before position `stop`."""
        seen = self.seen(agent)
        positions = seen[:bisect_left(seen, stop)]
        if not self.conversational:
            return self.head + "".join(self.lines[p] for p in positions)
        actor, order = self.analysis.actor, self.analysis.order
        messages: list[dict[str, str]] = [{"role": "user", "content": self.head}]
        self.last_turn = ""
        for p in positions:
            role = "assistant" if actor[order[p].id] == agent else "user"
            if messages[-1]["role"] == role:
                messages[-1]["content"] += self.lines[p]
            else:
                messages.append({"role": role, "content": self.lines[p]})
        if messages[-1]["role"] == "assistant":
            self.last_turn = messages[-1]["content"]
        return messages


def _chosen_text(decision: Decision) -> tuple[str, str]:
    if decision.action in TEXT_ANSWERS and decision.text and decision.action != "spawn":
        return " ".join(decision.text.split()), "reviewer_words"
    return decision.canonical, "canonical"


def _rejected_text(pair: DecisionPair) -> tuple[str, str]:
    if pair.rejected_own_words and pair.rejected.action != "continue":
        return " ".join(pair.rejected.text.split()), "own_words"
    return pair.rejected.canonical, "canonical"


def _variants(answer: Answer) -> list[tuple[Any, list[str]]]:
    """The distinct values a correction answer stands for, each with the reviewers who gave it:
    the adjudicator's when adjudicated, else each reviewer's words of the agreed decision."""
    if answer.resolution == ADJUDICATED:
        used = [r for r in answer.labels if r.get("source") == ADJUDICATION]
    else:
        used = [r for r in answer.labels if r.get("source") != ADJUDICATION]
    found: dict[str, tuple[Any, list[str]]] = {}
    for record in sorted(used, key=lambda r: r["reviewer"]):
        value = record["value"]
        found.setdefault(dumps(value), (value, []))[1].append(record["reviewer"])
    return list(found.values()) or [(answer.value, [])]


def _rows_of_target(context: _Context, rubric: Rubric, event_id: str,
                    answers: list[Answer], seen: set, identical: list[str]
                    ) -> Iterator[dict[str, Any]]:
    questions = rubric.questions_by_id
    plain = {a.question: a.value for a in answers
             if (q := questions.get(a.question)) is None or q.kind != "correction"}
    by_question = {a.question: a for a in answers}
    runs: list[tuple[dict[str, Any], list[Answer], list[str]]] = []
    stop_fix = [a for a in answers if (q := questions.get(a.question)) is not None
                and q.kind == "correction" and q.ask_when is not None
                and q.ask_when.question in plain and "stop" in q.actions]
    if stop_fix:
        for value, who in _variants(stop_fix[0]):
            runs.append(({**plain, stop_fix[0].question: value}, answers, who))
    elif any(q is not None and q.kind == "event" and q.ask_when is not None
             for q in map(questions.get, plain)):  # a stop's pointer: its pairs
        runs.append((plain, answers, []))
    elif any(q is not None and (c := q.choice(v)) is not None and c.pointer == "later"
             for q, v in ((questions.get(k), v) for k, v in plain.items())
             if q is not None and q.choices):  # premature on its own: the pair at the stop
        runs.append((plain, answers, []))
    for answer in answers:
        question = questions.get(answer.question)
        if question is None or question.kind != "correction" or answer in stop_fix:
            continue
        for value, who in _variants(answer):
            runs.append(({**plain, answer.question: value}, [answer], who))
    for given, used, who in runs:
        for pair in decision_pairs(rubric, context.trace, event_id, given):
            if pair.origin == "correction" and by_question.get(pair.question) not in used:
                continue
            chosen, chosen_form = _chosen_text(pair.chosen)
            rejected, rejected_form = _rejected_text(pair)
            key = (pair.chosen.event_id, pair.question, chosen, rejected)
            if key in seen:
                continue
            seen.add(key)
            if chosen == rejected:
                identical.append(f"{context.trace.trace_id} {pair.chosen.event_id}")
                continue
            yield _row(context, event_id, pair, chosen, chosen_form, rejected, rejected_form,
                       used, who)


def _row(context: _Context, event_id: str, pair: DecisionPair, chosen: str, chosen_form: str,
         rejected: str, rejected_form: str, used: list[Answer], who: list[str]
         ) -> dict[str, Any]:
    analysis: Analysis = context.analysis
    node = pair.chosen.event_id
    stop = analysis.position[node] + (1 if node != event_id else 0)
    prompt = context.prompt(pair.chosen.agent, stop)
    if context.conversational:
        # roles alternate, as strict chat templates require: the agent's own events right
        # before the decision join both answers' one assistant turn (`prompts.alternate`)
        before = ""
        if prompt and prompt[-1]["role"] == "assistant":
            prompt = prompt[:-1]
            before = context.last_turn
        chosen_out: Any = [{"role": "assistant", "content": before + chosen}]
        rejected_out: Any = [{"role": "assistant", "content": before + rejected}]
    else:
        chosen_out, rejected_out = chosen, rejected
    key = tuple(map(id, used))
    held = context.provenance.get(key)
    if held is None:  # the rows of one target share their labels: made once
        labels = [r for a in used for r in a.labels]
        held = context.provenance[key] = (labels, provenance(labels))
    labels, entries = held
    reviewers = who or sorted({r["reviewer"] for r in labels
                               if r.get("source") != ADJUDICATION})
    return {"prompt": prompt, "chosen": chosen_out, "rejected": rejected_out,
            "chosen_form": chosen_form, "rejected_form": rejected_form,
            "trace_id": context.trace.trace_id, "task_id": context.trace.task_id,
            "event_id": node, "corrected_at": event_id, "agent": pair.chosen.agent,
            "sub_decision": pair.chosen.sub_decision, "question": pair.question,
            "origin": pair.origin, "chosen_decision": dumps(pair.chosen.__dict__),
            "rejected_decision": dumps(pair.rejected.__dict__), "reviewers": reviewers,
            "disputed": any(a.disputed for a in used),
            "resolution": ",".join(sorted({a.resolution for a in used})),
            "provenance": entries}


def _pairing(rubric: Rubric) -> set[str]:
    """The questions whose answers can make a pair (corrections, and a stop's answer and its
    pointer) and the answers they follow (a correction is kept only where its answer asks it)."""
    found = set()
    for q in rubric.questions:
        if q.kind == "correction" or (q.kind == "event" and q.ask_when is not None):
            found.add(q.id)
            if q.ask_when is not None:
                found.add(q.ask_when.question)
    return found


def decision_pair_export(labels: Iterable[LabelRecord], traces: Mapping[str, Trace],
                         rubric: Rubric | None, options: ExportOptions = ExportOptions()
                         ) -> DecisionRows:
    """The decision-pairs export's rows (one per corrected decision, by trace then event), what
    it left out, and notes."""
    if rubric is None:
        return DecisionRows(rows=[])
    wanted = _pairing(rubric)
    labels = list(labels)
    mine = [r for r in labels if r["question"] in wanted]
    selection = select(mine, rubric, options)
    by_target: dict[tuple[str, str], list[Answer]] = defaultdict(list)
    for answer in selection.answers:
        if answer.event_id:
            by_target[(answer.trace_id, answer.event_id)].append(answer)
    missing = sorted({t for t, _ in by_target} - set(traces))
    found = DecisionRows(rows=[], left_out=list(selection.left_out), notes=list(selection.notes))
    if len(mine) < len(labels):
        found.notes.append(f"{len(labels) - len(mine)} labels make no decision pair (scores, "
                           "tags, outcomes, judgements of two traces): the other shapes "
                           "export them")
    if missing:
        found.left_out.append(f"corrections on {len(missing)} traces skipped: not among --traces: "
                              + ", ".join(missing[:SHOWN]))
    identical: list[str] = []

    def rows() -> Iterator[dict[str, Any]]:
        per_trace: dict[str, list[tuple[str, list[Answer]]]] = defaultdict(list)
        for (trace_id, event_id), answers in sorted(by_target.items()):
            if trace_id in traces:
                per_trace[trace_id].append((event_id, answers))
        for trace_id, targets in per_trace.items():
            trace = traces[trace_id]
            context = _Context(trace, options)
            seen: set = set()
            position = context.analysis.position
            for event_id, answers in sorted(targets, key=lambda t: position.get(t[0], -1)):
                if event_id in position:
                    context.provenance.clear()
                    yield from _rows_of_target(context, rubric, event_id, answers, seen,
                                               identical)
        if identical:
            found.notes.append(f"{len(identical)} corrections read the same as the decision made "
                               "(chosen would equal rejected) and make no row: "
                               + "; ".join(identical[:SHOWN]))

    found.rows = rows()
    return found


def decision_pair_rows(labels: Iterable[LabelRecord], traces: Mapping[str, Trace],
                       rubric: Rubric | None, options: ExportOptions = ExportOptions()
                       ) -> list[dict[str, Any]]:
    """The rows of the decision-pairs export, as a list."""
    return list(decision_pair_export(labels, traces, rubric, options).rows)
