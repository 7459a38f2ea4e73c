"""How long a running server process's next question waits for the lexical side after another process adds
papers to the same Chroma server (issue 17: "adding 100 papers ... ≤ 5 s").

    python -m bench.add_while_serving --chroma-path ~/.cache/paperchat-bench/scale/home-10000/chroma \
        [--add new.jsonl | --synth 100 --seed 777] [--work /tmp/add-while-serving]

The Chroma data folder is copied (the original is never written) and served by ``chroma run`` on 127.0.0.1.
Process A (its own fresh home, server mode) syncs its BM25 index, answers one question and waits; process B
(another home) runs ``paperchat ingest`` of ``--add`` (default: ``--synth`` papers from ``bench.synth`` under
arXiv ids no bench corpus uses, 9912.*); then A times its next sync and answer. Prints JSON. ``ingest_s`` is
B's whole command (its own home's index install or rebuild included), not the 100 papers alone.

``--lexical-from DIR`` starts A from a copy of a lexical index already built for that store (a bench home's
``lexical`` folder if it holds one index, or the index folder itself, ``lexical/papers-…``), as a server
process that has been running would be, instead of a full rebuild (minutes at 100k). A then waits for its
background publish to the server before B starts, so B installs it.
``--second-host`` finally times a fresh home C (server mode) running ``paperchat ask`` from process start to
exit (the published index installed, the question answered): "a second host answers its first question".
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.support.servers import ChromaServer

QUESTIONS = ("What methods reduce reward hacking in RLHF?", "Which papers study reward hacking?")


def serve(flag: Path, lexical_from: Path | None = None) -> None:
    """Process A (run as a child with ``--worker``): timings as JSON lines on stdout."""
    from rag.config import get_settings
    from rag.qa.chain import AnswerChain
    from rag.runtime import Runtime

    rt = Runtime(get_settings())
    if lexical_from is not None:  # the index's folder is named for the store's location: copy the one built there
        if (lexical_from / "catalog.sqlite").exists():  # an index folder itself
            built = [lexical_from]
        else:  # a home's lexical/ folder holding exactly one index
            built = [p for p in lexical_from.iterdir() if p.is_dir()]
        if len(built) != 1:
            names = ", ".join(sorted(p.name for p in built)) or "none"
            raise SystemExit(f"{lexical_from}: expected one lexical index folder, found {names}; pass the one to copy")
        shutil.copytree(built[0], rt.lexical.root)
    t = time.perf_counter()
    rt.lexical.sync(rt.store)
    out = {"first_sync_s": round(time.perf_counter() - t, 2), "papers_before": len(rt.lexical)}
    t = time.perf_counter()
    published = rt.lexical.wait_shared()
    out["publish_wait_s"] = round(time.perf_counter() - t, 2)
    out["publish"] = published
    chain = AnswerChain(rt)
    t = time.perf_counter()
    chain.ask(QUESTIONS[0])
    out["warm_up_ask_s"] = round(time.perf_counter() - t, 2)
    Path(f"{flag}.ready").write_text("1")
    while not flag.exists():
        time.sleep(0.1)
    t = time.perf_counter()
    rt.lexical.sync(rt.store)
    out["sync_after_add_s"] = round(time.perf_counter() - t, 3)
    out["papers_after"] = len(rt.lexical)
    t = time.perf_counter()
    chain.ask(QUESTIONS[1])
    out["next_ask_s"] = round(time.perf_counter() - t, 2)
    print(json.dumps(out), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chroma-path", type=Path, required=True, help="a Chroma data folder (copied, never written)")
    ap.add_argument("--add", type=Path, help="the papers process B ingests (default: --synth new ones)")
    ap.add_argument("--synth", type=int, default=100, help="papers to make with bench.synth when no --add (100)")
    ap.add_argument("--seed", type=int, default=777, help="bench.synth seed for --synth (777)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/add-while-serving"), help="scratch folder (emptied)")
    ap.add_argument("--lexical-from", type=Path, help="start A from a copy of this built lexical index folder")
    ap.add_argument("--second-host", action="store_true", help="then time a fresh home's first `paperchat ask`")
    ap.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        serve(args.worker, args.lexical_from)
        return
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    shutil.copytree(args.chroma_path, args.work / "chroma")
    flag = args.work / "flag"
    if args.add is None:
        from bench.synth import write

        write(args.synth, args.work / "synth.jsonl", args.seed, progress=False)
        rows = [json.loads(line) for line in (args.work / "synth.jsonl").read_text().splitlines() if line.strip()]
        args.add = args.work / "add.jsonl"  # renumbered: synth's ids repeat from run to run
        args.add.write_text("".join(json.dumps({**r, "id": f"9912.{i:05d}", "doi": None}) + "\n"
                                    for i, r in enumerate(rows)))
    with ChromaServer(args.work / "chroma", log_path=args.work / "chroma.log") as server:
        env = {**os.environ, "PAPERCHAT_STORE__MODE": "server", "PAPERCHAT_STORE__PORT": str(server.port)}
        a = subprocess.Popen([sys.executable, "-m", "bench.add_while_serving", "--chroma-path", "-", "--add", "-",
                              "--worker", str(flag)]
                             + (["--lexical-from", str(args.lexical_from)] if args.lexical_from else []),
                             env={**env, "PAPERCHAT_HOME": str(args.work / "home-a")},
                             stdout=subprocess.PIPE, text=True)
        while not Path(f"{flag}.ready").exists():
            if a.poll() is not None:
                raise SystemExit("process A exited before it was ready")
            time.sleep(0.2)
        t = time.perf_counter()
        b = subprocess.run([sys.executable, "-m", "rag.cli", "ingest", str(args.add)], capture_output=True, text=True,
                           env={**env, "PAPERCHAT_HOME": str(args.work / "home-b")})
        ingest_s = time.perf_counter() - t
        if b.returncode:
            a.kill()
            raise SystemExit(f"ingest failed: {b.stderr[-2000:]}")
        flag.write_text("1")
        try:
            stdout, _ = a.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            a.kill()
            raise SystemExit("process A did not finish within 600 s") from None
        result = json.loads(stdout.strip().splitlines()[-1])
        result.update({"ingest_s": round(ingest_s, 1), "ingest": b.stdout.strip().splitlines()[-1:]})
        if args.second_host:
            t = time.perf_counter()
            c = subprocess.run([sys.executable, "-m", "rag.cli", "ask", QUESTIONS[0]], capture_output=True,
                               text=True, env={**env, "PAPERCHAT_HOME": str(args.work / "home-c")})
            if c.returncode:
                raise SystemExit(f"second host's ask failed: {c.stderr[-2000:]}")
            result.update({"second_host_ask_s": round(time.perf_counter() - t, 2),
                           "second_host_answer": c.stdout.strip().splitlines()[:1]})
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
