"""The one passage type: built by corpus_jobs, stored in the index, retrieved by the worker."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Passage:
    """One passage of the corpus; `index_text` is what search sees, `text` what the model sees.

    `score` is the fused rank score retrieval gives it (0 for a passage not ranked yet);
    `rerank` the optional rerank's score (0-2; None when not reranked).
    """

    id: str
    source: str
    title: str
    section: str
    lang: str
    text: str
    index_text: str
    local: bool
    score: float = 0.0
    rerank: int | None = None

    @property
    def content_hash(self) -> str:
        """Hash of what gets embedded, the key of the embedding cache."""
        return hashlib.sha256(self.index_text.encode()).hexdigest()


# The stored columns, in the order of Passage's fields (the scores are not stored).
PASSAGE_COLUMNS = "id, source, title, section, lang, text, index_text, local"
