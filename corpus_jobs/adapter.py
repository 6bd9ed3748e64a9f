"""The query adapter: a linear map of question vectors, fitted at build time on the question
views, that moves a person's question towards the passages such questions are answered by.

The shipped questions file holds about seven questions a passage in English and Czech, written
from the passage alone (never from an evaluation question). Fitting one 384 x 384 map on them
(a softmax over all passages, started at the identity and held near it) teaches the small
multilingual embedder the corpus's own pairs of question and answer, Czech to English pages
included: a Czech question as asked found its section in the top 3 for .33 of the read sets'
questions by meaning alone, .80 through the map (docs/benchmarks.md, "A query adapter fitted on
the question views"). Retrieval searches with the mapped question as one more ranking
(worker/pipeline/retrieve.py, `RetrievalConfig.adapted`).
"""

from __future__ import annotations

import numpy as np

# The fit measured best on the read sets (docs/benchmarks.md): the softmax's sharpness, the pull
# back to the identity, Adam's steps and rate.
SCALE = 20.0
HOLD = 0.1
STEPS = 300
RATE = 0.01


def _unit(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(norms > 0, norms, 1.0)


def fit(questions: np.ndarray, answers: np.ndarray, passages: np.ndarray,
        steps: int = STEPS) -> np.ndarray:
    """The map W (dim x dim, float32) under which each question (a row of `questions`) is
    nearest, by cosine, to its passage (row `answers[i]` of `passages`) among all passages:
    full-batch Adam on the softmax cross-entropy, from the identity, deterministic."""
    q = _unit(questions.astype(np.float32))
    p = _unit(passages.astype(np.float32))
    dim = q.shape[1]
    eye = np.eye(dim, dtype=np.float32)
    w = eye.copy()
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    rows = np.arange(len(answers))
    for t in range(1, steps + 1):
        z = q @ w
        norms = np.linalg.norm(z, axis=1, keepdims=True)
        zn = z / norms
        logits = SCALE * zn @ p.T
        logits -= logits.max(axis=1, keepdims=True)
        soft = np.exp(logits)
        soft /= soft.sum(axis=1, keepdims=True)
        soft[rows, answers] -= 1.0
        soft /= len(answers)
        grad_zn = SCALE * soft @ p
        grad_z = (grad_zn - zn * (grad_zn * zn).sum(axis=1, keepdims=True)) / norms
        grad = q.T @ grad_z + HOLD * (w - eye) / dim
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad * grad
        w -= RATE * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    return w.astype(np.float32)


def fitted_by() -> str:
    """The fit's settings as the index version reads them: a changed fit is a new index."""
    return f"{SCALE:g},{HOLD:g},{STEPS},{RATE:g}"
