"""The inverted-index BM25 gives rank-bm25's own scores."""

from __future__ import annotations

import random

import numpy as np
from rank_bm25 import BM25Okapi

from worker.pipeline.bm25 import Postings, tokenize

WORDS = ("mean median compromise error expert fuzzy triangle centroid scale budget flood "
         "project opinion maximum agreement the a of and průměr chyba odhad").split()


def test_postings_scores_equal_rank_bm25() -> None:
    rng = random.Random(5)
    docs = [[rng.choice(WORDS) for _ in range(rng.randint(1, 40))] for _ in range(300)]
    bm25 = BM25Okapi(docs)
    postings = Postings(bm25)
    for _ in range(50):
        query = [rng.choice(WORDS + ["unknown"]) for _ in range(rng.randint(1, 6))]
        assert np.allclose(postings.scores(query), bm25.get_scores(query), rtol=1e-12,
                           atol=1e-12)


def test_tokenize_variants() -> None:
    assert tokenize("Maximální Chyba") == ["maximální", "chyba"]
    assert tokenize("Maximální Chyba", folded=True) == ["maximalni", "chyba"]
    assert tokenize("odhadů", lemmas=True) == ["odhad"]


def test_identifier_words_follow_the_identifier() -> None:
    assert tokenize("login.notVerifiedMessage", split=True) == [
        "login", "notverifiedmessage", "not", "verified", "message"]
    assert tokenize("ASSISTANT_CAPTIONS_FILE chunk_key", split=True) == [
        "assistant_captions_file", "assistant", "captions", "file", "chunk_key", "chunk", "key"]
    # Plain and Czech words, all-capital names and short-part names stay one token each.
    assert tokenize("Účet HTTPServer BeCoMe v1beta api_v1", split=True) == [
        "účet", "httpserver", "become", "v1beta", "api_v1"]
    assert tokenize("Password requirements", split=True) == tokenize("Password requirements")
