"""The figures a user sees from the command line (issue 33 item 6): everything a new user waits for, process
start included, against what the benchmarks inside one warmed process report.

    python -m bench.cli_figures [--corpus PATH] [--only ingest|ask] [--profile DIR] [--no-write]

* **ingest**: ``paperchat ingest CORPUS`` (default Cranfield, 1,400 abstracts) in a new process and a new, empty
  home, timed from the process start to its exit: imports, model load, Chroma start, the ingest, and the
  encoder's ONNX export with its int8 copy that a home's first ingest writes. Against it, the bare
  ``SentenceTransformer.encode`` on one text per paper (title + abstract, as ``bench.ingest_ratio``), timed in
  this process once its model is loaded. Ratio = encoder seconds ÷ CLI seconds (target ≥ 0.85).
* **ask**: ``paperchat ingest --sample`` into a new home (untimed), then one ``paperchat ask --batch FILE --json``
  process over the single-turn seed questions (the ones ``bench.latency`` times); the figure is the p50 / p95 of
  the answers' own ``timings.total_ms`` (each question asked for the first time; target p95 ≤ 300 ms), and the
  process's wall time beside it.

Each child runs with this process's environment minus every ``PAPERCHAT_*`` setting (default settings, no shared
export cache), ``OMP_NUM_THREADS`` untouched. ``--profile DIR`` runs the children under cProfile
(``DIR/ingest.prof``, ``DIR/ask.prof``) and prints where their time went (slower: profile runs are not the
figures). The load average before and after each part is printed and written beside the figures: on a shared
machine, these are slower than on an idle one.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import CRANFIELD_CORPUS, ROOT, machine, percentile, update_section

log = logging.getLogger("bench.cli_figures")


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERCHAT_")}
    return env | {"PAPERCHAT_HOME": str(home), "ANONYMIZED_TELEMETRY": "False", "PYTHONPATH": str(ROOT)}


def _cli(args: list[str], home: Path, profile: Path | None = None) -> tuple[float, str]:
    """Run ``paperchat ARGS`` in a new process; (wall seconds, stdout). Fails loudly on a non-zero exit."""
    prof = ["-m", "cProfile", "-o", str(profile)] if profile else []
    cmd = [sys.executable, *prof, "-m", "rag.cli", *args]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=home.parent, env=_env(home), capture_output=True, text=True, timeout=3600)
    seconds = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(args)} exited {out.returncode}:\n{out.stderr[-3000:]}")
    return seconds, out.stdout


def _load() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def _where(profile: Path, top: int = 25) -> None:
    import pstats

    print(f"--- {profile.name}: top {top} by cumulative time (paperchat's own functions and imports)")
    stats = pstats.Stats(str(profile))
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][3])  # type: ignore[attr-defined]
    shown = 0
    for (file, line, fn), (_, _, _, cum, _) in rows:
        if ("/rag/" in file or "/ui/" in file or fn == "<module>") and shown < top:
            print(f"{cum:8.2f} s  {Path(file).name}:{line} {fn}")
            shown += 1


def ingest_figure(corpus: Path, profile: Path | None) -> dict[str, Any]:
    from bench.ingest_ratio import _bare_encoder
    from rag.config import get_settings
    from rag.ingest import loaders
    from rag.ingest.chunking import chunk_papers, embedding_text
    from rag.runtime import Runtime

    loads = [_load()]
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        cli_s, out = _cli(["ingest", str(corpus)], home, profile and profile / "ingest.prof")
        loads.append(_load())
    log.info("CLI ingest: %.1f s (%s)", cli_s, out.strip().splitlines()[-1] if out.strip() else "")
    papers = loaders.load(corpus).papers
    texts = [embedding_text(p) for p in papers]
    with tempfile.TemporaryDirectory() as tmp:
        rt = Runtime(get_settings(home=tmp, embeddings={"cache": False}))
        ing = rt.ingestor(progress=False)
        # what the CLI embeds: each paper's chunks (an abstract longer than the model's window is cut into
        # overlapping sentence windows instead of truncated), the same texts the bare encoder is given here
        chunks = [c.text for cs in chunk_papers(papers, rt.embedder.count_tokens, ing.max_tokens, ing.overlap)
                  for c in cs]
        bare = _bare_encoder(rt.embedder)
        bare.encode(texts[:64])  # warm-up, as bench.ingest_ratio
        loads.append(_load())
        t0 = time.perf_counter()
        bare.encode(chunks, normalize_embeddings=True, convert_to_numpy=True)
        bare_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        bare.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
        per_paper_s = time.perf_counter() - t0
        loads.append(_load())
        rt.close()
    return {"papers": len(papers), "chunks": len(chunks), "cli_s": cli_s, "bare_s": bare_s,
            "ratio": bare_s / cli_s, "per_paper_s": per_paper_s, "per_paper_ratio": per_paper_s / cli_s,
            "summary": out.strip().splitlines()[-1] if out.strip() else "", "loads": loads}


def ask_figure(profile: Path | None) -> dict[str, Any]:
    questions = [row["question"] for row in map(json.loads, (ROOT / "evals" / "sets" / "seed.jsonl").open())
                 if "question" in row]
    loads = [_load()]
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        _cli(["ingest", "--sample"], home)
        batch = Path(tmp) / "questions.txt"
        batch.write_text("\n".join(questions) + "\n", encoding="utf-8")
        loads.append(_load())
        wall, out = _cli(["ask", "--batch", str(batch), "--json"], home, profile and profile / "ask.prof")
        loads.append(_load())
    answers = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert len(answers) == len(questions), (len(answers), len(questions))
    ms = [float(a["timings"]["total_ms"]) for a in answers]
    return {"questions": len(ms), "p50": percentile(ms, 50), "p95": percentile(ms, 95), "max": max(ms),
            "first": ms[0], "wall_s": wall, "loads": loads}


def _write(ing: dict[str, Any] | None, ask: dict[str, Any] | None, corpus: Path) -> None:
    rows = []
    if ing:
        met = "met" if ing["ratio"] >= 0.85 else f"not met: {ing['cli_s'] - ing['bare_s'] / 0.85:.0f} s too slow"
        rows.append(f"| `paperchat ingest {corpus.name}` in a new home, process start to exit | {ing['cli_s']:.1f} s "
                    f"for {ing['papers']} papers ({ing['chunks']} chunks); bare encoder on the same {ing['chunks']} "
                    f"texts {ing['bare_s']:.1f} s | **ratio {ing['ratio']:.2f}** (≥ 0.85: {met}) | "
                    f"{' → '.join(ing['loads'])} |")
        rows.append(f"| the same ingest against the bare encoder on one text per paper (title + abstract, cut at "
                    f"the model's window: fewer tokens than the ingest embeds) | bare encoder {ing['per_paper_s']:.1f}"
                    f" s | ratio {ing['per_paper_ratio']:.2f} | |")
    if ask:
        met = "met" if ask["p95"] <= 300 else f"not met by {ask['p95'] - 300:.0f} ms"
        rows.append(f"| `paperchat ask --batch` ({ask['questions']} seed questions, first time each), the answers' "
                    f"own `total_ms` | p50 {ask['p50']:.0f} ms, max {ask['max']:.0f} ms, the process's first answer "
                    f"{ask['first']:.0f} ms; process {ask['wall_s']:.1f} s"
                    f" | **p95 {ask['p95']:.0f} ms** (≤ 300 ms: {met}) | {' → '.join(ask['loads'])} |")
    body = f"""## What a user sees from the CLI

`python -m bench.cli_figures` ({machine()}): new processes and new homes, default settings. Load average
(1, 5, 15 min) before and after each step in the last column.

| what | measured | figure | load average |
|---|---|---|---|
{chr(10).join(rows)}
"""
    update_section("cli-figures", body)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=CRANFIELD_CORPUS)
    ap.add_argument("--only", choices=["ingest", "ask"])
    ap.add_argument("--profile", type=Path, help="run the children under cProfile, writing DIR/*.prof")
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    if a.profile:
        a.profile.mkdir(parents=True, exist_ok=True)
    ing = ingest_figure(a.corpus, a.profile) if a.only in (None, "ingest") else None
    if ing:
        print(f"ingest: CLI {ing['cli_s']:.1f} s, bare encoder on the same {ing['chunks']} texts "
              f"{ing['bare_s']:.1f} s, ratio {ing['ratio']:.3f}; on one text per paper "
              f"{ing['per_paper_s']:.1f} s, ratio "
              f"{ing['per_paper_ratio']:.3f} ({ing['papers']} papers; load {' -> '.join(ing['loads'])})", flush=True)
    ask = ask_figure(a.profile) if a.only in (None, "ask") else None
    if ask:
        print(f"ask --batch: {ask['questions']} first-time answers, p50 {ask['p50']:.0f} ms, p95 {ask['p95']:.0f} ms, "
              f"max {ask['max']:.0f} ms, first {ask['first']:.0f} ms, "
              f"process {ask['wall_s']:.1f} s (load {' -> '.join(ask['loads'])})", flush=True)
    if a.profile:
        for name in ("ingest.prof", "ask.prof"):
            if (a.profile / name).exists():
                _where(a.profile / name)
    if not a.no_write and not a.profile:
        _write(ing, ask, a.corpus)
    return 0


if __name__ == "__main__":
    sys.exit(main())
