"""Synthetic arXiv metadata snapshot for scale benchmarks: ``python -m bench.synth --papers 100000 --out FILE``.

Every sentence, title n-gram and name part is real; only their combination is synthetic. Sources:
the NeurIPS 2013–2015 abstracts and the Cranfield collection under ``shared/datasets`` and the
listing pages in ``data/sample``. Per paper:

* a *template* real abstract with a title is drawn; its sentence count fixes the synthetic
  abstract's length, so lengths follow the real distribution. Sentence i comes from the same relative
  position (± 1) of one of the template's 12 topically nearest real abstracts (TF-IDF cosine, same
  domain: machine learning — NeurIPS and the sample listings — or aerodynamics — Cranfield); the
  opening sentence is the template's own 30% of the time, so title and abstract share a topic;
* the title is a word-bigram walk over the domain's real titles, starting from the template title's
  first two words, with the template title's length (± 2 words);
* authors: 1–9 names (counts from the sample listings plus ~10% single-author papers), drawn
  Zipf–Mandelbrot from a fixed pool of 300k first name × initial × surname combinations taken from
  the sample listings, so a few authors have hundreds of papers and about half have one;
* categories: an arXiv-like primary category with realistic frequencies, nudged by title keywords,
  plus 0–2 cross-lists; years grow ~15% a year from 2007 to 2025, like arXiv's submissions.

The output is the Kaggle snapshot format ``rag/ingest/loaders/arxiv.py`` reads (``id``, ``submitter``,
``authors``, ``title``, ``comments``, ``journal-ref``, ``doi``, ``report-no``, ``categories``,
``license``, ``abstract`` wrapped at 80 columns with a leading space like the real dump, ``versions``,
``update_date``, ``authors_parsed``). It is streamed line by line; the same ``--seed`` and
``--papers`` always give byte-identical files (and the first N papers of a larger file equal the
N-paper file).
"""

from __future__ import annotations

import argparse
import bisect
import csv
import html
import itertools
import json
import logging
import math
import random
import re
import sys
import textwrap
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

from bench.common import CRANFIELD_CORPUS, NIPS, ROOT

log = logging.getLogger("bench.synth")

SAMPLE_DIR = ROOT / "data" / "sample"

ML, AERO = "ml", "aero"
DOMAIN_WEIGHTS = {ML: 0.82, AERO: 0.18}
# Primary-category frequencies, roughly those of arXiv's CS/stat listings and of fluid dynamics.
PRIMARY = {
    ML: {"cs.LG": 30, "cs.CV": 16, "cs.CL": 13, "stat.ML": 11, "cs.AI": 9, "math.OC": 4, "cs.NE": 3,
         "cs.IR": 3, "cs.RO": 3, "cs.IT": 2, "cs.DS": 2, "q-bio.NC": 2, "cs.CR": 1, "cs.SI": 1},
    AERO: {"physics.flu-dyn": 62, "physics.class-ph": 10, "math.NA": 9, "physics.app-ph": 8, "cs.CE": 6,
           "math.AP": 5},
}
KEYWORDS = {
    "cs.CV": ("image", "visual", "video", "object", "scene", "pixel", "segmentation", "vision", "face"),
    "cs.CL": ("language", "text", "word", "translation", "speech", "sentence", "topic", "document"),
    "cs.RO": ("robot", "control", "motor", "manipulation"),
    "math.OC": ("convex", "optimization", "gradient", "descent", "stochastic", "minimization"),
    "stat.ML": ("bayesian", "inference", "posterior", "gaussian", "sampling", "estimation", "kernel"),
    "cs.AI": ("reinforcement", "policy", "agent", "planning", "game", "bandit"),
    "q-bio.NC": ("neural", "neuron", "brain", "spiking", "cortex"),
    "cs.IT": ("coding", "information", "compressed", "sparse", "entropy"),
    "physics.flu-dyn": ("flow", "boundary", "layer", "turbulent", "shock", "viscous", "wake"),
    "physics.class-ph": ("heat", "thermal", "vibration", "elastic", "buckling"),
    "math.NA": ("numerical", "method", "solution", "approximate", "iteration"),
}
FIRST_YEAR, LAST_YEAR, GROWTH = 2007, 2025, 1.15
AUTHOR_POOL = 300_000  # fixed, so the first N papers of any larger file equal the N-paper file
JOURNALS = ("J. Mach. Learn. Res.", "Neural Comput.", "IEEE Trans. Pattern Anal. Mach. Intell.",
            "Mach. Learn.", "Proc. NeurIPS", "Proc. ICML", "AIAA J.", "J. Fluid Mech.", "Phys. Fluids")
LICENSES = (None, "http://arxiv.org/licenses/nonexclusive-distrib/1.0/",
            "http://creativecommons.org/licenses/by/4.0/")
DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
NEIGHBOURS = 12
STOP = frozenset({
    "this", "that", "with", "from", "have", "been", "which", "their", "these", "there", "than", "also",
    "into", "such", "when", "where", "while", "over", "under", "more", "most", "only", "other", "some",
    "what", "about", "using", "used", "based", "show", "shows", "paper", "propose", "proposed", "present",
    "method", "methods", "results", "result", "approach", "problem", "problems", "given", "both", "each",
    "between", "through", "however",
})
_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[$\\])")


# ---------------------------------------------------------------- real material

@dataclass
class Domain:
    """Real abstracts (as sentence lists) of one domain, their titles, and a title bigram model."""

    sources: list[list[str]] = field(default_factory=list)         # every real abstract, as sentences
    titles: dict[int, list[str]] = field(default_factory=dict)     # source index → title words (templates)
    bigrams: dict[tuple[str, str], list[str]] = field(default_factory=lambda: defaultdict(list))
    neighbours: list[list[int]] = field(default_factory=list)      # source index → topically closest sources

    def add(self, title: str | None, sentences: list[str]) -> None:
        sentences = [s for s in (" ".join(x.split()) for x in sentences) if len(s.split()) >= 4]
        if len(sentences) < 2:
            return
        self.sources.append(sentences)
        words = (title or "").split()
        if len(words) < 2:
            return
        self.titles[len(self.sources) - 1] = words
        padded = ["<s>", "<s>", *words, "</s>"]
        for a, b, c in zip(padded, padded[1:], padded[2:], strict=False):
            self.bigrams[(a, b)].append(c)

    def link(self, k: int = NEIGHBOURS) -> None:
        """For each abstract, its ``k`` nearest by TF-IDF cosine over content words (itself first)."""
        docs = [Counter(w for w in re.findall(r"[a-z]{4,}", " ".join(src).lower()) if w not in STOP)
                for src in self.sources]
        df = Counter(w for d in docs for w in d)
        vocab = {w: i for i, w in enumerate(sorted(w for w, c in df.items() if 2 <= c <= len(docs) // 10))}
        mat = np.zeros((len(docs), len(vocab)), dtype=np.float64)
        for r, d in enumerate(docs):
            for w, c in d.items():
                if w in vocab:
                    mat[r, vocab[w]] = (1 + math.log(c)) * math.log(len(docs) / df[w])
        mat /= np.maximum(np.linalg.norm(mat, axis=1, keepdims=True), 1e-12)
        sims = np.round(mat @ mat.T, 6)
        np.fill_diagonal(sims, 2.0)
        self.neighbours = [np.lexsort((np.arange(len(docs)), -row))[:k].tolist() for row in sims]


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT_SPLIT.split(text) if s.strip()]


def _cranfield_sentences(title: str, text: str) -> list[str]:
    body = text[len(title):] if text.startswith(title) else text
    out = []
    for raw in re.split(r"\s\.\s|\s\.$", body):
        s = re.sub(r"\s+([.,;:)\]])", r"\1", raw.strip())
        s = re.sub(r"([(\[])\s+", r"\1", s)
        if s:
            out.append(s[0].upper() + s[1:] + ".")
    return out


def _cranfield_title(title: str) -> str:
    t = re.sub(r"\s+([.,;:)])", r"\1", title.strip().rstrip(".").strip())
    return t[:1].upper() + t[1:]


def _sample_listing(path: Path) -> Iterator[tuple[list[str], str]]:
    """(authors, abstract) pairs of a "论文检索" page: an author line is followed by the long abstract line."""
    authors: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if len(line) > 300:
            yield authors, line
            authors = []
        elif "," in line and "·" not in line:
            authors = [a.strip() for a in line.split(",") if a.strip()]


@dataclass
class Material:
    domains: dict[str, Domain]
    first_names: list[str]
    surnames: list[str]
    author_counts: list[int]


def load_material() -> Material:
    """Read the real corpora once (a few MB)."""
    domains = {ML: Domain(), AERO: Domain()}
    for path in sorted(NIPS.glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                title = " ".join(html.unescape(row.get("Title") or "").split())
                abstract = html.unescape(row.get("Abstract") or "")
                domains[ML].add(title, split_sentences(" ".join(abstract.split())))
    with CRANFIELD_CORPUS.open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            title = row.get("title") or ""
            domains[AERO].add(_cranfield_title(title), _cranfield_sentences(title, row.get("text") or ""))
    firsts: set[str] = set()
    lasts: set[str] = set()
    counts: list[int] = []
    for path in sorted(SAMPLE_DIR.glob("*.txt")):
        for authors, abstract in _sample_listing(path):
            domains[ML].add(None, split_sentences(abstract))  # a sentence source, not a template (no title)
            if authors:
                counts.append(len(authors))
            for name in authors:
                parts = name.split()
                if len(parts) >= 2:
                    firsts.add(parts[0].title() if parts[0].isupper() else parts[0])
                    lasts.add(parts[-1].title() if parts[-1].isupper() else parts[-1])
    counts += [1] * max(1, len(counts) // 10)  # the listings have no single-author papers; arXiv has ~10%
    if not counts or not domains[ML].titles or not domains[AERO].titles:
        raise SystemExit(f"real material missing: need {NIPS}, {CRANFIELD_CORPUS} and {SAMPLE_DIR}/*.txt")
    for d in domains.values():
        d.link()
    return Material(domains, sorted(firsts), sorted(lasts), counts)


# ---------------------------------------------------------------- generation

class AuthorPool:
    """Zipf–Mandelbrot draws (weight ∝ 1/(rank + 200)) over ``size`` distinct names: at 100k papers the
    busiest author has ~0.4% of the papers and about half the authors have one paper."""

    def __init__(self, material: Material, size: int, rng: random.Random) -> None:
        initials = [""] + [f"{c}. " for c in "ABCDEFGHJKLMNPRSTW"]
        combos = len(material.first_names) * len(initials) * len(material.surnames)
        picks = rng.sample(range(combos), min(size, combos))
        n_i, n_l = len(initials), len(material.surnames)
        self.names = []
        for k in picks:
            f, rest = divmod(k, n_i * n_l)
            i, s = divmod(rest, n_l)
            self.names.append((material.first_names[f], initials[i], material.surnames[s]))
        self.cum = list(itertools.accumulate(1.0 / (r + 200) for r in range(len(self.names))))

    def draw(self, rng: random.Random, n: int) -> list[tuple[str, str, str]]:
        chosen: dict[int, None] = {}
        total = self.cum[-1]
        while len(chosen) < min(n, len(self.names)):
            chosen[bisect.bisect_left(self.cum, rng.random() * total)] = None
        return [self.names[i] for i in chosen]


def _weighted(rng: random.Random, weights: dict[str, float]) -> str:
    keys = list(weights)
    return rng.choices(keys, weights=[weights[k] for k in keys])[0]


def _title(rng: random.Random, dom: Domain, template: list[str]) -> str:
    """A bigram walk that ends where a real title ended, near the template's length."""
    target = max(3, len(template) + rng.randint(-2, 2))
    for _ in range(12):
        words = template[:2] if rng.random() < 0.7 else []
        state = ("<s>", "<s>") if not words else (words[0], words[1])
        ended = False
        while len(words) <= target + 6:
            nxt = dom.bigrams.get(state)
            w = rng.choice(nxt) if nxt else "</s>"
            if w == "</s>":
                ended = True
                break
            words.append(w)
            state = (state[1], w)
        if ended and len(words) >= min(3, target) and abs(len(words) - target) <= 4 and words != template:
            return " ".join(words)
    return " ".join(template)


def _categories(rng: random.Random, domain: str, title: str) -> list[str]:
    weights = dict(PRIMARY[domain])
    low = title.lower()
    for cat, words in KEYWORDS.items():
        if cat in weights and any(w in low for w in words):
            weights[cat] *= 6
    primary = _weighted(rng, weights)
    cats = [primary]
    for _ in range(rng.choices((0, 1, 2), weights=(45, 38, 17))[0]):
        extra = _weighted(rng, PRIMARY[domain])
        if extra not in cats:
            cats.append(extra)
    return cats


def _year(rng: random.Random) -> int:
    years = list(range(FIRST_YEAR, LAST_YEAR + 1))
    return rng.choices(years, weights=[GROWTH ** (y - FIRST_YEAR) for y in years])[0]


def _wrap(text: str) -> str:
    """The snapshot's layout: a leading space, lines wrapped at 80 columns, a trailing newline."""
    return "  " + "\n".join(textwrap.wrap(text, 78, break_on_hyphens=False)) + "\n"


def papers(n: int, seed: int = 0, material: Material | None = None) -> Iterator[dict]:
    """Yield ``n`` synthetic snapshot rows; deterministic in (seed, index)."""
    material = material or load_material()
    rng = random.Random(seed)
    pool = AuthorPool(material, AUTHOR_POOL, random.Random(seed + 1))
    per_month: Counter[tuple[int, int]] = Counter()
    templates = {d: sorted(material.domains[d].titles) for d in material.domains}
    for _ in range(n):
        domain = _weighted(rng, DOMAIN_WEIGHTS)
        dom = material.domains[domain]
        t = rng.choice(templates[domain])
        length = len(dom.sources[t])
        sentences: list[str] = []
        for pos in range(length):
            if pos == 0 and rng.random() < 0.3:
                s = dom.sources[t][0]
            else:
                src = dom.sources[rng.choice(dom.neighbours[t])]
                if pos == 0 or pos == length - 1:
                    s = src[0 if pos == 0 else -1]
                else:  # the same relative position in the source, ± one sentence
                    j = round(pos / (length - 1) * (len(src) - 1)) + rng.randint(-1, 1)
                    s = src[min(max(j, 1 if len(src) > 2 else 0), len(src) - 1)]
            if s not in sentences:
                sentences.append(s)
        title = _title(rng, dom, dom.titles[t])
        authors = pool.draw(rng, rng.choice(material.author_counts))
        year = _year(rng)
        month = rng.randint(1, 12)
        per_month[(year, month)] += 1
        num = per_month[(year, month)]
        width = 5 if year >= 2015 or num > 9999 else 4
        arxiv_id = f"{year % 100:02d}{month:02d}.{num:0{width}d}"
        day = rng.randint(1, 28)
        created = (f"{DAYS[(year * 12 + month * 3 + day) % 7]}, {day} {MONTHS[month - 1]} {year} "
                   f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d} GMT")
        versions = [{"version": "v1", "created": created}]
        if rng.random() < 0.35:
            versions.append({"version": "v2", "created": created.replace(str(year), str(min(year + 1, LAST_YEAR)))})
        names = [f"{f} {mid}{last}" for f, mid, last in authors]
        journal = rng.choice(JOURNALS) + f" {rng.randint(1, 60)} ({year + rng.randint(0, 1)})" \
            if rng.random() < 0.22 else None
        yield {
            "id": arxiv_id,
            "submitter": names[0],
            "authors": ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1],
            "title": title,
            "comments": f"{rng.randint(6, 40)} pages, {rng.randint(1, 12)} figures" if rng.random() < 0.6 else None,
            "journal-ref": journal,
            "doi": f"10.{rng.randint(1000, 9999)}/synth.{arxiv_id}" if rng.random() < 0.3 else None,
            "report-no": None,
            "categories": " ".join(_categories(rng, domain, title)),
            "license": rng.choice(LICENSES),
            "abstract": _wrap(" ".join(sentences)),
            "versions": versions,
            "update_date": f"{min(year + rng.randint(0, 1), LAST_YEAR)}-{month:02d}-{day:02d}",
            "authors_parsed": [[last, (f + " " + mid).strip(), ""] for f, mid, last in authors],
        }


def write(n: int, out: Path, seed: int = 0, progress: bool = True) -> Path:
    """Write ``n`` papers to ``out`` (atomically: a temp file, then rename)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    with tmp.open("w", encoding="utf-8") as f:
        for row in tqdm(papers(n, seed), total=n, desc="synth", unit="paper", disable=not progress):
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    tmp.replace(out)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--papers", type=int, default=1000, help="number of papers (default 1000)")
    ap.add_argument("--out", type=Path, required=True, help="JSONL file to write")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    log.info("synth: %d papers, seed %d → %s", args.papers, args.seed, args.out)
    write(args.papers, args.out, args.seed, progress=not args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
