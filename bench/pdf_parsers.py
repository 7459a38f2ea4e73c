"""PDF text extraction compared on the shared PDFs: pypdfium2 (PDFium) against pypdf, then paperchat's own reading.

    python -m bench.pdf_parsers [--pdfs DIR] [--repeats N] [--no-write]

For each PDF of ``../shared/pdfs`` (MANIFEST.tsv says what each is) and each parser: pages, the median time of
``--repeats`` full extractions, pages/s, characters, ligature characters left (ﬁ ﬂ ﬀ ﬃ ﬄ), whether line-end
hyphens are marked apart from real ones, and what happened on the bad files. Reading order is checked on two
two-column papers by sentences that run over several lines of one column (found whole only when the columns
are not interleaved), after the same line-end mending for both parsers. Last, the chosen parser through
paperchat (``rag.ingest.fulltext``: read, clean, passages, describe) in pages/s. Writes its section of
docs/fulltext.md.
"""

from __future__ import annotations

import argparse
import csv
import logging
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from bench.report import machine, update_section

log = logging.getLogger("bench.pdf_parsers")
ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT.parent / "shared" / "pdfs"
DOC = ROOT / "docs" / "fulltext.md"
LIGATURES = "\ufb00\ufb01\ufb02\ufb03\ufb04"
ORDER = {  # file prefix → a sentence over several lines of one column
    "arxiv-1512.03385": "Deep networks naturally integrate low/mid/high-level features [50] and classifiers in an "
                        "end-to-end multilayer fashion",
    "acm-pldi": "If one of the guards fails (if control flow is different, or a value of a different type is "
                "generated), the trace exits.",
}


def pdfium_pages(path: Path) -> list[str]:
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(str(path))
    try:
        return [doc[i].get_textpage().get_text_range() for i in range(len(doc))]
    finally:
        doc.close()


def pypdf_pages(path: Path) -> list[str]:
    from pypdf import PdfReader

    reader = PdfReader(str(path))
    if reader.is_encrypted:
        reader.decrypt("")
    return [page.extract_text() or "" for page in reader.pages]


PARSERS: dict[str, Callable[[Path], list[str]]] = {"pypdfium2": pdfium_pages, "pypdf": pypdf_pages}


def _timed(fn: Callable[[Path], list[str]], path: Path, repeats: int) -> tuple[list[str] | str, float]:
    times: list[float] = []
    out: list[str] | str = []
    for _ in range(repeats):
        t = time.perf_counter()
        try:
            out = fn(path)
        except Exception as e:  # noqa: BLE001 - a parser's failure is a result here
            out = f"{type(e).__name__}: {e}"[:80]
        times.append(time.perf_counter() - t)
    return out, statistics.median(times)


def _ordered(pages: list[str], sentence: str) -> bool:
    from rag.ingest.fulltext.clean import dehyphenate, mend_characters

    return sentence in " ".join(" ".join(dehyphenate(mend_characters(p)).split()) for p in pages)


def compare(folder: Path, repeats: int) -> list[dict[str, object]]:
    rows = []
    with open(folder / "MANIFEST.tsv", encoding="utf-8") as f:
        names = [r["file"] for r in csv.DictReader(f, delimiter="\t")]
    for name in names:
        for parser, fn in PARSERS.items():
            out, secs = _timed(fn, folder / name, repeats)
            row: dict[str, object] = {"file": name, "parser": parser, "seconds": secs}
            if isinstance(out, str):
                row.update(pages=0, chars=0, error=out)
            else:
                text = "".join(out)
                row.update(pages=len(out), chars=len(text), ligatures=sum(text.count(c) for c in LIGATURES),
                           marked_hyphens=text.count("\ufffe"), error="")
                for prefix, sentence in ORDER.items():
                    if name.startswith(prefix):
                        row["order"] = _ordered(out, sentence)
            rows.append(row)
            log.info("%s", row)
    return rows


def paperchat_rate(folder: Path, repeats: int) -> tuple[int, float, int]:
    """Pages, median seconds and passages of paperchat's reading of every readable shared PDF."""
    from rag.errors import InputError
    from rag.ingest.fulltext import PdfText, clean, describe, passages

    def once() -> tuple[int, int]:
        pages = count = 0
        for path in sorted(folder.glob("*.pdf")):
            try:
                raw = PdfText(path, 10_000).read()
            except InputError:
                continue
            doc = clean(raw)
            describe(raw, doc)
            count += len(passages(doc))
            pages += len(raw.pages)
        return pages, count

    times, result = [], (0, 0)
    for _ in range(repeats):
        t = time.perf_counter()
        result = once()
        times.append(time.perf_counter() - t)
    return result[0], statistics.median(times), result[1]


def table(rows: list[dict[str, object]]) -> str:
    lines = ["| file | parser | pages | s | pages/s | chars | ligatures left | line-end hyphens marked | "
             "column order | result |", "|---|---|--:|--:|--:|--:|--:|--:|---|---|"]
    for r in rows:
        secs = float(r["seconds"])  # type: ignore[arg-type]
        pages = int(r["pages"])  # type: ignore[call-overload]
        rate = f"{pages / secs:.1f}" if pages and secs else "–"
        order = {True: "right", False: "wrong"}.get(r.get("order"), "")  # type: ignore[arg-type]
        result = r["error"] or ("no text" if not r["chars"] else "read")
        lines.append(f"| {str(r['file'])[:44]} | {r['parser']} | {pages} | {secs:.2f} | {rate} | {r['chars']} | "
                     f"{r.get('ligatures', '')} | {r.get('marked_hyphens', '')} | {order} | {result} |")
    return "\n".join(lines)


def totals(rows: list[dict[str, object]]) -> str:
    out = []
    for parser in PARSERS:
        mine = [r for r in rows if r["parser"] == parser and r["pages"]]
        pages = sum(int(r["pages"]) for r in mine)  # type: ignore[call-overload]
        secs = sum(float(r["seconds"]) for r in mine)  # type: ignore[arg-type]
        out.append(f"{parser}: {pages} pages in {secs:.2f} s = {pages / secs:.1f} pages/s")
    return "; ".join(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pdfs", type=Path, default=DEFAULT)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-write", action="store_true", help="print, do not write docs/fulltext.md")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    log.info("pdf_parsers: pdfs=%s repeats=%d write=%s", args.pdfs, args.repeats, not args.no_write)
    load = os.getloadavg()[0]  # the machine is shared: the figures scale with what else runs
    rows = compare(args.pdfs, args.repeats)
    pages, secs, count = paperchat_rate(args.pdfs, args.repeats)
    body = (f"Measured on {machine()} with `python -m bench.pdf_parsers --repeats {args.repeats}` (median of "
            f"{args.repeats} runs per file; the machine was shared with other jobs: load average {load:.1f} at the "
            f"start, {os.getloadavg()[0]:.1f} at the end).\n\n"
            f"Extraction only, all files that opened: {totals(rows)}.\n\n"
            f"paperchat's reading with pypdfium2 (read, clean, describe, cut into passages), every readable "
            f"shared PDF: {pages} pages in {secs:.2f} s = **{pages / secs:.1f} pages/s** ({count} passages of "
            f"at most 200 tokens).\n\n" + table(rows))
    print(body)
    if not args.no_write:
        update_section("pdf-parsers", body, doc=DOC)


if __name__ == "__main__":
    main()
