"""Filters a question names: authors, categories and years ("papers by Zico Kolter", "Deep RL papers",
"since 2020") and collections ("in my RLHF collection"), resolved against what the store actually holds.

Conservative on purpose: a wrong filter silently hides the right paper. Authors match only names
present in the store (a bare surname only with a cue such as "by", "'s" or "et al."); a category only
when the phrase clearly names it ("X papers", "in the X category", "listed under X"), never a bare
topic word; years only when the collection has years at all; a named collection only when its name is
followed or preceded by "collection" (or "reading list").
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import cast

from rag.analysis import TOKEN, analyze, fold
from rag.answer import AppliedFilters
from rag.index.filter_catalog import CatalogUnreadable, FilterCatalog, category_stem
from rag.index.lexical import LexicalIndex
from rag.index.paper_query import PaperQuery
from rag.index.store import ChromaStore

log = logging.getLogger(__name__)

_CUE_AFTER = frozenset(analyze("paper papers work works research article articles study studies publication "
                               "publications category categories area field track section"))
_FILLER = frozenset(analyze("application applications related"))
_CUE_BEFORE = re.compile(r"(?:\b(?:filed|listed|classified|categori[sz]ed|tagged|grouped|sorted|falls?|appears?)\s+"
                         r"(?:under|in|into|as)|\bpapers?\s+(?:are\s+|were\s+)?(?:in|under)|\bcategor(?:y|ies)"
                         r"(?:\s+(?:of|called|named))?)\s+(?:the\s+)?$", re.I)
_AUTHOR_AFTER = re.compile(r"^(?:\s*['\u2019]s\b|\s+et\.?\s+al\b|\s+and\s+(?:colleagues|co-?authors|collaborators|"
                           r"coworkers|co-workers|team)\b|\s+(?:group|lab|team|paper|papers|work)\b)", re.I)
_AUTHOR_BEFORE = re.compile(r"\b(?:by|from)\s+$", re.I)
_AUTHOR_LIST = re.compile(r"^\s*(?:,|,?\s*and|,?\s*or|&)\s*$", re.I)
_STRIP_AFTER_NAME = re.compile(r"^(?:\s*['\u2019]s)?(?:\s+et\.?\s+al\.?|\s+and\s+(?:colleagues|co-?authors|"
                               r"collaborators|coworkers|co-workers)|\s+(?:group|lab|team))?", re.I)
_YEAR = r"((?:19|20)\d\d)"
_YEAR_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"\b(?:between|from)\s+{_YEAR}\s+(?:and|to|until|through)\s+{_YEAR}\b", re.I), "range"),
    (re.compile(rf"\b{_YEAR}\s*[-\u2013]\s*{_YEAR}\b"), "range"),
    (re.compile(rf"\b(?:since|from)\s+{_YEAR}\s+(?:on|onwards?|and\s+later)\b", re.I), "from"),
    (re.compile(rf"\bsince\s+{_YEAR}\b", re.I), "from"),
    (re.compile(rf"\bafter\s+{_YEAR}\b", re.I), "after"),
    (re.compile(rf"\bbefore\s+{_YEAR}\b", re.I), "before"),
    (re.compile(rf"\b(?:until|up\s+to|through)\s+{_YEAR}\b", re.I), "to"),
    (re.compile(rf"\b(?:from|in|of|published\s+in|during)\s+{_YEAR}\b", re.I), "exact"),
    (re.compile(rf"\b{_YEAR}\s+(?=papers?\b|work\b|publications?\b|articles?\b)", re.I), "exact"),
]


_CACHE: dict[str, tuple[tuple[int, int], FilterCatalog]] = {}
_CACHE_LOCK = threading.Lock()


def catalog_for(lexical: LexicalIndex, store: ChromaStore) -> FilterCatalog:
    """The store's catalog: the SQLite file saved with its lexical index (synced first), opened once per
    index generation — never built from every paper's row in Chroma, never loaded whole."""
    lexical.sync(store)
    key, state = str(lexical.root), lexical.state
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit and hit[0] == state:
            return hit[1]
    try:
        cat = FilterCatalog.open(lexical.catalog_path)
    except CatalogUnreadable as e:
        # Torn or missing: rebuild the index (the catalog is written with it) rather than trust either.
        log.warning("%s; rebuilding the lexical index at %s", e, lexical.root)
        lexical.invalidate()
        lexical.sync(store)
        state = lexical.state
        cat = FilterCatalog.open(lexical.catalog_path)
    with _CACHE_LOCK:
        _CACHE[key] = (state, cat)
    return cat


@dataclass
class ParsedQuestion:
    """Filters found in a question, the question without them, and notes for the user."""

    filters: PaperQuery
    cleaned: str
    notes: list[str] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)


def _tokens(text: str) -> list[tuple[str, int, int]]:
    """(folded token, start, end) of each word; offsets index the original text (NFKD keeps them aligned
    only per character, so fold each match separately)."""
    return [(fold(m.group(0)), m.start(), m.end()) for m in TOKEN.finditer(text)]


def _find_authors(question: str, toks: list[tuple[str, int, int]], cat: FilterCatalog,
                  taken: list[tuple[int, int]]) -> list[tuple[str, int, int]]:
    found: list[tuple[str, int, int]] = []
    words = [t for t, _, _ in toks]
    i = 0
    while i < len(toks):
        best = None
        for name, display in cat.names_from(words[i]):
            if tuple(words[i:i + len(name)]) == name:
                best = name, display
                break
        if best:
            found.append((best[1], toks[i][1], toks[i + len(best[0]) - 1][2]))
            i += len(best[0])
            continue
        word, start, end = toks[i]
        surname = cat.surname(word)
        cued = bool(_AUTHOR_AFTER.match(question[end:]) or _AUTHOR_BEFORE.search(question[:start])
                    or (found and _AUTHOR_LIST.match(question[found[-1][2]:start])))
        if surname and cued and question[start:start + 1].isupper() and not any(s <= start < e for s, e in taken):
            found.append((surname, start, end))
        i += 1
    return found


def _find_categories(question: str, toks: list[tuple[str, int, int]], cat: FilterCatalog) -> list[tuple[str, int, int]]:
    stems = [(category_stem(word), s, e) for word, s, e in toks if word != "and"]  # as the catalog's keys
    words = [w for w, _, _ in stems]
    occ: list[tuple[str, int, int, int, int]] = []  # name, first tok, last tok (excl), start, end
    for key, name in cat.categories.items():
        n = len(key)
        for i in range(len(words) - n + 1):
            if tuple(words[i:i + n]) == key:
                occ.append((name, i, i + n, stems[i][1], stems[i + n - 1][2]))
    if not occ:
        return []
    occ.sort(key=lambda o: (o[1], -(o[2] - o[1])))
    cued: list[tuple[str, int, int]] = []
    # Chains of adjacent category phrases ("computer vision applications") share one cue.
    i = 0
    while i < len(occ):
        chain = [occ[i]]
        j = i + 1
        while j < len(occ) and occ[j][1] <= chain[-1][2] and not re.search(r"[?.!;:]",
                                                                             question[chain[-1][4]:occ[j][3]]):
            chain.append(occ[j])
            j += 1
        end_tok = max(o[2] for o in chain)
        k = end_tok
        while k < len(words) and k - end_tok < 2 and words[k] in _FILLER:
            k += 1
        after = k < len(words) and words[k] in _CUE_AFTER and not re.search(
            r"[?.!;:]", question[chain[-1][4]:stems[k][1]])
        before = _CUE_BEFORE.search(question[:chain[0][3]])
        if after or before:
            # The cue words go with the phrase ("in the Deep RL category" → ""), except "papers": it still
            # says what is asked for.
            start = before.start() if before and not before.group(0).lower().startswith("paper") else chain[0][3]
            end = stems[k][2] if after and words[k] != "paper" else max(o[4] for o in chain)
            cued.extend((o[0], start, end) for o in chain)
        i = j
    return cued


def _find_years(question: str) -> tuple[int | None, int | None, list[tuple[int, int]], str]:
    for pat, kind in _YEAR_PATTERNS:
        m = pat.search(question)
        if not m:
            continue
        y = [int(g) for g in m.groups() if g]
        if kind == "range":
            lo, hi = min(y), max(y)
        elif kind == "from":
            lo, hi = y[0], None
        elif kind == "after":
            lo, hi = y[0] + 1, None
        elif kind == "before":
            lo, hi = None, y[0] - 1
        elif kind == "to":
            lo, hi = None, y[0]
        else:
            lo = hi = y[0]
        return lo, hi, [(m.start(), m.end())], m.group(0).strip()
    return None, None, [], ""


_SET_WORD = r"(?:collection|reading[\s-]+list|folder)"
_QUOTE_OPEN, _QUOTE_CLOSE = "[\"“'‘]?", "[\"”'’]?"


def mentions_collection(question: str) -> bool:
    """Whether the question may name a collection (so the names are read only then)."""
    return re.search(rf"\b{_SET_WORD}\b", question, re.I) is not None


def _find_collection(question: str, names: Sequence[str]) -> tuple[str, int, int] | None:
    """A collection the question names: "in my RLHF collection", "from the collection 'To read'",
    "within the Surveys/RL reading list". A nested collection may be named by its last part when no other
    collection ends the same way (when several do, the name is ``"a" | "b"``: the candidates, for a note).
    The longest name wins."""
    leaves: dict[str, list[str]] = {}
    for n in names:
        leaves.setdefault(n.rsplit("/", 1)[-1].casefold(), []).append(n)
    spellings = [(n, n) for n in names] + [(v[0].rsplit("/", 1)[-1], " | ".join(sorted(v)) if len(v) > 1 else v[0])
                                           for v in leaves.values() if any("/" in n for n in v)]
    for said, name in sorted(spellings, key=lambda kv: -len(kv[0])):
        word = re.escape(said)
        lead = r"(?:\b(?:in|from|within|of|among|across)\s+)?(?:(?:my|our|the|this)\s+)?"
        for pat in (rf"{lead}{_QUOTE_OPEN}(?<![\w-]){word}(?![\w-]){_QUOTE_CLOSE}\s+{_SET_WORD}\b",
                    rf"{lead}{_SET_WORD}\s+(?:called\s+|named\s+)?{_QUOTE_OPEN}(?<![\w-]){word}(?![\w-])"
                    rf"{_QUOTE_CLOSE}"):
            m = re.search(pat, question, re.I)
            if m:
                return name, m.start(), m.end()
    return None


def _remove(question: str, spans: list[tuple[int, int]]) -> str:
    out, last = [], 0
    for s, e in sorted(spans):
        if s < last:
            continue
        out.append(question[last:s])
        last = e
    out.append(question[last:])
    text = "".join(out)
    text = re.sub(r"\b(?:by|from)(?:\s*(?:and|or|&|,)\b)*\s*(?=[?.!,;:]|$)", "", text, flags=re.I)
    text = re.sub(r"\s+([?.!,;:])", r"\1", text)
    return re.sub(r"\s+", " ", text).strip(" ,;")


def parse_question(question: str, cat: FilterCatalog, collections: Sequence[str] = ()) -> ParsedQuestion:
    """Find the filters a question names; return them with the question minus those phrases.
    ``collections`` are the names of the store's collections (none: no collection is looked for)."""
    toks = _tokens(question)
    notes: list[str] = []
    spans: list[tuple[int, int]] = []
    q = PaperQuery()
    named = _find_collection(question, collections) if collections else None
    if named and " | " in named[0] and named[0] not in collections:
        notes.append(f"the question names a collection that could be any of {named[0].replace(' | ', ', ')}; none "
                     "applied: give the full name")
    elif named:
        q.collection = named[0]
        spans.append(named[1:])

    cats = _find_categories(question, toks, cat)
    if cats:
        names = list(dict.fromkeys(c for c, _, _ in cats))
        # (a single name needs no paper sets: on a 100k store one category can hold 30k papers)
        sets = {n: cat.papers_in(n) for n in names} if len(names) > 1 else {names[0]: frozenset()}
        # Nested categories ("Computer Vision" within "Applications"): the most specific one satisfies both.
        inner = [n for n in names if all(sets[n] <= sets[m] for m in names)]
        if inner:
            q.category = min(inner, key=lambda n: len(sets[n]))
            spans.extend((s, e) for _, s, e in cats)
        else:
            notes.append(f"the question names several categories ({', '.join(names)}); none applied as a filter")
    taken = list(spans)
    authors = _find_authors(question, toks, cat, taken)
    if authors:
        names = list(dict.fromkeys(a for a, _, _ in authors))
        if len(names) == 1:
            q.author = names[0]
        else:
            q.paper_ids = sorted(set().union(*(cat.papers_by(n) for n in names)))
            notes.append(f"papers by any of: {', '.join(names)}")
        for _, s, e in authors:
            m = _STRIP_AFTER_NAME.match(question[e:])
            b = _AUTHOR_BEFORE.search(question[:s])
            spans.append((b.start() if b else s, e + (m.end() if m else 0)))
    lo, hi, yspans, phrase = _find_years(question)
    if phrase:
        if cat.has_years:
            q.year_from, q.year_to = lo, hi
            spans.extend(yspans)
        else:
            notes.append(f"no paper in this collection has a year, so '{phrase}' was not applied as a filter")
    cleaned = _remove(question, spans) if spans else question
    return ParsedQuestion(q, cleaned or question, notes, spans)


def merge_filters(parsed: PaperQuery, explicit: PaperQuery | None) -> PaperQuery:
    """Explicit filters (CLI, API, UI) win field by field over those parsed from the question."""
    if explicit is None or explicit.is_empty():
        return parsed
    out = replace(parsed)
    for name in ("author", "category", "year_from", "year_to", "collection"):
        value = getattr(explicit, name)
        if value:
            setattr(out, name, value)
    if explicit.paper_ids:
        out.paper_ids = list(explicit.paper_ids)
    return out


def filters_dict(q: PaperQuery) -> AppliedFilters:
    """The filters as the answer reports them (only the set ones)."""
    d = q.as_dict()
    d.pop("text", None)
    return cast(AppliedFilters, d)
