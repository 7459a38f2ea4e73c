"""The incremental lexical index against a from-scratch build over the same real Chroma store.

After sequences of adds, updates and deletes (and the merges they trigger) the index that followed by
increments scores every term exactly as a fresh build does (within 1e-6), selects the same papers for
every filter, and its question-filter catalog equals a fresh one. A write killed at any step leaves an
index that a new process finds current or stale-and-repaired. The store is a real embedded Chroma with
small random vectors: the lexical side never reads them, and no encoder is needed."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from rag.config import get_settings
from rag.index import lexical as lexical_mod
from rag.index import store_versions
from rag.index.filter_catalog import FilterCatalog
from rag.index.lexical import LexicalIndex
from rag.index.rows import FIRST_CHUNK, chunk_id, chunk_metadata
from rag.index.store import ChromaStore, ChunkRow
from rag.records import Paper

_TEXT = ("transformer attention sparse kernel gradient descent boundary layer turbulence wing flutter "
         "graph neural network bandit regret policy reward convex proximal variance bayesian posterior "
         "sampling diffusion manifold spectral clustering embedding robust adversarial shock wave heat")
WORDS = _TEXT.split(" ")
NAMES = ["Ada Lovelace", "Alan Turing", "Grace Hopper", "Edsger Dijkstra", "Barbara Liskov", "Donald Knuth",
         "Leslie Lamport", "Frances Allen", "Ada L. Lovelace", "Ken Thompson", "Jo Ng", "X Li"]
CATS = ["cs.LG", "cs.CL", "Machine Learning", "machine learning", "physics.flu-dyn", "math.OC", "Deep RL"]


def make_paper(rng: random.Random, i: int, salt: str = "") -> Paper:
    body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 60)))
    return Paper(id=f"p{i:04d}", abstract=f"We study {body}. {salt}".strip(),
                 title=" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6))).title(),
                 authors=rng.sample(NAMES, rng.randint(1, 3)), categories=rng.sample(CATS, rng.randint(0, 2)),
                 year=rng.choice([None, 2019, 2020, 2021, 2022]))


class Library:
    """A real Chroma store written through the same versioned-id protocol as ingest (new version first, old
    version deleted after, generation bumped), with random unit vectors instead of an encoder's."""

    def __init__(self, home: Path) -> None:
        self.settings = get_settings(home=home)
        self.store = ChromaStore(self.settings, "random-unit-vectors", 8)
        self.rng = np.random.default_rng(0)

    def write(self, papers: list[Paper], keep_old: bool = False) -> None:
        states = self.store.chunk_states([p.id for p in papers])
        rows, stale = [], []
        for p in papers:
            h = p.content_hash()
            v = self.rng.standard_normal(8).astype(np.float32)
            rows.append(ChunkRow(chunk_id(p.id, h, 0), p.id, p.abstract, v / np.linalg.norm(v),
                                 chunk_metadata(p, h, 0, 1, 0)))
            stale += [cid for other, (_, _, ids) in states.get(p.id, {}).items() if other != h for cid in ids]
        self.store.bump_generation()
        self.store.upsert(rows)
        if stale and not keep_old:
            self.store.delete(stale)
        self.store.bump_generation()

    def delete(self, pids: list[str]) -> None:
        states = self.store.chunk_states(pids)
        self.store.bump_generation()
        self.store.delete([cid for p in pids for _, _, ids in states.get(p, {}).values() for cid in ids])
        self.store.bump_generation()

    def state(self) -> tuple[int, int]:
        return self.store.generation, self.store.count_chunks()


def fresh_build(lib: Library, where: Path) -> LexicalIndex:
    fresh = LexicalIndex(where)
    fresh._build(lib.store.iter_metadata(where=FIRST_CHUNK), lib.state())
    return fresh


def assert_same(lex: LexicalIndex, lib: Library, tmp: Path) -> None:
    """Every score, filter and catalog answer of ``lex`` equals that of a fresh build over the store."""
    fresh = fresh_build(lib, tmp / f"fresh-{time.monotonic_ns()}")
    assert lex.paper_ids == fresh.paper_ids
    assert lex.vocabulary() == fresh.vocabulary()
    terms = sorted(fresh.vocabulary())
    for t in terms:
        np.testing.assert_allclose(lex.term_scores({t: 1.0}), fresh.term_scores({t: 1.0}), rtol=0, atol=1e-6,
                                   err_msg=t)
        assert np.array_equal(lex.containing([t]), fresh.containing([t]))
    rng = random.Random(1)
    for _ in range(20):
        q = {t: rng.choice([1.0, 0.5, 2.0]) for t in rng.sample(terms, min(5, len(terms)))}
        np.testing.assert_allclose(lex.term_scores(q), fresh.term_scores(q), rtol=0, atol=1e-6)
    assert lex.idf(terms) == pytest.approx(fresh.idf(terms), abs=1e-12)
    for key in ["ada lovelace", "lovelace", "li", "turing", "nobody"]:
        assert np.array_equal(lex.filter_positions(author_key=key), fresh.filter_positions(author_key=key))
    for key in ["cs lg", "machine learning", "deep rl", "none"]:
        assert np.array_equal(lex.filter_positions(category_key=key), fresh.filter_positions(category_key=key))
    assert np.array_equal(lex.filter_positions(year_from=2020, year_to=2021),
                          fresh.filter_positions(year_from=2020, year_to=2021))
    assert lex.year_span() == fresh.year_span()
    a, b = FilterCatalog.open(lex.catalog_path), FilterCatalog.open(fresh.catalog_path)
    assert a.author_papers == b.author_papers and a.category_papers == b.category_papers
    assert (a.n_authors, a.category_names, a.category_counts(), a.has_years, a.categories) == \
           (b.n_authors, b.category_names, b.category_counts(), b.has_years, b.categories)
    for w in ["ada", "alan", "grace", "x", "jo"]:
        assert a.names_from(w) == b.names_from(w)
    for w in ["lovelace", "turing", "li", "ng"]:
        assert a.surname(w) == b.surname(w)


@pytest.fixture
def lib(tmp_path: Path) -> Library:
    library = Library(tmp_path / "home")
    yield library
    library.store.close()


def test_adds_updates_and_deletes_score_like_a_fresh_build(lib: Library, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(0)
    papers = {i: make_paper(rng, i) for i in range(60)}
    lib.write(list(papers.values()))
    lex = LexicalIndex(tmp_path / "lex")
    lex.sync(lib.store)
    assert len(lex) == 60
    assert_same(lex, lib, tmp_path)
    # from here on the index follows by increments: a rebuild (reading every row) would fail the test
    monkeypatch.setattr(lib.store, "iter_metadata", no_full_read(lib.store))
    steps = [
        ("add", [make_paper(rng, i) for i in range(60, 70)]),
        ("update", [make_paper(rng, i, salt="zebracorn quokka") for i in (3, 7, 11, 64)]),
        ("delete", ["p0005", "p0011", "p0066"]),
        ("add", [make_paper(rng, 5, salt="returns with brandnewterm")]),  # a deleted id comes back
        ("update", [Paper(**{**papers[20].__dict__, "authors": ["Zora Quillfeather"], "year": 2031})]),
    ]
    for kind, arg in steps:
        if kind == "delete":
            lib.delete(arg)
        else:
            lib.write(arg)
        lex.sync(lib.store)
        monkeypatch.undo()  # the fresh build reads every row
        assert_same(lex, lib, tmp_path)
        monkeypatch.setattr(lib.store, "iter_metadata", no_full_read(lib.store))
    assert lex.scores("zebracorn")[lex.positions(["p0003"])[0]] > 0
    assert len(lex) == 68 and lex.state == lib.state()  # 70 added, 3 deleted, 1 back
    assert len(lex._manifest["segments"]) > 1  # deltas, not a rebuild


def no_full_read(store: ChromaStore):  # type: ignore[no-untyped-def]
    """``store.iter_metadata`` that refuses to stream every paper row (what a rebuild reads); reads by id pass."""
    real = store.iter_metadata

    def guarded(where: dict | None = None):  # type: ignore[no-untyped-def]
        if where is None or where == FIRST_CHUNK:
            raise AssertionError("the lexical index read every paper row (a rebuild) instead of the changed ones")
        return real(where=where)
    return guarded


def test_merges_keep_scores_and_compact_the_vocabulary(lib: Library, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(2)
    lib.write([make_paper(rng, i) for i in range(40)])
    lex = LexicalIndex(tmp_path / "lex")
    lex.sync(lib.store)
    monkeypatch.setattr(lexical_mod, "MAX_SMALL_SEGMENTS", 2)
    for step in range(4):  # small segments pile up: merged among themselves
        lib.write([make_paper(rng, 100 + step, salt=f"onlyinstep{step}")])
        lex.sync(lib.store)
        assert len(lex._manifest["segments"]) <= 3
    assert_same(lex, lib, tmp_path)
    lib.delete([f"p{100 + s:04d}" for s in range(4)] + ["p0001", "p0002"])
    lib.write([make_paper(rng, i, salt="rewritten") for i in range(3, 12)])  # 9 + 6 changes > 25% of 40
    lex.sync(lib.store)
    assert len(lex._manifest["segments"]) == 1 and lex._manifest["deleted"] == {}
    assert not any(t.startswith("onlyinstep") for t in lex._bm25.vocab.terms)  # type: ignore[union-attr]
    assert_same(lex, lib, tmp_path)
    left = sorted(p.name for p in lex.root.iterdir() if p.name.startswith(("seg-", "vocab-")))
    assert left == sorted(lex._manifest["segments"] + lex._manifest["vocab"])  # merged-away files swept


def test_a_second_version_of_a_paper_is_indexed_once(lib: Library, tmp_path: Path) -> None:
    rng = random.Random(3)
    lib.write([make_paper(rng, i) for i in range(10)])
    lex = LexicalIndex(tmp_path / "lex")
    lex.sync(lib.store)
    lib.write([make_paper(rng, 4, salt="secondversion")], keep_old=True)  # a write killed before its delete
    lex.sync(lib.store)
    assert lex.paper_ids.count("p0004") == 1
    assert_same(lex, lib, tmp_path)


def test_a_fresh_process_opens_the_saved_index_and_another_process_update_is_reloaded(
        lib: Library, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(4)
    lib.write([make_paper(rng, i) for i in range(30)])
    a = LexicalIndex(tmp_path / "lex")
    a.sync(lib.store)
    b = LexicalIndex(tmp_path / "lex")  # another process on the same home
    calls: list[int] = []
    real = store_versions.stored_versions
    monkeypatch.setattr(lexical_mod, "stored_versions", lambda s: calls.append(1) or real(s))
    monkeypatch.setattr(lib.store, "iter_metadata", no_full_read(lib.store))
    b.sync(lib.store)
    assert calls == [] and b.paper_ids == a.paper_ids  # opened, not rebuilt, not diffed
    lib.write([make_paper(rng, 30, salt="fromprocessa")])
    a.sync(lib.store)
    assert calls == [1]
    b.sync(lib.store)  # a committed this state already: b reloads it without asking the store for versions
    assert calls == [1] and "p0030" in b.paper_ids
    np.testing.assert_array_equal(a.scores("fromprocessa"), b.scores("fromprocessa"))


def test_an_index_analysed_by_another_analyser_is_rebuilt(lib: Library, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(8)
    lib.write([make_paper(rng, i) for i in range(12)])
    LexicalIndex(tmp_path / "lex").sync(lib.store)
    reopened = LexicalIndex(tmp_path / "lex")  # the same analyser: opened as saved, no paper row read
    with monkeypatch.context() as m:
        m.setattr(lib.store, "iter_metadata", no_full_read(lib.store))
        reopened.sync(lib.store)
    monkeypatch.setattr(lexical_mod, "ANALYZER", "an-upgraded-analyser")  # a version that analyses otherwise
    upgraded = LexicalIndex(tmp_path / "lex")
    with pytest.raises(AssertionError, match="read every paper row"), monkeypatch.context() as m:
        m.setattr(lib.store, "iter_metadata", no_full_read(lib.store))
        upgraded.sync(lib.store)  # not opened: its terms are another analyser's, so it is rebuilt
    upgraded.sync(lib.store)
    assert upgraded._read_manifest()["analyzer"] == "an-upgraded-analyser" and len(upgraded) == 12


class _Killed(BaseException):
    """Stands in for SIGKILL at one exact point: nothing after it runs, nothing is cleaned up."""


@pytest.mark.parametrize("where", ["segment written", "vocabulary written", "catalog rows written",
                                   "committed, not swept"])
def test_a_write_killed_at_any_step_is_current_or_repaired(lib: Library, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    rng = random.Random(5)
    lib.write([make_paper(rng, i) for i in range(30)])
    lex = LexicalIndex(tmp_path / "lex")
    lex.sync(lib.store)
    lib.write([make_paper(rng, i, salt="killedupdate brandnewword") for i in (2, 40)])
    lib.delete(["p0003"])

    def die(*args: object, **kwargs: object) -> None:
        raise _Killed

    from rag.index import segments
    if where == "segment written":
        real_write = segments.Segment.write
        monkeypatch.setattr(segments.Segment, "write", staticmethod(
            lambda folder, docs: (real_write(folder, docs), die())[0]))
    elif where == "vocabulary written":
        real_json = lexical_mod.write_json
        monkeypatch.setattr(lexical_mod, "write_json", lambda path, v: (real_json(path, v), die()))
    elif where == "catalog rows written":
        monkeypatch.setattr(LexicalIndex, "_write_manifest", staticmethod(die))  # after the catalog's rows
    else:
        monkeypatch.setattr(LexicalIndex, "_sweep", die)
    with pytest.raises(_Killed):
        lex.sync(lib.store)
    monkeypatch.undo()
    again = LexicalIndex(tmp_path / "lex")  # the next process
    again.sync(lib.store)
    assert again.state == lib.state()
    assert_same(again, lib, tmp_path)
    left = sorted(p.name for p in again.root.iterdir() if p.name.startswith(("seg-", "vocab-")))
    if where != "committed, not swept":  # a later write sweeps what the killed one left
        lib.write([make_paper(rng, 41)])
        again.sync(lib.store)
        left = sorted(p.name for p in again.root.iterdir() if p.name.startswith(("seg-", "vocab-")))
    assert set(left) <= set(again._manifest["segments"] + again._manifest["vocab"]) | {
        n for n in left if n.endswith(".tmp")}


@pytest.mark.parametrize("damage", ["segment array", "segment header", "vocabulary", "catalog"])
def test_a_torn_file_is_detected_and_rebuilt(lib: Library, tmp_path: Path, damage: str) -> None:
    rng = random.Random(6)
    lib.write([make_paper(rng, i) for i in range(20)])
    lex = LexicalIndex(tmp_path / "lex")
    lex.sync(lib.store)
    lib.write([make_paper(rng, 20, salt="delta")])
    lex.sync(lib.store)
    seg = lex.root / lex._manifest["segments"][-1]
    target = {"segment array": seg / "tf.npy", "segment header": seg / "header.json",
              "vocabulary": lex.root / lex._manifest["vocab"][-1], "catalog": lex.catalog_path}[damage]
    target.write_bytes(target.read_bytes()[: len(target.read_bytes()) // 2])
    again = LexicalIndex(tmp_path / "lex")
    again.sync(lib.store)
    assert again.state == lib.state()
    assert_same(again, lib, tmp_path)


def test_sigkill_during_updates_leaves_a_current_or_repairable_index(lib: Library, tmp_path: Path) -> None:
    """Real SIGKILLs of a process that applies a large update (many papers: the write takes a while), at
    random moments; after each, a new process syncs and matches a fresh build."""
    rng = random.Random(7)
    lib.write([make_paper(rng, i) for i in range(300)])
    lib.store.close()
    home = tmp_path / "home"
    child = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from rag.config import get_settings
        from rag.index.lexical import LexicalIndex
        from rag.index.store import ChromaStore
        store = ChromaStore(get_settings(home=Path({str(home)!r})), "random-unit-vectors", 8)
        LexicalIndex(Path({str(tmp_path / 'lex')!r})).sync(store)
        print("synced", flush=True)
    """)
    killed = 0
    for round_ in range(4):
        lib.store = ChromaStore(lib.settings, "random-unit-vectors", 8)
        lib.write([make_paper(rng, i, salt=f"round{round_}") for i in rng.sample(range(400), 60)])
        lib.delete([f"p{i:04d}" for i in rng.sample(range(300), 5)])
        lib.store.close()
        proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(1.5, 4.0))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed += 1
        proc.communicate()
    lib.store = ChromaStore(lib.settings, "random-unit-vectors", 8)
    lex = LexicalIndex(tmp_path / "lex")
    lex.sync(lib.store)
    assert lex.state == lib.state()
    assert_same(lex, lib, tmp_path)
