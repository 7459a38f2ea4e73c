"""The two eval commands as a newcomer runs them, timed from a cold start → docs/benchmarks.md.

    python -m bench.evals [--no-write] [--skip-retrieval]

Each command runs as its own process in a fresh, empty PAPERCHAT_HOME (no embedding cache, no store),
so the wall time includes loading the model, ingesting and embedding everything: what a fresh clone
pays. ``paperchat eval`` runs the seed set with ``--check``; ``paperchat eval-retrieval`` runs Cranfield.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import CRANFIELD, ROOT, machine, update_section

PAPERCHAT = Path(sys.executable).with_name("paperchat")


def timed(args: list[str], home: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERCHAT_")}
    env["PAPERCHAT_HOME"] = str(home)
    t0 = time.perf_counter()
    proc = subprocess.run([str(PAPERCHAT), *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=3600)
    return time.perf_counter() - t0, proc


def load() -> str:
    return "{:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-write", action="store_true", help="print, don't rewrite docs/benchmarks.md")
    ap.add_argument("--skip-retrieval", action="store_true", help="only the seed-set eval")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-evals-") as tmp:
        out = Path(tmp) / "seed-report"
        before = load()
        seed_s, proc = timed(["eval", "--json", "--check", "--out", str(out)], Path(tmp) / "home-eval")
        if proc.returncode not in (0, 1):
            sys.exit(f"paperchat eval failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        seed = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"paperchat eval: {seed_s:.0f} s (load before {before})")
        retr = None
        if not args.skip_retrieval:
            before_r = load()
            retr_s, proc = timed(["eval-retrieval", str(CRANFIELD), "--json"], Path(tmp) / "home-retrieval")
            if proc.returncode:
                sys.exit(f"paperchat eval-retrieval failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
            retr = json.loads(proc.stdout.strip().splitlines()[-1])
            print(f"paperchat eval-retrieval: {retr_s:.0f} s (load before {before_r})")
    s = seed["summary"]
    types = "\n".join(f"| {t} | {v['n']} | {v['pass_rate']:.1%} |" for t, v in s["by_type"].items())
    metrics = "\n".join(f"| {k} | {v['mean']:.1%} |" for k, v in s["metrics"].items())
    answer = "\n".join(f"| {k.replace('_', ' ')} | {v:.1%} |" for k, v in s["answer"].items() if v is not None)
    failures = seed["gate"]["failures"]
    gate = "passed" if not failures else "FAILED: " + "; ".join(f.splitlines()[0] for f in failures)
    total = s["latency_ms"]["total_ms"]
    body = f"""## Answer quality: `paperchat eval` on the seed set

`paperchat eval --check` (= `make eval`), extractive mode, {s["cases"]} cases on the bundled sample corpus; timed by
`python -m bench.evals` from an empty `PAPERCHAT_HOME` (model load, ingest and every embedding included):
**{seed_s:.0f} s** wall (load average before: {before}); {machine()}. Gate (`evals/thresholds.toml`): {gate}.

| question type | cases | pass rate |
|---|---:|---:|
{types}

| metric (mean over cases) | value |
|---|---:|
{metrics}
{answer}

Answer latency inside the eval (first touch of each paper included): p50 {total['p50']:.0f} ms,
p95 {total['p95']:.0f} ms.
"""
    if retr:
        rows = "\n".join(f"| {name} | {r['ndcg@10']:.4f} | {r['recall@100']:.4f} | {r['mrr@10']:.4f} |"
                         for name, r in retr["results"].items())
        body += f"""
### `paperchat eval-retrieval` on Cranfield, cold

`paperchat eval-retrieval ../shared/datasets/cranfield` (= `make eval-retrieval`), {retr['queries']} judged queries,
all four systems in one run from an empty home: **{retr_s:.0f} s** wall (load average before: {before_r}).

| system | nDCG@10 | Recall@100 | MRR@10 |
|---|---:|---:|---:|
{rows}
"""
    print(body)
    if not args.no_write:
        print(f"wrote {update_section('evals', body)}")


if __name__ == "__main__":
    main()
