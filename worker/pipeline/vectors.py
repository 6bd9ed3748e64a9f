"""Embeddings of questions and spans, the ones asked for before kept per process: the quotes
form ranks the same popular spans again and again, and its question vectors are the ones the
search already asked for."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from shared.config import Settings
from shared.models import embed

VECTOR_CACHE = 4096  # vectors kept per process, as float32 (1.5 kB each at 384 dimensions)

_cache: OrderedDict[tuple[str, str, str], np.ndarray] = OrderedDict()
_lock = threading.Lock()


def cached_vectors(settings: Settings, texts: Sequence[str], kind: str) -> list[list[float]]:
    """Vectors from the embeddings role, the ones asked for before taken from memory."""
    model = settings.embeddings.model
    with _lock:
        have = {t: _cache.get((model, kind, t)) for t in texts}
    missing = [t for t in dict.fromkeys(texts) if have[t] is None]
    if missing:
        fresh = embed(settings.embeddings, missing, kind, settings.embedding_prefix_mode)
        with _lock:
            for t, fresh_vector in zip(missing, fresh, strict=True):
                have[t] = _cache[(model, kind, t)] = np.asarray(fresh_vector, dtype=np.float32)
            while len(_cache) > VECTOR_CACHE:
                _cache.popitem(last=False)
    return [vec.tolist() for t in texts if (vec := have[t]) is not None]


