"""A throwaway store for evals: everything under a temp folder, except the user's embedding cache
(so a second eval run embeds nothing)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rag.config import Settings
from rag.runtime import Runtime


@contextmanager
def throwaway_runtime(settings: Settings, prefix: str = "paperchat-eval-",
                      embedder: object | None = None) -> Iterator[Runtime]:
    """A Runtime whose home and embedded store live in a temp folder, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        if embedder is None:
            embedder = Runtime(settings).embedder  # the user's cache, the user's model
        s = settings.with_overrides(home=Path(tmp), store={"mode": "embedded", "path": Path(tmp) / "chroma",
                                                          "chroma_collection": "eval"})
        rt = Runtime(s, _embedder=embedder)  # type: ignore[arg-type]
        try:
            yield rt
        finally:
            rt.close()
