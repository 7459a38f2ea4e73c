"""Retrieval against oracles: Chroma top-k = brute-force cosine, BM25 = the Lucene formula by hand,
RRF by hand; filters and lexical-index sync through ingest."""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest
from conftest import SAMPLE

from rag.analysis import analyze
from rag.index.lexical import paper_text
from rag.index.paper_query import PaperQuery
from rag.qa.retrieval import Retriever, rrf, score_fusion
from tests.helpers import chunk_ids
from tests.support.bm25_oracle import export_bm25s


@pytest.fixture
def sample_rt(make_runtime):
    rt = make_runtime()
    rt.ingestor(progress=False).ingest(SAMPLE)
    return rt


def test_chroma_top_k_matches_brute_force_cosine(sample_rt) -> None:
    vectors = sample_rt.store.vectors(chunk_ids(sample_rt.store))
    ids = list(vectors)
    matrix = np.stack([vectors[i] for i in ids])
    for q in ["reward hacking in RLHF", "federated learning with heterogeneous clients", "weather forecasting"]:
        v = sample_rt.embedder.embed([q])[0]
        cosine = matrix @ v
        oracle = [ids[i] for i in np.argsort(-cosine)[:10]]
        got = sample_rt.store.nearest(v, 10)
        assert [cid for cid, _, _ in got] == oracle
        assert [pid for _, pid, _ in got] == [cid.rsplit("#", 2)[0] for cid in oracle]
        assert [score for _, _, score in got] == pytest.approx(sorted(cosine, reverse=True)[:10], abs=1e-4)


def test_bm25_scores_match_the_lucene_formula(sample_rt) -> None:
    lex = sample_rt.lexical
    lex.sync(sample_rt.store)
    papers = {p.id: p for p in sample_rt.store.papers()}
    docs = {pid: Counter(analyze(paper_text(p))) for pid, p in papers.items()}
    n = len(docs)
    avgdl = sum(sum(c.values()) for c in docs.values()) / n
    query = "energy loss reward hacking PPO"
    got = lex.scores(query)
    for pid, i in zip(lex.paper_ids, range(len(lex.paper_ids))):
        tf, dl = docs[pid], sum(docs[pid].values())
        want = 0.0
        for t in analyze(query):
            df = sum(1 for c in docs.values() if t in c)
            if not df or not tf[t]:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            want += idf * tf[t] / (tf[t] + 1.2 * (1 - 0.75 + 0.75 * dl / avgdl))
        assert got[i] == pytest.approx(want, rel=1e-4, abs=1e-5), pid


def test_rrf_by_hand() -> None:
    fused = rrf([(["a", "b", "c"], 1.0), (["c", "a"], 2.0)], k=60)
    assert fused["a"] == pytest.approx(1 / 61 + 2 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 2 / 61)
    assert fused["b"] == pytest.approx(1 / 62)


def test_score_fusion_by_hand() -> None:
    fused = score_fusion([([("a", 17.4), ("b", 7.4), ("c", 7.0)], 1.0), ([("b", 0.8), ("c", 0.6), ("a", 0.4)], 3.0)])
    # each list: best 1, last 0, linear between; weights 1/4 and 3/4; a paper a list lacks scores 0 there
    assert fused["a"] == pytest.approx(0.25 * 1.0 + 0.75 * 0.0)
    assert fused["b"] == pytest.approx(0.25 * 0.4 / 10.4 + 0.75 * 1.0)
    assert fused["c"] == pytest.approx(0.25 * 0.0 + 0.75 * 0.5)
    assert score_fusion([([("x", 2.0)], 1.0), ([], 1.0)]) == {"x": 1.0}  # an empty list takes no weight
    # The margin survives where ranks would hide it: BM25 decisive for a, dense unsure between b and a.
    lists = [([("a", 17.4), ("b", 7.4), ("c", 3.0)], 1.0), ([("b", 0.52), ("a", 0.51), ("c", 0.30)], 1.0)]
    by_score = score_fusion(lists)
    by_rank = rrf([([p for p, _ in scored], w) for scored, w in lists], k=60)
    assert max(by_score, key=by_score.get) == "a"
    assert by_rank["a"] == pytest.approx(by_rank["b"])  # ranks alone: a tie


def test_a_rare_identifier_puts_its_paper_first(sample_rt, tmp_path) -> None:
    """A question naming an identifier that one paper holds gets that paper first, even when the rest of the
    question pulls towards another paper (the sample's EPPO paper on reward hacking in PPO)."""
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps([{"title": "Sparse gauges for tabular data", "abstract":
        "We study sparse gauge functions for tabular data. Our estimator, QZV-gauge, fits in linear time and "
        "matches kernel baselines on eleven benchmarks. We also discuss regularisation of the gauge."}]))
    sample_rt.ingestor(progress=False).ingest([extra])
    question = "How does QZV-gauge relate to reward hacking and the energy loss of policy optimisation?"
    anchored = sample_rt.retriever().search(question, k=5)
    assert "QZV-gauge" in anchored.hits[0].paper.abstract
    assert any("EPPO" in h.paper.abstract for h in anchored.hits)  # the rest of the ranking is kept
    cfg = sample_rt.settings.retrieval.model_copy(update={"anchor_df": 0})
    plain = Retriever(sample_rt.store, sample_rt.embedder, sample_rt.lexical, cfg).search(question, k=5)
    assert "QZV-gauge" not in plain.hits[0].paper.abstract  # without the rule the identifier is outvoted
    # An identifier many papers hold is no anchor: "RL" is in more than anchor_df abstracts and reorders nothing.
    assert len(sample_rt.lexical.containing(["rl"])) > sample_rt.settings.retrieval.anchor_df
    q = "Which RL methods handle sparse rewards?"
    off = Retriever(sample_rt.store, sample_rt.embedder, sample_rt.lexical, cfg).search(q, k=5)
    assert [h.paper_id for h in sample_rt.retriever().search(q, k=5).hits] == [h.paper_id for h in off.hits]


def test_hybrid_finds_named_method_and_applies_filters(sample_rt) -> None:
    r = sample_rt.retriever()
    res = r.search("What does EPPO penalize?", k=3)
    assert "EPPO" in res.hits[0].paper.abstract
    assert len({h.paper_id for h in res.hits}) == len(res.hits)  # a paper appears once
    only = r.search("reinforcement learning", k=10, filters=PaperQuery(author="Shiqing Gao"))
    assert only.hits and all("Shiqing Gao" in h.paper.authors for h in only.hits)
    none = r.search("reinforcement learning", k=10, filters=PaperQuery(year_from=2030))
    assert none.hits == []


def test_a_small_scope_scored_locally_ranks_as_chromas_filtered_search(sample_rt) -> None:
    """A filter leaving few papers is scored from their stored vectors (no Chroma filtered query): same papers,
    same order, same cosines as Chroma's own filtered search, with and without feedback."""
    ids = sample_rt.store.paper_ids()
    scope = PaperQuery(paper_ids=tuple(ids[::3]))
    local = sample_rt.retriever()
    assert local.cfg.local_scope >= len(ids)
    remote = Retriever(sample_rt.store, sample_rt.embedder, sample_rt.lexical,
                       local.cfg.model_copy(update={"local_scope": 0}))
    calls: list[object] = []
    nearest = sample_rt.store.nearest
    sample_rt.store.nearest = lambda *a, **kw: calls.append(kw.get("where")) or nearest(*a, **kw)  # type: ignore
    for q in ["reward hacking in RLHF", "federated learning with heterogeneous clients", "graph neural networks"]:
        for fb in (False, True):
            calls.clear()
            a = local.search(q, k=5, filters=scope, feedback=fb)
            assert calls == []  # scored here
            b = remote.search(q, k=5, filters=scope, feedback=fb)
            assert calls and all(w is not None for w in calls)  # Chroma's filtered search
            assert [h.paper_id for h in a.hits] == [h.paper_id for h in b.hits]
            assert set(h.paper_id for h in a.hits) <= set(scope.paper_ids)
            assert [h.dense for h in a.hits] == pytest.approx([h.dense for h in b.hits], abs=1e-4)
            assert [h.chunk for h in a.hits] == [h.chunk for h in b.hits]
    calls.clear()
    local.search("reward hacking", k=5, filters=PaperQuery(paper_ids=tuple(ids)), feedback=False)
    assert calls == []
    wide = Retriever(sample_rt.store, sample_rt.embedder, sample_rt.lexical,
                     local.cfg.model_copy(update={"local_scope": len(ids) - 1}))
    wide.search("reward hacking", k=5, filters=PaperQuery(paper_ids=tuple(ids)), feedback=False)
    assert calls  # more papers than local_scope: Chroma


def test_lexical_index_follows_ingest(sample_rt, tmp_path) -> None:
    lex = sample_rt.lexical
    lex.sync(sample_rt.store)
    assert len(lex) == 40
    extra = tmp_path / "extra.jsonl"
    extra.write_text('{"id": "x1", "title": "Quokka populations", '
                     '"abstract": "We count quokka populations on Rottnest Island with drones."}\n')
    sample_rt.ingestor(progress=False).ingest([extra])
    assert len(lex) == 41  # synced by the ingest hook, not lazily
    hit = sample_rt.retriever(mode="bm25").search("quokka drones", k=1).hits[0]
    assert hit.paper.title == "Quokka populations"
    # a fresh process (new index object) loads the saved index instead of rebuilding
    from rag.index.lexical import LexicalIndex

    again = LexicalIndex.for_store(sample_rt.settings.home, sample_rt.store)
    assert again._load((sample_rt.store.generation, sample_rt.store.count_chunks()))
    assert len(again) == 41


def test_a_saved_index_scores_alike_without_importing_bm25s(sample_rt) -> None:
    """A process that only answers loads the saved index with numpy alone (no bm25s, no scipy) and scores
    exactly as the process that built it."""
    import json
    import subprocess
    import sys

    lex = sample_rt.lexical
    lex.sync(sample_rt.store)
    queries = ["reward hacking in RLHF", "federated learning with heterogeneous clients", "quokka"]
    want = [lex.scores(q).tolist() for q in queries]
    assert any(max(w) > 0 for w in want)
    code = ("import json, sys; from pathlib import Path; from rag.index.lexical import LexicalIndex; "
            f"lex = LexicalIndex(Path({str(lex.root)!r})); assert lex._load({tuple(lex.state)!r}); "
            f"print(json.dumps([[lex.scores(q).tolist() for q in {queries!r}], "
            "sorted(m for m in ('bm25s', 'scipy') if m in sys.modules)]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    got, imported = json.loads(out.stdout.strip().splitlines()[-1])
    assert imported == [] and got == want


def test_stop_words_are_bm25s_english_set() -> None:
    from bm25s.stopwords import STOPWORDS_EN

    from rag.analysis import STOPWORDS

    assert frozenset(STOPWORDS_EN) == STOPWORDS


def test_bm25s_reads_the_saved_index_and_scores_alike(sample_rt, tmp_path) -> None:
    """The index's scores, exported in bm25s's layout: bm25s loads them, and its own scorer gives the same
    scores (an oracle independent of our scoring code)."""
    import bm25s

    lex = sample_rt.lexical
    lex.sync(sample_rt.store)
    export_bm25s(lex, tmp_path / "bm25")
    bm = bm25s.BM25.load(str(tmp_path / "bm25"))
    assert bm.scores["indices"].max() < len(lex) and bm.vocab_dict
    for q in ["energy loss reward hacking PPO", "federated learning heterogeneous clients", "weather forecast"]:
        toks = [t for t in dict.fromkeys(analyze(q)) if t in bm.vocab_dict]
        assert toks
        np.testing.assert_allclose(lex.scores(q), bm.get_scores(toks), rtol=1e-5, atol=1e-6)


def test_a_recent_state_check_is_reused_only_when_asked(sample_rt, monkeypatch) -> None:
    lex, store = sample_rt.lexical, sample_rt.store
    lex.sync(store)
    calls: list[int] = []
    real = type(store).count_chunks
    monkeypatch.setattr(type(store), "count_chunks", lambda self: calls.append(1) or real(self))
    lex.sync(store, recheck_after_s=60)  # checked a moment ago: trusted
    assert calls == []
    lex.sync(store)  # the default asks the store every time
    assert calls == [1]
    lex.invalidate()
    lex.sync(store, recheck_after_s=60)  # nothing loaded: always checks (and reloads)
    assert calls == [1, 1] and len(lex) == 40


def test_papers_are_read_by_their_chunk_0_and_one_rewritten_since_by_its_id(make_runtime, tmp_path,
                                                                            monkeypatch) -> None:
    """The retriever reads its hits' papers by the chunk-0 ids its BM25 index holds (one row each, not every
    passage of the paper); a paper rewritten since the index synced (by another writer) is still read, new
    version."""
    def papers(path, abstract_x1: str):
        path.write_text(json.dumps({"id": "x1", "title": "Quokka counts", "abstract": abstract_x1}) + "\n"
                        + json.dumps({"id": "x2", "title": "Wombat burrows",
                                      "abstract": "We map wombat burrows with ground radar."}) + "\n")
        return path

    rt = make_runtime()
    rt.ingestor(progress=False).ingest([papers(tmp_path / "a.jsonl", "We count quokkas with drones.")])
    retriever = rt.retriever()
    rt.lexical.sync(rt.store)
    ids = rt.store.paper_ids()
    first = rt.lexical.first_chunks([*ids, "nope"])
    assert sorted(first) == sorted(ids) and all(c.endswith("#0") for c in first.values())
    by_title = {p.title: p.id for p in rt.store.papers_at(list(first.values()))}
    assert set(by_title) == {"Quokka counts", "Wombat burrows"}
    assert [p.id for p in retriever.read_papers([by_title["Wombat burrows"], "nope", by_title["Quokka counts"]])] \
        == [by_title["Wombat burrows"], by_title["Quokka counts"]]

    report = rt.ingestor(progress=False).ingest([papers(tmp_path / "b.jsonl", "We count quokkas from kayaks.")])
    assert report.updated == 1, report
    quokka = by_title["Quokka counts"]
    assert rt.store.papers_at([first[quokka]]) == []  # that version is gone
    # the synced index names the new chunk 0 (its paper now in a later segment of the index), the other's unchanged
    now = rt.lexical.first_chunks([quokka, by_title["Wombat burrows"]])
    assert now[quokka] != first[quokka] and now[by_title["Wombat burrows"]] == first[by_title["Wombat burrows"]]
    assert [p.abstract for p in rt.store.papers_at([now[quokka]])] == ["We count quokkas from kayaks."]
    # an index that has not synced since (another process wrote) still names the old chunk 0
    monkeypatch.setattr(rt.lexical, "first_chunks", lambda pids: {p: first[p] for p in pids if p in first})
    assert [p.abstract for p in retriever.read_papers([quokka])] == ["We count quokkas from kayaks."]
