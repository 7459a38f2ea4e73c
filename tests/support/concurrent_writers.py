"""Several `paperchat ingest` processes writing overlapping files into one `chroma run` server at once, one
process answering questions meanwhile; the store must end as one sequential ingest of the same files leaves it.

    python -m tests.support.concurrent_writers [--rounds 10] [--writers 3] [--records 300] [--overlap 100]
                                       [--no-sample] [--kill] [--batch-papers 50] [--seed N] [--out FILE]
                                       [--in-order] [--workdir DIR]

Input: writer i gets ``part-i.jsonl``, ``--records`` Cranfield records (a BEIR corpus, so its ids are
``part-i:<_id>``: a record shared by two parts has two ids and one abstract, a duplicate the ingest must store
once), overlapping the next writer's by ``--overlap``, shuffled (``--in-order`` keeps corpus order, where one
writer meets the shared records at its end and the next at its start, so they seldom race), plus the bundled
sample corpus (the same 40 papers, same ids, for every writer), and joins the collection ``writer-i``
(``ingest --collection``).

The reference: the writers' commands run one after another against a fresh server. Each round: a fresh
server, the asker (``--ask``: a process asking Cranfield questions in a loop from its first answer on, every
error recorded), then the writers at once, each in its own PAPERCHAT_HOME (another host: its own lexical index);
with ``--kill``, one writer is SIGKILLed after a random batch of its own and re-run at once, while the others
still write. Then the store is read with the raw chromadb client and compared with the reference: the papers
(ids and content hashes), the chunk ids, the collection memberships; and every home's lexical index after one
more sync (as the next question would do), plus one fetched from the published copy into a fresh home: its
papers, vocabulary and the BM25 scores of probe terms. All processes share one embedding cache (a symlink in each
home), warmed by the reference, so a round measures the writes, not the encoder.

Writes a JSON report (default reports/concurrent_writers.json) and prints one line per round.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.data import CRANFIELD, ROOT

log = logging.getLogger("tests.support.concurrent_writers")

DEFAULT_OUT = ROOT / "reports" / "concurrent_writers.json"
COLLECTION = "papers"
PROBE_TERMS = 200


# ---- input ---------------------------------------------------------------------------------------
def write_inputs(dest: Path, writers: int, records: int, overlap: int, shuffle: int | None = None) -> list[Path]:
    """``part-i.jsonl`` for each writer: ``records`` Cranfield rows, the first ``overlap`` of them shared with
    the previous writer's last ones; in corpus order, or each file shuffled (seed ``shuffle``), so that two
    writers meet their shared records at the same time, not one at its start and the other at its end."""
    if not 0 <= overlap < records:
        raise ValueError(f"overlap must be in [0, records): {overlap} of {records}")
    rows = (CRANFIELD / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    step = records - overlap
    if step * (writers - 1) + records > len(rows):
        raise ValueError(f"{writers} writers × {records} records overlapping by {overlap} need more than the "
                         f"{len(rows)} Cranfield records")
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(writers):
        path = dest / f"part-{i + 1}.jsonl"
        mine = rows[i * step:i * step + records]
        if shuffle is not None:
            random.Random(shuffle + i).shuffle(mine)
        path.write_text("\n".join(mine) + "\n", encoding="utf-8")
        out.append(path)
    return out


# ---- processes -----------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ChromaRun:
    """``chroma run --path PATH`` on a free loopback port, in its own process group; a context manager."""

    def __init__(self, path: Path) -> None:
        self.path, self.port = path, free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> ChromaRun:
        exe = Path(sys.executable).with_name("chroma")
        with open(self.path.parent / f"{self.path.name}.log", "ab") as out:
            self.proc = subprocess.Popen([str(exe), "run", "--path", str(self.path), "--host", "127.0.0.1",
                                          "--port", str(self.port)], stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True,
                                         env={**os.environ, "ANONYMIZED_TELEMETRY": "False"})
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
                        f"http://127.0.0.1:{self.port}/api/v2/heartbeat", timeout=2):
                    return self
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.__exit__()
                    raise RuntimeError(f"chroma run on port {self.port} did not start") from None
                time.sleep(0.2)

    def __exit__(self, *_: object) -> None:
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            self.proc = None


def make_home(home: Path, cache: Path) -> Path:
    """A PAPERCHAT_HOME whose embedding cache (and ONNX export) is the shared one."""
    home.mkdir(parents=True, exist_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    if not (home / "cache").exists():
        (home / "cache").symlink_to(cache, target_is_directory=True)
    return home


def env_for(home: Path, port: int, batch_papers: int, collection: str = COLLECTION) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERCHAT_")}
    env.update({"PAPERCHAT_HOME": str(home), "PAPERCHAT_STORE__MODE": "server", "PAPERCHAT_STORE__PORT": str(port),
                "PAPERCHAT_STORE__CHROMA_COLLECTION": collection, "PAPERCHAT_INGEST__BATCH_PAPERS": str(batch_papers),
                "ANONYMIZED_TELEMETRY": "False", "PYTHONPATH": str(ROOT)})
    return env


@dataclass
class Writer:
    """One `paperchat ingest` process (re-run in place after a kill)."""

    index: int
    files: list[Path]
    sample: bool
    env: dict[str, str]
    proc: subprocess.Popen[str] | None = None
    runs: list[dict[str, Any]] = field(default_factory=list)
    _err: list[str] = field(default_factory=list)
    _out: list[str] = field(default_factory=list)

    def start(self) -> Writer:
        cmd = [sys.executable, "-m", "rag.cli", "-v", "ingest", "--json", "--collection", f"writer-{self.index}",
               *map(str, self.files), *(["--sample"] if self.sample else [])]
        self._err, self._out = [], []  # this run's: a killed run's reader threads keep the lists they were given
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True)
        threading.Thread(target=lambda p=self.proc, err=self._err: err.extend(p.stderr), daemon=True).start()
        threading.Thread(target=lambda p=self.proc, out=self._out: out.append(p.stdout.read()), daemon=True).start()
        return self

    @property
    def batches(self) -> int:
        """"batch written" lines of the current run so far."""
        return sum("batch written" in line for line in list(self._err))

    def kill(self) -> None:
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.runs.append({"killed_after_batches": self.batches})

    def wait(self, timeout: float = 1800) -> dict[str, Any]:
        assert self.proc is not None
        code = self.proc.wait(timeout=timeout)
        time.sleep(0.1)  # the pumps read the last lines
        merged = [line.split("merged ", 1)[1].split(" ", 1)[0] for line in self._err
                  if "another writer stored at the same time" in line]
        run: dict[str, Any] = {"exit": code, "batches": self.batches, "merged": sum(map(int, merged))}
        try:
            run["report"] = {k: v for k, v in json.loads(self._out[-1].strip().splitlines()[-1]).items()
                             if k in ("added", "updated", "unchanged", "duplicates", "collected")}
        except (IndexError, ValueError):
            run["stderr"] = "".join(self._err)[-2000:]
        self.runs.append(run)
        return run


def run_writers(writers: list[Writer], kill: int | None, rng: random.Random) -> None:
    """All writers at once; writer ``kill`` is SIGKILLed after a random batch of its own and re-run at once."""
    for w in writers:
        w.start()
    if kill is not None:
        victim = writers[kill]
        total = sum(1 for f in victim.files for _ in f.open()) // int(victim.env["PAPERCHAT_INGEST__BATCH_PAPERS"])
        after = rng.randint(1, max(1, total - 1))
        assert victim.proc is not None
        while victim.batches < after and victim.proc.poll() is None:
            time.sleep(0.05)
        time.sleep(rng.uniform(0, 0.5))
        victim.kill()
        victim.start()
    for w in writers:
        w.wait()


# ---- the store, read without paperchat's store code -------------------------------------------------
def snapshot(port: int, collection: str = COLLECTION) -> dict[str, Any]:
    """The store as comparable facts. A paper is named by its abstract hash (its identity to the dedupe: the
    copies of one paper differ only in id, and which copy two writers racing keep is not the sequential order),
    so: papers (abstract hash, per stored version), chunks (abstract hash, index, count, text digest),
    memberships (collection, abstract hash); plus the ids themselves and the generation."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    client = chromadb.HttpClient(host="127.0.0.1", port=port, settings=ChromaSettings(anonymized_telemetry=False))
    col = client.get_collection(collection)
    res = col.get(include=["metadatas", "documents"])
    first = {str(md["paper_id"]): md for md in res["metadatas"] or [] if md["chunk"] == 0}
    named = {pid: str(md["abstract_hash"]) for pid, md in first.items()}
    chunks = sorted(f"{named.get(str(md['paper_id']), '?' + str(md['paper_id']))}#{md['chunk']}/{md['n_chunks']}#"
                    f"{hashlib.sha1(str(doc).encode()).hexdigest()[:12]}"
                    for md, doc in zip(res["metadatas"] or [], res["documents"] or [], strict=True))
    try:
        rows = client.get_collection(f"{collection}-sets").get(include=["metadatas"])["metadatas"] or []
    except Exception:  # no collection memberships at all
        rows = []
    members = sorted(f"{md['set']}\t{named.get(str(md['paper_id']), '?' + str(md['paper_id']))}" for md in rows)
    return {"papers": sorted(named[p] for p in sorted(first)), "chunks": chunks, "members": members,
            "ids": {h: p for p, h in named.items()}, "n_chunk_ids": len(res["ids"]),
            "generation": int((col.metadata or {}).get("generation", 0))}


def lexical_view(home: Path, port: int, probes: list[str] | None = None, collection: str = COLLECTION
                 ) -> dict[str, Any]:
    """The lexical index of ``home`` after one more sync with the store: papers (by abstract hash, as in
    ``snapshot``), vocabulary and the scores of probe terms (drawn from the vocabulary when not given)."""
    from rag.config import get_settings
    from rag.index.lexical import LexicalIndex
    from rag.index.store import ChromaStore

    settings = get_settings(home=home, store={"mode": "server", "port": port, "chroma_collection": collection})
    store = ChromaStore(settings, None, None)
    try:
        lex = LexicalIndex.for_store(home, store)
        lex.sync(store)
        lex.wait_shared(timeout=120)
        named = {p.id: store_hash for p in store.papers(lex.paper_ids) if (store_hash := _abstract_hash(p))}
    finally:
        store.close()
    vocab = sorted(lex.vocabulary())
    if probes is None:
        probes = random.Random(0).sample(vocab, min(PROBE_TERMS, len(vocab)))
    names = [named.get(p, "?" + p) for p in lex.paper_ids]
    return {"papers": sorted(names), "vocabulary": vocab, "probes": probes,
            "scores": {t: dict(sorted(zip(names, (round(float(s), 4) for s in lex.term_scores({t: 1.0})),
                                          strict=True))) for t in probes}}


def _abstract_hash(paper: Any) -> str:
    from rag.records import Paper

    return Paper(id=paper.id, abstract=paper.abstract).abstract_hash


def differences(ref: dict[str, Any], got: dict[str, Any]) -> list[str]:
    """What differs between the reference store and a round's (empty: the same)."""
    out = []
    for key, what in (("papers", "papers"), ("chunks", "chunks"), ("members", "memberships")):
        want, have = ref[key], got[key]
        if want != have:
            a, b = set(want), set(have)
            out.append(f"{what}: {len(have)} stored, {len(want)} in the reference; {len(b - a)} extra "
                       f"{sorted(b - a)[:3]}, {len(a - b)} missing {sorted(a - b)[:3]}")
    if got["n_chunk_ids"] != len(got["chunks"]):
        out.append(f"{got['n_chunk_ids']} chunk ids for {len(got['chunks'])} chunks")
    return out


def lexical_differences(name: str, ref: dict[str, Any], got: dict[str, Any]) -> list[str]:
    if got["papers"] != ref["papers"]:
        a, b = set(ref["papers"]), set(got["papers"])
        return [f"lexical index of {name}: {len(b)} papers, the reference {len(a)}; extra {sorted(b - a)[:3]}, "
                f"missing {sorted(a - b)[:3]}"]
    out = []
    if got["vocabulary"] != ref["vocabulary"]:
        out.append(f"lexical index of {name}: vocabulary of {len(got['vocabulary'])} terms, the reference "
                   f"{len(ref['vocabulary'])}")
    off = [t for t in ref["probes"] if got["scores"][t] != ref["scores"][t]]
    if off:
        out.append(f"lexical index of {name}: BM25 scores differ for {len(off)} probe terms, e.g. {off[:3]}")
    return out


# ---- the asker -----------------------------------------------------------------------------------
def start_asker(home: Path, port: int, stop: Path, out: Path) -> subprocess.Popen[bytes]:
    spec = json.dumps({"stop": str(stop), "out": str(out)})
    return subprocess.Popen([sys.executable, "-m", "tests.support.concurrent_writers", "--ask", spec], cwd=ROOT,
                            env=env_for(home, port, 1024), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def ask_loop(stop: Path, out: Path) -> None:
    """Ask Cranfield questions, one conversation each, until ``stop`` exists; from the first answer on, every
    exception is an error (before it, an empty library is the expected answer)."""
    from rag.config import get_settings
    from rag.errors import EmptyLibrary
    from rag.qa.chain import AnswerChain, Conversation
    from rag.runtime import Runtime

    questions = [json.loads(line)["text"] for line in (CRANFIELD / "queries.jsonl").open(encoding="utf-8")][:50]
    rt = Runtime(get_settings())
    chain = AnswerChain(rt)
    rt.embedder.embed(["a question before the writers start"])  # the model loaded: then the writers start
    stop.with_suffix(".ready").touch()
    answered, empty, errors, times = 0, 0, [], []
    i = 0
    while not stop.exists():
        q = questions[i % len(questions)]
        i += 1
        t0 = time.perf_counter()
        try:
            Conversation(chain, k=5, mode="extractive").ask(q)
        except EmptyLibrary:
            if answered:
                errors.append(f"{q[:40]}: the library looked empty after {answered} answers")
            empty += 1
            time.sleep(0.2)
            continue
        except Exception as e:  # noqa: BLE001 - every failure is what this process reports
            errors.append(f"{q[:40]}: {type(e).__name__}: {e}"[:300])
            continue
        answered += 1
        times.append(time.perf_counter() - t0)
    rt.close()
    times.sort()
    out.write_text(json.dumps({"answered": answered, "empty_before_first": empty, "errors": errors,
                               "p50_ms": round(1000 * times[len(times) // 2], 1) if times else None,
                               "max_ms": round(1000 * times[-1], 1) if times else None}), encoding="utf-8")


# ---- rounds --------------------------------------------------------------------------------------
def reference(work: Path, parts: list[Path], sample: bool, cache: Path, batch_papers: int) -> dict[str, Any]:
    """The writers' commands one after another into a fresh server: the state every round must reach."""
    home = make_home(work / "ref-home", cache)
    t0 = time.monotonic()
    with ChromaRun(work / "ref-db") as server:
        runs = []
        for i, part in enumerate(parts):
            w = Writer(i + 1, [part], sample, env_for(home, server.port, batch_papers)).start()
            runs.append(w.wait())
            if runs[-1]["exit"] != 0:
                raise RuntimeError(f"reference writer {i + 1} failed: {runs[-1]}")
        state = snapshot(server.port)
        state["lexical"] = lexical_view(home, server.port)
    state["runs"], state["seconds"] = runs, round(time.monotonic() - t0, 1)
    return state


def run_round(work: Path, parts: list[Path], sample: bool, cache: Path, batch_papers: int, kill: bool,
              rng: random.Random, ref: dict[str, Any]) -> dict[str, Any]:
    t0 = time.monotonic()
    work.mkdir(parents=True, exist_ok=True)
    with ChromaRun(work / "db") as server:
        ask_home = make_home(work / "asker", cache)
        stop, ask_out = work / "asker.stop", work / "asker.json"
        asker = start_asker(ask_home, server.port, stop, ask_out)
        deadline = time.monotonic() + 600
        while not stop.with_suffix(".ready").exists() and asker.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        writers = [Writer(i + 1, [p], sample, env_for(make_home(work / f"writer-{i + 1}", cache), server.port,
                                                       batch_papers)) for i, p in enumerate(parts)]
        victim = rng.randrange(len(writers)) if kill else None
        run_writers(writers, victim, rng)
        stop.touch()
        asker.wait(timeout=300)
        got = snapshot(server.port)
        problems = differences(ref, got)
        probes = ref["lexical"]["probes"]
        homes = {f"writer-{w.index}": work / f"writer-{w.index}" for w in writers} | {"asker": ask_home}
        homes["a fresh home (published copy)"] = make_home(work / "fresh", cache)
        for name, home in homes.items():
            problems += lexical_differences(name, ref["lexical"], lexical_view(home, server.port, probes))
    asked: dict[str, Any] = (json.loads(ask_out.read_text()) if ask_out.exists()
                             else {"answered": 0, "errors": ["no asker report"]})
    if not asked["answered"] or asked["errors"]:
        problems.append(f"asker: {asked['answered']} answers, errors {asked['errors'][:3]}")
    failed = [f"writer-{w.index}: {r}" for w in writers for r in w.runs[-1:] if r.get("exit") != 0]
    other_ids = sum(1 for h, pid in got["ids"].items() if ref["ids"].get(h) != pid)
    return {"ok": not (problems or failed), "problems": problems + failed,
            "killed": None if victim is None else victim + 1, "writers": {f"writer-{w.index}": w.runs for w in writers},
            "asker": asked, "papers": len(got["papers"]), "chunks": len(got["chunks"]), "members": len(got["members"]),
            "kept_another_copy": other_ids, "lexical_papers": len(ref["lexical"]["papers"]),
            "seconds": round(time.monotonic() - t0, 1)}


def run(rounds: int = 10, writers: int = 3, records: int = 300, overlap: int = 100, sample: bool = True,
        kill: bool = True, batch_papers: int = 50, seed: int = 0, workdir: Path | None = None,
        shuffle: bool = True) -> dict[str, Any]:
    """The whole experiment (see the module docstring); kills in every round with ``kill``."""
    rng = random.Random(seed)
    with contextlib.ExitStack() as stack:
        work = workdir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="paperchat-writers-")))
        for old in [work / "ref-db", work / "ref-home", *work.glob("round-*")]:  # a kept workdir: all but the cache
            shutil.rmtree(old, ignore_errors=True)
        parts = write_inputs(work / "input", writers, records, overlap, seed if shuffle else None)
        cache = work / "cache"
        ref = reference(work, parts, sample, cache, batch_papers)
        log.info("reference: %d papers, %d chunks, %d memberships in %.0f s", len(ref["papers"]),
                 len(ref["chunks"]), len(ref["members"]), ref["seconds"])
        results = []
        for r in range(rounds):
            res = run_round(work / f"round-{r}", parts, sample, cache, batch_papers, kill, rng, ref)
            res["round"] = r
            results.append(res)
            log.info("round %d: %s, %d papers, %d chunks, %d memberships, killed writer %s, asker %d answers "
                     "in %.0f s%s", r, "same as the reference" if res["ok"] else "DIFFERENT", res["papers"],
                     res["chunks"], res["members"], res["killed"], res["asker"]["answered"], res["seconds"],
                     "".join(f"\n  {p}" for p in res["problems"]))
    return {"config": {"rounds": rounds, "writers": writers, "records": records, "overlap": overlap,
                       "sample": sample, "kill": kill, "batch_papers": batch_papers, "seed": seed, "shuffle": shuffle},
            "reference": {"papers": len(ref["papers"]), "chunks": len(ref["chunks"]),
                          "members": len(ref["members"]), "lexical_papers": len(ref["lexical"]["papers"]),
                          "runs": ref["runs"], "seconds": ref["seconds"]},
            "rounds": results, "same": sum(r["ok"] for r in results)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--writers", type=int, default=3)
    p.add_argument("--records", type=int, default=300, help="Cranfield records per writer")
    p.add_argument("--overlap", type=int, default=100, help="records each writer shares with the next")
    p.add_argument("--no-sample", action="store_true", help="do not give every writer the 40 sample papers too")
    p.add_argument("--kill", action="store_true", help="SIGKILL one writer per round mid-way and re-run it")
    p.add_argument("--batch-papers", type=int, default=50, help="PAPERCHAT_INGEST__BATCH_PAPERS of the writers")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--in-order", action="store_true", help="keep each file in corpus order (default: shuffled)")
    p.add_argument("--workdir", type=Path, help="keep inputs, homes and the embedding cache here (default: a "
                   "temporary folder, deleted after); a second run with the same one starts with a warm cache")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--ask", help=argparse.SUPPRESS)  # internal: the asker process's spec
    args = p.parse_args(argv)
    if args.ask:
        spec = json.loads(args.ask)
        ask_loop(Path(spec["stop"]), Path(spec["out"]))
        return 0
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for noisy in ("httpx", "rag"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    log.info("concurrent writers: %s", vars(args))
    res = run(args.rounds, args.writers, args.records, args.overlap, not args.no_sample, args.kill,
              args.batch_papers, args.seed, args.workdir, not args.in_order)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1), encoding="utf-8")
    log.info("%d of %d rounds ended as the sequential ingest (%d papers, %d chunks, %d memberships); report %s",
             res["same"], len(res["rounds"]), res["reference"]["papers"], res["reference"]["chunks"],
             res["reference"]["members"], args.out)
    return 0 if res["same"] == len(res["rounds"]) else 1


if __name__ == "__main__":
    sys.exit(main())
