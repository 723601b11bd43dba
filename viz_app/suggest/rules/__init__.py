"""Deterministic detectors of orchestration faults: pure functions of a trace's analysis.

Each detector looks for one fault and, where it finds it, proposes an answer to one rubric
question on one target (a stop, an aggregate, a spawn, a message, a delegation), on that
question's own scale, with a confidence, the ids of the events that are its evidence and one
sentence a reviewer reads ("premature: e15 returned after the stop e13").

Detectors stay silent on what they find nothing wrong with: no suggestion is made (not the
question's "fine" answer with a low confidence), so a faithful trace has no suggestions and a
reviewer's queue is not filled with "looks fine". `FINE` names, per question, the answer that
silence stands for, for agreement figures that need an answer on every target.

Whether one text's content is in another (a dropped result, an answer already held) is read
from content words weighted by their rarity in the trace (`viz_app.suggest.overlap`); whether
two messages repeat each other, from rapidfuzz's word-level similarity. `signals` gives the
detectors' raw figures on a target, before any threshold, for a learned producer.
docs/suggestions.md gives each rule, its thresholds, the figure that chose each (on the
planted faults of `viz_app.planted`, tuning part) and the detectors' precision and recall.

The rooms, one a family of rules with what they share apart:

- `thresholds`: every threshold, each with why it is where it is;
- `wording`: how alike two texts are (`near_duplicate`, `same_subject`, `covered`);
- `facts`: the `Context` the detectors share on one analysis, and the `Finding` they propose;
- `stopping` (O5: premature and late stops), `aggregation` (O4: dropped and unfaithful
  merges), `spawning` (O1: over-spawning), `messages` (O3: redundant messages),
  `delegation` (O2: the wrong delegate);
- `detectors`: the rules as one producer (`DETECTORS`, `findings`, `suggest`, `FINE`);
- `raw_signals`: the detectors' figures before any threshold (`signals`, `SIGNALS`).

Callers import from this face (lazy, `viz_app.face`); the rooms take each other from their
modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from viz_app.face import lazy

if TYPE_CHECKING:  # the face: what callers import from viz_app.suggest.rules
    from viz_app.suggest.rules.aggregation import anchors, claims, unfaithful_merge
    from viz_app.suggest.rules.delegation import wrong_delegate
    from viz_app.suggest.rules.detectors import (DETECTORS, FINE, PRODUCER, VERSION, context,
                                                 findings, suggest)
    from viz_app.suggest.rules.facts import Context, Finding, Merged, Twin
    from viz_app.suggest.rules.messages import redundant_message
    from viz_app.suggest.rules.raw_signals import SIGNALS, signals
    from viz_app.suggest.rules.spawning import over_spawning
    from viz_app.suggest.rules.stopping import late_stop, premature_stop
    from viz_app.suggest.rules.thresholds import (ABSENT, ANCHOR_LENGTH, COVERED, DROP_WORDS,
                                                  DUPLICATE_WINDOW, LOST_SHARE, MAX_INPUTS,
                                                  MIN_WORDS, NEAR_DUPLICATE, OWN_TOKENS,
                                                  PRESENT, READY, READY_FIGURES, READY_TOKENS,
                                                  READY_WORDS, SAME_RESULT, SAME_SUBJECT,
                                                  SAME_TASK, SENTENCE_TOKENS, SUBJECT_SHARE,
                                                  TASK_CALLS)
    from viz_app.suggest.rules.wording import covered, near_duplicate, same_subject, words

__getattr__, __dir__ = lazy(__name__, __file__)
