"""How paperchat names a paper's authors, in the three forms it shows: a list of names ("A, B, C et al.") and
the surnames of a label ("Miao et al.: …") or of an answer's prose ("Miao et al. propose …").

The one place these are formatted: references, the library table, exports, prompts and the CLI take the list;
``rag.records`` builds labels with ``label_surnames``; the extractive answers attribute with ``prose_surnames``.
"""

from __future__ import annotations

from collections.abc import Sequence


def author_list(authors: Sequence[str], n: int = 3) -> str:
    """The first ``n`` names, then "et al." when there are more: "A, B, C et al." (plain text, not escaped;
    blank names skipped)."""
    names = [a for a in authors if a and a.strip()]
    return ", ".join(names[:n]) + (" et al." if len(names) > n else "")


def label_surnames(authors: Sequence[str]) -> str:
    """How a label names the authors: "Rudin", "Cheng & Amiri", "Miao et al." ("" with no authors)."""
    if not authors:
        return ""
    last = authors[0].split()[-1] if authors[0].split() else authors[0]
    if len(authors) == 1:
        return last
    return f"{last} & {authors[1].split()[-1]}" if len(authors) == 2 and authors[1].split() else f"{last} et al."


def prose_surnames(authors: Sequence[str]) -> str:
    """How an answer's sentence names the authors: "Rudin", "Cheng and Amiri", "Miao et al." ("" with none)."""
    last = [a.split()[-1] for a in authors if a.split()]
    if not last:
        return ""
    if len(last) == 1:
        return last[0]
    if len(last) == 2:
        return f"{last[0]} and {last[1]}"
    return f"{last[0]} et al."
