"""The retrieval research knobs and the presets measured with them (`eval retrieval --settings
NAME`, bench/), beside the evaluation code that runs them.

A chat turn ranks with `RetrievalConfig` (worker/pipeline/retrieve.py): the settings' fields and
the ranking's fixed choices. `ResearchConfig` makes each fixed choice a field, its default the
turn's value, so `ResearchConfig()` ranks as a turn does; `rank` and `retrieve` honour whatever a
preset sets. The measurements: docs/benchmarks.md.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from worker.pipeline.retrieve import RetrievalConfig

# Each default below is the turn's fixed choice: ResearchConfig() ranks as a chat turn does.
TURN = RetrievalConfig


@dataclass(frozen=True)
class ResearchConfig(RetrievalConfig):
    """A retrieval variant: the settings' fields and every choice of the ranking."""

    rrf_k: int = TURN.rrf_k
    # Order the fused list by RRF at this k (rrf_k: as scored); the scores stay rrf_k's shares.
    order_k: int = TURN.order_k
    bm25_original: bool = TURN.bm25_original
    fold_diacritics: bool = TURN.fold_diacritics
    # Cross-lingual help for a Czech question: also search English passages with
    # the question's words translated by the interface-text dictionary (lexicon.py) ...
    expand_czech: bool = TURN.expand_czech
    # ... keep this many of the top_k places for the best English passages ...
    english_slots: int = TURN.english_slots
    # When a translation is searched: search the original wording by meaning too, and search the
    # (English) translation over English passages only, since the original's rankings already cover
    # the Czech ones (both measured in docs/benchmarks.md, "Cross-lingual retrieval offline").
    dense_original: bool = TURN.dense_original
    translation_english_only: bool = TURN.translation_english_only
    # Language-aware fusion variants (docs/benchmarks.md, "Cross-lingual retrieval offline", second
    # round): the RRF weight of the translation's rankings; the weight of an extra dense ranking of
    # a Czech question's own wording over English passages only (0 = off); the weight of a BM25
    # ranking of its Czech lemmas over the English passages' Czech keywords from the reversed
    # interface dictionary (0 = off).
    translation_weight: float = TURN.translation_weight
    original_english: float = TURN.original_english
    czech_keywords: float = TURN.czech_keywords
    # For a Czech question, an English interface text in the ranking stands for its Czech twin
    # (same locale file and key path): the Czech user reads the Czech string, and boosting
    # English pages no longer pushes the Czech interface texts out through their twins.
    czech_twins: bool = TURN.czech_twins
    # The RRF weight of a BM25 ranking over English passages of the Czech question's words
    # looked up in Debian's general FreeDict Czech-English dictionary (bilingual.py; 0 = off),
    # with at most this many English senses per Czech word.
    bilingual: float = TURN.bilingual
    bilingual_senses: int = TURN.bilingual_senses
    # How a Czech word's senses are ordered: "dictionary" (most often given, shortest),
    # "corpus" (a word like the Czech one first, then the senses most used in the passages).
    bilingual_rank: str = TURN.bilingual_rank
    # The RRF weight of a dense ranking of that bag of words over English passages (0 = off).
    bilingual_dense: float = TURN.bilingual_dense
    # At most this many pieces of one section before every other ranked section has had a
    # place (0 = off): a long section cut into many pieces otherwise fills the top places
    # with near-copies of one passage.
    per_section: int = TURN.per_section
    # BM25 also reads an identifier's words (key paths, settings names; see tokenize).
    split_identifiers: bool = TURN.split_identifiers
    # For a Czech question, the RRF weight of a dense ranking of its own wording over the passages'
    # Czech captions alone, a view the index keeps apart from the text (0 = off; an index built
    # without the view has none). Measured in docs/benchmarks.md, "Captions shipped with the
    # corpus".
    caption_cs: float = TURN.caption_cs
    # The same for an English question over the English captions (a Czech question's
    # translation searching them lost more than it found: not for it).
    caption_en: float = TURN.caption_en
    # Question views (an index built with ASSISTANT_QUESTION_VIEWS): the RRF
    # weight of a dense ranking of a Czech question's own wording over the Czech questions the
    # passages answer, and of an English question over the English ones (0 = off), each passage
    # ranked by its nearest question; `question_translation`: a Czech question's translation
    # over the English ones. `question_merge`: instead, one view ranking per language over the
    # captions and the questions together (a passage by its nearest view of either kind), with
    # the caption view's weight (measured lower). Measured in docs/benchmarks.md ("Question
    # views"): all three at 1 gain held-out Czech hit@3 +.10 and English MRR +.13.
    question_cs: float = TURN.question_cs
    question_en: float = TURN.question_en
    question_translation: float = TURN.question_translation
    question_merge: bool = TURN.question_merge
    # The RRF weight of the question as asked, through the query adapter fitted on the question
    # views, over every passage (0 = off; an index without question views has no adapter).
    adapted: float = TURN.adapted


def research(config: RetrievalConfig) -> ResearchConfig:
    """The same retrieval with every choice spelled out (a turn's config, or a variant as is)."""
    if isinstance(config, ResearchConfig):
        return config
    return ResearchConfig(**{f.name: getattr(config, f.name)
                             for f in dataclasses.fields(ResearchConfig)})


# The second round of cross-lingual help, off: the presets measured before it keep their meaning
# (docs/benchmarks.md, "Cross-lingual retrieval offline"), and `hybrid-v1` is the default they were
# compared with.
V1: dict[str, Any] = {"czech_twins": False, "original_english": 0.0, "czech_keywords": 0.0,
                      "per_section": 0, "split_identifiers": False, "caption_cs": 0.0,
                      "caption_en": 0.0, "adapted": 0.0, "order_k": 60}
# The fourth round's steps for both languages, off (docs/benchmarks.md).
V2: dict[str, Any] = {"per_section": 0, "split_identifiers": False, "caption_cs": 0.0,
                      "caption_en": 0.0, "adapted": 0.0, "order_k": 60}
PRESETS: dict[str, ResearchConfig] = {
    "hybrid": ResearchConfig(),
    "dense": ResearchConfig(**V1, mode="dense"),
    "bm25": ResearchConfig(**V1, mode="bm25"),
    "hybrid-pools": ResearchConfig(**V1, per_language_pools=True),
    "hybrid-fold": ResearchConfig(**V1, fold_diacritics=True),
    "hybrid-lemma": ResearchConfig(**V1, lemmatize=True),
    "bm25-lemma": ResearchConfig(**V1, mode="bm25", lemmatize=True),
    "hybrid-dict": ResearchConfig(**V1, expand_czech=True),
    "hybrid-dict-slots": ResearchConfig(**V1, expand_czech=True, english_slots=1),
    "hybrid-dict-slots2": ResearchConfig(**V1, expand_czech=True, english_slots=2),
    "hybrid-bm25-original": ResearchConfig(**V1, dense_original=False,
                                           translation_english_only=False),
    "hybrid-both-all": ResearchConfig(**V1, translation_english_only=False),
    # The default before cross-lingual help's second round (with +fewshot-v1 it is that default).
    "hybrid-v1": ResearchConfig(**V1),
    "hybrid-twins": ResearchConfig(original_english=0.0, czech_keywords=0.0, **V2),
    "hybrid-twins-oe": ResearchConfig(czech_keywords=0.0, **V2),
    # The default after cross-lingual help's second round, before the fourth round's general steps.
    "hybrid-v2": ResearchConfig(**V2),
    # The default before the captions' second round (docs/benchmarks.md, "Captions shipped with the
    # corpus"): no ranking over the captions' views.
    "hybrid-v3": ResearchConfig(caption_cs=0.0, caption_en=0.0, adapted=0.0, order_k=60),
    # The default before question views: no ranking over them.
    "hybrid-v4": ResearchConfig(question_cs=0.0, question_en=0.0, question_translation=0.0,
                                adapted=0.0, order_k=60),
    # The default before the query adapter fitted on the question views (docs/benchmarks.md,
    # "A query adapter").
    "hybrid-v5": ResearchConfig(adapted=0.0, order_k=60),
    # The default before the fused list was ordered at a small k (docs/benchmarks.md, "First
    # places count").
    "hybrid-v6": ResearchConfig(order_k=60),
    # Question views as one ranking with the captions' views (measured lower than apart).
    "hybrid-questions-merged": ResearchConfig(question_merge=True, question_translation=0.0),
    # The default + Debian's FreeDict Czech-English dictionary as one more BM25 ranking over
    # English passages (docs/benchmarks.md, "Cross-lingual retrieval offline", third round:
    # measured, not a clear gain, not the default).
    "hybrid-freedict": ResearchConfig(bilingual=0.5, bilingual_senses=1),
}
