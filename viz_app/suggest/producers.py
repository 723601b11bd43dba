"""The one entry of the producers of suggested answers: `produce(trace, rubric, producer)`, and
what a producer is (SuggestionProducer)."""


from __future__ import annotations

from collections.abc import Collection
from typing import Any, Protocol

from viz_app.errors import OrchvizError
from viz_app.labels import Rubric, Suggestion, SuggestionFailure
from viz_app.model import Trace


class SuggestError(OrchvizError, ValueError):
    """A producer that cannot be used as asked (an unknown name, a judge not configured)."""


class SuggestionProducer(Protocol):
    """Anything that proposes answers on one trace (the rules, a judge)."""

    def produce(self, trace: Trace, rubric: Rubric) -> tuple[list[Suggestion],
                                                             list[SuggestionFailure]]: ...


def produce(trace: Trace, rubric: Rubric, producer: str | Any = "rules",
            answered: Collection[tuple[str, str]] = ()
            ) -> tuple[list[Suggestion], list[SuggestionFailure]]:
    """The suggestions a producer makes on one trace, and the targets it failed on.
    `producer` is "rules" or an object with a `produce(trace, rubric)` method; `answered`
    ((event id or '', question) the producer answered before on this trace version) is passed
    on when there are any, for a producer that asks at a cost (the judge) to leave them out."""
    if isinstance(producer, str):
        if producer != "rules":
            raise SuggestError(f"unknown producer {producer!r}: name 'rules' or pass a judge")
        from viz_app.suggest import rules
        return rules.suggest(trace, rubric), []
    if answered:
        return producer.produce(trace, rubric, answered=answered)
    return producer.produce(trace, rubric)
