"""The baseline users would build first: LangChain's default text splitter, a LangChain Chroma
vector store, plain similarity search. Same embedding model as paperchat, for a fair comparison."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def naive_langchain_run(root: Path, embedder: Any, workdir: Path) -> Callable[[str], list[str]]:
    """Index ``root/corpus.jsonl`` the naive way; return query → ranked paper ids."""
    from langchain_chroma import Chroma
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    class _Embeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return embedder.embed(texts).tolist()

        def embed_query(self, text: str) -> list[float]:
            return embedder.embed([text])[0].tolist()

    docs = []
    with (root / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                text = "\n".join(x for x in (row.get("title", ""), row.get("text", "")) if x)
                if text.strip():
                    docs.append(Document(page_content=text, metadata={"id": f"{root.name}:{row['_id']}"}))
    chunks = RecursiveCharacterTextSplitter().split_documents(docs)  # the defaults, as a tutorial would
    store = Chroma.from_documents(chunks, _Embeddings(), collection_name="naive",
                                  persist_directory=str(workdir / "naive-chroma"))

    def run(query: str, k: int = 100) -> list[str]:
        seen: dict[str, None] = {}
        for doc in store.similarity_search(query, k=k + k // 2):  # chunks of one paper repeat: fetch extra
            seen.setdefault(doc.metadata["id"], None)
        return list(seen)[:k]

    return run
