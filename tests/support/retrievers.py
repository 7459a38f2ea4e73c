"""A Retriever variant for the tests of ``evals.beir``'s ``{"retriever": "module:Class"}`` option: one whose
effect on the ranking cannot be missed."""

from __future__ import annotations

from rag.qa.retrieval import Retriever, Scored


class Reversed(Retriever):
    """The shipped pipeline with its fused ranking turned upside down: the best paper goes last."""

    def _fuse(self, lists: list[tuple[Scored, float]]) -> dict[str, float]:
        return {p: -s for p, s in super()._fuse(lists).items()}
