"""What the reward model reads of one orchestration decision: its sub-decision (O1-O5), the
decision in the words a prompt line gives it, the context before it, and a few figures of the
trace's structure at that point. Pure: a trace (or a text) in, `Decision`s out.

A trace's decisions are the rubric's targets asked about by a question of a sub-decision whose
answers carry rewards (the default rubric: spawns O1, delegations O2, messages O3, aggregates O4,
stops O5). A text that is not a trace (what a policy wrote, as OpenRLHF and TRL hand a reward
function) is read line by line in the form every orchviz prompt writes events
(`[t=12.5] orchestrator aggregate: <its text>`): each line of a decision kind is a decision, and
a text with none is one decision of unknown sub-decision (`ANY`), scored by the model's pooled
head.

The figures are computed in one pass over the analysis (a 36-event rollout in well under a
millisecond): where the decision falls in the run, its agent's depth and children, the children
still working at that time and the results that came after it (what a premature stop leaves
behind), how much of the results an aggregate received it kept, and how alike a spawn's task is
to an earlier sibling's (a sub-task given twice)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from viz_app.analysis import Analysis, analyze
from viz_app.export import event_line
from viz_app.labels import Question, Rubric, targets
from viz_app.model import Trace

ANY = "any"
"""The sub-decision of a decision whose kind is not known (a text with no event lines)."""

SUB_DECISIONS = ("O1", "O2", "O3", "O4", "O5")

CONTEXT_LINES = 6
"""Event lines before a decision read as its context."""

STRUCTURE = ("position", "time_share", "depth", "fanout", "open_children", "results_after",
             "events_after", "run_events", "run_agents", "words", "kept_share", "inputs",
             "sibling_overlap", "has_structure")
"""The structural figures of a decision, in the order the model reads them. Counts are
`log1p`-scaled so a swarm of 800 agents does not dominate a model fitted on runs of ten; a
decision read from text has them all 0 (`has_structure` says which)."""

_WORD = re.compile(r"[a-z0-9_]+")
_LINE = re.compile(r"^\[t=[^\]]*\]\s+(\S+)\s+([a-z_]+)(?:\s+\(([a-z_]+)\))?(?:\s+->\s+\S+)?"
                   r"(?:\s+\[[^\]]*\])?:\s?(.*)$")


@dataclass(frozen=True)
class Decision:
    """One orchestration decision as the reward model reads it."""

    sub_decision: str
    text: str = field(metadata={"doc": "the decision as a prompt line gives it"})
    context: str = ""
    structure: tuple[float, ...] = (0.0,) * len(STRUCTURE)
    event_id: str = ""
    agent: str = ""
    questions: tuple[str, ...] = ()


def reward_questions(rubric: Rubric) -> dict[str, Question]:
    """The rubric's questions whose answers are rewards of a sub-decision: one fixed list of
    answers (categorical, scale, boolean) carrying rewards, asked of an event."""
    return {q.id: q for q in rubric.questions
            if q.sub_decision in SUB_DECISIONS and q.kind in ("categorical", "scale", "boolean")
            and q.choices and any(c.reward is not None for c in q.choices)}


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _log(n: float) -> float:
    return math.log1p(max(0.0, n))


def trace_decisions(trace: Trace, rubric: Rubric, analysis: Analysis | None = None
                    ) -> list[Decision]:
    """Every orchestration decision of a trace, in time order."""
    analysis = analysis or analyze(trace)
    asked = reward_questions(rubric)
    if not asked:
        return []
    order = analysis.order
    if not order:
        return []
    events = trace.events_by_id
    position = analysis.position
    actor = analysis.actor
    parent = analysis.parent
    lines = [event_line(e, analysis) for e in order]
    start, end = float(order[0].t), float(order[-1].t)
    span = (end - start) or 1.0
    n = len(order)
    agents = len(analysis.agent_names)
    inputs_of = {p.event_id: p.inputs for p in analysis.aggregates} \
        if any(e.type == "aggregate" for e in order) else {}
    spawned_at: dict[str, float] = {}
    returned_at: dict[str, float] = {}
    children: dict[str, list[str]] = {}
    spawn_words: dict[str, list[set[str]]] = {}
    for e in order:
        if e.type == "spawn" and e.to:
            spawned_at.setdefault(e.to, float(e.t))
            children.setdefault(actor[e.id], []).append(e.to)
        elif e.type == "return":
            returned_at.setdefault(actor[e.id], float(e.t))
    depth_memo: dict[str, int] = {}

    def depth(agent: str) -> int:
        found = depth_memo.get(agent)
        if found is None:
            seen, d, a = set(), 0, agent
            while a in parent and a not in seen:
                seen.add(a)
                a = parent[a]
                d += 1
            depth_memo[agent] = found = d
        return found

    made: list[Decision] = []
    for target in targets(rubric, analysis):
        if target.event_id is None:
            continue
        mine = [q for q in target.questions if q in asked]
        if not mine:
            continue
        event = events[target.event_id]
        at = position[event.id]
        t = float(event.t)
        agent = actor[event.id]
        kids = children.get(agent, ())
        open_children = sum(1 for k in kids if spawned_at.get(k, math.inf) <= t
                            and returned_at.get(k, math.inf) > t)
        results_after = sum(1 for e in order[at + 1:] if e.type == "return")
        text = event.content if event.content is not None else (event.content_ref or "")
        words = _words(text)
        kept, inputs = 0.0, 0
        merged = inputs_of.get(event.id)
        if merged:
            inputs = len(merged)
            shares = []
            for input_id in merged:
                source = events.get(input_id)
                given = _words(source.content or "") if source is not None else set()
                if given:
                    shares.append(len(given & words) / len(given))
            kept = min(shares) if shares else 0.0
        overlap = 0.0
        if event.type == "spawn":
            earlier = spawn_words.setdefault(agent, [])
            for other in earlier:
                union = len(other | words) or 1
                overlap = max(overlap, len(other & words) / union)
            earlier.append(words)
        structure = (at / n, (t - start) / span, float(depth(agent)), _log(len(kids)),
                     _log(open_children), _log(results_after), (n - at - 1) / n, _log(n),
                     _log(agents), _log(len(text.split())), kept, _log(inputs), overlap, 1.0)
        sub = asked[mine[0]].sub_decision or ANY
        made.append(Decision(sub_decision=sub, text=lines[at],
                             context="".join(lines[max(0, at - CONTEXT_LINES):at]),
                             structure=structure, event_id=event.id, agent=agent,
                             questions=tuple(mine)))
    return made


_KIND_OF = {"spawn": "O1", "delegate": "O2", "message": "O3", "aggregate": "O4",
            "stop": "O5"}
"""The sub-decision of an event line's kind (an orchestrator decision by its decision)."""


def text_decisions(text: str, prompt: str = "") -> list[Decision]:
    """The decisions in a text (see the module's docstring), with the lines before each as
    context; `prompt`, the context the text was written in (a trainer's prompt), precedes
    them and is never scored itself. A text with none is one decision of sub-decision `ANY`."""
    before = [line for line in prompt.splitlines() if line.strip()][-CONTEXT_LINES:]
    lines = [line for line in text.splitlines() if line.strip()]
    made: list[Decision] = []
    for i, line in enumerate(lines):
        found = _LINE.match(line.strip())
        if found is None:
            continue
        kind, decided = found.group(2), found.group(3)
        sub = _KIND_OF.get(decided or "") if kind == "orchestrator_decision" \
            else _KIND_OF.get(kind)
        if sub is None:
            continue
        context = (before + lines[:i])[-CONTEXT_LINES:]
        made.append(Decision(sub_decision=sub, text=line + "\n",
                             context="".join(x + "\n" for x in context)))
    if made:
        return made
    return [Decision(sub_decision=ANY, text=text[-4000:],
                     context="".join(x + "\n" for x in before))]


def pair_decisions(prompt: str, chosen: str, rejected: str, sub_decision: str
                   ) -> tuple[Decision, Decision]:
    """A decision pair of the export (the same context, two decisions) as two decisions."""
    context = "\n".join(prompt.splitlines()[-CONTEXT_LINES:])
    return (Decision(sub_decision=sub_decision, text=chosen, context=context),
            Decision(sub_decision=sub_decision, text=rejected, context=context))


def sub_decisions_of(decisions: Iterable[Decision]) -> Sequence[str]:
    """The sub-decisions present, in O1-O5 order."""
    present = {d.sub_decision for d in decisions}
    return [s for s in (*SUB_DECISIONS, ANY) if s in present]
