"""Suggested labels: producers that propose an answer to a rubric question on one target of a
trace, with a confidence, the events that are the evidence and a one-sentence explanation.

Three producers exist: `rules` (deterministic detectors over the analysis,
`viz_app.suggest.rules`), a judge model (`viz_app.suggest.judge`) and a model learned from the
team's own labels (`viz_app.suggest.learned`, over the features of `viz_app.suggest.features`). Suggestions are kept apart from labels (their own
table, `viz_app.store.suggestions`); the Workspace stores them (`ws.suggestions.run`).

Callers import from this face (lazy, `viz_app.face`), never from its modules; the rules'
findings are read through the module, `suggest.rules`.

`produce(trace, rubric, producer)` (`suggest.producers`) is the one entry: `producer` is the name "rules" or any object
with a `produce(trace, rubric) -> (suggestions, failures)` method (a judge, a learned producer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from viz_app.face import lazy

if TYPE_CHECKING:  # the face: what callers import from viz_app.suggest, each from its module
    from viz_app.suggest.context import TargetContext, target_context
    from viz_app.suggest.features import FEATURES_VERSION, TraceFeatures
    from viz_app.suggest.judge import (JUDGED_KINDS, MAX_INPUTS, TEXT_LIMIT, Example,
                                       JudgeProducer)
    from viz_app.suggest.learned import FOLDS, LearnedProducer, LearnError, train
    from viz_app.suggest.producers import SuggestError, SuggestionProducer, produce
    from viz_app.suggest.learned import model_problem, truths, worse_than_chance
    from viz_app.suggest.judge import choose_examples
    from viz_app.suggest.learned import require_sklearn
    from viz_app.suggest.rules import FINE
    from viz_app.suggest.rules import PRODUCER as RULES

__getattr__, __dir__ = lazy(__name__, __file__)
