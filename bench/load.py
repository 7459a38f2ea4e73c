"""Concurrent chat sessions against `paperchat serve` over loopback, extractive mode.

    python -m bench.load [--sessions 20] [--seconds 60] [--rpm N] [--think-s 0] [--seed 0] [--out FILE] [--json]

Ingests the sample corpus into a temp PAPERCHAT_HOME (`paperchat ingest data/sample/*.txt`), starts
`paperchat serve` on a free 127.0.0.1 port in its own process group, then runs ``--sessions``
sessions at once for ``--seconds``, each a gradio_client ``Client`` (its own Gradio session, so
the server-side conversation state is per session). A session picks a conversation from
evals/sets/seed.jsonl (follow-ups are asked as successive turns of one conversation), asks it
through the chat handler (``/ask``: the question box's submit) passing back the chat history and the
filter controls the previous answer filled in, as the browser does, then starts a new conversation
(``/new_conversation``) and picks another, until the time is up (questions in flight finish).

Every question's latency is the time from submit to the final answer (first update reported too).
Errors: exceptions and timeouts, the app's error notice in the reply (refusals such as the rate
limit included), empty replies. The server runs with the default limits unless ``--rpm`` sets
PAPERCHAT_LIMITS__REQUESTS_PER_MINUTE for it. The server is stopped whatever happens.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT, pct
from tests.support.servers import PaperchatServer

log = logging.getLogger("bench.load")
SEED_SET = ROOT / "evals" / "sets" / "seed.jsonl"
SAMPLE = sorted((ROOT / "data" / "sample").glob("*.txt"))
DEFAULT_OUT = ROOT / "reports" / "load.json"
ASK, NEW = "/ask", "/new_conversation"  # Gradio's names for ui.app's `ask` (question.submit) and reset handlers
QUESTION_TIMEOUT_S = 180.0


def conversations(path: Path = SEED_SET) -> list[dict[str, Any]]:
    """Each seed row as a conversation: its turns (or its one question) and whether it is answerable."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out.append({"id": row["id"], "type": row.get("type", ""), "turns": row.get("turns") or [row["question"]],
                        "answerable": bool(row.get("answerable", True))})
    return out


def reply_text(chat: list[dict[str, Any]] | None) -> str:
    """The last assistant message's text ('' when there is none)."""
    if not chat or chat[-1].get("role") != "assistant":
        return ""
    content = chat[-1].get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")


def classify(text: str) -> str:
    """error | empty | cannot-answer | cited | uncited."""
    from rag.qa.prompts import CANNOT_ANSWER

    if 'class="pc-error"' in text:
        return "error"
    if not re.sub(r"<[^>]+>", "", text).strip():
        return "empty"
    if CANNOT_ANSWER.replace("'", "&#x27;") in text or CANNOT_ANSWER in text or "can&#39;t answer" in text:
        return "cannot-answer"
    return "cited" if 'class="pc-cite"' in text else "uncited"


def _plain(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", text)).strip()[:300]


def session(idx: int, url: str, convs: list[dict[str, Any]], deadline: float, think_s: float, seed: int,
            records: list[dict[str, Any]], lock: threading.Lock) -> None:
    """One user: conversations one after another until ``deadline``."""
    from gradio_client import Client

    rng = random.Random(seed * 1000 + idx)
    try:
        client = Client(url, verbose=False, download_files=False)
    except Exception as e:
        with lock:
            records.append({"session": idx, "outcome": "error", "detail": f"connect: {e!r}"[:300], "latency_s": None})
        return
    try:
        while time.monotonic() < deadline:
            conv = rng.choice(convs)
            chat: list[dict[str, Any]] = []
            controls: list[Any] = [None, "", "", ""]
            for turn_no, question in enumerate(conv["turns"]):
                if time.monotonic() >= deadline:
                    break
                rec: dict[str, Any] = {"session": idx, "conversation": conv["id"], "type": conv["type"],
                                       "turn": turn_no, "question": question, "answerable": conv["answerable"]}
                t0 = time.monotonic()
                try:
                    job = client.submit(question, chat, 5, "extractive", *controls, api_name=ASK)
                    first = None
                    for _ in job:
                        if first is None:
                            first = time.monotonic() - t0
                    out = job.result(timeout=QUESTION_TIMEOUT_S)
                    rec["latency_s"] = round(time.monotonic() - t0, 4)
                    rec["first_update_s"] = round(first, 4) if first is not None else None
                    chat = out[0] or []
                    controls = [out[3], out[4] or "", out[5] or "", out[6] or ""]
                    text = reply_text(chat)
                    rec["outcome"] = classify(text)
                    if rec["outcome"] in ("error", "empty", "uncited"):
                        rec["detail"] = _plain(text)
                except Exception as e:
                    rec.update(latency_s=round(time.monotonic() - t0, 4), outcome="error", detail=repr(e)[:300])
                with lock:
                    records.append(rec)
                if rec["outcome"] == "error":
                    break  # start a fresh conversation after an error
                if think_s:
                    time.sleep(think_s)
            try:
                client.predict(api_name=NEW)
            except Exception as e:
                with lock:
                    records.append({"session": idx, "outcome": "error", "detail": f"new conversation: {e!r}"[:300],
                                    "latency_s": None, "reset": True})
    finally:
        try:
            client.close()
        except Exception:
            pass


def drive(url: str, convs: list[dict[str, Any]], sessions: int, seconds: float, think_s: float,
          seed: int) -> tuple[list[dict[str, Any]], float]:
    """``sessions`` concurrent sessions until ``seconds`` have passed; every question's record, elapsed time."""
    records: list[dict[str, Any]] = []
    lock = threading.Lock()
    t_start = time.monotonic()
    deadline = t_start + seconds
    threads = [threading.Thread(target=session, args=(i, url, convs, deadline, think_s, seed, records, lock),
                                daemon=True) for i in range(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + QUESTION_TIMEOUT_S + 60)
    return records, time.monotonic() - t_start


def run_load(sessions: int = 20, seconds: float = 60.0, rpm: int | None = None, think_s: float = 0.0, seed: int = 0,
             workdir: Path | None = None) -> dict[str, Any]:
    """Serve, load, stop; returns the figures and every question's record."""
    convs = conversations()
    tmp = tempfile.TemporaryDirectory(prefix="paperchat-load-") if workdir is None else None
    home = Path(tmp.name if tmp else str(workdir)) / "home"
    try:
        with PaperchatServer(home, SAMPLE, rpm=rpm) as srv:
            log.info("server up at %s; %d sessions for %.0f s", srv.url, sessions, seconds)
            records, elapsed = drive(srv.url, convs, sessions, seconds, think_s, seed)
            server_log = srv.log_tail(200_000)
            server_alive = srv.proc is not None and srv.proc.poll() is None
    finally:
        if tmp:
            tmp.cleanup()
    questions = [r for r in records if not r.get("reset")]
    lat = [r["latency_s"] for r in questions if r.get("latency_s") is not None and r["outcome"] != "error"]
    first = [r["first_update_s"] for r in questions if r.get("first_update_s") is not None]
    outcomes: dict[str, int] = {}
    for r in records:
        outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
    errors = [r for r in records if r["outcome"] in ("error", "empty")]
    return {
        "sessions": sessions, "seconds": seconds, "elapsed_s": round(elapsed, 1), "rpm": rpm or "default",
        "think_s": think_s, "questions": len(questions), "answered": len(lat), "errors": len(errors),
        "outcomes": outcomes, "throughput_qps": round(len(lat) / elapsed, 2) if elapsed else None,
        "latency_s": {"p50": pct(lat, 50), "p95": pct(lat, 95), "max": max(lat) if lat else None,
                      "mean": round(statistics.fmean(lat), 3) if lat else None},
        "first_update_s": {"p50": pct(first, 50), "p95": pct(first, 95)},
        "error_examples": sorted({r.get("detail", "") for r in errors})[:5],
        "server_log_failures": server_log.count("failed"), "server_log_tracebacks": server_log.count("Traceback"),
        "server_alive_at_end": server_alive, "records": records,
    }


def summary(res: dict[str, Any]) -> str:
    lat, first = res["latency_s"], res["first_update_s"]
    return (f"{res['sessions']} sessions × {res['seconds']:.0f} s (rate limit {res['rpm']}/min, "
            f"think {res['think_s']} s): {res['questions']} questions, {res['answered']} answered, "
            f"{res['errors']} errors; "
            f"latency p50 {lat['p50']} s, p95 {lat['p95']} s, max {lat['max']} s; first update p50 {first['p50']} s, "
            f"p95 {first['p95']} s; {res['throughput_qps']} answers/s; outcomes {res['outcomes']}"
            + (f"; errors e.g. {res['error_examples']}" if res["errors"] else ""))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__.split("\n\n")[0])
    p.add_argument("--sessions", type=int, default=20)
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--rpm", type=int, help="PAPERCHAT_LIMITS__REQUESTS_PER_MINUTE for the server (default: its own)")
    p.add_argument("--think-s", type=float, default=0.0, help="pause between a session's questions")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results JSON (with every question's record)")
    p.add_argument("--json", action="store_true", help="print the results JSON (without records) instead")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    res = run_load(args.sessions, args.seconds, args.rpm, args.think_s, args.seed)
    res["command"] = "python -m bench.load " + " ".join(argv if argv is not None else sys.argv[1:])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1))
    brief = {k: v for k, v in res.items() if k != "records"}
    print(json.dumps(brief) if args.json else summary(res) + f"\nresults: {args.out}")
    return 0 if res["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
