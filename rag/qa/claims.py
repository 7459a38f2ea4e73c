"""Claim checks: a cited statement must not contradict its source in numbers, negation, direction or names.

Term overlap and sentence cosine say a statement is on the topic of its abstract, not that the abstract
says it: "EPPO does not mitigate reward hacking" scores as high as the true sentence. These rules, run on
every cited statement by ``rag.qa.verify``, catch what a model most often gets wrong while staying on
topic, without a network model:

- numbers: every quantity in the statement (65%, 0.65, 2.65x, "2.65 times", 8K, two, a range's ends) is
  in the source, equal after unit changes (65% = 0.65, 8K = 8,000), rounded from a source value
  (2.7 from 2.65), or the difference or ratio of two values of one source sentence;
- negation: a negated word of the statement ("does not mitigate") is negated or restricted ("only",
  "without", "instead") where the source says it, and a word the evidence sentence negates is not
  asserted bare by the statement;
- direction: a direction word (increases, improves, outperforms, more, higher, rewards, first…) is not the
  opposite of the one the evidence sentence uses about the same words (penalizes, final…);
- names: acronyms, CamelCase and names with digits ("FedGMT", "CIFAR-10") occur in the source, or an
  acronym's words do ("RL" for "reinforcement learning").

Each failed rule gives a reason quoting what disagrees; no reason means the statement passes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from rag.analysis import analyze
from rag.qa.evidence import ENTITY, term_in

WINDOW = 4  # words either side of a direction word that say what it is about
SCOPE = 3  # words after a negation cue that it negates
ROUNDED = 0.03  # a statement's number may round a source value by at most this share of it
DERIVED = 0.005  # … or a difference or ratio of two source values by at most this share

# ---- words ---------------------------------------------------------------------------------------
_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*", re.U)
_NEGATION = {"not", "no", "never", "none", "neither", "nor", "cannot", "without", "fail", "fails", "failed",
             "failing", "unable", "lack", "lacks", "lacking", "nothing"}
# Words under which a negated statement can be a fair reading of a positive source ("only one pass" → "does
# not need two passes"; "instead of retraining" → "does not retrain").
_RESTRICTIVE = _NEGATION | {"only", "instead", "rather", "avoid", "avoids", "avoiding", "avoided", "eliminate",
                            "eliminates", "eliminating", "free", "unnecessary", "absent", "less", "fewer", "merely",
                            "solely", "single", "beyond", "unlike", "whereas", "but", "however", "limited",
                            "insufficient", "struggle", "struggles", "remains", "challenge", "challenging",
                            "difficult", "hard", "lacks", "ignore", "ignores", "neglect", "neglects", "overlook",
                            "overlooks", "inability", "impossible", "miss", "misses"}
# Words that sit between a negation cue and what it negates.
_FILLER = {"to", "be", "been", "being", "is", "are", "was", "were", "have", "has", "had", "do", "does", "did", "a",
           "an", "the", "any", "significantly", "directly", "necessarily", "always", "only", "yet", "even",
           "explicitly", "simply", "also", "just", "much", "very", "really", "substantially", "fully",
           "completely", "entirely", "actually", "generally", "typically", "still", "consistently", "reliably",
           "effectively", "sufficiently", "it", "its", "their", "them", "they", "this", "that", "these", "those",
           "we", "our", "can", "could", "will", "would", "may", "might", "should", "must", "more", "less", "as",
           "so", "too", "well", "in", "on", "of", "for", "at", "by", "with", "from", "all", "longer"}

# Opposite poles: each a set of word patterns (full matches on the lower-cased word).
_POLES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    ((r"increas\w*", r"ris(?:e|es|ing)", r"rose", r"grow(?:s|ing|n)?", r"grew", r"rais(?:e|es|ed|ing)"),
     (r"decreas\w*", r"reduc\w*", r"drop(?:s|ped|ping)?", r"declin\w*", r"diminish\w*", r"shrink\w*", r"shr[au]nk")),
    ((r"improv\w*", r"enhanc\w*", r"better", r"strengthen\w*"),
     (r"degrad\w*", r"wors\w*", r"hurts?", r"hurting", r"harms?", r"harming", r"impair\w*", r"weaken\w*",
      r"deteriorat\w*")),
    ((r"outperform\w*", r"surpass\w*", r"beats?", r"beating", r"exceed\w*", r"superior"),
     (r"underperform\w*", r"trail(?:s|ed|ing)?", r"lags?", r"lagg\w*", r"inferior")),
    ((r"more", r"greater"), (r"less", r"fewer")),
    ((r"higher", r"highest", r"larger", r"largest", r"bigger"), (r"lower", r"lowest", r"smaller", r"smallest")),
    ((r"faster", r"fastest", r"speed(?:s|ing)? up", r"accelerat\w*"), (r"slower", r"slowest", r"slow(?:s|ed)?")),
    ((r"rewards", r"rewarded", r"encourag\w*", r"promot\w*"),
     (r"penali[sz]\w*", r"punish\w*", r"discourag\w*", r"suppress\w*")),
    ((r"mitigat\w*", r"alleviat\w*", r"prevent\w*", r"curb\w*"), (r"exacerbat\w*", r"aggravat\w*", r"amplif\w*")),
    ((r"maximi[sz]\w*",), (r"minimi[sz]\w*",)),
    ((r"first", r"earliest", r"initial"), (r"final", r"last", r"latest")),
    ((r"enabl\w*", r"allow(?:s|ed|ing)?", r"facilitat\w*"), (r"hinder\w*", r"imped\w*", r"block(?:s|ed|ing)?")),
    ((r"stable", r"stability", r"stabili[sz]\w*"), (r"unstable", r"instability", r"destabili[sz]\w*")),
    ((r"efficient", r"efficiently", r"efficiency"), (r"inefficient", r"inefficiency")),
    ((r"accurate", r"accurately"), (r"inaccurate", r"inaccurately")),
    ((r"above",), (r"below",)),
    ((r"add(?:s|ed|ing)?",), (r"remov\w*", r"delet\w*")),
    ((r"converg\w*",), (r"diverg\w*",)),
    ((r"consistent", r"consistently"), (r"inconsistent", r"inconsistently")),
    ((r"robust", r"robustness"), (r"fragile", r"brittle", r"vulnerable")),
    ((r"strong", r"stronger", r"strongest"), (r"weak", r"weaker", r"weakest")),
    ((r"overestimat\w*",), (r"underestimat\w*",)),
    ((r"advantage", r"advantages", r"advantageous"), (r"disadvantage", r"disadvantages")),
    ((r"positive", r"positively"), (r"negative", r"negatively")),
    ((r"success", r"successful", r"successfully", r"succeed\w*"), (r"unsuccessful", r"failure", r"failures")),
)
# "rewards" is a direction as a verb ("EPPO rewards the increase") and no direction as a noun ("computing
# rewards, which…"); it counts only when an object follows. (An increase or a drop is a direction either way.)
_NOUN_TOO = {"rewards"}
_OBJECT_START = {"the", "a", "an", "its", "their", "his", "her", "our", "this", "these", "those", "each", "every",
                 "any", "all", "both", "more", "less", "fewer", "higher", "lower", "larger", "smaller"}
_POLE_RE = tuple((re.compile("|".join(a)), re.compile("|".join(b))) for a, b in _POLES)


@dataclass(frozen=True)
class Word:
    surface: str  # lower-cased
    terms: frozenset[str]  # its analysed terms (a stop word has none)


@lru_cache(maxsize=8192)
def words(text: str) -> tuple[Word, ...]:
    """The text's words, lower-cased, with their analysed terms; "doesn't" → "does", "not"."""
    text = text.replace("\u2019", "'").casefold()
    out: list[Word] = []
    for w in _WORD.findall(text):
        if w.endswith("n't"):
            out += [Word(w[:-3], frozenset(analyze(w[:-3]))), Word("not", frozenset())]
        elif w == "cannot":
            out += [Word("can", frozenset()), Word("cannot", frozenset())]
        else:
            out.append(Word(w, frozenset(analyze(w))))
    return tuple(out)


def _is_cue(ws: Sequence[Word], i: int) -> bool:
    """``ws[i]`` negates what follows: "not" but not "not only", "no" but not "no less"."""
    w = ws[i].surface
    if w not in _NEGATION:
        return False
    nxt = ws[i + 1].surface if i + 1 < len(ws) else ""
    prev = ws[i - 1].surface if i else ""
    if w == "not" and (nxt in {"only", "just", "merely", "necessarily"} or prev in {"or", "if", "whether"}):
        return False
    if w == "no" and nxt in {"less", "more", "longer", "matter", "doubt"}:
        return False
    return not (w == "nor" and prev == "neither")


def _head(ws: Sequence[Word], i: int) -> tuple[int, frozenset[str]] | None:
    """The first content word a cue at ``i`` negates, as (index, terms)."""
    for j in range(i + 1, min(len(ws), i + 1 + SCOPE + 2)):
        if ws[j].surface in _FILLER or ws[j].surface in _NEGATION:
            continue
        return (j, ws[j].terms) if ws[j].terms else None
    return None


def _negated(ws: Sequence[Word], j: int) -> bool:
    """A cue stands within SCOPE words before ``j``."""
    return any(_is_cue(ws, i) for i in range(max(0, j - SCOPE - 1), j))


def _context(ws: Sequence[Word], j: int, width: int = WINDOW) -> frozenset[str]:
    """Content terms within ``width`` words of ``j`` (the word itself and pole words excluded)."""
    out: set[str] = set()
    for k in range(max(0, j - width), min(len(ws), j + width + 1)):
        if k != j and ws[k].surface not in _FILLER and not any(a.fullmatch(ws[k].surface) or b.fullmatch(ws[k].surface)
                                                               for a, b in _POLE_RE):
            out |= ws[k].terms
    return frozenset(out)


def _shares(a: Iterable[str], b: frozenset[str]) -> bool:
    return any(term_in(t, b) for t in a)


def _quote(ws: Sequence[Word], j: int, before: int = 2, after: int = 3) -> str:
    return " ".join(w.surface for w in ws[max(0, j - before):j + after + 1])


# ---- numbers -------------------------------------------------------------------------------------
_NUMBER = re.compile(
    r"(?<![\w.^_\\])(?<![A-Za-z]-)"  # not part of a name: CIFAR-10, x2, L2, n^2
    r"(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d*\.\d+|\d+)"
    r"(?:\s?(%|percent(?:age)?(?:\s+points?)?|pp\b|×|x\b|times\b|-?fold\b|[kKMB]\b|thousand\b|million\b|billion\b))?"
    r"(?![\d])")
_NUMBER_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
                 "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
                 "hundred": 100, "thousand": 1000, "twice": 2, "double": 2, "doubles": 2, "doubling": 2,
                 "triple": 3, "triples": 3, "dozen": 12, "half": 0.5, "quarter": 0.25}
_SOURCE_ONLY_WORDS = {"one": 1, "single": 1, "once": 1, "pair": 2, "both": 2, "dual": 2}
_TIMES = {"\u00d7", "x", "times", "fold"}
_SCALE = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "b": 1e9, "billion": 1e9}


@dataclass(frozen=True)
class Quantity:
    text: str  # as written
    unit: str  # "%", "x" (times), or "" (a count, a plain number)
    value: float  # as written: 65 for "65%"
    decimals: int  # digits after the point as written (how far it may round a source value)
    values: frozenset[float]  # what it equals in other units too (65% → 65, 0.65; 8K → 8, 8000)


def _quantities(text: str, words_too: bool = True) -> list[Quantity]:
    out: list[Quantity] = []
    for m in _NUMBER.finditer(text):
        raw, unit = m.group(1), (m.group(2) or "").lower().strip("-")
        after = text[m.end():m.end() + 1]
        if after.isalpha() and not unit:  # "3D", "2nd", "83ms": part of a word
            continue
        v = float(raw.replace(",", ""))
        vals = {v}
        if unit.startswith(("%", "percent", "pp")):
            vals.add(v / 100)
        elif unit in _SCALE:
            vals.add(v * _SCALE[unit])
        elif 0 < v < 1:
            vals.add(v * 100)  # a fraction may be quoted as a percentage
        kind = "%" if unit.startswith(("%", "percent", "pp")) else "x" if unit in _TIMES else ""
        out.append(Quantity(m.group(0), kind, v, len(raw.split(".")[1]) if "." in raw else 0, frozenset(vals)))
    if words_too:
        for w in words(text):
            if w.surface in _NUMBER_WORDS:
                n = float(_NUMBER_WORDS[w.surface])
                out.append(Quantity(w.surface, "", n, 0, frozenset({n})))
    return out


@dataclass
class _Values:
    """What a source states: every value in every unit (for equality) and the values as written (which a
    statement may round); both for values stated and for values derived within one sentence."""

    exact: set[float]
    written: set[float]


def _source_values(sentences: Sequence[str], extra: str) -> tuple[_Values, _Values]:
    """Every value the sources state and the differences and ratios of like values stated together in one
    sentence (those a statement may derive: "from 60% to 70%" → "10 points")."""
    stated, derived = _Values(set(), set()), _Values(set(), set())
    for s in [*sentences, extra]:
        qs = _quantities(s)
        for w in words(s):
            if w.surface in _SOURCE_ONLY_WORDS:
                n = float(_SOURCE_ONLY_WORDS[w.surface])
                qs.append(Quantity(w.surface, "", n, 0, frozenset({n})))
        for q in qs:
            stated.exact |= q.values
            stated.written.add(q.value)
        # Only like with like (two percentages, two counts), and never a year: 2025 - 1 is not a claim.
        like = [q for q in qs if not (1900 <= q.value <= 2100 and q.value.is_integer())][:12]
        for i, qa in enumerate(like):
            for qb in like[i + 1:]:
                if qa.unit != qb.unit:
                    continue
                a, b = qa.value, qb.value
                found = {round(abs(a - b), 6)} | ({round(max(a, b) / min(a, b), 6)} if a and b else set())
                derived.written |= found
                derived.exact |= found | ({round(x / 100, 8) for x in found} if qa.unit == "%" else set())
    return stated, derived


def _matches(q: Quantity, source: _Values, rel: float) -> bool:
    if any(math.isclose(s, v, rel_tol=1e-6, abs_tol=1e-9) for s in q.values for v in source.exact):
        return True
    # A source value rounded ("2.7x" from 2.65x, "99%" from 99.15%), never the other way round, and only a
    # little ("1%" is not 1.3%); compared as written, so "1%" is not a rounded 0.98 (98%).
    tol = 0.5 * 10 ** -q.decimals + 1e-9
    return any(_decimals(v) > q.decimals and abs(q.value - v) <= min(tol, rel * abs(v)) for v in source.written)


def _decimals(v: float) -> int:
    s = f"{v:.6f}".rstrip("0")
    return len(s.split(".")[1]) if "." in s else 0


def number_reasons(statement: str, sentences: Sequence[str], extra: str = "") -> list[str]:
    """Quantities of the statement that neither appear in nor follow from the source."""
    stated, derived = _source_values(sentences, extra)
    bad = [q.text for q in _quantities(statement)
           if not _matches(q, stated, ROUNDED) and not _matches(q, derived, DERIVED)]
    return [f"{', '.join(dict.fromkeys(bad))} not in the abstract"] if bad else []


# ---- names ---------------------------------------------------------------------------------------
_DIGIT_NAME = re.compile(r"(?<![\w-])[^\W\d_][\w.-]*\d[\w-]*(?:\.\d+)?")
_PROPER = re.compile(r"(?<=[a-z0-9,;] )[A-Z][a-z]{2,}(?:-[A-Z]?[a-z]+)*\b")  # "Kronecker", "Tucker" mid-sentence


def _squash(text: str) -> str:
    """Case and hyphens folded, so "CIFAR-10" and "cifar10" compare equal."""
    return re.sub(r"[-\u2010-\u2013]", "", text.casefold())


def _parts(sentences: Sequence[str]) -> list[tuple[str, bool]]:
    """The source's words in order, hyphenated ones as their parts, each marked when it is not a hyphenated
    word's first part ("state-of-the-art" → state, of*, the*, art*)."""
    out: list[tuple[str, bool]] = []
    for s in sentences:
        for w in re.findall(r"[^\W\d_]+(?:-[^\W\d_]+)*", s.casefold()):
            out += [(p, i > 0) for i, p in enumerate(w.split("-"))]
    return out


def _expands(acronym: str, parts: Sequence[tuple[str, bool]]) -> bool:
    """Consecutive source words spell ``acronym`` ("rl": reinforcement learning; "sota": state-of-the-art).
    Each word that starts a word must be long (4+ letters for a two-letter acronym), so two short words that
    happen to start with the right letters do not count."""
    n = len(acronym)
    least = 4 if n == 2 else 3
    for i in range(len(parts) - n + 1):
        window = parts[i:i + n]
        if "".join(p[0] for p, _ in window) == acronym and all(inner or len(p) >= least for p, inner in window):
            return True
    return False


def name_reasons(statement: str, source_terms: frozenset[str], sentences: Sequence[str], extra: str = "") -> list[str]:
    """Named methods, datasets and metrics of the statement that the source never names. A name with digits
    ("rank-16", "llama-guard-2") must match with its digits, which analysed terms leave out; an acronym may
    be spelled out in the source instead; a capitalised word inside the sentence ("Kronecker") is a name too."""
    source = _squash(" ".join([*sentences, extra]))
    bad: list[str] = []
    for m in _DIGIT_NAME.finditer(statement):
        name = m.group(0).rstrip(".")
        if not re.search(r"(?<!\w)" + re.escape(_squash(name)) + r"(?!\w)", source):
            bad.append(name)
    parts: list[tuple[str, bool]] | None = None
    missing: set[str] = set()
    named = [frozenset(t for part in m.group(0).split("-") if re.search(r"[A-Z0-9]", part) for t in analyze(part))
             for m in ENTITY.finditer(statement)]  # the names evidence.entities finds, as written
    named += [frozenset(analyze(m.group(0))) for m in _PROPER.finditer(statement)]
    for terms in named:
        for t in terms:
            if not t.isascii() or term_in(t, source_terms):
                continue  # math symbols ("χ²") are written many ways
            if t.isalpha() and 2 <= len(t) <= 6:
                parts = parts if parts is not None else _parts([*sentences, extra])
                if _expands(t, parts):
                    continue
            missing.add(t)
    for m in re.finditer(r"[^\s,;:()\[\]]+", statement):
        word = m.group(0).rstrip(".")
        if missing & set(analyze(word)) and word not in bad:
            bad.append(word)
    return [f"{', '.join(bad)} not named in the abstract"] if bad else []


# ---- negation and direction ----------------------------------------------------------------------
def negation_reasons(statement: str, sentences: Sequence[str], evidence: str) -> list[str]:
    """The statement negates what the source asserts, or asserts what its evidence sentence negates."""
    ws = words(statement)
    reasons: list[str] = []
    for i in range(len(ws)):
        if not _is_cue(ws, i):
            continue
        head = _head(ws, i)
        if head is None:
            continue
        _, terms = head
        seen = None
        agrees = False
        for s in sentences:
            sw = words(s)
            for j, w in enumerate(sw):
                if not w.terms or not any(term_in(t, w.terms) or term_in(u, terms) for t in terms for u in w.terms):
                    continue
                if any(sw[k].surface in _RESTRICTIVE for k in range(max(0, j - WINDOW), min(len(sw), j + WINDOW + 1))):
                    agrees = True
                    break
                seen = seen or _quote(sw, j)
            if agrees:
                break
        if seen and not agrees:
            reasons.append(f"says \u201c{_quote(ws, i, 1, 2)}\u201d where the abstract says \u201c{seen}\u201d")
    ew = words(evidence)
    stated = frozenset().union(*(w.terms for w in ws)) if ws else frozenset()
    for i in range(len(ew)):
        if not _is_cue(ew, i):
            continue
        head = _head(ew, i)
        if head is None:
            continue
        j, terms = head
        nxt = _head(ew, j)  # the negated phrase's next word too: "do not consider the global objective"
        scope = [terms] + ([nxt[1]] if nxt else [])
        if not all(_shares(t, stated) for t in scope):
            continue
        for k, w in enumerate(ws):
            if w.terms and _shares(terms, w.terms):
                near = range(max(0, k - WINDOW - 1), min(len(ws), k + WINDOW + 1))
                if not any(ws[x].surface in _RESTRICTIVE for x in near):
                    reasons.append(f"says \u201c{_quote(ws, k, 1, 2)}\u201d where the abstract says "
                                   f"\u201c{_quote(ew, i, 1, 3)}\u201d")
                break
    return reasons


def _as_verb(ws: Sequence[Word], j: int) -> bool:
    """``ws[j]`` is not a noun-or-verb word used as a noun: "rewards the increase" yes, "computing rewards," no."""
    if ws[j].surface not in _NOUN_TOO:
        return True
    return j + 1 < len(ws) and ws[j + 1].surface in _OBJECT_START


def direction_reasons(statement: str, evidence: str) -> list[str]:
    """A direction word of the statement is the opposite of the evidence sentence's about the same words."""
    ws, ew = words(statement), words(evidence)
    reasons: list[str] = []
    for a, b in _POLE_RE:
        for mine, other in ((a, b), (b, a)):
            for j, w in enumerate(ws):
                if not mine.fullmatch(w.surface) or _negated(ws, j) or not _as_verb(ws, j):
                    continue
                around = _context(ws, j)
                same = [k for k, e in enumerate(ew) if mine.fullmatch(e.surface) and _shares(around, _context(ew, k))]
                flip = [k for k, e in enumerate(ew) if other.fullmatch(e.surface) and not _negated(ew, k)
                        and _shares(around, _context(ew, k))]
                if flip and not same:
                    reasons.append(f"says \u201c{_quote(ws, j, 1, 2)}\u201d where the abstract says "
                                   f"\u201c{_quote(ew, flip[0], 1, 2)}\u201d")
                    break
    return reasons


# ---- all rules -----------------------------------------------------------------------------------
def check(statement: str, sentences: Sequence[str], source_terms: frozenset[str], evidence: str,
          extra: str = "") -> list[str]:
    """Why ``statement`` is not what its source says; empty when every rule passes.

    ``sentences``: the cited abstracts' sentences; ``source_terms``: their analysed terms with title and label;
    ``evidence``: the sentence that best matches the statement; ``extra``: more source text whose numbers
    count (title, label, year)."""
    return (number_reasons(statement, sentences, extra) + name_reasons(statement, source_terms, sentences, extra)
            + negation_reasons(statement, sentences, evidence) + direction_reasons(statement, evidence))
