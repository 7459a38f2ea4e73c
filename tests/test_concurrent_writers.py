"""Several writers on one store end with what one sequential ingest of the same files stores (issue 33, item 1).

Two in-process cases force the race in a fixed order (both writers decide a shared paper is new before either
writes it; and a membership written after the other writer merged the paper away). One case runs three
`paperchat ingest` processes against a real `chroma run` with overlapping files, SIGKILLs one mid-way and runs it
again. ``python -m tests.support.concurrent_writers --kill`` (``make bench-writers``) is the full-size version
(issue sizes, ten rounds, an asker).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rag.config import get_settings
from rag.index.embed_cache import CachedEmbedder
from rag.ingest.pipeline import Ingestor
from rag.runtime import Runtime
from tests.support import concurrent_writers as cw
from tests.support.data import CRANFIELD_CORPUS

CRANFIELD = CRANFIELD_CORPUS
needs_data = pytest.mark.requires_data(CRANFIELD)


def _state(rt: Runtime) -> dict[str, Any]:
    """Papers, chunk ids, memberships and the synced lexical index's papers and scores of one store."""
    sets = rt.collections()
    rt.lexical.sync(rt.store)
    vocab = sorted(rt.lexical.vocabulary())
    probes = random.Random(0).sample(vocab, 40)
    return {"papers": rt.store.paper_ids(), "chunks": sorted(rt.store.chroma_collection.get(include=[])["ids"]),
            "members": {name: sorted(sets.members(name)) for name in sets.names()},
            "lexical": rt.lexical.paper_ids, "vocab": vocab,
            "scores": {t: np.round(rt.lexical.term_scores({t: 1.0}), 4).tolist() for t in probes}}


@pytest.fixture(scope="module")
def two_parts(embedder, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], CachedEmbedder, dict[str, Any]]:
    """Two overlapping inputs, an embedder whose cache holds their vectors, and what ingesting them one after
    the other stores (built once for the module)."""
    tmp = tmp_path_factory.mktemp("two-parts")
    parts = cw.write_inputs(tmp / "in", writers=2, records=30, overlap=10)
    cached = CachedEmbedder(embedder, tmp / "embeddings.sqlite")
    rt = Runtime(get_settings(home=tmp / "ref", ingest={"batch_papers": 10}), _embedder=cached)
    try:
        for i, part in enumerate(parts, 1):
            rt.ingestor(progress=False).ingest([part], collection=f"writer-{i}")
        return parts, cached, _state(rt)
    finally:
        rt.close()


def _when_writing(a: Ingestor, first_id: str, then: Any) -> None:
    """Run ``then`` once, when ``a`` is about to write the batch holding ``first_id`` (after its dedupe)."""
    real = a.store.upsert

    def upsert(rows: Any) -> None:
        if any(r.paper_id == first_id for r in rows):
            a.store.upsert = real  # type: ignore[method-assign]
            then()
        real(rows)
    a.store.upsert = upsert  # type: ignore[method-assign]


@needs_data
@pytest.mark.parametrize("membership", ["before the merge", "after the merge"])
def test_a_paper_two_writers_store_at_once_is_stored_once(two_parts, tmp_path: Path, membership: str) -> None:
    parts, cached, want = two_parts
    rt = Runtime(get_settings(home=tmp_path / "home", ingest={"batch_papers": 10}), _embedder=cached)
    try:
        a, b = rt.ingestor(progress=False), rt.ingestor(progress=False)
        deferred: list[Any] = []
        if membership == "after the merge":  # b's memberships land after a merged b's copies into its own
            real_collect = b._collect
            b._collect = lambda *args, **kw: deferred.append(lambda: real_collect(*args, **kw))
        # a has decided part-1:21..30 are new; b stores the same papers as part-2:21..30 before a writes them
        _when_writing(a, "part-1:21", lambda: b.ingest([parts[1]], collection="writer-2"))
        report = a.ingest([parts[0]], collection="writer-1")
        for collect in deferred:
            collect()
        assert (report.added, report.duplicates) == (30, 0)  # a keeps its copies: b's are the ones merged
        assert _state(rt) == want  # the smaller ids kept, as the sequential ingest of part 1 then part 2 keeps them
    finally:
        rt.close()
    assert len(want["papers"]) == 50 and want["members"]["writer-2"][:2] == ["part-1:21", "part-1:22"]


@needs_data
@pytest.mark.timeout(900)  # ~60 s on a quiet 2-core machine, most of it four processes loading torch
def test_three_ingest_processes_and_a_kill_end_as_one_sequential_ingest(embedder, chroma_server: int,
                                                                         tmp_path: Path) -> None:
    parts = cw.write_inputs(tmp_path / "in", writers=3, records=40, overlap=15, shuffle=0)
    cache = tmp_path / "cache"
    cache.mkdir()
    settings = get_settings(home=tmp_path / "ref", ingest={"batch_papers": 10},
                            store={"mode": "server", "port": chroma_server, "chroma_collection": "writers-ref"})
    # the reference fills the embedding cache the writers share: they embed nothing, they race on writes
    ref = Runtime(settings, _embedder=CachedEmbedder(embedder, cache / "embeddings.sqlite"))
    try:
        for i, part in enumerate(parts, 1):
            ref.ingestor(progress=False).ingest([part], collection=f"writer-{i}")
    finally:
        ref.close()
    want = cw.snapshot(chroma_server, "writers-ref")
    want_lex = cw.lexical_view(tmp_path / "ref", chroma_server, collection="writers-ref")
    assert (len(want["papers"]), len(want["members"])) == (90, 120)

    homes = [tmp_path / f"writer-{i}" for i in (1, 2, 3)]
    envs = [cw.env_for(cw.make_home(home, cache), chroma_server, 10, "writers-run") for home in homes]
    for env in envs:
        env["PAPERCHAT_EMBEDDINGS__RUNTIME"] = "torch"  # no ONNX export written at the end of each run
    writers = [cw.Writer(i, [part], False, env) for i, (part, env) in enumerate(zip(parts, envs, strict=True), 1)]
    cw.run_writers(writers, kill=1, rng=random.Random(2))
    assert writers[1].runs[0].get("killed_after_batches") is not None
    assert [w.runs[-1]["exit"] for w in writers] == [0, 0, 0], [w.runs for w in writers]
    got = cw.snapshot(chroma_server, "writers-run")
    assert cw.differences(want, got) == []
    for home in homes:
        assert cw.lexical_differences(home.name, want_lex,
                                      cw.lexical_view(home, chroma_server, want_lex["probes"], "writers-run")) == []
