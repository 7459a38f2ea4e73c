"""What every tab's handlers share: the runtime, settings and answer chain, and the few helpers more than one tab
uses (the header, the Library table's rows, a served copy of an export)."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import gradio as gr

from rag.config import Settings
from rag.conversations import LOCAL_OWNER, ConversationStore, owner_for
from rag.errors import EmptyLibrary
from rag.index.paper_query import PaperQuery, find_papers
from rag.qa.chain import AnswerChain
from rag.runtime import Runtime
from ui import library, render, services

LIBRARY_LIMIT = 500


@dataclass
class AppContext:
    """One app's dependencies; ``app`` is the Blocks whose cache serves downloads."""

    runtime: Runtime
    settings: Settings
    chain: AnswerChain
    app: gr.Blocks

    @cached_property
    def conversations(self) -> ConversationStore:
        """The saved conversations (``Settings.conversations_path``)."""
        return ConversationStore(self.settings.conversations_path)

    @staticmethod
    def owner(request: gr.Request | None) -> str:
        """Whose conversations a request sees: the signed-in user's, or the local owner's without a login."""
        return owner_for(getattr(request, "username", None)) if request is not None else LOCAL_OWNER

    def library_rows(self, q: PaperQuery) -> list[list[Any]]:
        """The Library table for a query (its collection applied), each row with the collections it is in."""
        papers = find_papers(self.runtime.store, library.resolve(self.runtime, q) or q, LIBRARY_LIMIT)
        return render.library_rows(papers, self.runtime.collections().of_papers([p.id for p in papers]))

    def header(self) -> str:
        n = services.paper_count(self.runtime)
        if not n:  # questions get the same message, as a notice in the chat
            return f"# paperchat\n{EmptyLibrary()}, or add a file in the **Library** tab."
        return (f"# paperchat\nAsk questions about **{n} papers**; answers quote the abstracts and cite them "
                f"— open a card on the right to read the evidence.")

    def served_copy(self, path: Path) -> str:
        """A copy of an export in Gradio's own cache, the one place downloads are served from."""
        folder = Path(tempfile.mkdtemp(prefix="paperchat-", dir=_cache_dir(self.app)))
        dest = folder / path.name
        shutil.copyfile(path, dest)
        return str(dest)

    def download(self, path: Path) -> Any:
        """The download component's update showing ``path`` (served from the cache)."""
        return gr.update(value=self.served_copy(path), visible=True)


def _cache_dir(app: gr.Blocks) -> str:
    cache = Path(getattr(app, "GRADIO_CACHE", tempfile.gettempdir()))
    cache.mkdir(parents=True, exist_ok=True)
    return str(cache)
