"""Where the shared datasets live: ``../shared`` beside the checkout (not shipped, not part of the package).

The one definition of that path for the tests and the benchmarks; rag/ knows nothing of it.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
DATASETS = SHARED / "datasets"
NIPS = DATASETS / "nips-2013-2015"  # NeurIPS 2013-2015 papers, one CSV per year
CRANFIELD = DATASETS / "cranfield"  # BEIR layout: corpus.jsonl, queries.jsonl, qrels/
CRANFIELD_CORPUS = CRANFIELD / "corpus.jsonl"
PDFS = SHARED / "pdfs"  # real paper PDFs (MANIFEST.tsv says what each is), good and bad, for the full-text tests
