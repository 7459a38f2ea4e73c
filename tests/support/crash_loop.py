"""Kill -9 `paperchat ingest` at random moments, re-run it, and check the store after every round.

    python -m tests.support.crash_loop [--papers 2000] [--kills 20] [--kills-per-round 2] [--seed N]
                               [--batch-papers 200] [--edit-fraction 0.1] [--out FILE] [--json]

Input: the first N real records — NeurIPS 2013–2015 (CSV) and Cranfield (BEIR corpus.jsonl) —
copied into a temp dir. One PAPERCHAT_HOME serves the whole loop, so the embedding cache carries
over and kills accumulate partial state within a round.

Round 0 is a clean, uninterrupted ingest (the reference; cold embedding cache) and is verified like
every other round. Each later round starts `paperchat ingest` as a subprocess, SIGKILLs its process
group after a delay drawn uniformly from [0, 1.1 × the scenario's full-run time] (startup, model
load, every batch, the final lexical-index sync are all reachable), does that ``--kills-per-round``
times in a row, then runs ingest to completion and verifies. Scenarios cycle:

* ``fresh``  — the store and lexical index are deleted first (the embedding cache is kept): adds.
* ``update`` — the store holds the previous round's corpus; the input edits a fixed fraction of the
  Cranfield abstracts (two variants alternate, each edit adding a unique marker word), so papers
  are rewritten in place (new version written, old deleted) and edits of the previous variant are
  reverted.

Verification runs in its own process after each completing run, through the raw chromadb client
(no paperchat store code) against an expectation computed from the input files (rag.ingest.loaders, the
ingest's dedupe keys, rag.ingest.chunking): exactly the expected chunk ids (so: the expected papers, one
version each at the expected content hash, every chunk index 0..n-1); every chunk found by a
vector query with its own embedding; the saved BM25 index lists exactly the stored papers, carries
the store's (generation, chunk count), and scores like an index freshly built from the store;
marker words find exactly the edited papers; `paperchat stats --json` agrees.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.data import CRANFIELD_CORPUS, NIPS

log = logging.getLogger("tests.support.crash_loop")
ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "reports" / "crash_loop.json"
CRAN_SHARE = 0.4  # of N taken from Cranfield (the only source whose ids survive an abstract edit)


# ---- input ---------------------------------------------------------------------------------------
def build_inputs(dest: Path, n: int) -> dict[str, Any]:
    """Copy the first ``n`` records (NeurIPS CSVs in year order, then Cranfield) into ``dest``."""
    n_nips_avail = sum(_csv_rows(f) for f in sorted(NIPS.glob("*.csv")))
    n_cran = n - min(n_nips_avail, n - math.ceil(CRAN_SHARE * n))
    left = n - n_cran
    files: list[Path] = []
    (dest / "nips").mkdir(parents=True, exist_ok=True)
    for src in sorted(NIPS.glob("*.csv")):
        if left <= 0:
            break
        with open(src, newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
        take = rows[1:1 + left]
        left -= len(take)
        out = dest / "nips" / src.name
        with open(out, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(rows[0])
            w.writerows(take)
        files.append(out)
    cran = [json.loads(line) for line in CRANFIELD_CORPUS.read_text(encoding="utf-8").splitlines()[:n_cran]]
    base_cran = dest / "base" / "cranfield" / "corpus.jsonl"
    _write_jsonl(base_cran, cran)
    return {"nips": files, "cranfield": cran, "base_cran": base_cran, "n_nips": n - n_cran, "n_cran": n_cran}


def _csv_rows(path: Path) -> int:
    with open(path, newline="", encoding="utf-8") as fh:
        return sum(1 for _ in csv.reader(fh)) - 1


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def marker(variant: str, doc_id: str) -> str:
    return f"qz{variant}{doc_id}x"


def write_variant(dest: Path, cran: list[dict[str, Any]], variant: str, edit_ids: list[str]) -> Path:
    """Cranfield with the abstracts of ``edit_ids`` extended by a sentence holding a unique marker word.

    The folder is named ``cranfield`` like the base, so BEIR ids (``cranfield:<_id>``) stay the same."""
    chosen = set(edit_ids)
    rows = [{**r, "text": f"{r['text']} Revision {variant} repeated the {marker(variant, r['_id'])} measurement."}
            if r["_id"] in chosen else r for r in cran]
    path = dest / f"variant-{variant}" / "cranfield" / "corpus.jsonl"
    _write_jsonl(path, rows)
    return path


# ---- expectation (from the input files, never from the store) --------------------------------------
def expected_state(paths: list[Path], embedder: Any, max_tokens: int, overlap: int) -> dict[str, Any]:
    """Papers (first seen wins on DOI, arXiv id, abstract hash, id — the ingest's rule) and their chunk ids."""
    from rag.index.rows import chunk_id
    from rag.ingest import loaders
    from rag.ingest.chunking import chunk_papers
    from rag.ingest.loaders.base import RecordProblem

    seen: set[str] = set()
    papers = []
    for path in paths:
        for item in loaders.iter_records(path):
            if isinstance(item, RecordProblem):
                continue
            keys = [k for k in (f"doi:{item.doi}" if item.doi else "", f"arxiv:{item.arxiv_id}" if item.arxiv_id
                                else "", f"abs:{item.abstract_hash}", f"id:{item.id}") if k]
            if any(k in seen for k in keys):
                continue
            seen.update(keys)
            papers.append(item)
    window = embedder.max_tokens
    limit = min(max_tokens, window) if max_tokens else window
    chunks = chunk_papers(papers, embedder.count_tokens, limit, overlap)
    hashes = {p.id: p.content_hash() for p in papers}
    ids = sorted(chunk_id(p.id, hashes[p.id], c.index) for p, cs in zip(papers, chunks) for c in cs)
    return {"papers": hashes, "chunk_ids": ids}


# ---- one ingest process --------------------------------------------------------------------------
@dataclass
class Run:
    kind: str  # "killed" or "complete"
    delay_s: float | None = None
    duration_s: float = 0.0
    finished_before_kill: bool = False
    returncode: int | None = None
    phase: str = ""
    batches_written: int = 0
    last_line: str = ""
    report: dict[str, Any] | None = None
    lines: list[tuple[float, str]] = field(default_factory=list, repr=False)


def _phase(lines: list[tuple[float, str]], total_batches: int | None, finished: bool) -> tuple[str, int]:
    """Where a run was when it stopped, from its -v log lines."""
    batches = sum("batch written" in text for _, text in lines)
    if finished:
        return "finished before the kill", batches
    if any("lexical index rebuilt" in text or "lexical index updated" in text for _, text in lines):
        return "after the lexical sync (closing)", batches
    if total_batches and batches >= total_batches:
        return "final sync (generation bump / lexical index rebuild)", batches
    if batches:
        of = f" of {total_batches}" if total_batches else ""
        return f"batch {batches + 1}{of} (dedupe, embed, write)", batches
    if any("Loading SentenceTransformer" in text for _, text in lines):
        return f"model load / batch 1{' of ' + str(total_batches) if total_batches else ''}", 0
    return "startup (imports, settings, tokenizer)", 0


def run_ingest(paths: list[Path], env: dict[str, str], cwd: Path, kill_after: float | None,
               total_batches: int | None, timeout: float = 3600) -> Run:
    """Run one ingest; SIGKILL its process group after ``kill_after`` seconds (None: let it finish)."""
    cmd = [sys.executable, "-m", "rag.cli", "-v", "ingest", "--json", *map(str, paths)]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    lines: list[tuple[float, str]] = []
    out: list[str] = []

    def pump_err() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append((time.monotonic() - t0, line.rstrip("\n")))

    def pump_out() -> None:
        assert proc.stdout is not None
        out.append(proc.stdout.read())

    readers = [threading.Thread(target=pump_err, daemon=True), threading.Thread(target=pump_out, daemon=True)]
    for t in readers:
        t.start()
    run = Run(kind="killed" if kill_after is not None else "complete", delay_s=kill_after)
    try:
        proc.wait(timeout=kill_after if kill_after is not None else timeout)
        run.finished_before_kill = kill_after is not None
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:  # anything unexpected above: never leave it running
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
    run.duration_s = round(time.monotonic() - t0, 2)
    for t in readers:
        t.join(timeout=10)
    run.returncode = proc.returncode
    run.lines = lines
    run.phase, run.batches_written = _phase(lines, total_batches, run.finished_before_kill)
    run.last_line = lines[-1][1][:200] if lines else ""
    if proc.returncode == 0 and out and out[0].strip():
        run.report = json.loads(out[0].strip().splitlines()[-1])
    return run


# ---- verification (own process: the raw chromadb client, no paperchat store code) -------------------
def verify(home: Path, expected: dict[str, Any], markers: dict[str, list[str]], current: str) -> dict[str, Any]:
    """Check the store at ``home`` against ``expected``; ``markers``: variant → edited Cranfield ids."""
    import chromadb
    import numpy as np
    from chromadb.config import Settings as ChromaSettings

    from rag.analysis import analyze
    from rag.config import get_settings
    from rag.index.lexical import LexicalIndex, saved_state

    settings = get_settings(home=home)
    problems: list[str] = []
    notes: list[str] = []
    client = chromadb.PersistentClient(path=str(settings.store_path),
                                       settings=ChromaSettings(anonymized_telemetry=False, allow_reset=False))
    col = client.get_collection(settings.store.chroma_collection, embedding_function=None)
    ids: list[str] = []
    metas: list[dict[str, Any]] = []
    embs: list[Any] = []
    offset = 0
    while True:
        res = col.get(include=["metadatas", "embeddings"], limit=5000, offset=offset)
        ids += res["ids"]
        metas += res["metadatas"]
        embs += list(res["embeddings"])
        if len(res["ids"]) < 5000:
            break
        offset += 5000
    count, generation = col.count(), int((col.metadata or {}).get("generation", 0))
    if count != len(ids) or len(set(ids)) != len(ids):
        problems.append(f"count() says {count}, get() returned {len(ids)} ids ({len(set(ids))} distinct)")

    # chunks: ids agree with metadata; one version per paper; indices 0..n-1
    versions: dict[str, dict[str, list[int]]] = defaultdict(dict)
    n_declared: dict[tuple[str, str], set[int]] = defaultdict(set)
    for cid, md in zip(ids, metas):
        pid, h, i = cid.rsplit("#", 2)
        if (md.get("paper_id"), md.get("content_hash"), md.get("chunk")) != (pid, h, int(i)):
            problems.append(f"{cid}: metadata says {md.get('paper_id')}#{md.get('content_hash')}#{md.get('chunk')}")
        versions[pid].setdefault(h, []).append(int(i))
        n_declared[(pid, h)].add(int(md.get("n_chunks", -1)))
    multi = [p for p, hs in versions.items() if len(hs) > 1]
    if multi:
        problems.append(f"{len(multi)} papers with several versions, e.g. {multi[:3]}")
    gaps = [f"{p}#{h}" for p, hs in versions.items() for h, idx in hs.items()
            if sorted(idx) != list(range(max(n_declared[(p, h)]))) or len(n_declared[(p, h)]) != 1]
    if gaps:
        problems.append(f"{len(gaps)} versions with missing/extra chunk indices, e.g. {gaps[:3]}")
    want_papers: dict[str, str] = expected["papers"]
    have_papers = set(versions)
    missing, extra = sorted(set(want_papers) - have_papers), sorted(have_papers - set(want_papers))
    if missing or extra:
        problems.append(f"papers: {len(have_papers)} stored, {len(want_papers)} expected; missing {len(missing)} "
                        f"{missing[:3]}, unexpected {len(extra)} {extra[:3]}")
    wrong = [p for p, h in want_papers.items() if p in versions and h not in versions[p]]
    if wrong:
        problems.append(f"{len(wrong)} papers not at the expected content (stale version), e.g. {wrong[:3]}")
    want_chunks = set(expected["chunk_ids"])
    if set(ids) != want_chunks:
        problems.append(f"chunk ids: {len(set(ids) - want_chunks)} unexpected, {len(want_chunks - set(ids))} missing")

    # vectors: every chunk is found by its own embedding (the HNSW index holds what the metadata says)
    not_found = 0
    for i in range(0, len(ids), 256):
        res = col.query(query_embeddings=np.asarray(embs[i:i + 256], dtype=np.float32),
                        n_results=min(3, count), include=[])
        not_found += sum(cid not in got for cid, got in zip(ids[i:i + 256], res["ids"]))
    if not_found:
        problems.append(f"{not_found} chunks not returned by a query with their own embedding")

    # lexical: the saved index names exactly the stored papers, at the store's state, and is current
    lex_dirs = sorted(d for d in (home / "lexical").glob("*") if d.is_dir())
    live = [d for d in lex_dirs if not d.name.endswith((".tmp", ".old"))]
    leftovers = [d.name for d in lex_dirs if d not in live]
    if leftovers:
        notes.append(f"lexical leftovers from a killed rebuild: {leftovers}")
    lexical: dict[str, Any] = {}
    if len(live) != 1:
        problems.append(f"expected one lexical index, found {[d.name for d in live]}")
    else:
        saved_at, saved_ids = saved_state(live[0])
        state = (generation, count)
        lexical = {"state": list(saved_at) if saved_at else None, "papers": len(saved_ids)}
        if saved_at != state:
            problems.append(f"lexical index built at {lexical['state']}, store is at {list(state)}")
        if saved_ids != sorted(have_papers):
            problems.append(f"lexical index lists {len(saved_ids)} papers, store has "
                            f"{len(have_papers)} (or different ids)")
        saved = LexicalIndex(live[0])
        if saved_at is None or not saved._load(saved_at):
            problems.append("saved lexical index does not load")
        else:
            with tempfile.TemporaryDirectory() as tmp:
                fresh = LexicalIndex(Path(tmp) / "fresh")
                fresh._build([md for md in metas if md.get("chunk") == 0], state)
                vocab_saved, vocab_fresh = saved.vocabulary(), fresh.vocabulary()
                if saved.paper_ids != fresh.paper_ids:
                    problems.append(f"lexical index has {len(saved.paper_ids)} documents, a fresh build from the "
                                    f"store {len(fresh.paper_ids)} (or other ids)")
                    vocab_fresh = set()  # nothing to compare term by term
                elif vocab_saved != vocab_fresh:
                    problems.append(f"lexical vocabulary differs from a fresh build: {len(vocab_saved - vocab_fresh)}"
                                    f" stale terms, {len(vocab_fresh - vocab_saved)} missing")
                rng = random.Random(0)
                probes = rng.sample(sorted(vocab_fresh), min(200, len(vocab_fresh))) if vocab_fresh else []
                differ = [t for t in probes if t in vocab_saved and not np.allclose(
                    saved.term_scores({t: 1.0}), fresh.term_scores({t: 1.0}), atol=1e-4)]
                if differ:
                    problems.append(f"lexical scores differ from a fresh build for {len(differ)} of {len(probes)} "
                                    f"probe terms, e.g. {differ[:3]}")
                for variant, edited in markers.items():
                    for doc in edited:
                        term = analyze(marker(variant, doc))
                        scores = saved.term_scores({t: 1.0 for t in term})
                        hits = [saved.paper_ids[j] for j in np.flatnonzero(scores)]
                        want = [f"cranfield:{doc}"] if variant == current else []
                        if hits != want:
                            problems.append(f"marker {marker(variant, doc)} finds {hits[:3]}, expected {want}")
                            break
    # `paperchat stats --json` (its own read-only open of the store) must tell the same story
    stats = _paperchat_stats()
    if (stats.get("papers"), stats.get("chunks"), stats.get("generation")) != (len(have_papers), count, generation):
        problems.append(f"paperchat stats --json disagrees: {stats}")
    return {"ok": not problems, "problems": problems, "notes": notes, "papers": len(have_papers), "chunks": count,
            "generation": generation, "lexical": lexical, "expected_papers": len(want_papers),
            "expected_chunks": len(want_chunks), "stats": stats}


def _paperchat_stats() -> dict[str, Any]:
    """`paperchat stats --json`, run in this process (saves a Python start per round)."""
    import contextlib
    import io

    from rag.cli import main as paperchat

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = paperchat(["stats", "--json"])
    if code != 0:
        return {"error": f"exit {code}: {buf.getvalue()[-300:]}"}
    return json.loads(buf.getvalue().strip().splitlines()[-1])


def verify_in_subprocess(home: Path, expected_file: Path, markers: dict[str, list[str]], current: str,
                         env: dict[str, str], cwd: Path) -> dict[str, Any]:
    spec = {"home": str(home), "expected": str(expected_file), "markers": markers, "current": current}
    out = subprocess.run([sys.executable, "-m", "tests.support.crash_loop", "--verify", json.dumps(spec)], cwd=cwd,
                         env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        return {"ok": False, "problems": [f"verifier failed ({out.returncode}): {out.stderr.strip()[-1500:]}"]}
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---- the loop ------------------------------------------------------------------------------------
def clean_env(home: Path, batch_papers: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERCHAT_")}
    env.update({"PAPERCHAT_HOME": str(home), "PAPERCHAT_INGEST__BATCH_PAPERS": str(batch_papers),
                "ANONYMIZED_TELEMETRY": "False"})
    return env


def reset_store(home: Path) -> None:
    """Drop the store and the lexical index; keep the embedding cache."""
    for sub in ("chroma", "lexical"):
        shutil.rmtree(home / sub, ignore_errors=True)


def run_loop(papers: int = 2000, kills: int = 20, kills_per_round: int = 2, seed: int = 0, batch_papers: int = 200,
             edit_fraction: float = 0.1, workdir: Path | None = None, seed_cache: Path | None = None) -> dict[str, Any]:
    """The whole experiment; returns the results (see module docstring)."""
    from rag.config import get_settings, prepare_runtime
    from rag.index.embeddings import make_embedder

    rng = random.Random(seed)
    own_tmp = workdir is None
    work = Path(tempfile.mkdtemp(prefix="paperchat-crash-")) if workdir is None else workdir
    started = time.monotonic()
    try:
        home = work / "home"
        env = clean_env(home, batch_papers)
        if seed_cache:  # an embeddings.sqlite from an earlier run: round 0 is then warm too
            (home / "cache").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(seed_cache, home / "cache" / "embeddings.sqlite")
        inputs = build_inputs(work / "input", papers)

        settings = get_settings(home=work / "scratch")
        prepare_runtime(settings)
        embedder = make_embedder(settings)  # for the chunker's token counts only; never opens a store
        variants: dict[str, Path] = {"base": inputs["base_cran"]}
        expected: dict[str, dict[str, Any]] = {}
        edits: dict[str, list[str]] = {"base": []}

        def paths(variant: str) -> list[Path]:
            return [*inputs["nips"], variants[variant]]

        expected["base"] = expected_state(paths("base"), embedder, settings.chunking.max_tokens,
                                          settings.chunking.overlap_sentences)
        stored_cran = sorted(p.split(":", 1)[1] for p in expected["base"]["papers"] if p.startswith("cranfield:"))
        # Edit only papers the base stores (an edited duplicate would become a paper of its own).
        for variant in ("a", "b"):
            edits[variant] = sorted(rng.sample(stored_cran, max(1, round(edit_fraction * len(stored_cran)))))
            variants[variant] = write_variant(work / "input", inputs["cranfield"], variant, edits[variant])
            expected[variant] = expected_state(paths(variant), embedder, settings.chunking.max_tokens,
                                               settings.chunking.overlap_sentences)
        del embedder
        expected_files = {}
        for variant, exp in expected.items():
            expected_files[variant] = work / f"expected-{variant}.json"
            expected_files[variant].write_text(json.dumps(exp))
        markers = {v: e for v, e in edits.items() if e}

        rounds: list[dict[str, Any]] = []
        full_time: dict[str, float] = {}
        total_batches: int | None = None
        kills_done = 0
        cycle = ["fresh", "update-a", "update-b"]
        max_rounds = 1 + 3 * math.ceil(kills / max(kills_per_round, 1))
        r = 0
        while r == 0 or (kills_done < kills and r < max_rounds):
            scenario = "reference" if r == 0 else cycle[(r - 1) % len(cycle)]
            variant = scenario.split("-")[1] if scenario.startswith("update") else "base"
            if scenario in ("reference", "fresh"):
                reset_store(home)
            kind = "update" if scenario.startswith("update") else "fresh"
            killed: list[Run] = []
            for _ in range(kills_per_round if r else 0):
                if kills_done >= kills:
                    break
                horizon = full_time.get(kind) or full_time.get("fresh") or 600.0
                run = run_ingest(paths(variant), env, work, rng.uniform(0, 1.1 * horizon), total_batches)
                killed.append(run)
                if run.finished_before_kill:
                    if not killed[:-1]:  # an uninterrupted run from the round's start state: its full time
                        full_time[kind] = run.duration_s
                    break
                kills_done += 1
                log.info("round %d (%s): killed at %.1fs in %s", r, scenario, run.delay_s, run.phase)
            done = run_ingest(paths(variant), env, work, None, total_batches)
            if r == 0:
                full_time[kind] = done.duration_s  # cold cache: an over-estimate, narrowed below
            elif killed and not killed[-1].finished_before_kill:
                # A full run lasts at least the completing run and at most the killed runs plus it
                # (startup is paid twice), so the horizon converges without extra calibration runs.
                prev = full_time.get(kind) or full_time.get("fresh") or done.duration_s
                upper = sum(k.delay_s or 0.0 for k in killed) + done.duration_s
                full_time[kind] = round(min(max(prev, done.duration_s), upper), 2)
            if done.returncode == 0:
                total_batches = done.batches_written
            result = verify_in_subprocess(home, expected_files[variant], markers, variant, env, work)
            if done.returncode != 0:
                result["ok"] = False
                result.setdefault("problems", []).append(
                    f"completing ingest exited {done.returncode}: {done.last_line}")
            rounds.append({
                "round": r, "scenario": scenario,
                "kills": [{"delay_s": round(k.delay_s or 0.0, 2), "phase": k.phase, "batches_written":
                           k.batches_written, "finished_before_kill": k.finished_before_kill,
                           "returncode": k.returncode, "last_log_line": k.last_line} for k in killed],
                "complete": {"duration_s": done.duration_s, "returncode": done.returncode,
                             "batches": done.batches_written,
                             "report": {k: v for k, v in (done.report or {}).items() if k != "problems"}},
                "verify": result,
            })
            log.info("round %d (%s): %s", r, scenario, "ok" if result.get("ok") else result.get("problems"))
            r += 1
    finally:
        if own_tmp:
            shutil.rmtree(work, ignore_errors=True)
    return {
        "papers_requested": papers, "input": {"nips_records": inputs["n_nips"], "cranfield_records": inputs["n_cran"]},
        "expected_papers": len(expected["base"]["papers"]), "expected_chunks": len(expected["base"]["chunk_ids"]),
        "kills": kills_done, "kills_per_round": kills_per_round, "seed": seed, "batch_papers": batch_papers,
        "edited_per_variant": len(edits["a"]), "rounds": rounds,
        "all_ok": all(x["verify"].get("ok") for x in rounds),
        "wall_s": round(time.monotonic() - started, 1), "full_run_s": full_time,
        "seeded_cache": str(seed_cache) if seed_cache else None,
    }


def summary(res: dict[str, Any]) -> str:
    lines = [f"{res['kills']} kill -9s over {len(res['rounds'])} rounds; {res['expected_papers']} papers, "
             f"{res['expected_chunks']} chunks expected; {'ALL ROUNDS OK' if res['all_ok'] else 'FAILURES'}; "
             f"wall {res['wall_s']:.0f}s"]
    for x in res["rounds"]:
        v = x["verify"]
        kills = "; ".join(f"{k['delay_s']:.1f}s → {k['phase']}" for k in x["kills"]) or "no kill"
        c = x["complete"]
        rep = c.get("report") or {}
        lines.append(f"  round {x['round']:>2} {x['scenario']:<9} {kills}")
        lines.append(f"           re-run {c['duration_s']:.0f}s (added {rep.get('added')}, updated {rep.get('updated')}"
                     f", unchanged {rep.get('unchanged')}) → {'ok' if v.get('ok') else 'FAIL'}: {v.get('papers')} "
                     f"papers, {v.get('chunks')} chunks" + ("" if v.get("ok") else f" {v.get('problems')}"))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.support.crash_loop", description=__doc__.split("\n\n")[0])
    p.add_argument("--papers", type=int, default=2000, help="records taken from NeurIPS + Cranfield")
    p.add_argument("--kills", type=int, default=20, help="SIGKILLs that hit a running ingest")
    p.add_argument("--kills-per-round", type=int, default=2, help="kills in a row before a completing run")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-papers", type=int, default=200, help="PAPERCHAT_INGEST__BATCH_PAPERS for the runs")
    p.add_argument("--edit-fraction", type=float, default=0.1, help="Cranfield abstracts edited per update variant")
    p.add_argument("--seed-cache", type=Path, help="copy this embeddings.sqlite into the home first (warm round 0)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results JSON")
    p.add_argument("--json", action="store_true", help="print the results JSON instead of the summary")
    p.add_argument("--verify", help=argparse.SUPPRESS)  # internal: one verification, in its own process
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr)
    if args.verify:
        spec = json.loads(args.verify)
        res = verify(Path(spec["home"]), json.loads(Path(spec["expected"]).read_text()), spec["markers"],
                     spec["current"])
        sys.stdout.write(json.dumps(res) + "\n")
        return 0
    log.info("crash loop: %d papers, %d kills (%d per round), seed %d, batches of %d papers", args.papers,
             args.kills, args.kills_per_round, args.seed, args.batch_papers)
    res = run_loop(args.papers, args.kills, args.kills_per_round, args.seed, args.batch_papers, args.edit_fraction,
                   seed_cache=args.seed_cache)
    res["command"] = "python -m tests.support.crash_loop " + " ".join(argv if argv is not None else sys.argv[1:])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1))
    print(json.dumps(res) if args.json else summary(res) + f"\nresults: {args.out}")
    return 0 if res["all_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
