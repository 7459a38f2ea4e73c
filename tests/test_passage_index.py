"""The passage BM25 (rag/index/passage_lexical.py) follows the store by increments: adding a paper's full text, or
replacing it, is applied without reading every passage again, a new process loads the saved index, and the scores
are those of a from-scratch build over the same passages. Real Chroma and the session's embedder."""

from __future__ import annotations

from rag.analysis import analyze
from rag.index.passage_lexical import PassageIndex
from rag.ingest.fulltext import Passage
from rag.records import Paper

QUESTIONS = ("what chunk size", "replica placement across racks", "garbage collection of deleted files",
             "lease for the primary replica", "checksum of each block")
TOPICS = ("chunk size of 64 MB chosen for large files", "replica placement across racks for reliability",
          "garbage collection reclaims deleted files lazily", "the master grants a lease to the primary replica",
          "each block carries a checksum verified on read")


def _paper(i: int, topics: tuple[str, ...]) -> Paper:
    body = tuple(Passage(f"Section {k} of paper {i}: {t}. Paper {i} measures it on workload {i * 7 + k}.",
                         f"{k + 1} Design", k + 2, k + 2, k) for k, t in enumerate(topics))
    return Paper(id=f"p{i}", title=f"Storage system {i}", abstract=f"Paper {i} describes storage system number {i} "
                 "for large clusters and its evaluation.", passages=body)


def _scores(index: PassageIndex) -> list[dict[str, float]]:
    return [{index.ids[d]: round(s, 5) for d, s in index.search({t: 1.0 for t in analyze(q)}, 50)}
            for q in QUESTIONS]


def _fresh(rt) -> PassageIndex:
    full = PassageIndex(path=None)  # memory only: a build from every passage row
    full.sync(rt.store, rt.lexical.state)
    assert full.counts["built"] == 1
    return full


def test_passage_index_follows_the_store_by_increments(make_runtime) -> None:
    rt = make_runtime(ingest={"full_text": True})
    ing = rt.ingestor(progress=False)
    ing.ingest_papers([_paper(i, TOPICS[i % 2:]) for i in range(3)])
    index = PassageIndex.of(rt.lexical)
    assert index.counts == {"built": 1} and index.size == 5 + 4 + 5  # the ingest's hook built it

    assert ing.ingest_papers([_paper(3, TOPICS)]).full_text == 1  # one paper more
    assert index.counts == {"built": 1, "updated": 1} and index.size == 19
    retriever = rt.retriever()
    hits = retriever.search("what chunk size of 64 MB", k=4).hits
    assert index.counts == {"built": 1, "updated": 1}  # the question after the ingest rebuilt nothing
    assert hits and all(h.full_text for h in hits) and any(h.passages for h in hits)
    assert _scores(index) == _scores(_fresh(rt)) and any(_scores(index))

    # a changed full text replaces the paper's passages: the old ones are tombstoned, the new ones read
    ing.ingest_papers([_paper(1, ("checksum of each block verified on read",))])
    assert index.counts["updated"] == 2 and index.size == 16 and len(index.ids) > index.size
    assert _scores(index) == _scores(_fresh(rt))
    assert not any("p1#" in cid for cid in _scores(index)[0])  # the old text of p1 no longer scores

    # another process on the same store loads the saved index instead of reading the passages again
    other = PassageIndex(k1=index.k1, b=index.b, path=index.path)
    other.sync(rt.store, rt.lexical.state)
    assert other.counts == {"loaded": 1} and _scores(other) == _scores(index)
    assert other.papers == index.papers == {"p0", "p1", "p2", "p3"}
    # the loaded index (its file mapped, pages and sections made only when needed) follows a change as well, and
    # what it saves loads again whole
    ing.ingest_papers([_paper(4, TOPICS[:2])])
    other.sync(rt.store, rt.lexical.state)
    assert other.counts == {"loaded": 1, "updated": 1} and other.refs == index.refs
    assert len(index.refs) == len(index.ids) == 22
    assert index.refs[index.ids.index(next(c for c in index.ids if c.startswith("p4#")))][2] == "1 Design"
    third = PassageIndex(k1=index.k1, b=index.b, path=index.path)
    third.sync(rt.store, rt.lexical.state)
    assert third.counts == {"loaded": 1} and third.refs == index.refs and _scores(third) == _scores(index)


def test_compaction_keeps_the_scores(make_runtime) -> None:
    rt = make_runtime(ingest={"full_text": True})
    ing = rt.ingestor(progress=False)
    ing.ingest_papers([_paper(i, TOPICS) for i in range(2)])
    index = PassageIndex.of(rt.lexical)
    ing.ingest_papers([_paper(0, TOPICS[:1])])  # 4 of 10 passages gone: past the compaction threshold
    assert index.counts["compacted"] == 1 and len(index.ids) == index.size == 6
    assert _scores(index) == _scores(_fresh(rt))
