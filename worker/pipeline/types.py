"""Frozen dataclasses passed between the pipeline steps (the turn's input is
shared.turn_request.TurnRequest)."""

from __future__ import annotations

from dataclasses import dataclass

from shared.passage import Passage


@dataclass(frozen=True)
class Retrieval:
    """The passages given to the model, numbered [1]..[n] in this order."""

    passages: tuple[Passage, ...]
    index_version: str
    query: str


@dataclass(frozen=True)
class Generation:
    """The model's whole answer and its token usage."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    model: str
    # True when the model stopped at the output-token cap (finish_reason "length").
    cut: bool = False


@dataclass(frozen=True)
class CitationCheck:
    """Which [n] markers the answer used and which point at no given passage."""

    cited: tuple[int, ...]
    invalid: tuple[int, ...]

    @property
    def valid(self) -> bool:
        """True when every marker points at a passage the model was given."""
        return not self.invalid
