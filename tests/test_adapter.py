"""The query adapter, the pure part: the fit and the mapped vector. Its build and its ranking
against the real PostgreSQL+pgvector: tests/test_captions.py."""

from __future__ import annotations

import numpy as np

from corpus_jobs.adapter import fit, fitted_by
from worker.pipeline.retrieve import adapted


def _unit(m: np.ndarray) -> np.ndarray:
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _pairs(seed: int = 7) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Passages, and questions that are each one passage's vector seen through a fixed mixing
    of the dimensions with noise (a language the embedder reads askew): the identity finds
    few of their passages, a fitted map most."""
    rng = np.random.default_rng(seed)
    dim, n = 16, 80
    passages = _unit(rng.normal(size=(n, dim)))
    mix = np.eye(dim) + 1.5 * rng.normal(size=(dim, dim)) / np.sqrt(dim)
    answers = np.repeat(np.arange(n), 4)
    questions = _unit(passages[answers] @ mix + 0.05 * rng.normal(size=(len(answers), dim)))
    return questions.astype(np.float32), answers, passages.astype(np.float32)


def _hit1(questions: np.ndarray, answers: np.ndarray, passages: np.ndarray,
          w: np.ndarray) -> float:
    mapped = np.array([adapted(list(q), w) for q in questions])
    return float(np.mean(np.argmax(mapped @ passages.T, axis=1) == answers))


def test_the_fit_brings_questions_to_their_passages_and_is_deterministic() -> None:
    questions, answers, passages = _pairs()
    held = np.arange(len(answers)) % 4 == 3  # one question a passage not fitted on
    w = fit(questions[~held], answers[~held], passages)
    eye = np.eye(passages.shape[1], dtype=np.float32)
    before = _hit1(questions[held], answers[held], passages, eye)
    after = _hit1(questions[held], answers[held], passages, w)
    assert before < 0.6 and after > 0.95, (before, after)
    assert w.dtype == np.float32 and w.shape == eye.shape
    assert np.array_equal(w, fit(questions[~held], answers[~held], passages)), "deterministic"


def test_no_steps_is_the_identity_and_a_mapped_vector_has_unit_length() -> None:
    questions, answers, passages = _pairs()
    w = fit(questions, answers, passages, steps=0)
    assert np.array_equal(w, np.eye(passages.shape[1], dtype=np.float32))
    v = adapted([3.0, 4.0], np.array([[2.0, 0.0], [0.0, 1.0]], dtype=np.float32))
    assert np.allclose(v, [0.8320503, 0.5547002]) and abs(np.linalg.norm(v) - 1) < 1e-6
    assert fitted_by() == "20,0.1,300,0.01", "the fit's settings are part of the index version"
