"""Ray ingest throughput: `paperchat ingest --ray` on a local cluster of N nodes × 1 CPU, or a plain ingest.

    python -m bench.ray_ingest --nodes 2 [--corpus PATH]     # a Ray cluster on 127.0.0.1, stopped afterwards
    python -m bench.ray_ingest --nodes 0 [--corpus PATH]     # a plain single-process ingest, for comparison

Each run ingests the corpus (default: Cranfield, 1,398 abstracts) into a fresh home with ``paperchat -v ingest
--json`` and times the "batch written" log lines as they arrive: steady papers/s is the papers written after
the first batch over the time from the first to the last batch (start-up excluded), ``driver_write_s`` the sum
of the driver's own write times the Ray ingest logs. Prints one JSON object; figures go to
docs/deployment.md ("Distributed ingest on Ray") by hand, with the load average printed beside them.
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
from typing import Any

from bench.common import CRANFIELD_CORPUS


def timed_ingest(home: Path, corpus: Path, ray: str | None, env: dict[str, str]) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "rag.cli", "-v", "ingest", "--json", *(["--ray", ray] if ray else []), str(corpus)]
    t0 = time.monotonic()
    marks: list[tuple[float, int]] = []
    writes = 0.0
    proc = subprocess.Popen(cmd, env=env | {"PAPERCHAT_HOME": str(home)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None and proc.stdout is not None
    for line in proc.stderr:
        if "batch written: " in line:
            marks.append((time.monotonic() - t0, int(line.split("batch written: ")[1].split(" papers")[0])))
            if line.rstrip().endswith(" s)"):
                writes += float(line.rstrip()[:-3].rsplit("(", 1)[1])
    out = proc.stdout.read()
    if proc.wait() != 0:
        raise SystemExit(f"ingest failed ({proc.returncode})")
    wall = time.monotonic() - t0
    report = json.loads(out.strip().splitlines()[-1])
    steady = (sum(n for _, n in marks[1:]) / (marks[-1][0] - marks[0][0])) if len(marks) > 2 else None
    return {"added": report["added"], "chunks": report["embedded_chunks"], "wall_s": round(wall, 1),
            "first_write_s": round(marks[0][0], 1) if marks else None, "batches": len(marks),
            "steady_papers_per_s": round(steady, 2) if steady else None,
            "overall_papers_per_s": round(report["added"] / wall, 2), "driver_write_s": round(writes, 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=2, help="Ray nodes of 1 CPU each; 0 = a plain ingest")
    ap.add_argument("--corpus", type=Path, default=CRANFIELD_CORPUS)
    args = ap.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERCHAT_")}
    with tempfile.TemporaryDirectory(prefix="pcray", dir="/tmp") as tmp:
        result: dict[str, Any] = {"nodes": args.nodes, "corpus": str(args.corpus), "load_before": os.getloadavg()[0]}
        if args.nodes == 0:
            result |= timed_ingest(Path(tmp) / "home", args.corpus, None, env)
        else:
            os.environ["RAY_TMPDIR"] = env["RAY_TMPDIR"] = tmp  # Ray's sessions and address file, short path
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            from ray.cluster_utils import Cluster

            node = {"num_cpus": 1, "node_ip_address": "127.0.0.1", "object_store_memory": 200 * 2**20}
            cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
            try:
                for _ in range(args.nodes - 1):
                    cluster.add_node(**node)
                cluster.wait_for_nodes()
                result |= timed_ingest(Path(tmp) / "home", args.corpus, cluster.address, env)
            finally:
                cluster.shutdown()
        result["load_after"] = os.getloadavg()[0]
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
