"""OpenAI-compatible clients for the model roles (used by the worker and corpus jobs only)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import httpx2
import openai

from shared.config import ModelRole
from shared.errors import ModelError

# Hosted endpoints refuse more than 25 texts a request (docs/spec/behaviour.md B-12).
EMBED_BATCH = 16
E5_PREFIX = {"query": "query: ", "passage": "passage: "}


# None: the network. A test's in-process model (tests/harness.py) sets a transport here, so a
# turn runs with no model server at all.
_transport: httpx2.BaseTransport | None = None


def route_models(transport: httpx2.BaseTransport | None) -> None:
    """Send every model call of this process through `transport` (None: the network again)."""
    global _transport
    _transport = transport
    client_for.cache_clear()


@lru_cache(maxsize=16)
def client_for(role: ModelRole, timeout_s: float = 60.0) -> openai.OpenAI:
    """A cached client for a role; the hosted key is sent only to `api` roles."""
    http = None if _transport is None else httpx2.Client(transport=_transport, timeout=timeout_s)
    return openai.OpenAI(base_url=role.base_url, api_key=role.key_for_request,
                         timeout=timeout_s, max_retries=0, http_client=http)


def embed(role: ModelRole, texts: Sequence[str], kind: str, prefix_mode: str,
          timeout_s: float = 60.0) -> list[list[float]]:
    """Embed texts as `query` or `passage`, in batches of at most 16."""
    if kind not in E5_PREFIX:
        raise ValueError(f"unknown embedding kind {kind!r}")
    client = client_for(role, timeout_s)
    out: list[list[float]] = []
    for start in range(0, len(texts), EMBED_BATCH):
        batch = list(texts[start:start + EMBED_BATCH])
        extra: dict[str, str] = {}
        if prefix_mode == "text":
            batch = [E5_PREFIX[kind] + t for t in batch]
        elif prefix_mode == "input_type":
            extra["input_type"] = kind
        try:
            resp = client.embeddings.create(model=role.model, input=batch,
                                            extra_body=extra or None)
        except openai.OpenAIError as exc:
            raise ModelError(f"embeddings call failed: {type(exc).__name__}") from exc
        out.extend(d.embedding for d in sorted(resp.data, key=lambda d: d.index))
    return out
