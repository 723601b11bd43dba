"""Counterfactual decision pairs: at each node where reviewers judged the orchestrator, a better
decision (chosen) against a worse one (rejected), in the deciding agent's own context. The rows
of `--format decision-pairs` (TRL preference with an explicit prompt, standard or
`--conversational`) and `--format openrlhf-decision-pairs` (OpenRLHF's reward-model shape, the
prompt inside `chosen` and `rejected`). docs/trainers/decision-pairs.md is the row schema.

- **Corrections.** Every correction answer (`viz_app.labels.correction`) makes a pair at its
  event; a stop answered *premature* makes the pair "continue (waiting for the agent that brings
  what was missing) rather than stop" at the stop, and with a pointer the pair "stop rather
  than go on" where the stopping agent first had what the pointer names; *late* with a pointer
  makes the pair there "stop rather than what it did next". The stop's optional correction
  gives the final answer of that stop.
- **Confirmations.** Every decision judged sound makes pairs too (`viz_app.labels.
  confirmation`): the decision made chosen over the alternative its kind's corrections name.
  `--confirmations` writes all of them, as many as the corrections of each sub-decision
  (`balanced`, the default: the ones a hash of the pair picks, so every export picks the
  same), or none; `pair_kind` tells them apart and `weight` lets a trainer give confirmations
  and corrections of a sub-decision equal weight in all.
- **Which labels.** The answers are chosen as every training shape chooses them
  (`viz_app.export.consensus.select`: `--min-reviewers`, `--adjudicated-only`, `--disputed`),
  confirmations as corrections. Corrections are disputed when reviewers chose different
  decisions; reviewers who chose the same decision in their own words each make a row
  (identical words once). An adjudicated correction makes one row, the lead's.
- **Prompt.** The deciding agent's context at the node: the task in its words
  (`viz_app.analysis.task_text`), then the events it had seen before deciding (its own, and
  the spawns, messages and returns addressed to it), one line each as every prompt of orchviz
  writes events. At a stop's pointer the event it had is included (the stop comes after it),
  and the stop being corrected and the agent's own events after it are not (it waited
  instead). Conversational: its own events are `assistant` turns, the rest `user` turns; roles
  alternate across prompt and answer (its own events right before the decision open both
  answers' assistant turn, as `viz_app.export.prompts.alternate` does).
- **Chosen and rejected** state both decisions in one form (`Decision.canonical`: `stop:
  <final answer>`, `aggregate: <merge>`, `continue: wait for <agent>`, ...), in the agent's own
  words where the trace has them, a reviewer's where the reviewer wrote them, else the
  canonical form alone (`chosen_form`, `rejected_form`). `chosen_spans` and `rejected_spans`
  are the character spans where the two differ (`viz_app.labels.correction.diff_spans`, the
  word diff the label panel draws). Decisions are compared as decisions: a pair whose two
  sides are one decision (a merge left as it was) is never written; it is reported.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from viz_app.analysis import analyze, task_text
from viz_app.export.consensus import (ADJUDICATED, ADJUDICATION, SHOWN, Answer, ExportOptions,
                                      dumps, provenance, select)
from viz_app.export.steps import event_lines
from viz_app.labels import (DecisionPair, LabelRecord, Rubric, confirmation_pairs, decision_pairs,
                            diff_spans, pointer_node, questions_of, seen_positions, sound)
from viz_app.model import Trace

DECISION_PAIR_FIELDS = ("prompt", "chosen", "rejected", "chosen_form", "rejected_form",
                        "chosen_spans", "rejected_spans", "pair_kind", "weight",
                        "trace_id", "task_id", "event_id", "corrected_at", "pointed_at",
                        "agent", "sub_decision", "question", "origin", "chosen_decision",
                        "rejected_decision", "reviewers", "disputed", "resolution",
                        "provenance")
"""The keys of every decision-pairs row, in order (docs/trainers/decision-pairs.md)."""


@dataclass
class DecisionRows:
    """The rows of a decision-pairs export (made as they are written), and what it left out."""

    rows: Iterable[dict[str, Any]]
    left_out: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def header(trace: Trace, with_system: bool = False) -> str:
    """The top of a decision pair's prompt: the task in its words (`task_text`), and, when
    asked, the system that attempted it."""
    lines = [f"Task: {task_text(trace)}"]
    if with_system and (trace.system or trace.topology):
        lines.append(f"System: {trace.system or 'unknown'} ({trace.topology or 'unknown'} "
                     "topology)")
    lines.append("Orchestration:")
    return "\n".join(lines) + "\n"


class _Context:
    """One trace's analysis and, made when a prompt is first asked, its prompt lines."""

    def __init__(self, trace: Trace, options: ExportOptions):
        self.trace = trace
        self.options = options
        self.analysis = analyze(trace)
        self._lines: list[str] | None = None
        self._head: str | None = None
        self.conversational = options.conversational
        self.provenance: dict[tuple, tuple[list, list]] = {}
        """The labels and provenance entries of a target's rows, by the answers they rest on
        (cleared at each target)."""
        self.last_turn = ""
        """The assistant turn the last conversational prompt ended with (moved to the answers)."""

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = event_lines(self.analysis)
            self._head = header(self.trace, self.options.prompt_with_system)
        return self._lines

    def prompt(self, agent: str, stop: int, corrected: str = "") -> str | list[dict[str, str]]:
        """The agent's context before position `stop` (without the stop `corrected` and the
        agent's own events after it)."""
        lines = self.lines
        seen = seen_positions(self.analysis, agent)
        positions = seen[:bisect_left(seen, stop)]
        actor, order = self.analysis.actor, self.analysis.order
        if corrected:
            cut = self.analysis.position[corrected]
            positions = [p for p in positions if p < cut or actor[order[p].id] != agent]
        if not self.conversational:
            return self._head + "".join(lines[p] for p in positions)
        messages: list[dict[str, str]] = [{"role": "user", "content": self._head}]
        self.last_turn = ""
        for p in positions:
            role = "assistant" if actor[order[p].id] == agent else "user"
            if messages[-1]["role"] == role:
                messages[-1]["content"] += lines[p]
            else:
                messages.append({"role": role, "content": lines[p]})
        if messages[-1]["role"] == "assistant":
            self.last_turn = messages[-1]["content"]
        return messages


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


@dataclass
class _Candidate:
    """A pair a target's answers make, before its prompt is written."""

    pair: DecisionPair
    chosen: str
    rejected: str
    used: list[Answer]
    who: list[str]
    _key: bytes | None = None

    def key(self, trace_id: str) -> bytes:
        """A stable digest of the pair: which confirmations a balanced export keeps."""
        if self._key is None:
            text = "\x1f".join((trace_id, self.pair.chosen.event_id, self.pair.origin,
                                self.chosen, self.rejected))
            self._key = hashlib.blake2b(text.encode(), digest_size=12).digest()
        return self._key


CACHED_PAIRS = 60_000
"""Pairs the first pass of a balanced export keeps for the second (about 2 kB each); the
traces past them are paired again."""


@dataclass
class _Report:
    """What the pairs of an export left out or moved, for its notes."""

    identical: list[str] = field(default_factory=list)
    never_had: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)


def _candidates(context: _Context, rubric: Rubric, event_id: str, answers: list[Answer],
                seen: set, report: _Report | None) -> Iterator[_Candidate]:
    questions = questions_of(rubric)
    plain = {a.question: a.value for a in answers
             if (q := questions.get(a.question)) is None or q.kind != "correction"}
    by_question = {a.question: a for a in answers}
    runs: list[tuple[dict[str, Any], list[Answer], list[str]]] = []
    stop_fix = [a for a in answers if (q := questions.get(a.question)) is not None
                and q.kind == "correction" and q.ask_when is not None
                and q.ask_when.question in plain and "stop" in q.actions]
    pointer_q = next((q for q in map(questions.get, plain) if q is not None
                      and q.kind == "event" and q.ask_when is not None), None)
    if stop_fix:
        for value, who in _variants(stop_fix[0]):
            runs.append(({**plain, stop_fix[0].question: value}, answers, who))
    elif pointer_q is not None:  # a stop's pointer: its pairs
        runs.append((plain, answers, []))
    elif any(q is not None and (c := q.choice(v)) is not None and c.pointer == "later"
             for q, v in ((questions.get(k), v) for k, v in plain.items())
             if q is not None and q.choices):  # premature on its own: the pair at the stop
        runs.append((plain, answers, []))
    if report is not None and pointer_q is not None:
        pointer = plain[pointer_q.id]
        if isinstance(pointer, str) and pointer in context.analysis.position:
            node = pointer_node(context.analysis, event_id, pointer)
            where = f"{context.trace.trace_id} {event_id} -> {pointer}"
            if node is None:
                report.never_had.append(where)
            elif node != pointer:
                report.moved.append(f"{where} ({node})")
    for answer in answers:
        question = questions.get(answer.question)
        if question is None or question.kind != "correction" or answer in stop_fix:
            continue
        for value, who in _variants(answer):
            runs.append(({**plain, answer.question: value}, [answer], who))
    made: list[tuple[DecisionPair, list[Answer], list[str]]] = []
    for given, used, who in runs:
        for pair in decision_pairs(rubric, context.trace, event_id, given):
            if pair.origin == "correction" and by_question.get(pair.question) not in used:
                continue
            made.append((pair, used, who))
    for pair in confirmation_pairs(rubric, context.trace, event_id, plain):
        answer = by_question[pair.question]
        adjudicated = answer.resolution == ADJUDICATED
        made.append((pair, [answer], sorted({r["reviewer"] for r in answer.labels
                                            if (r.get("source") == ADJUDICATION) == adjudicated})))
    for pair, used, who in made:
        chosen, rejected = pair.chosen.canonical, pair.rejected.canonical
        key = (pair.chosen.event_id, pair.question, pair.origin, chosen, rejected)
        if key in seen:
            continue
        seen.add(key)
        if chosen == rejected and pair.chosen.same_as(pair.rejected):  # (forms differ: no)
            if report is not None:
                report.identical.append(f"{context.trace.trace_id} {pair.chosen.event_id}")
            continue
        yield _Candidate(pair, chosen, rejected, used, who)


def _row(context: _Context, event_id: str, found: _Candidate, weight: float) -> dict[str, Any]:
    pair = found.pair
    analysis = context.analysis
    node = pair.chosen.event_id
    stop = analysis.position[node] + (1 if pair.after_node else 0)
    prompt = context.prompt(pair.chosen.agent, stop, pair.corrected_stop)
    chosen, rejected = found.chosen, found.rejected
    rejected_spans, chosen_spans = diff_spans(rejected, chosen)
    if context.conversational:
        # roles alternate, as strict chat templates require: the agent's own events right
        # before the decision join both answers' one assistant turn (`prompts.alternate`)
        before = ""
        if prompt and prompt[-1]["role"] == "assistant":
            prompt = prompt[:-1]
            before = context.last_turn
        chosen_out: Any = [{"role": "assistant", "content": before + chosen}]
        rejected_out: Any = [{"role": "assistant", "content": before + rejected}]
        if before:
            shift = len(before)
            chosen_spans = [[a + shift, b + shift] for a, b in chosen_spans]
            rejected_spans = [[a + shift, b + shift] for a, b in rejected_spans]
    else:
        chosen_out, rejected_out = chosen, rejected
    key = tuple(map(id, found.used))
    held = context.provenance.get(key)
    if held is None:  # the rows of one target share their labels: made once
        labels = [r for a in found.used for r in a.labels]
        held = context.provenance[key] = (labels, provenance(labels))
    labels, entries = held
    reviewers = found.who or sorted({r["reviewer"] for r in labels
                                     if r.get("source") != ADJUDICATION})
    return {"prompt": prompt, "chosen": chosen_out, "rejected": rejected_out,
            "chosen_form": pair.chosen_words, "rejected_form": pair.rejected_words,
            "chosen_spans": chosen_spans, "rejected_spans": rejected_spans,
            "pair_kind": pair.kind, "weight": weight,
            "trace_id": context.trace.trace_id, "task_id": context.trace.task_id,
            "event_id": node, "corrected_at": event_id, "pointed_at": pair.pointed_at,
            "agent": pair.chosen.agent, "sub_decision": pair.chosen.sub_decision,
            "question": pair.question, "origin": pair.origin,
            "chosen_decision": dumps(pair.chosen.__dict__),
            "rejected_decision": dumps(pair.rejected.__dict__), "reviewers": reviewers,
            "disputed": any(a.disputed for a in found.used),
            "resolution": ",".join(sorted({a.resolution for a in found.used})),
            "provenance": entries}


def _pairing(rubric: Rubric) -> set[str]:
    """The questions whose answers can make a pair: corrections, a stop's answer and its
    pointer, the answers a correction follows, and every question whose best answer judges a
    decision sound (a confirmation)."""
    found = set()
    for q in rubric.questions:
        if q.kind == "correction" or (q.kind == "event" and q.ask_when is not None):
            found.add(q.id)
            if q.ask_when is not None:
                found.add(q.ask_when.question)
        elif q.kind in ("scale", "categorical", "boolean") and q.sub_decision and q.choices:
            found.add(q.id)
    return found


@dataclass(frozen=True)
class _Shape:
    """What a context-free reading sees of a pair: its sub-decision, the action on each side,
    and whether the chosen side is the longer (1), the shorter (-1) or neither (0)."""

    sub: str
    chosen: str
    rejected: str
    longer: int

    @classmethod
    def of(cls, found: _Candidate) -> _Shape:
        n, m = len(found.chosen), len(found.rejected)
        return cls(found.pair.chosen.sub_decision, found.pair.chosen.action,
                   found.pair.rejected.action, (n > m) - (n < m))


def _balance(corrections: list[_Shape], confirmations: list[tuple[bytes, _Shape]], how: str
             ) -> tuple[set[bytes], dict[tuple[str, str], float], list[str]]:
    """The confirmations kept (by digest), each (sub-decision, kind)'s weight, and notes.

    Balanced mirrors the corrections: for each correction choosing action A over B, one
    confirmation choosing B over A in the same sub-decision (as many as there are), so the
    actions win as often as they lose; among those, first the ones whose longer side wins
    where the corrections' shorter side does (and the other way round), so length tells as
    little; then by the pair's digest (a fixed, unbiased pick). A confirmation with no
    correction to mirror is left out, and counted."""
    kept: set[bytes] = set()
    notes: list[str] = []
    if how == "all":
        kept = {key for key, _ in confirmations}
    elif how == "balanced":
        wanted: Counter = Counter((c.sub, c.rejected, c.chosen) for c in corrections)
        lean: Counter = Counter()  # per sub-decision and pair of actions: longer side wins
        for c in corrections:
            lean[(c.sub, frozenset((c.chosen, c.rejected)))] += c.longer
        offered: dict[tuple[str, str, str], list[tuple[int, bytes]]] = defaultdict(list)
        for key, shape in confirmations:
            tilt = lean[(shape.sub, frozenset((shape.chosen, shape.rejected)))]
            against = shape.longer * (1 if tilt > 0 else -1 if tilt < 0 else 0)
            offered[(shape.sub, shape.chosen, shape.rejected)].append((against, key))
        unmatched: Counter = Counter()
        for what, found in offered.items():
            take = wanted.get(what, 0)
            found.sort()
            kept.update(key for _, key in found[:take])
            if len(found) > take:
                unmatched[what[0]] += len(found) - take
        if unmatched:
            notes.append("confirmations left out with no correction to mirror (the same "
                         "actions the other way round; --confirmations all writes them): "
                         + ", ".join(f"{n} {sub}" for sub, n in sorted(unmatched.items())))
    counts = Counter(c.sub for c in corrections)
    kept_by = Counter(shape.sub for key, shape in confirmations if key in kept)
    weights: dict[tuple[str, str], float] = {}
    for sub in set(counts) | set(kept_by):
        n_fix, n_ok = counts.get(sub, 0), kept_by.get(sub, 0)
        both = n_fix and n_ok
        weights[(sub, "correction")] = round((n_fix + n_ok) / (2 * n_fix), 4) if both else 1.0
        weights[(sub, "confirmation")] = round((n_fix + n_ok) / (2 * n_ok), 4) if both else 1.0
    return kept, weights, notes


def decision_pair_export(labels: Iterable[LabelRecord], traces: Mapping[str, Trace],
                         rubric: Rubric | None, options: ExportOptions = ExportOptions()
                         ) -> DecisionRows:
    """The decision-pairs export's rows (corrections, and confirmations as `--confirmations`
    says, by trace then event), what it left out, and notes."""
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
        found.notes.append(f"{len(labels) - len(mine)} labels make no decision pair (tags, "
                           "outcomes, judgements of two traces): the other shapes export them")
    if missing:
        found.left_out.append(f"labels on {len(missing)} traces skipped: not among --traces: "
                              + ", ".join(missing[:SHOWN]))
    per_trace: dict[str, list[tuple[str, list[Answer]]]] = defaultdict(list)
    for (trace_id, event_id), answers in sorted(by_target.items()):
        if trace_id in traces:
            per_trace[trace_id].append((event_id, answers))
    how = options.confirmations

    def targets(trace_id: str, context: _Context):
        position = context.analysis.position
        for event_id, answers in sorted(per_trace[trace_id],
                                        key=lambda t: position.get(t[0], -1)):
            if event_id in position:
                context.provenance.clear()
                yield event_id, answers

    kept: set[bytes] = set()
    weights: dict[tuple[str, str], float] = {}
    questions = questions_of(rubric)
    report = _Report()
    first_pass = how != "none" and any(sound(questions.get(a.question), a.value)
                                       for a in selection.answers)
    cached: dict[str, list[tuple[str, list[_Candidate]]]] = {}
    if first_pass:  # how many of each, and which confirmations are kept
        corrections: list[_Shape] = []
        confirmations: list[tuple[bytes, _Shape]] = []
        held = 0
        for trace_id in per_trace:
            context = _Context(traces[trace_id], options)
            seen: set = set()
            mine: list[tuple[str, list[_Candidate]]] = []
            for event_id, answers in targets(trace_id, context):
                made = list(_candidates(context, rubric, event_id, answers, seen, report))
                mine.append((event_id, made))
                for candidate in made:
                    if candidate.pair.kind == "correction":
                        corrections.append(_Shape.of(candidate))
                    else:
                        confirmations.append((candidate.key(trace_id), _Shape.of(candidate)))
            held += sum(len(made) for _, made in mine)
            if held <= CACHED_PAIRS:  # kept for the second pass, up to a bound on memory
                cached[trace_id] = mine
        kept, weights, balance_notes = _balance(corrections, confirmations, how)
        found.notes += balance_notes
        found.notes.append(f"{len(kept)} confirmations written of {len(confirmations)} "
                           f"(--confirmations {how}) beside {len(corrections)} corrections")

    def rows() -> Iterator[dict[str, Any]]:
        for trace_id in per_trace:
            context = _Context(traces[trace_id], options)
            if trace_id in cached:
                made = cached.pop(trace_id)
            else:
                seen: set = set()
                made = [(event_id, _candidates(context, rubric, event_id, answers, seen,
                                               None if first_pass else report))
                        for event_id, answers in targets(trace_id, context)]
            for event_id, candidates in made:
                context.provenance.clear()
                for candidate in candidates:
                    kind = candidate.pair.kind
                    if kind == "confirmation" and candidate.key(trace_id) not in kept:
                        continue
                    weight = weights.get((candidate.pair.chosen.sub_decision, kind), 1.0)
                    yield _row(context, event_id, candidate, weight)
        if report.identical:
            found.notes.append(f"{len(report.identical)} pairs are one decision on both sides "
                               "(a correction that reads as the decision made) and make no "
                               "row: " + "; ".join(report.identical[:SHOWN]))
        if report.never_had:
            found.notes.append(f"{len(report.never_had)} 'should have stopped at' pointers name "
                               "an event the stopping agent never had (nor anything carrying "
                               "it, before its stop for a late one): no pair at the pointer: "
                               + "; ".join(report.never_had[:SHOWN]))
        if report.moved:
            found.notes.append(f"{len(report.moved)} pointers name an event the stopping agent "
                               "did not see: their pair is at the first event at which it had "
                               "it (in brackets): " + "; ".join(report.moved[:SHOWN]))

    found.rows = rows()
    return found


def openrlhf_rows(rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """OpenRLHF reward-model rows from decision pairs: the prompt inside `chosen` and
    `rejected` (`viz_app.export.openrlhf.rm_rows`), the spans moved by the prompt's length so
    they still index the text they mark (conversational: the last message's content, as
    before)."""
    from viz_app.export.openrlhf import rm_rows

    for row in rows:
        if isinstance(row["prompt"], str):
            n = len(row["prompt"])
            row["chosen_spans"] = [[x + n, y + n] for x, y in row["chosen_spans"]]
            row["rejected_spans"] = [[x + n, y + n] for x, y in row["rejected_spans"]]
        yield from rm_rows((row,))


def decision_pair_rows(labels: Iterable[LabelRecord], traces: Mapping[str, Trace],
                       rubric: Rubric | None, options: ExportOptions = ExportOptions()
                       ) -> list[dict[str, Any]]:
    """The rows of the decision-pairs export, as a list."""
    return list(decision_pair_export(labels, traces, rubric, options).rows)
