"""Confirmations: the pairs a decision judged sound makes, so the training signal shows the
recorded decision winning where it was right, and not only losing where it was wrong.

A target answered with its question's best answer (a stop `correct`, a merge `5`, a spawn
`necessary`, a delegation `right agent`, a message `necessary`) confirms the decision made,
and makes it the chosen side against the alternative its kind's corrections name, stated in
the same form (`viz_app.labels.correction.Decision.canonical`):

| decision | chosen | rejected | origin |
|---|---|---|---|
| stop (O5) | `stop: <its final answer>` | `continue: wait for <agent>` (one it handed work to that has not answered, else the one that answered last) | `confirm_stop` |
| stop (O5), not late | `continue: wait for <X>`, just before the last result X sent it began to arrive | `stop: <its final answer>` | `confirm_continue` |
| merge (O4) | `aggregate: <its merge>` | the same merge with the sentences that carry one returned result taken out; the same merge with one more sentence no result supports (a sentence of it repeated with its figure changed) | `confirm_merge` |
| spawn (O1) | `spawn <role>: <task>` | `do it itself: <task>`; `reuse <the sibling spawned last>: <task>` | `confirm_spawn` |
| delegation (O2) | `delegate -> <agent>: <task>` | `delegate -> <the agent it handed work to last, another>: <task>` | `confirm_delegate` |
| message (O3) | `message -> <to>: <text>` | `no message` | `confirm_message` |

A stop judged correct is neither premature nor late: when the last result it received had not
yet arrived, stopping would have been premature, so going on was right there (the mirror of a
premature stop's pair). A merge whose sentences cannot be told apart by result (one result, or
no sentence naming one result's own words) makes no confirmation. Pure: no store, no SQL.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from viz_app.analysis import Analysis, analyze
from viz_app.labels.correction import (Decision, DecisionPair, made_decision, questions_of,
                                       stopped)
from viz_app.labels.knowledge import last_delivery, seen_positions, waited_for
from viz_app.model import Trace

_SENTENCE = re.compile(r"(?<=[.!?;])\s+")
_HEAD = re.compile(r"^\s*[A-Z][\w ]{0,30}:\s+")
_TOKEN = re.compile(r"[0-9][0-9.,]*[0-9]|[0-9]|[A-Za-z][\w'-]*")


def sound(question, value: Any) -> bool:
    """Whether an answer judges its decision sound: the question's best answer (the highest
    reward of its choices, above zero), not one that asks for a pointer."""
    if question is None or question.kind not in ("scale", "categorical", "boolean") \
            or not question.choices:
        return False
    choice = question.choice(value)
    rewards = [c.reward for c in question.choices if c.reward is not None]
    if choice is None or choice.reward is None or choice.pointer is not None or not rewards:
        return False
    return choice.reward == max(rewards) and choice.reward > 0


def _tokens(text: str) -> set[str]:
    return {t.lower().rstrip(".,") for t in _TOKEN.findall(text)}


def without_one_result(analysis: Analysis, aggregate_id: str) -> str | None:
    """The aggregate's own words with the sentences that carry one sender's results taken out
    (the sender chosen by the event's id, so every export takes the same one); None when the
    merge does not tell its results apart: fewer than two senders, or no sentence that only one
    sender's own words support."""
    point = next((p for p in analysis.aggregates if p.event_id == aggregate_id), None)
    if point is None:
        return None
    by_sender: dict[str, set[str]] = {}
    for input_id in point.inputs:
        event = analysis.trace.event(input_id)
        sender = event.from_ or analysis.actor[input_id]
        by_sender.setdefault(sender, set()).update(_tokens(event.text))
    if len(by_sender) < 2:
        return None
    shared = set.intersection(*by_sender.values())
    own = {s: words - shared - set().union(*(w for o, w in by_sender.items() if o != s))
           for s, words in by_sender.items()}
    text = " ".join(analysis.trace.event(aggregate_id).text.split())
    head = _HEAD.match(text)
    lead = head.group(0) if head else ""
    sentences = _SENTENCE.split(text[len(lead):])
    owner: list[str | None] = []
    for sentence in sentences:
        words = _tokens(sentence)
        score = sorted(((len(words & w), s) for s, w in own.items()), reverse=True)
        best = score[0]
        owner.append(best[1] if best[0] > 0 and (len(score) < 2 or score[1][0] < best[0])
                     else None)
    held = sorted({s for s in owner if s is not None})
    if not held or len(sentences) < 2:
        return None
    pick = int(hashlib.sha256(aggregate_id.encode()).hexdigest()[:8], 16) % len(held)
    kept = [x for x, s in zip(sentences, owner) if s != held[pick]]
    if not kept:
        return None
    return lead + " ".join(kept)


_NUMBER = re.compile(r"(?<![\w.])[0-9][0-9]*(?:\.[0-9]+)?(?![\w])")


def with_a_claim_no_result_made(analysis: Analysis, aggregate_id: str) -> str | None:
    """The aggregate's own words with one more sentence that no result supports: a copy of a
    sentence of the merge holding a figure, the figure changed (the sentence chosen by the
    event's id). None when no sentence of the merge holds a figure."""
    text = " ".join(analysis.trace.event(aggregate_id).text.split())
    head = _HEAD.match(text)
    sentences = [x for x in _SENTENCE.split(text[len(head.group(0)) if head else 0:])
                 if _NUMBER.search(x)]
    if not sentences:
        return None
    seed = int(hashlib.sha256(aggregate_id.encode()).hexdigest()[:8], 16)
    sentence = sentences[seed % len(sentences)]
    figure = _NUMBER.search(sentence)
    given = figure.group(0)
    decimals = len(given.split(".")[1]) if "." in given else 0
    changed = f"{float(given) * 1.37 + 1:.{decimals}f}"
    return f"{text} {sentence[:figure.start()]}{changed}{sentence[figure.end():]}"


def _handed_before(analysis: Analysis, agent: str, before: int, kinds: tuple[str, ...]
                   ) -> list[str]:
    """The agents `agent` spawned (or handed work to, by `kinds`) before position `before`,
    last first, each once."""
    found: list[str] = []
    for p in reversed([p for p in seen_positions(analysis, agent) if p < before]):
        link = analysis.link_of(analysis.order[p])
        if link is not None and link[1] == agent and link[0] in kinds and link[2] not in found:
            found.append(link[2])
    return found


def confirmation_pairs(rubric, trace: Trace, event_id: str | None,
                       answers: Mapping[str, Any]) -> list[DecisionPair]:
    """The pairs a target's sound answers make (`answers`: question id -> value): the decision
    made chosen over the alternatives the module's table names."""
    if not event_id:
        return []
    analysis = analyze(trace)
    if event_id not in analysis.position:
        return []
    questions = questions_of(rubric)
    pairs: list[DecisionPair] = []
    for qid, value in answers.items():
        question = questions.get(qid)
        if not sound(question, value):
            continue
        if any(c.pointer is not None for c in question.choices):
            pairs += _stop(analysis, event_id, qid)
        else:
            pairs += _decision(analysis, event_id, qid, question.sub_decision)
    return pairs


def _stop(analysis: Analysis, event_id: str, qid: str) -> list[DecisionPair]:
    agent = analysis.actor[event_id]
    where = analysis.position[event_id]
    stop, words = stopped(analysis, event_id)
    go_on = Decision(event_id=event_id, agent=agent, sub_decision="O5", action="continue",
                     agent_to=waited_for(analysis, agent, where))
    pairs = [DecisionPair(chosen=stop, rejected=go_on, chosen_words=words, question=qid,
                          origin="confirm_stop")]
    last = last_delivery(analysis, agent, where)
    if last is not None:
        node = analysis.order[last].id
        link = analysis.link_of(analysis.order[last])
        wait = Decision(event_id=node, agent=agent, sub_decision="O5", action="continue",
                        agent_to=link[1] if link is not None else "")
        pairs.append(DecisionPair(chosen=wait, rejected=stop.model_copy(update={
            "event_id": node}), rejected_words=words, question=qid, origin="confirm_continue"))
    return pairs


def _decision(analysis: Analysis, event_id: str, qid: str, sub: str | None
              ) -> list[DecisionPair]:
    made, own = made_decision(analysis, event_id)
    words = "own_words" if own else "canonical"
    base = {"event_id": event_id, "agent": made.agent, "sub_decision": made.sub_decision}
    found: list[DecisionPair] = []

    def pair(rejected: Decision, rejected_words: str, origin: str) -> None:
        found.append(DecisionPair(chosen=made, rejected=rejected, chosen_words=words,
                                  rejected_words=rejected_words if rejected.text
                                  else "canonical", question=qid, origin=origin))

    if made.action == "merge":
        less = without_one_result(analysis, event_id)
        if less:
            pair(made.model_copy(update={"text": less}), "own_words_edited", "confirm_merge")
        more = with_a_claim_no_result_made(analysis, event_id)
        if more:
            pair(made.model_copy(update={"text": more}), "own_words_edited", "confirm_merge")
    elif made.action == "spawn":
        pair(Decision(**base, action="do_it_itself", text=made.text), words, "confirm_spawn")
        child = analysis.trace.event(event_id).to
        siblings = [a for a in _handed_before(analysis, made.agent,
                                              analysis.position[event_id], ("spawn",))
                    if a != child]
        if siblings:
            pair(Decision(**base, action="reuse_agent", agent_to=siblings[0], text=made.text),
                 words, "confirm_spawn")
    elif made.action == "delegate":
        others = [a for a in _handed_before(analysis, made.agent, analysis.position[event_id],
                                            ("spawn", "delegate", "message"))
                  if a != made.agent_to]
        if others:
            pair(Decision(**base, action="delegate", agent_to=others[0], text=made.text),
                 words, "confirm_delegate")
    elif made.action == "send":
        pair(Decision(**base, action="not_sent"), "canonical", "confirm_message")
    return found
