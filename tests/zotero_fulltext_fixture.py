"""A small Zotero data folder with full text, for ``ingest --full-text`` on a Zotero library.

``build_library(folder)`` writes ``folder/zotero.sqlite`` (Zotero 7's schema 124, built by
``tests.zotero_fixture``) and ``folder/storage/<attachment key>/`` the way Zotero lays them out:

* fastText (``FASTTEXT``): abstract in Zotero, its PDF (``../shared/pdfs``, 5 pages);
* PPCoin (``PPCOIN``): **no abstract** in Zotero, its PDF (the shared one with a broken xref, 6 pages);
* Flajolet–Martin (``COUNTING``): abstract in Zotero, its PDF is the shared scan without a text layer, so
  Zotero's ``.zotero-ft-cache`` is read instead; the cache is written here (three pages, form feeds between
  them), restating the paper's own constants;
* a BM25 explainer web page (``BM25``): abstract in Zotero, a snapshot whose only text is a
  ``.zotero-ft-cache`` without page breaks (pages unknown).

``QUESTIONS`` are answered only by a paper's body: (question, paper key, what the answer says, page or None).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.zotero_fixture import Entry, build

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "pdfs"
PDFS = {"fasttext": "arxiv-1607.01759-fasttext-bag-of-tricks-acl-2col.pdf",
        "ppcoin": "bad-broken-xref-2012-king-nadal-ppcoin.pdf",
        "scan": "bad-scanned-imageonly-1985-flajolet-martin-probabilistic-counting.pdf"}

FASTTEXT, PPCOIN, COUNTING, BM25 = "FTXT0001", "PPCN0002", "FLAJ0003", "BLOG0004"

FASTTEXT_ABSTRACT = (
    "This paper explores a simple and efficient baseline for text classification. Our experiments show that our "
    "fast text classifier fastText is often on par with deep learning classifiers in terms of accuracy, and many "
    "orders of magnitude faster for training and evaluation. We can train fastText on more than one billion words "
    "in less than ten minutes using a standard multicore CPU, and classify half a million sentences among 312K "
    "classes in less than a minute.")
COUNTING_ABSTRACT = (
    "We present a class of probabilistic counting algorithms with which one can estimate the number of distinct "
    "elements in a large collection of data, typically a large file stored on disk, in a single pass using only "
    "a small additional storage and only a few operations per element scanned. The algorithms are based on "
    "statistical observations made on bits of hashed values of records.")
BM25_ABSTRACT = ("A blog post explaining how okapi BM25 ranks documents by term frequency saturation and document "
                 "length normalisation.")

COUNTING_CACHE = "\f".join([
    "Probabilistic Counting Algorithms for Data Base Applications\nPhilippe Flajolet and G. Nigel Martin\n"
    "1. Introduction\nEstimating the number of distinct elements of a large file is a problem of query "
    "optimisation in data base systems. Sorting the file answers it exactly but costs many passes.\n",
    "2. The basic counting procedure\nEach record is hashed into a binary string, and a bitmap records the "
    "positions of the first one-bit seen among the hashed values. The position R of the leftmost zero of the "
    "bitmap estimates the logarithm of the number of distinct elements. The estimate of the number of distinct "
    "elements is 2 to the power R divided by the correction factor phi, where phi = 0.77351.\n",
    "3. Probabilistic counting with stochastic averaging\nThe records are distributed among m bitmaps by "
    "their hashed values, and the averages of the positions are combined. The standard error is close to "
    "0.78 divided by the square root of m, so that m = 64 bitmaps give an accuracy of about 10 percent.\n",
])
BM25_CACHE = (
    "BM25 explained\nSearch Team\n1 What BM25 computes\nOkapi BM25 scores a document for a query by adding, for "
    "each query term, its inverse document frequency times a saturated term frequency. Long documents are "
    "normalised by their length relative to the average document length.\n2 The parameters we use\nThe term "
    "frequency saturation parameter k1 and the length normalisation parameter b are free. We set k1 = 1.2 and "
    "b = 0.75, the values Lucene uses by default, and we never tuned them on our collection.\n")

QUESTIONS = [
    ("How many hidden units does fastText use for sentiment analysis?", FASTTEXT, "10 hidden units", 3),
    ("What mint rate per coin-year does PPCoin use?", PPCOIN, "1 cent per coin-year", 3),
    ("What is the value of the correction factor phi in probabilistic counting?", COUNTING, "0.77351", 2),
    ("Which value of the length normalisation parameter b does the BM25 explainer use?", BM25, "b = 0.75", None),
]

ENTRIES = [
    Entry(1, FASTTEXT, "journalArticle",
          {"title": "Bag of Tricks for Efficient Text Classification", "abstractNote": FASTTEXT_ABSTRACT,
           "date": "2016-07-06 2016-07-06", "url": "https://arxiv.org/abs/1607.01759", "publicationTitle": "arXiv"},
          [("Armand", "Joulin", 0, "author"), ("Edouard", "Grave", 0, "author"),
           ("Piotr", "Bojanowski", 0, "author"), ("Tomas", "Mikolov", 0, "author")], [("NLP", 0)]),
    Entry(2, PPCOIN, "report",
          {"title": "PPCoin: Peer-to-Peer Crypto-Currency with Proof-of-Stake", "date": "2012-08-19 2012-08-19"},
          [("Sunny", "King", 0, "author"), ("Scott", "Nadal", 0, "author")], collections=[6]),
    Entry(3, COUNTING, "journalArticle",
          {"title": "Probabilistic counting algorithms for data base applications", "abstractNote": COUNTING_ABSTRACT,
           "date": "1985-10-01 1985-10-01", "DOI": "10.1016/0022-0000(85)90041-8",
           "publicationTitle": "Journal of Computer and System Sciences"},
          [("Philippe", "Flajolet", 0, "author"), ("G. Nigel", "Martin", 0, "author")]),
    Entry(4, BM25, "webpage",
          {"title": "BM25 explained", "abstractNote": BM25_ABSTRACT, "date": "2018-03-00 March 2018",
           "websiteTitle": "Search Blog", "url": "https://blog.example.org/bm25"},
          [("", "Search Team", 1, "author")]),
    Entry(11, "ATTF0011", "attachment", {"title": "Full Text PDF"}, parent=1,
          file="Joulin et al. - 2016 - Bag of Tricks for Efficient Text Classification.pdf"),
    Entry(12, "ATTP0012", "attachment", {"title": "Full Text PDF"}, parent=2,
          file="King and Nadal - 2012 - PPCoin.pdf"),
    Entry(13, "ATTS0013", "attachment", {"title": "Full Text PDF"}, parent=3,
          file="Flajolet and Martin - 1985 - Probabilistic counting.pdf"),
    Entry(14, "ATTW0014", "attachment", {"title": "Snapshot"}, parent=4, file="bm25.html", content_type="text/html"),
]


def build_library(folder: Path) -> Path:
    """The Zotero data folder (see the module doc) at ``folder``; returns ``folder``."""
    build(folder / "zotero.sqlite", 124, ENTRIES)
    files = {e.key: e.file for e in ENTRIES if e.type == "attachment"}
    for key, source in (("ATTF0011", "fasttext"), ("ATTP0012", "ppcoin"), ("ATTS0013", "scan")):
        (folder / "storage" / key).mkdir(parents=True)
        shutil.copyfile(SHARED / PDFS[source], folder / "storage" / key / files[key])
    (folder / "storage" / "ATTS0013" / ".zotero-ft-cache").write_text(COUNTING_CACHE, encoding="utf-8")
    snapshot = folder / "storage" / "ATTW0014"
    snapshot.mkdir(parents=True)
    (snapshot / "bm25.html").write_text("<html><body><h1>BM25 explained</h1></body></html>", encoding="utf-8")
    (snapshot / ".zotero-ft-cache").write_text(BM25_CACHE, encoding="utf-8")
    return folder
