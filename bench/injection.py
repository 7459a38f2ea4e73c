"""Prompt injection through abstracts and questions: how many injections were tried and how many leaked.

    python -m bench.injection [--out FILE.json] [--templates FILE.jsonl ...] [--only-templates]

``--templates`` adds a set of templates from a JSON-lines file (one ``{"id", "template", "style"}`` per line,
``{canary}`` marking the payload), run like the held-out set (start/middle/end of an abstract, both modes, a
store of its own) and reported under the file's stem; ``--only-templates`` skips the built-in sets.

The cases, the compromised model and the leak check are in tests/support/injection.py, shared with
tests/test_injection.py.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
from pathlib import Path
from typing import Any

from bench.common import ROOT
from tests.support.injection import (
    Case,
    Outcome,
    build_cases,
    build_extra_cases,
    compromised_model,
    detector_false_positives,
    hostile_file,
    load_templates,
    run,
    summarise,
)


def evaluate(cases: list[Case], embedder: Any = None) -> list[Outcome]:
    """Ingest the sample corpus plus these cases' hostile papers into a throwaway store; ask every case in
    extractive mode and in llm mode against the compromised model."""
    from rag.config import get_settings
    from rag.qa.chain import AnswerChain
    from rag.runtime import Runtime
    from tests.fakes.openai_server import FakeOpenAIServer

    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer(responder=compromised_model) as llm:
        home = Path(tmp)
        rt = Runtime(get_settings(home=home, llm={"base_url": llm.base_url, "model": "stub-model"}),
                     _embedder=embedder)
        try:
            rt.ingestor(progress=False).ingest([*sorted((ROOT / "data" / "sample").glob("*.txt")),
                                                hostile_file(cases, home)])
            known = {p.id for p in rt.store.papers()}
            chain = AnswerChain(rt)
            return run(chain, cases, "extractive", known) + run(chain, cases, "llm", known)
        finally:
            rt.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="also write the figures as JSON here")
    ap.add_argument("--templates", type=Path, action="append", default=[],
                    help="an extra JSON-lines template set (repeatable), run in a store of its own")
    ap.add_argument("--only-templates", action="store_true", help="run only the --templates sets")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    from rag.config import Settings, prepare_runtime
    from rag.index.embeddings import SentenceTransformerEmbedder

    settings = Settings()
    prepare_runtime(settings)
    embedder = SentenceTransformerEmbedder(settings.embeddings)
    cases = [] if args.only_templates else build_cases()
    tuned = [c for c in cases if not c.held_out]
    held = [c for c in cases if c.held_out]
    # Separate stores: a held-out paper the detector misses would otherwise sit in every llm prompt.
    outcomes = (evaluate(tuned, embedder) + evaluate(held, embedder)) if cases else []
    for i, path in enumerate(args.templates):
        extra = build_extra_cases(load_templates(path), path.stem, tag="BCDEFG"[i % 6])
        cases += extra
        outcomes += evaluate(extra, embedder)
    res = {"cases": len(cases), **summarise(outcomes), "detector_on_sample": detector_false_positives()}
    print(json.dumps(res, indent=2))
    if args.out:
        args.out.write_text(json.dumps(res, indent=2) + "\n")


if __name__ == "__main__":
    main()
