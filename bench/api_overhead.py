"""What the HTTP API adds to an answer: `POST /v1/chat/completions` (non-streamed, extractive) against the same
question answered in process, on the sample corpus.

    python -m bench.api_overhead [--no-write]

Ingests data/sample into a throwaway home, starts the API (``ui.api.asgi_app`` on uvicorn) in this process on
127.0.0.1 and a free port, over the same ``Library`` (one ``Runtime``, one ``AnswerChain``) that the in-process
path calls. A warm-up pass asks every single-turn seed question once on each path (models loaded, every
question's and its papers' vectors in the embedding cache, the HTTP connection open), then each question is
timed once per path, interleaved and alternating which path goes first, so both see the same warm caches:

* in process: ``AnswerChain.ask(question, mode="extractive")``;
* API: ``client.chat.completions.create(model="paperchat-extractive", ...)`` through the ``openai`` SDK (one
  client, keep-alive), i.e. HTTP, JSON, validation, the rate-limit check, the thread hop, the references list.

The issue's target: API p50 within 30 ms of the in-process p50.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import threading
import time
from typing import Any

from bench.common import ROOT, machine, percentile, update_section
from tests.support.servers import HOST, free_port

BUSY_LOAD = 1.5  # 1-minute load average above which the figures are flagged as taken on a busy machine
TARGET_MS = 30.0


def _serve(lib: Any) -> tuple[Any, threading.Thread, str]:
    """The API on a free loopback port, run by uvicorn in a thread of this process."""
    import uvicorn

    from ui import api

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(api.asgi_app(lib), host=HOST, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the API did not start within 60 s")
        time.sleep(0.05)
    return server, thread, f"http://{HOST}:{port}"


def _ms(fn: Any, question: str) -> float:
    t0 = time.perf_counter()
    fn(question)
    return (time.perf_counter() - t0) * 1000


def _row(name: str, xs: list[float]) -> str:
    return f"| {name} | {percentile(xs, 50):.1f} | {percentile(xs, 95):.1f} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-write", action="store_true", help="print the section instead of writing it")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    import openai

    from rag.config import get_settings
    from rag.runtime import Runtime
    from ui.library import Library

    load_before = os.getloadavg()
    questions = [q for q in (json.loads(line).get("question") for line in
                             (ROOT / "evals" / "sets" / "seed.jsonl").open() if line.strip()) if q]
    local_ms: list[float] = []
    api_ms: list[float] = []
    with tempfile.TemporaryDirectory() as home:
        # No key on loopback; the rate limit raised so the benchmark's own requests are never refused.
        settings = get_settings(home=home, api={"requests_per_minute": 100000})
        rt = Runtime(settings)
        rt.ingestor(progress=False).ingest(sorted((ROOT / "data" / "sample").glob("*.txt")))
        lib = Library.open(rt)
        server, thread, url = _serve(lib)
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=120)
        try:
            def local(q: str) -> None:
                lib.chain.ask(q, mode="extractive")

            def remote(q: str) -> None:
                r = client.chat.completions.create(model="paperchat-extractive",
                                                   messages=[{"role": "user", "content": q}])
                if not r.choices[0].message.content:
                    raise RuntimeError(f"empty answer from the API for {q!r}")

            for q in questions:  # warm-up pass, untimed
                local(q)
                remote(q)
            for i, q in enumerate(questions):
                if i % 2:
                    api_ms.append(_ms(remote, q))
                    local_ms.append(_ms(local, q))
                else:
                    local_ms.append(_ms(local, q))
                    api_ms.append(_ms(remote, q))
        finally:
            client.close()
            server.should_exit = True
            thread.join(10)
            rt.close()
    diff = [a - b for a, b in zip(api_ms, local_ms, strict=True)]
    l50, a50 = percentile(local_ms, 50), percentile(api_ms, 50)
    gap = a50 - l50
    verdict = "met" if gap <= TARGET_MS else "not met"
    print(f"{len(questions)} questions: in process p50 {l50:.1f} ms, API p50 {a50:.1f} ms, "
          f"gap {gap:+.1f} ms; per-question difference p50 {percentile(diff, 50):+.1f} ms, "
          f"p95 {percentile(diff, 95):+.1f} ms")
    busy = load_before[0] > BUSY_LOAD
    busy_note = (f" — above {BUSY_LOAD} on {os.cpu_count()} cores: the machine was shared with other work during "
                 "this run")
    load_note = "{:.2f} {:.2f} {:.2f}".format(*load_before) + (busy_note if busy else " (machine otherwise idle)")
    body = f"""## API overhead (`/v1/chat/completions`, non-streamed, extractive, sample corpus)

`make bench-api` (= `python -m bench.api_overhead`), {machine()}; load average before the run: {load_note}.
The API (`ui.api` on uvicorn, 127.0.0.1, one process) and the in-process path share one `Library` (one
`Runtime`, one `AnswerChain`). A warm-up pass asked each of the {len(questions)} single-turn seed questions
once on each path, so both paths then see warm caches (models loaded, question and abstract-sentence vectors
cached, the HTTP connection open); then each question was timed once per path, interleaved, alternating which
path went first. In process: `AnswerChain.ask(q, mode="extractive")`. API: `chat.completions.create(
model="paperchat-extractive")` through the `openai` SDK (HTTP, JSON, validation, the rate-limit check, the
worker-thread hop, the references list).

**API p50 {a50:.1f} ms vs in process {l50:.1f} ms: {gap:+.1f} ms** (target ≤ {TARGET_MS:.0f} ms: {verdict}).

| path | p50 ms | p95 ms |
|---|---:|---:|
{_row("in process (`AnswerChain.ask`)", local_ms)}
{_row("API (`/v1/chat/completions`)", api_ms)}
{_row("per-question difference (API − in process)", diff)}
"""
    if args.no_write:
        print(body)
    else:
        print(f"wrote {update_section('api', body)}")


if __name__ == "__main__":
    main()
