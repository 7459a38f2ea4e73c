"""Claim checks: a cited statement must not contradict its source in numbers, formulas, negation, direction or names.

Term overlap and sentence cosine say a statement is on the topic of its abstract, not that the abstract
says it: "EPPO does not mitigate reward hacking" scores as high as the true sentence. These rules, run on
every cited statement by ``rag.qa.verify``, catch what a model most often gets wrong while staying on
topic, without a network model. The cited abstracts are parsed once per answer (``Source``); each statement
is then checked against that parse:

- numbers: every quantity in the statement is in the source, equal after changes of notation and unit
  (65% = 0.65 = "65 percent", 8K = 8,000, ``$10^{-3}$`` = 0.001 = 1e-3, 50× = "fifty-fold", 40% = "two-fifths",
  "an order of magnitude" = 10×), rounded from a source value (2.7 from 2.65), or the difference or ratio of two
  values of one source sentence;
- formulas: an asymptotic or power expression (``$O(n^{K/4})$``, "Õ(T^{5/8})", "n²/ε²", "(1+ε)√n") is a run of a
  source formula once both are written one way (LaTeX, Unicode and plain text; ``\\sqrt{n}`` = n^{1/2}; 5/8 = 0.625);
- negation: a negated word of the statement is negated or restricted ("only", "without", "instead") where the
  source says the same thing (the occurrence that shares most words around it), a word the source negates
  ("not", "fails to", "overlooks", "eliminates the need for", "rather than", "unlike") is not asserted bare,
  and a word is not the prefixed opposite of the source's ("tractable" / "intractable", "convex" / "non-convex");
  a total denial ("no feedback at all") is not excused by a source that only limits ("limited feedback"), and a
  denial that shares one word and nothing around it with the statement is about something else; "only X" is
  not what a source says that names X together with another thing ("X and Y", "both X and Y"); a passive
  denial after its subject ("radiation and convection effects are neglected", "X is not considered") denies it;
- direction: a direction word (increases, improves, outperforms, more, higher, upper, rewards, first, robust /
  breaks down, confirms / rules out, significant / little, associated / unrelated, every / a subset…) is not the
  opposite of the one the source uses about the same words, and "A is better than B" is not "B is better than A";
- names: acronyms, CamelCase and names with digits ("FedGMT", "CIFAR-10") occur in the source once symbols are
  folded ("L1" = ``$\\ell_1$``, "alpha" = α), or an acronym's words do ("RL" for "reinforcement learning").

Each failed rule gives a reason quoting what disagrees; no reason means the statement passes. A rule whose
finding is too often wrong on new wording gives a caution instead (``review``): quoted to the user, not counted
as unsupported. One such today: a statement's contrast ("A instead of B", "rather than B"), whose B a source
names as the alternative as often as it asserts it. Rules that tie a statement's word to a distant source word
want two words in common around both outside the evidence sentence (opposite words, prefixed opposites).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from rag.analysis import analyze
from rag.qa import notation
from rag.qa.evidence import ENTITY, term_in
from rag.qa.findings import Finding, Verdict

WINDOW = 4  # words either side of a word that say what it is about
SCOPE = 3  # words after a negation cue that it negates
ROUNDED = 0.03  # a statement's number may round a source value by at most this share of it
DERIVED = 0.005  # … or a difference or ratio of two source values by at most this share

# ---- words ---------------------------------------------------------------------------------------
_TOKEN = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*|[,;:()\u2014]", re.U)
_BOUNDARY = {",", ";", ":", "(", ")", "\u2014"}
_NEGATION = {"not", "no", "never", "none", "neither", "nor", "cannot", "without", "fail", "fails", "failed",
             "failing", "unable", "lack", "lacks", "lacking", "nothing"}
# Verbs that deny what follows them as a negation does ("overlooks rare events", "eliminates the need for
# annotations", "avoids retraining"), and contrast markers whose object is what the sentence does not do or
# say ("rather than the gradients", "instead of retraining", "unlike binary classification").
_DENY = {"overlook", "overlooks", "overlooked", "overlooking", "ignore", "ignores", "ignored", "ignoring", "neglect",
         "neglects", "neglected", "neglecting", "avoid", "avoids", "avoided", "avoiding", "eliminate", "eliminates",
         "eliminated", "eliminating", "miss", "misses", "missed", "instead", "rather", "unlike", "little", "few",
         "omit", "omits", "omitted", "omitting", "leave-out", "leaves-out", "left-out", "leaving-out",
         "break-free", "breaks-free", "breaking-free", "broke-free"}
_CUES = _NEGATION | _DENY
# What a statement can deny that way ("uses A rather than B", "avoids retraining"); not "unlike X", which names
# what is contrasted, nor "few"/"little", which may only say how much.
_STATEMENT_CUES = _CUES - {"unlike", "little", "few", "miss", "misses", "missed"}
# Contrast cues of a statement ("A instead of B", "A rather than B"): what they set aside is named, not denied.
_CONTRAST = {"instead", "rather"}
# Words under which a negated statement can be a fair reading of a positive source ("only one pass" → "does
# not need two passes"; "instead of retraining" → "does not retrain"), looked for before the word.
_RESTRICTIVE = _CUES | {"only", "unnecessary", "absent", "absence", "less", "fewer", "merely", "solely", "single",
                        "beyond", "whereas", "but", "however", "limited", "insufficient", "struggle", "struggles",
                        "remains", "challenge", "challenging", "difficult", "hard", "inability", "impossible", "poorly",
                        "remove", "removes", "removed", "removing", "obviate", "obviates", "obviating", "bypass",
                        "bypasses", "circumvent", "circumvents", "dispense", "dispenses"}
# Words after a word that negate it ("retraining is unnecessary", "annotation-free", "is not needed").
_NEGATED_AFTER = {"not", "never", "free", "unnecessary", "avoided", "eliminated", "absent", "impossible",
                  "unneeded", "needless", "cannot", "fails", "fail", "failed"}
# Words that sit between a negation cue and what it negates.
_FILLER = {"to", "be", "been", "being", "is", "are", "was", "were", "have", "has", "had", "do", "does", "did", "a",
           "an", "the", "any", "significantly", "directly", "necessarily", "always", "only", "yet", "even",
           "explicitly", "simply", "also", "just", "much", "very", "really", "substantially", "fully",
           "completely", "entirely", "actually", "generally", "typically", "still", "consistently", "reliably",
           "effectively", "sufficiently", "it", "its", "their", "them", "they", "this", "that", "these", "those",
           "we", "our", "can", "could", "will", "would", "may", "might", "should", "must", "more", "less", "as",
           "so", "too", "well", "in", "on", "of", "for", "at", "by", "with", "from", "all", "longer", "than"}
# After a denying verb, the words that only carry what is denied: "eliminates [the need for] annotations".
_CARRIER = {"need", "needs", "necessity", "use", "requirement", "requirements", "reliance", "dependence"}

# Opposite poles: each a set of word patterns (full matches on the lower-cased word or a part of a hyphenated one).
_POLES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    ((r"increas\w*", r"ris(?:e|es|ing)", r"rose", r"grow(?:s|ing|n)?", r"grew", r"rais(?:e|es|ed|ing)",
      r"boost(?:s|ed|ing)?", r"heighten\w*"),
     (r"decreas\w*", r"reduc\w*", r"drop(?:s|ped|ping)?", r"declin\w*", r"diminish\w*", r"shrink\w*", r"shr[au]nk",
      r"decay(?:s|ed|ing)?", r"lower(?:s|ed|ing)")),
    ((r"improv\w*", r"enhanc\w*", r"better", r"strengthen\w*"),
     (r"degrad\w*", r"wors\w*", r"hurts?", r"hurting", r"harms?", r"harming", r"impair\w*", r"weaken\w*",
      r"deteriorat\w*")),
    ((r"outperform\w*", r"surpass\w*", r"beats?", r"beating", r"exceed\w*", r"superior"),
     (r"underperform\w*", r"trail(?:s|ed|ing)?", r"lags?", r"lagg\w*", r"inferior")),
    ((r"more", r"greater"), (r"less", r"fewer")),
    ((r"higher", r"highest", r"larger", r"largest", r"bigger"), (r"lower", r"lowest", r"smaller", r"smallest")),
    ((r"upper",), (r"lower",)),
    ((r"faster", r"fastest", r"speed(?:s|ing)? up", r"accelerat\w*"), (r"slower", r"slowest", r"slow(?:s|ed)?")),
    # bringing an event sooner or later
    ((r"hasten\w*", r"expedit\w*"), (r"delay(?:s|ed|ing)?", r"postpon\w*", r"retard(?:s|ed|ing)?")),
    ((r"good", r"well"), (r"poor", r"poorly", r"bad", r"badly")),  # "well" only as a word of its own: see _idiom
    # reaching a level or not: "achieves near-optimal accuracy" / "falls short of optimal"
    ((r"achiev\w*", r"attain(?:s|ed|ing)?", r"match(?:es|ed|ing)?", r"competitive"),
     (r"fall(?:s|ing|en)?-(?:\w+-)?short", r"fell-(?:\w+-)?short")),
    ((r"lossless(?:ly)?",), (r"lossy", r"lossily")),
    ((r"unlimited", r"unrestricted", r"unconstrained"), (r"limited", r"restricted", r"constrained")),
    # keeping a property or giving it up
    ((r"retain\w*", r"preserv\w*", r"inherit\w*"),
     (r"los(?:e|es|ing)", r"sacrific\w*", r"forfeit\w*", r"giv(?:e|es|ing)-up", r"gave-up", r"given-up")),
    # how a solution is computed
    ((r"closed-form",), (r"iterative", r"iteratively")),
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
    ((r"robust", r"robustness", r"tolerant", r"resilient", r"resilience"),
     (r"fragile", r"brittle", r"vulnerable", r"susceptible", r"break(?:s|ing)?-down", r"broke-down",
      r"fail(?:s|ed|ing)?")),
    ((r"strong", r"stronger", r"strongest"), (r"weak", r"weaker", r"weakest", r"mild", r"milder", r"mildest")),
    # bounds on a quantity: "at least √K" is not "at most" / "bounded by √K"
    ((r"at-least", r"lower-bounded(?:-by)?"), (r"at-most", r"bounded-by", r"upper-bounded(?:-by)?")),
    ((r"overestimat\w*",), (r"underestimat\w*",)),
    ((r"advantage", r"advantages", r"advantageous"), (r"disadvantage", r"disadvantages")),
    ((r"positive", r"positively"), (r"negative", r"negatively")),
    ((r"success", r"successful", r"successfully", r"succeed\w*"), (r"unsuccessful", r"failure", r"failures")),
    ((r"reveal\w*", r"uncover\w*", r"expos(?:e|es|ed|ing)"), (r"hid(?:e|es|den|ing)", r"obscur\w*", r"conceal\w*")),
    ((r"aggressive\w*",), (r"conservative\w*", r"cautious\w*")),
    ((r"super-?linear\w*",), (r"sub-?linear\w*",)),
    ((r"linear", r"linearly"), (r"sub-?linear\w*",)),  # rates: "linear convergence" is not "sublinear convergence"
    # how fast a cost grows: each class excludes the others ("scales quadratically" is not "cubically", a factor
    # "exponential in k" is not "polynomial in k"); "linear" only as an adverb or "linear-time" (a "linear model"
    # says nothing about growth)
    ((r"linearly", r"linear-time"),
     (r"quadratic(?:ally|-time)?", r"cubic(?:ally|-time)?", r"exponential(?:ly|-time)?")),
    ((r"quadratic(?:ally|-time)?",), (r"cubic(?:ally|-time)?", r"exponential(?:ly|-time)?")),
    ((r"polynomial(?:ly|-time)?",), (r"exponential(?:ly|-time)?", r"super-?polynomial(?:ly)?")),
    ((r"logarithmic(?:ally)?",), (r"linearly", r"linear-time", r"polynomial(?:ly|-time)?")),
    ((r"same", r"identical"), (r"differ", r"differs", r"differed", r"different", r"distinct")),
    # evidence for or against a claim
    ((r"confirm\w*", r"corroborat\w*"), (r"refut\w*", r"disprov\w*", r"rul(?:e|es|ed|ing)-out")),
    # how much of something there is
    ((r"significant", r"substantial", r"considerable", r"abundant", r"plentiful", r"ample"),
     (r"little", r"negligible", r"scarce", r"scant")),
    # whether two things go together
    ((r"associated", r"related", r"correlated", r"linked", r"coupled", r"connected"),
     (r"unrelated", r"uncorrelated", r"unassociated", r"unlinked", r"decoupled", r"unconnected", r"dissociated")),
    # general opposites of scientific writing
    ((r"attract\w*",), (r"repel\w*", r"repuls\w*")),
    ((r"leading",), (r"trailing",)),
    ((r"accept(?:s|ed|ing|ance)?",), (r"reject\w*",)),
    ((r"includ(?:e|es|ed|ing)", r"inclusion"), (r"exclud(?:e|es|ed|ing)", r"exclusion")),
    ((r"easy", r"easier", r"easiest", r"easily"), (r"difficult", r"harder", r"hardest", r"difficulty")),
    ((r"cheap", r"cheaper", r"cheapest"), (r"expensive", r"costly", r"costlier")),
    ((r"optimal", r"optimally", r"optimality"), (r"sub-?optimal\w*",)),
    ((r"global", r"globally"), (r"local", r"locally")),
    ((r"exact", r"exactly"), (r"approximate", r"approximately", r"inexact\w*")),
    ((r"dense", r"densely"), (r"sparse", r"sparsely")),
    ((r"deterministic\w*",), (r"stochastic\w*", r"randomi[sz]ed")),
    ((r"explicit", r"explicitly"), (r"implicit", r"implicitly")),
    ((r"static", r"statically"), (r"dynamic", r"dynamically")),
    ((r"online",), (r"offline",)),
    ((r"centrali[sz]ed",), (r"decentrali[sz]ed",)),
    ((r"synchronous\w*",), (r"asynchronous\w*",)),
    ((r"over-?fit\w*",), (r"under-?fit\w*",)),
    ((r"over-\w+",), (r"under-\w+",)),  # "over-power a study" / "under-power" (hyphenated: not "over the data")
    ((r"majority",), (r"minority",)),
    # all of something or part of it
    ((r"every", r"entire", r"entirety", r"whole"),
     (r"subsets?", r"handful", r"portions?", r"fractions?", r"partial", r"partially")),
)
# Two-word verbs and bounds read as one word: "rules out", "breaks down", "gives up", "falls short", "at most",
# "bounded by", "leaves out".
_PHRASAL = re.compile(r"\b(?:rul(?:e|es|ed|ing)\s+out|(?:break(?:s|ing)?|broke)\s+down|"
                      r"(?:giv(?:e|es|en|ing)|gave)\s+up|(?:fall(?:s|ing|en)?|fell)\s+(?:well\s+|far\s+)?short|"
                      r"at\s+(?:least|most)|(?:(?:lower|upper)[\s-])?bounded\s+by|(?:leav(?:e|es|ing)|left)\s+out|"
                      r"(?:break(?:s|ing)?|broke)\s+free)\b")
# "rewards" is a direction as a verb ("EPPO rewards the increase") and no direction as a noun ("computing
# rewards, which…"); it counts only when an object follows. (An increase or a drop is a direction either way.)
_NOUN_TOO = {"rewards"}
_OBJECT_START = {"the", "a", "an", "its", "their", "his", "her", "our", "this", "these", "those", "each", "every",
                 "any", "all", "both", "more", "less", "fewer", "higher", "lower", "larger", "smaller"}
_POLE_RE = tuple((re.compile("|".join(a)), re.compile("|".join(b))) for a, b in _POLES)
_ANY_POLE = re.compile("|".join(p for a, b in _POLES for p in (*a, *b)))

# Prefixes that make a word's opposite ("intractable", "non-convex", "unlikely"), with what must be left.
_NEG_PREFIX = re.compile(r"(non-?|un|in|im|il|ir|dis)(.+)")
_ADJECTIVE_END = re.compile(r".{2,}(?:able|ible|ent|ant|al|ive|ic|ar|ous|ate|ete|ct|ite|ly|ity|ence|ance)")
# Words that only look prefixed: "intermediate", "important", "improvement", "discrete", "uniform", "illustrate".
_NOT_PREFIXED = re.compile(r"in(?:ter|teg|stan|dic|clu|volv|form|cid|dex|sight|put|tens|tent|her|fant|ject|spect|"
                           r"stall|struct|nat|ven|vit|dustr|cre|cur|duc|itial|no|fluen|ves|sul|sur|tui|trins)\w*|"
                           r"im(?:port|pact|plic|ple|pos(?!s)|pro|puls|ag|med|migr|min)\w*|"
                           r"dis(?:cret|tinc|tan|par|crimin|pos|cuss|play|tribut|sert|ease|tort|till|tort|cover|count|"
                           r"patch|miss|solv|tinguish)\w*|il(?:lustr|lumin|l-)\w*|ir(?:radi|on)\w*|"
                           r"uni(?:t|on|form|que|vers|fy|fi|mod|lateral|variate|gram|cod|x)\w*|under\w*")


@dataclass(frozen=True)
class Word:
    surface: str  # lower-cased; a boundary mark ("," ";" …) has no terms
    terms: frozenset[str]  # its analysed terms (a stop word has none)


# Verbs of one meaning, so a denial of one is read against an assertion of another ("needs no labels" against
# "requires labels"): each word of a group also carries the group's first word's term.
_SYNONYM_GROUPS = (("require", "need", "necessitate"), ("guarantee", "ensure", "assure"),
                   ("distinguish", "differentiate", "discriminate"), ("use", "employ"))
_SYNONYM = {t: analyze(g[0])[0] for g in _SYNONYM_GROUPS for w in g for t in analyze(w)}


def _terms(surface: str) -> frozenset[str]:
    terms = analyze(surface)
    return frozenset([*terms, *(_SYNONYM[t] for t in terms if t in _SYNONYM)])


@lru_cache(maxsize=16384)
def words(text: str) -> tuple[Word, ...]:
    """The text's words, lower-cased, with their analysed terms and clause marks; "doesn't" → "does", "not"."""
    text = text.replace("\u2019", "'").casefold()
    text = _PHRASAL.sub(lambda m: "-".join(m.group(0).split()), text)
    out: list[Word] = []
    for w in _TOKEN.findall(text):
        if w in _BOUNDARY:
            out.append(Word(w, frozenset()))
        elif w.endswith("n't"):
            out += [Word(w[:-3], _terms(w[:-3])), Word("not", frozenset())]
        elif w == "cannot":
            out += [Word("can", frozenset()), Word("cannot", frozenset())]
        else:
            out.append(Word(w, _terms(w)))
    return tuple(out)


def _is_cue(ws: Sequence[Word], i: int) -> bool:
    """``ws[i]`` negates what follows: "not" but not "not only", "no" but not "no less", "rather" before "than"."""
    w = ws[i].surface
    if w not in _CUES:
        return False
    nxt = ws[i + 1].surface if i + 1 < len(ws) else ""
    prev = ws[i - 1].surface if i else ""
    if w == "not" and (nxt in {"only", "just", "merely", "necessarily"} or prev in {"or", "if", "whether"}):
        return False
    if w == "no" and nxt in {"less", "more", "longer", "matter", "doubt"}:
        return False
    if w == "rather" and nxt != "than" or w == "instead" and nxt != "of":
        return False
    if w in {"little", "few"} and prev in {"a", "quite", "as", "so", "too"}:
        return False
    return not (w == "nor" and prev == "neither")


_ADVERBIAL = {"general", "practice", "principle", "theory", "particular", "turn", "addition", "fact"}


def _adverbial(ws: Sequence[Word], j: int) -> bool:
    """``ws[j]`` is the noun of an adverbial phrase ("cannot in general be improved", "does not in practice
    need"): it says how the claim holds, not what is denied."""
    return ws[j].surface in _ADVERBIAL and j > 0 and ws[j - 1].surface == "in"


def _head(ws: Sequence[Word], i: int) -> tuple[int, frozenset[str]] | None:
    """The first content word a cue at ``i`` negates, as (index, terms); none past a clause mark."""
    deny = ws[i].surface in _DENY
    for j in range(i + 1, min(len(ws), i + 1 + SCOPE + 3)):
        w = ws[j].surface
        if w in _BOUNDARY:
            return None
        if w in _FILLER or w in _NEGATION or (deny and w in _CARRIER) or _adverbial(ws, j):
            continue
        return (j, ws[j].terms) if ws[j].terms else None
    return None


def _negated(ws: Sequence[Word], j: int) -> bool:
    """A negation cue stands within SCOPE words before ``j``."""
    return any(ws[i].surface in _NEGATION and _is_cue(ws, i) for i in range(max(0, j - SCOPE - 1), j))


def _prefixed(surface: str) -> str | None:
    """The word a negative prefix turns around ("intractable" → "tractable", "non-convex" → "convex"), if any."""
    m = _NEG_PREFIX.fullmatch(surface)
    if not m or _NOT_PREFIXED.fullmatch(surface) or _NOT_PREFIXED.fullmatch(surface.split("-")[0]):
        return None
    prefix, rest = m.group(1), m.group(2).lstrip("-")
    if prefix.startswith("non"):
        return rest if len(rest) >= 3 else None
    if prefix == "un":
        return rest if len(rest) >= 5 else None
    return rest if len(rest) >= 5 and _ADJECTIVE_END.fullmatch(rest) else None


def _restricted(ws: Sequence[Word], j: int, strict: bool = False) -> bool:
    """The word at ``j`` is denied or restricted: a restrictive word shortly before it ("not only" restricts
    nothing; the negation closest to it counts, and a negation of a negation asserts: "does not fail on"), a
    negating one right after it ("is not needed", "annotation-free"), or a negative prefix of its own.
    ``strict``: denied only; a restriction ("limited", "only", "hard") does not count."""
    closest = -1
    for k in range(max(0, j - WINDOW - 1), j):
        w = ws[k].surface
        if w in _NEGATION and _is_cue(ws, k):
            closest = k
        elif (w in _RESTRICTIVE and w not in _NEGATION and (w not in _CUES or _is_cue(ws, k))
              and not (strict and w not in _CUES)
              and not (w in {"only", "merely", "solely"} and k and ws[k - 1].surface == "not")):
            return True
    if closest >= 0:
        before = closest - 1
        while before >= 0 and ws[before].surface in _FILLER:
            before -= 1
        if not (before >= 0 and ws[before].surface in _NEGATION and _is_cue(ws, before)):
            return True
    for k in range(j + 1, min(len(ws), j + 4)):
        if ws[k].surface in _BOUNDARY:
            break
        if ws[k].surface in _NEGATED_AFTER:
            return True
    surface = ws[j].surface
    return surface.endswith("-free") or _prefixed(surface) is not None


@lru_cache(maxsize=16384)
def _word_terms(surface: str) -> frozenset[str]:
    """A word's terms for comparing contexts: a hyphenated word's parts ("rank-1" → rank), not its joined form,
    and no bare numbers, so one word counts once."""
    return frozenset(t for t in analyze(surface.replace("-", " ")) if not t.isdigit())


@lru_cache(maxsize=65536)
def _context(ws: tuple[Word, ...], j: int, width: int = WINDOW) -> frozenset[str]:
    """Content terms of the ``width`` words either side of ``j``, clause marks not counted (the word itself,
    cues and pole words excluded)."""
    out: set[str] = set()
    for step in (-1, 1):
        k, seen = j + step, 0
        while 0 <= k < len(ws) and seen < width:
            s = ws[k].surface
            if s not in _BOUNDARY:
                seen += 1
                if s not in _FILLER and s not in _CUES and not _ANY_POLE.fullmatch(s):
                    out |= _word_terms(s)
            k += step
    return frozenset(out)


def _overlap(a: Iterable[str], b: frozenset[str]) -> int:
    return sum(1 for t in a if term_in(t, b))


def _shares(a: Iterable[str], b: frozenset[str]) -> bool:
    return any(term_in(t, b) for t in a)


def _same_word(a: frozenset[str], b: frozenset[str]) -> bool:
    return any(term_in(t, b) or term_in(u, a) for t in a for u in b)


def _quote(ws: Sequence[Word], j: int, before: int = 2, after: int = 3) -> str:
    return " ".join(w.surface for w in ws[max(0, j - before):j + after + 1] if w.surface not in _BOUNDARY)


# ---- names ---------------------------------------------------------------------------------------
_DIGIT_NAME = re.compile(r"(?<![\w-])[^\W\d_][\w.-]*\d[\w-]*(?:\.\d+)?")
_PROPER = re.compile(r"(?<=[a-z0-9,;] )[A-Z][a-z]{2,}(?:-[A-Z]?[a-z]+)*\b")  # "Kronecker", "Tucker" mid-sentence


def _squash(text: str) -> str:
    """Case and hyphens folded, so "CIFAR-10" and "cifar10" compare equal."""
    return re.sub(r"[-\u2010-\u2013]", "", text.casefold())


def _parts(texts: Sequence[str]) -> list[tuple[str, bool]]:
    """The source's words in order, hyphenated ones as their parts, each marked when it is not a hyphenated
    word's first part ("state-of-the-art" → state, of*, the*, art*)."""
    out: list[tuple[str, bool]] = []
    for s in texts:
        for w in re.findall(r"[^\W\d_]+(?:-[^\W\d_]+)*", s.casefold()):
            out += [(p, i > 0) for i, p in enumerate(w.split("-"))]
    return out


_LINKING = {"and", "of", "the", "for", "to", "in", "on", "with", "from", "by", "a", "an"}


def _expands(acronym: str, parts: Sequence[tuple[str, bool]]) -> bool:
    """Consecutive source words spell ``acronym`` ("rl": reinforcement learning; "sota": state-of-the-art).
    Each word that starts a word must be long (4+ letters for a two-letter acronym), so two short words that
    happen to start with the right letters do not count."""
    n = len(acronym)
    least = 4 if n == 2 else 3
    # Acronyms skip the small words between the words they spell ("PU" for positive and unlabeled, "QA" for
    # question answering, "MoE" spelled either way), so the words are also tried without them.
    content = [(p, inner) for p, inner in parts if inner or p not in _LINKING]
    for seq in (parts, content):
        for i in range(len(seq) - n + 1):
            window = seq[i:i + n]
            if "".join(p[0] for p, _ in window) == acronym and all(inner or len(p) >= least for p, inner in window):
                return True
    return False


# ---- the source, parsed once ---------------------------------------------------------------------
def _key(term: str) -> str:
    """Index key of a term: terms that ``term_in`` can match share their first five letters (or are equal)."""
    return term[:5]


@lru_cache(maxsize=16384)
def _poles_of(surface: str) -> tuple[tuple[int, int], ...]:
    """The (pole pair, side) a word belongs to: "increases" → ((0, 0),)."""
    return tuple((pi, side) for pi, pair in enumerate(_POLE_RE) for side, p in enumerate(pair)
                 if _pole_match(p, surface))


@lru_cache(maxsize=16384)
def _flipped_terms(surface: str) -> frozenset[str]:
    """The terms of the word a negative prefix turns around ("intractable" → tractabl), or none."""
    rest = _prefixed(surface)
    return frozenset(analyze(rest)) if rest else frozenset()


Position = tuple[int, int]  # (sentence, word)

# A passive denial after what it denies: "radiation and convection effects are neglected", "X is not considered".
_PASSIVE_DENIED = {"neglected", "ignored", "omitted", "disregarded", "excluded"}
_PASSIVE_NOT = {"considered", "included", "modelled", "modeled", "treated", "taken"}
_BE = {"is", "are", "was", "were", "been", "be"}


def _passive_denials(ws: Sequence[Word]) -> list[tuple[int, int]]:
    """(where the denying verb is, each content word of its subject): the subject runs back from "are neglected"
    / "is not considered" to the clause's start (at most six words)."""
    out = []
    for v, w in enumerate(ws):
        if v < 2:
            continue
        denied = (w.surface in _PASSIVE_DENIED and ws[v - 1].surface in _BE
                  or w.surface in _PASSIVE_NOT and ws[v - 1].surface == "not" and ws[v - 2].surface in _BE)
        if not denied:
            continue
        start = v - 1 if ws[v - 1].surface in _BE else v - 2
        for h in range(start - 1, max(-1, start - 7), -1):
            s = ws[h].surface
            if s in _BOUNDARY or s in {"that", "which", "where", "while", "whereas", "but"}:
                break
            if ws[h].terms and s not in _FILLER and s not in _COORD:
                out.append((v, h))
    return out


@dataclass
class Source:
    """The cited abstracts as the rules read them, parsed once per answer and shared by its statements: words,
    values, formulas, folded names, and indexes of where each term, prefixed opposite, direction word and
    negation cue stands."""

    sentences: tuple[str, ...]
    extra: str  # title, label, year: their names and numbers count as the paper's own
    terms: frozenset[str]  # analysed terms of the abstracts, titles and labels, and of their folded symbols
    words: tuple[tuple[Word, ...], ...]  # per sentence
    stated: notation.Values
    derived: notation.Values
    formulas: tuple[tuple[str, ...], ...]
    squashed: str  # folded text for names with digits
    loose_formulas: tuple[tuple[str, ...], ...] = ()  # ``formulas`` read loosely (``notation.loose``)
    index: dict[str, list[Position]] = field(default_factory=dict)  # term key → where a word has that term
    flipped: dict[str, list[Position]] = field(default_factory=dict)  # … has it behind a negative prefix
    poles: dict[int, list[tuple[int, Position]]] = field(default_factory=dict)  # pole pair → (side, where)
    cues: list[tuple[Position, int, frozenset[str], frozenset[str] | None]] = field(default_factory=list)
    comparisons: list[tuple[frozenset[int], int, int, frozenset[str], frozenset[str]]] = field(default_factory=list)
    counts: list[tuple[float, frozenset[str]]] = field(default_factory=list)  # each count and what it counts
    # each "A … the same <what> as B" of a sentence: (sentence, (A, what, B, where "same" is))
    equalities: list[tuple[int, tuple[frozenset[str], frozenset[str], frozenset[str], int]]] = field(
        default_factory=list)
    denied_after: set[Position] = field(default_factory=set)  # subjects of a passive denial ("X is neglected")
    _parts: list[tuple[str, bool]] | None = None

    @classmethod
    def of(cls, sentences: Sequence[str], terms: frozenset[str] = frozenset(), extra: str = "") -> Source:
        """The cited abstracts parsed, shared between answers that cite the same sentences (a paper asked about
        again, a follow-up): parsing them is most of an answer's check (~7 ms a set), and a Source is never
        changed once built (``_parts`` is a lazily filled cache of a pure function of it)."""
        return _parsed_source(tuple(sentences), terms, extra)

    @classmethod
    def build(cls, sentences: Sequence[str], terms: frozenset[str] = frozenset(), extra: str = "") -> Source:
        texts = [*sentences, extra]
        folded = notation.fold_symbols(" ".join(texts))
        stated, derived = notation.source_values(texts)
        formulas = tuple(notation.canonical(f) for t in texts for _, _, f in notation.formula_spans(t))
        every = terms | frozenset(analyze(folded)) | frozenset(t for s in texts for t in analyze(s))
        kept = tuple(f for f in formulas if f)
        src = cls(tuple(sentences), extra, every, tuple(words(s) for s in sentences), stated, derived, kept,
                  _squash(folded), tuple(notation.loose(f) for f in kept))
        for si, sw in enumerate(src.words):
            for j, w in enumerate(sw):
                pos = (si, j)
                for t in w.terms:
                    src.index.setdefault(_key(t), []).append(pos)
                for t in _flipped_terms(w.surface):
                    src.flipped.setdefault(_key(t), []).append(pos)
                for pi, side in () if _idiom(sw, j) else _poles_of(w.surface):
                    src.poles.setdefault(pi, []).append((side, pos))
                if _is_cue(sw, j):
                    head = _head(sw, j)
                    if head is None or sw[head[0]].surface.isdigit():
                        continue
                    h, hterms = head
                    nxt = _head(sw, h) if h + 1 < len(sw) and sw[h + 1].surface not in _BOUNDARY else None
                    src.cues.append((pos, h, hterms, nxt[1] if nxt else None))
            for v, h in _passive_denials(sw):
                src.cues.append(((si, v), h, sw[h].terms, None))
                src.denied_after.add((si, h))
            src.comparisons += _comparisons(sw)
            src.equalities += [(si, e) for e in _equalities(sw)]
        src.counts = [(v, _counted(a, b)) for t in texts for v, a, b in notation.counts(t)]
        return src

    def parts(self) -> list[tuple[str, bool]]:
        if self._parts is None:
            self._parts = _parts([notation.fold_symbols(s) for s in (*self.sentences, self.extra)])
        return self._parts

    def occurrences(self, terms: Iterable[str], table: dict[str, list[Position]] | None = None) -> list[Position]:
        """Where a word shares one of ``terms`` (in ``table``: the term index, or the prefixed-opposite one)."""
        table = self.index if table is None else table
        return sorted({pos for t in terms for pos in table.get(_key(t), ())})

    def context(self, pos: Position, width: int = WINDOW) -> frozenset[str]:
        return _context(self.words[pos[0]], pos[1], width)

    def evidence_index(self, evidence: str) -> int:
        """The evidence sentence's index (-1 when it is none of the source's)."""
        return next((i for i, s in enumerate(self.sentences) if s == evidence), -1)


# ---- rules ---------------------------------------------------------------------------------------
def formula_reasons(statement: str, source: Source) -> tuple[list[str], str]:
    """Formulas of the statement that are no run of a source formula; also the statement with its checked
    formulas blanked out (their numbers are judged here, not by the number rule)."""
    bad: list[str] = []
    blanked = statement
    for a, b, text in reversed(notation.formula_spans(statement)):
        tokens = notation.canonical(text)
        if not notation.checked(tokens):
            continue
        blanked = blanked[:a] + " " * (b - a) + blanked[b:]
        loose = notation.loose(tokens)
        if not any(notation.contains(f, tokens) or notation.reordered(f, tokens) for f in source.formulas) and not any(
                notation.contains(f, loose) for f in source.loose_formulas):
            bad.append(statement[a:b])
    return ([f"{', '.join(reversed(bad))} not in the abstract"] if bad else []), blanked


def number_reasons(statement: str, source: Source) -> list[str]:
    """Quantities of the statement that neither appear in nor follow from the source."""
    bad = [q.text for q in notation.quantities(statement)
           if not notation.matches(q, source.stated, ROUNDED) and not notation.matches(q, source.derived, DERIVED)]
    return [f"{', '.join(dict.fromkeys(bad))} not in the abstract"] if bad else []


def _counted(first: str, second: str) -> frozenset[str]:
    """What a number counts: the terms of the two words after it, without verb forms ("5 models using" → model)."""
    return frozenset(t for w in (first, second) if w and not w.endswith(("ing", "ed")) for t in analyze(w))


def count_reasons(statement: str, source: Source) -> list[str]:
    """A count the source states, but of something else, where the source counts the statement's thing with
    another number: "6 models and 5 datasets" for "5 models and 6 datasets"."""
    bad = []
    for value, first, second in notation.counts(statement):
        mine = _counted(first, second)
        if not mine or value not in source.stated.exact:
            continue  # a number the source never states is the number rule's
        theirs = [v for v, terms in source.counts if _shares(mine, terms)]
        if theirs and value not in theirs:
            bad.append(f"{notation.decimal(value)} {first}".strip())
    return [f"{', '.join(bad)}: the abstract counts {'these' if len(bad) > 1 else 'this'} differently"] if bad else []


def name_reasons(statement: str, source: Source) -> list[str]:
    """Named methods, datasets and metrics of the statement that the source never names. A name with digits
    ("rank-16", "llama-guard-2") must match with its digits, which analysed terms leave out; an acronym may
    be spelled out in the source instead; a capitalised word inside the sentence ("Kronecker") is a name too.
    Symbols compare folded: "L1" is ``$\\ell_1$``, "L2" is ``$L^2$``."""
    folded = notation.fold_symbols(statement)
    bad: list[str] = []
    for m in _DIGIT_NAME.finditer(folded):
        name = m.group(0).rstrip(".")
        if not re.search(r"(?<!\w)" + re.escape(_squash(name)) + r"(?!\w)", source.squashed):
            bad.append(name)
    missing: set[str] = set()
    named = [frozenset(t for part in m.group(0).split("-") if re.search(r"[A-Z0-9]", part) for t in analyze(part))
             for m in ENTITY.finditer(folded)]  # the names evidence.entities finds, as written
    # A hyphenated name counts when each part is named ("Kth-order" for "$K$th order").
    named += [frozenset(t for part in m.group(0).split("-") for t in analyze(part)) for m in _PROPER.finditer(folded)]
    for terms in named:
        for t in terms:
            if not t.isascii() or term_in(t, source.terms):
                continue  # math symbols ("χ²") are written many ways
            if t.isalpha() and 2 <= len(t) <= 6 and _expands(t, source.parts()):
                continue
            if t.isalpha() and 3 <= len(t) <= 7 and t.endswith("s") and (
                    term_in(t[:-1], source.terms) or _expands(t[:-1], source.parts())):
                continue  # a plural acronym: "SVMs" for "SVM", "MDPs" for "Markov decision processes"
            missing.add(t)
    for m in re.finditer(r"[^\s,;:()\[\]]+", folded):
        word = m.group(0).rstrip(".")
        if missing & set(analyze(word)) and word not in bad:
            bad.append(word)
    return [f"{', '.join(bad)} not named in the abstract"] if bad else []


def _followed(ws: Sequence[Word], j: int, terms: frozenset[str]) -> bool:
    """A word with these terms comes within three words after ``j``."""
    return any(ws[k].terms and _same_word(terms, ws[k].terms) for k in range(j + 1, min(len(ws), j + 4)))


_ABSOLUTE = {"whatsoever", "altogether"}


def _absolute(ws: Sequence[Word], i: int, h: int) -> bool:
    """The negation at ``i`` of the word at ``h`` is total ("no feedback at all", "none whatsoever", "not used
    at all"): then a source that only limits the word ("limited feedback", "only once") contradicts it."""
    for k in range(i + 1, min(len(ws), h + 4)):
        w = ws[k].surface
        if w in _BOUNDARY:
            return False
        if w in _ABSOLUTE or w == "at" and k + 1 < len(ws) and ws[k + 1].surface == "all":
            return True
    return False


def _negated_claims(ws: tuple[Word, ...], source: Source, cautions: list[str] | None = None) -> list[str]:
    """A negated word of the statement, where the source says the same thing (the occurrence sharing most words
    around it) without a negation or restriction. A contrast ("uses A instead of B", "rather than B") names what
    the statement sets aside, which a source mentions as the alternative as often as it asserts it: that goes to
    ``cautions`` (when given), not to the reasons."""
    reasons = []
    for i in range(len(ws)):
        if ws[i].surface not in _STATEMENT_CUES or not _is_cue(ws, i):
            continue
        head = _head(ws, i)
        if head is None:
            continue
        h, terms = head
        if any(ws[k].surface in _NEGATION for k in range(i + 1, h)):
            continue  # "does not fail on": a double negation asserts; the source's cue is checked below
        around = _context(ws, h) - terms
        found = [(_overlap(around, source.context(pos)), pos) for pos in source.occurrences(terms)
                 if _same_word(terms, source.words[pos[0]][pos[1]].terms)]
        if not found:
            continue
        best = max(n for n, _ in found)
        top = [pos for n, pos in found if n == best]
        strict = _absolute(ws, i, h)
        if not any(_restricted(source.words[si], j, strict) or (si, j) in source.denied_after for si, j in top):
            si, j = top[0]
            why = (f"says \u201c{_quote(ws, i, 1, 2)}\u201d where the abstract says "
                   f"\u201c{_quote(source.words[si], j)}\u201d")
            if ws[i].surface in _CONTRAST:
                if cautions is not None:
                    cautions.append(why)
            else:
                reasons.append(why)
    return reasons


def _denied_claims(ws: tuple[Word, ...], source: Source, ev: int) -> list[str]:
    """A word the source negates (with the word after it), asserted bare by the statement about the same thing."""
    stated = frozenset().union(*(w.terms for w in ws)) if ws else frozenset()
    wide = 2 * WINDOW
    passive = {h for _, h in _passive_denials(ws)}  # the statement's own "… are neglected"
    for (si, i), j, terms, nxt in source.cues:
        if (nxt is None and si != ev) or not _shares(terms, stated) or (nxt is not None and not _shares(nxt, stated)):
            continue
        # The statement's words in the same order ("bias annotations"), not denied there.
        k = next((k for k, w in enumerate(ws) if w.terms and _shares(terms, w.terms)
                  and (nxt is None or _followed(ws, k, nxt)) and not _restricted(ws, k) and k not in passive), None)
        if k is None:
            continue
        sw = source.words[si]
        around = _context(ws, k, wide) - terms - (nxt or frozenset())
        here = _overlap(around, _context(sw, j, wide))
        if here < 1 and (si != ev or nxt is None):
            continue  # one word in common and nothing around it: a denial about other things
        # The source also asserts it (the same words), about things as close to the statement's (closer, when the
        # denial is in the evidence sentence and the assertion elsewhere): no contradiction.
        if any(_overlap(around, source.context(pos, wide)) >= here + (si == ev and pos[0] != si)
               and not _restricted(source.words[pos[0]], pos[1])
               and (nxt is None or _followed(source.words[pos[0]], pos[1], nxt))
               for pos in source.occurrences(terms)
               if pos != (si, j) and _same_word(terms, source.words[pos[0]][pos[1]].terms)):
            continue
        return [f"says \u201c{_quote(ws, k, 1, 2)}\u201d where the abstract says \u201c{_quote(sw, i, 1, 3)}\u201d"]
    return []


def _qualified(ws: Sequence[Word], k: int) -> frozenset[str]:
    """The terms of the noun right after ``ws[k]`` (the next word, or the one after it), none if a clause mark or
    "and" / "or" comes first."""
    for x in range(k + 1, min(len(ws), k + 3)):
        if ws[x].surface in _BOUNDARY or ws[x].surface in _COORD:
            return frozenset()
        if ws[x].terms:
            return ws[x].terms
    return frozenset()


def _paired(ws: Sequence[Word], k: int) -> bool:
    """``ws[k]`` stands next to an "and" / "or": one of a pair ("convex and non-convex", "finite or infinite")."""
    return any(0 <= x < len(ws) and ws[x].surface in _COORD for x in (k - 1, k + 1))


def _swapped_qualifier(ws: Sequence[Word], k: int, base: frozenset[str], mine: frozenset[str],
                       source: Source) -> str | None:
    """The statement's word at ``k`` qualifies a noun that the source qualifies only with the word's prefixed
    opposite (``base``: the statement's word is the prefixed one, with ``mine`` its bare terms)."""
    noun = _qualified(ws, k)
    if not noun or _paired(ws, k):
        return None  # "non-convex and convex losses": both, of one noun
    opposite, same = None, False
    for si, j in source.occurrences(mine) + source.occurrences(mine, source.flipped):
        sw = source.words[si]
        flipped = _flipped_terms(sw[j].surface)
        if not _same_word(mine, flipped or sw[j].terms):
            continue
        if _paired(sw, j) and _same_word(noun, _qualified(sw, j + 2) | _qualified(sw, j)):
            same = True  # the source names both forms of the noun
        if not _same_word(noun, _qualified(sw, j)):
            continue
        if bool(flipped) == bool(base) and not _negated(sw, j):
            same = True
        elif bool(flipped) != bool(base) and not _negated(sw, j):
            opposite = (si, j)
    if opposite is None or same:
        return None
    return (f"says \u201c{_quote(ws, k, 1, 1)}\u201d where the abstract says "
            f"\u201c{_quote(source.words[opposite[0]], opposite[1], 1, 1)}\u201d")


def _prefixed_opposites(ws: tuple[Word, ...], source: Source, ev: int = -1) -> list[str]:
    """"tractable" where the source says only "intractable" about the same words, or the other way round."""
    reasons = []
    wide = 2 * WINDOW
    said = frozenset().union(*(x.terms for x in ws if x.terms))  # every word's terms, and each prefixed word's base
    turned = frozenset().union(*(_flipped_terms(x.surface) for x in ws if x.terms))
    for k, w in enumerate(ws):
        if not w.terms or len(w.surface) < 4 or _negated(ws, k):
            continue
        base = _flipped_terms(w.surface)
        mine = base or w.terms
        if _same_word(mine, said if base else turned):
            # "finite or countably infinite", "convex and non-convex losses": both, as the direction rule; but
            # each form qualifying its own noun is judged on that noun ("a non-convex objective with convex
            # constraints" where the source says "a convex objective with non-convex constraints")
            why = _swapped_qualifier(ws, k, base, mine, source)
            if why:
                reasons.append(why)
            continue
        if base:  # the statement's word is prefixed: the source's bare word is its opposite
            opposite_at = [p for p in source.occurrences(mine)
                           if not _flipped_terms(source.words[p[0]][p[1]].surface)
                           and _same_word(mine, source.words[p[0]][p[1]].terms)]
            same_at = [p for p in source.occurrences(mine, source.flipped)
                       if _same_word(mine, _flipped_terms(source.words[p[0]][p[1]].surface))]
        else:
            opposite_at = [p for p in source.occurrences(mine, source.flipped)
                           if _same_word(mine, _flipped_terms(source.words[p[0]][p[1]].surface))]
            if not opposite_at:
                continue
            same_at = [p for p in source.occurrences(mine)
                       if not _flipped_terms(source.words[p[0]][p[1]].surface)
                       and _same_word(mine, source.words[p[0]][p[1]].terms)]
        opposite_at = [p for p in opposite_at if not _negated(source.words[p[0]], p[1])]
        if not opposite_at:
            continue
        around = _context(ws, k, wide)
        opposite, where = max((_overlap(around, source.context(p, wide)), p) for p in opposite_at)
        same = max((_overlap(around, source.context(p, wide)) for p in same_at), default=-1)
        # Outside the evidence sentence, two words in common around them at least (as for direction words): one
        # shared word ties "variants" to an "invariant measure" elsewhere no more than to anything else.
        if opposite >= (1 if where[0] == ev else 2) and (same <= 0 or opposite >= same + 2):
            reasons.append(f"says \u201c{_quote(ws, k, 1, 1)}\u201d where the abstract says "
                           f"\u201c{_quote(source.words[where[0]], where[1], 1, 1)}\u201d")
    return reasons


_ONLY = {"only", "solely", "exclusively"}
_CONFINED = {"restricted", "limited", "confined"}  # "… to X"
_COORD = {"and", "or"}
_PHRASE_END = {"to", "of", "with", "in", "on", "for", "by", "at", "from", "that", "which", "is", "are", "be", "was",
               "were", "can", "will", "over", "under", "around", "within", "as"}
_MODIFIER = {"a", "an", "the", "its", "their", "both", "either", "also", "to", "on", "in", "with", "of"}


def _restriction_heads(ws: Sequence[Word]) -> list[int]:
    """Where a statement restricts to one thing: the content words of the four after "only" / "solely" (not "not
    only", nor "only if" / "only when"), or after "restricted to" / "limited to"."""
    out = []
    for i, w in enumerate(ws):
        if w.surface in _ONLY:
            if i and ws[i - 1].surface in {"not", "if", "the"}:
                continue
        elif not (w.surface in _CONFINED and i + 1 < len(ws) and ws[i + 1].surface == "to"):
            continue
        phrase: list[int] = []
        for k in range(i + 1, min(len(ws), i + 6)):
            s = ws[k].surface
            if s in _BOUNDARY or s in {"if", "when", "once", "after", "before", "than", "one", "single"}:
                break
            if s in _COORD:
                phrase = []  # "only A and B": the statement lists what it restricts to; no single thing
                break
            if phrase and s in _PHRASE_END:
                break  # the phrase is a noun phrase: "only [the signs] of the data", "restricted to [models] with"
            if s in _MODIFIER or s in _FILLER or not ws[k].terms or s[:1].isdigit() or len(s) < 2:
                continue
            phrase.append(k)  # each word of the restricted phrase: "only finite state spaces"
        out += phrase
    return out


def _coordinated(sw: Sequence[Word], j: int) -> int | None:
    """The index of the other member when the word at ``j`` is coordinated with one: "X and Y", "X or Y", "both X
    and Y", "Y and X" (members within two words of the "and" / "or", in the same clause)."""
    for k in range(j + 1, min(len(sw), j + 3)):
        if sw[k].surface in _BOUNDARY:
            break
        if sw[k].surface in _COORD:
            other = next((x for x in range(k + 1, min(len(sw), k + 4)) if sw[x].terms
                          and sw[x].surface not in _MODIFIER), None)
            if other is not None:
                return other
            break
    for k in range(j - 1, max(-1, j - 3), -1):
        if sw[k].surface in _BOUNDARY:
            break
        if sw[k].surface in _COORD:
            other = next((x for x in range(k - 1, max(-1, k - 3), -1) if sw[x].terms
                          and sw[x].surface not in _MODIFIER), None)
            if other is not None:
                return other
            break
    return None


def _restricted_claims(ws: tuple[Word, ...], source: Source, ev: int) -> list[str]:
    """"only X" / "restricted to X" where the source puts X together with another thing the statement leaves out
    ("learns a synthesis dictionary and an analysis dictionary", "both shared-memory and distributed-memory"), at
    the occurrences of X that share most words around them with the statement (at least one in the evidence
    sentence, two elsewhere), all of them coordinated so."""
    said = frozenset().union(*(w.terms for w in ws)) if ws else frozenset()
    for k in _restriction_heads(ws):
        terms = ws[k].terms
        around = _context(ws, k, 2 * WINDOW) - terms
        found: list[tuple[int, bool, Position]] = []
        for si, j in source.occurrences(terms):
            sw = source.words[si]
            if sw[j].terms != terms:
                continue  # the same word ("shared-memory"), not one sharing a part with it ("memory")
            other = _coordinated(sw, j)
            # the other member is something the statement does not name (its own words, not those it shares
            # with X: "distributed-memory" beside "shared-memory")
            paired = (other is not None and not _restricted(sw, j) and sw[other].surface != sw[j].surface
                      and not _shares(sw[other].terms - sw[j].terms, said))
            found.append((_overlap(around, source.context((si, j), 2 * WINDOW)), paired, (si, j)))
        if not found:
            continue
        best = max(n for n, _, _ in found)
        top = [(paired, pos) for n, paired, pos in found if n == best]
        if all(paired for paired, _ in top) and any(best >= (1 if pos[0] == ev else 2) for _, pos in top):
            si, j = top[0][1]
            return [f"says \u201c{_quote(ws, k, 2, 1)}\u201d where the abstract says "
                    f"\u201c{_quote(source.words[si], j, 1, 3)}\u201d"]
    return []


def negation_reasons(statement: str, source: Source, evidence: str) -> list[str]:
    """The statement negates what the source asserts, asserts what the source negates, or uses the prefixed
    opposite of the source's word about the same thing."""
    ws = words(statement)
    return (_negated_claims(ws, source) + _denied_claims(ws, source, source.evidence_index(evidence))
            + _prefixed_opposites(ws, source, source.evidence_index(evidence)))


def _as_verb(ws: Sequence[Word], j: int) -> bool:
    """``ws[j]`` is not a noun-or-verb word used as a noun: "rewards the increase" yes, "computing rewards," no."""
    if ws[j].surface not in _NOUN_TOO:
        return True
    return j + 1 < len(ws) and ws[j + 1].surface in _OBJECT_START


def _pole_match(pattern: re.Pattern[str], surface: str) -> bool:
    """The word, or a part of a hyphenated one ("lower-bound"), is of this pole; "non-…" words are not, nor
    "well-" compounds ("well-known", "well-posed" say nothing of quality)."""
    if pattern.fullmatch(surface):
        return True
    parts = surface.split("-")
    return (len(parts) > 1 and parts[0] not in {"non", "un", "in"}
            and any(pattern.fullmatch(p) for p in parts if p != "well"))


_LIKENESS = {"same", "identical", "different", "distinct"}
_DETERMINERS = {"the", "a", "an", "that", "this", "these", "those"}
_RELATING = {"as", "from", "than", "between", "with"}  # and "to" after "identical"


def _attributive(ws: Sequence[Word], j: int) -> bool:
    """``ws[j]`` ("same", "different") only qualifies the noun after it: no relating word ("as", "from", "than"…)
    follows within four words of the clause, and it is not a predicate ("are the same", "is different")."""
    prev = ws[j - 1].surface if j else ""
    if prev in {"is", "are", "was", "were", "be", "been", "remain", "remains"} or (
            prev == "the" and j > 1 and ws[j - 2].surface in {"is", "are", "was", "were", "be", "remain", "remains"}):
        return False
    for k in range(j + 1, min(len(ws), j + 5)):
        s = ws[k].surface
        if s in _BOUNDARY:
            break
        if s in _RELATING or s == "to" and ws[j].surface == "identical":
            return False
    return j + 1 < len(ws) and bool(ws[j + 1].terms)


def _idiom(ws: Sequence[Word], j: int) -> bool:
    """``ws[j]`` is a pole word inside an idiom that has no direction: "as well as", "as well", and "well" before a
    participle ("well known", "well suited", "well understood", "well short of": degree, not quality); "reduces to
    the …" (is equivalent to, not a decrease); and "same" / "different" before a noun with nothing it is compared
    with ("applies the same idea", "different divergences": no "as …", "from …", "than …")."""
    w = ws[j].surface
    if w in _LIKENESS:
        return _attributive(ws, j)
    if re.fullmatch(r"reduc(?:e|es|ed|ing)", w):
        return (j + 2 < len(ws) and ws[j + 1].surface == "to"
                and (ws[j + 2].surface in _DETERMINERS or ws[j + 2].surface.endswith("ing")))
    if w != "well":
        return False
    nxt = ws[j + 1].surface if j + 1 < len(ws) else ""
    return (j > 0 and ws[j - 1].surface == "as" or nxt in {"as", "short", "below", "above", "beyond", "within"}
            or nxt.endswith(("ed", "en", "wn", "ood")))


def direction_reasons(statement: str, source: Source, evidence: str) -> list[str]:
    """A direction word of the statement is the opposite of the source's about the same words, and no
    same-direction word of the source is about as close to them: in the evidence sentence the opposite word
    must share more words around it than any same-direction one, elsewhere two more (and at least two)."""
    ws = words(statement)
    ev = source.evidence_index(evidence)
    wide = 2 * WINDOW
    reasons: list[str] = []
    done: set[int] = set()
    # "A is less stable than B" where the source says "B is more stable than A": the same comparison.
    converse = {c for at, pole, side, a, b in _comparisons(ws) for _, sp, sside, sa, sb in source.comparisons
                if sp == pole and sside != side and _shares(a - sa, sb) and _shares(b - sb, sa) for c in at}
    for j, w in enumerate(ws):
        for pi, side in _poles_of(w.surface):
            if pi in done or j in converse or _negated(ws, j) or not _as_verb(ws, j) or _idiom(ws, j):
                continue
            if any((pi, 1 - side) in _poles_of(x.surface) for k, x in enumerate(ws) if not _idiom(ws, k)):
                continue  # "both strong and weak supervision", "memory shrinks as blocks grow": both directions
            around = _context(ws, j, wide)
            same, flip, margin = 0, 0, 1
            where: Position | None = None
            for their_side, pos in source.poles.get(pi, ()):
                sw = source.words[pos[0]]
                agrees = (their_side == side) != _negated(sw, pos[1])
                n = _overlap(around, source.context(pos, wide))
                if agrees:
                    same = max(same, n)
                elif (n >= 2 or pos[0] == ev and n >= 1) and n > flip:
                    flip, where, margin = n, pos, 1 if pos[0] == ev else 2
            if where is not None and flip >= same + margin:
                done.add(pi)
                reasons.append(f"says \u201c{_quote(ws, j, 1, 2)}\u201d where the abstract says "
                               f"\u201c{_quote(source.words[where[0]], where[1], 1, 2)}\u201d")
    return reasons + _denied_synonyms(ws, source, ev) + _comparison_reasons(ws, source)


def _denied_synonyms(ws: Sequence[Word], source: Source, ev: int) -> list[str]:
    """A negated direction word of the statement ("does not improve accuracy") where the source asserts another
    word of the same side about the same words ("enhances accuracy"). The same word is the negation rule's."""
    wide = 2 * WINDOW
    for j, w in enumerate(ws):
        if not _negated(ws, j) or not _as_verb(ws, j) or _idiom(ws, j):
            continue
        around = _context(ws, j, wide)
        for pi, side in _poles_of(w.surface):
            asserted, other, where = 0, 0, None
            for their_side, pos in source.poles.get(pi, ()):
                sw = source.words[pos[0]]
                n = _overlap(around, source.context(pos, wide))
                if their_side == side and not _negated(sw, pos[1]) and not _restricted(sw, pos[1]):
                    if _same_word(w.terms, sw[pos[1]].terms):
                        asserted = -1  # the negation rule judges the same word
                        break
                    if (n >= 2 or pos[0] == ev and n >= 1) and n > asserted:
                        asserted, where = n, pos
                else:
                    other = max(other, n)
            if where is not None and asserted >= other + 1:
                return [f"says \u201c{_quote(ws, j, 2, 2)}\u201d where the abstract says "
                        f"\u201c{_quote(source.words[where[0]], where[1], 1, 2)}\u201d"]
    return []


_MORE = next(i for i, (a, _) in enumerate(_POLE_RE) if a.fullmatch("more"))


def _comparisons(ws: Sequence[Word]) -> list[tuple[frozenset[int], int, int, frozenset[str], frozenset[str]]]:
    """Each "A <comparative> … than B": (where its direction words are, pole pair, side, A's terms, B's terms).
    "more stable" and "less stable" are one pair (stable) on opposite sides; "more effective" is more/less."""
    out: list[tuple[frozenset[int], int, int, frozenset[str], frozenset[str]]] = []
    for t, w in enumerate(ws):
        if w.surface != "than" or t + 1 < len(ws) and ws[t + 1].surface[:1].isdigit():
            continue  # "more than 82 million nodes" is a quantity
        at: list[int] = []
        for c in range(t - 1, max(-1, t - 9), -1):
            if ws[c].surface in _BOUNDARY:
                break
            if _poles_of(ws[c].surface):
                at.append(c)
            elif at:
                break
        if not at:
            continue
        first = min(at)
        content = [c for c in at if _poles_of(ws[c].surface)[0][0] != _MORE]
        pole = _poles_of(ws[content[0]].surface)[0][0] if content else _MORE
        side = sum(_poles_of(ws[c].surface)[0][1] for c in at) % 2 ^ _negated(ws, first)
        before, after = _sides(ws, first, t)
        if before and after:
            out.append((frozenset(at), pole, side, before, after))
    return out


def _sides(ws: Sequence[Word], left: int, right: int) -> tuple[frozenset[str], frozenset[str]]:
    """The terms of the up to 5 words before ``left`` and the up to 3 after ``right``, each side stopping at a
    clause boundary: the two things a comparison or an equality relates."""
    before: set[str] = set()
    for x in range(left - 1, max(-1, left - 6), -1):
        if ws[x].surface in _BOUNDARY:
            break
        before |= ws[x].terms
    after: set[str] = set()
    for x in range(right + 1, min(len(ws), right + 4)):
        if ws[x].surface in _BOUNDARY or ws[x].surface in {"and", "while", "but", "which", "on", "in"}:
            break
        after |= ws[x].terms
    return frozenset(before), frozenset(after)


def _crossed(a: frozenset[str], b: frozenset[str], sa: frozenset[str], sb: frozenset[str]) -> bool:
    """The statement's two sides share more words with the source's sides crosswise than straight: "A beats B"
    against "B beats A", not against "A' beats B'" whose sides happen to share a word crosswise ("the method …
    than existing approaches" against "our approach … than current methods")."""
    return _overlap(a, sb) + _overlap(b, sa) > _overlap(a, sa) + _overlap(b, sb)


def _comparison_reasons(ws: Sequence[Word], source: Source) -> list[str]:
    """"A is more effective than B" where the source says "B is more effective than A" ("A is less effective than
    B" is left to the direction rule, and "B is less effective than A" is the same comparison), or where it says
    "A has the same <what> as B" and the statement's comparison is about that <what>."""
    said = frozenset().union(*(w.terms for w in ws))
    for _, pole, side, a, b in _comparisons(ws):
        for _, sp, sside, sa, sb in source.comparisons:
            if sp == pole and sside == side and _shares(a - sa, sb) and _shares(b - sb, sa) and _crossed(a, b, sa, sb):
                return [f"compares the other way round from the abstract "
                        f"(\u201c{' '.join(x.surface for x in ws if x.surface not in _BOUNDARY)}\u201d)"]
        if any(sp == pole and _shares(b, sb) for _, sp, _, _, sb in source.comparisons):
            continue  # the source compares them this way too
        for si, (sa, what, sb, j) in source.equalities:
            if what and _shares(what, said) and _shares(a, sa) and _shares(b, sb):
                return [f"compares where the abstract says \u201c{_quote(source.words[si], j, 2, 4)}\u201d"]
    return []


def _equalities(ws: Sequence[Word]) -> list[tuple[frozenset[str], frozenset[str], frozenset[str], int]]:
    """Each "A … the same <what> as B": (A's terms, what's terms, B's terms, where "same" is)."""
    out = []
    for t, w in enumerate(ws):
        if w.surface not in {"same", "identical"}:
            continue
        k = next((k for k in range(t + 1, min(len(ws), t + 5)) if ws[k].surface in {"as", "to"}), None)
        if k is None or any(ws[x].surface in _BOUNDARY for x in range(t + 1, k)):
            continue
        what = frozenset().union(*(ws[x].terms for x in range(t + 1, k)))
        before, after = _sides(ws, t, k)
        if before and after:
            out.append((before, what, after, t))
    return out


# ---- all rules -----------------------------------------------------------------------------------
def review(statement: str, source: Source, evidence: str) -> tuple[list[str], list[str]]:
    """(reasons, cautions): why ``statement`` is not what its ``source`` says (empty when every rule passes), and
    what a rule of weak precision on unseen wording found (shown as a warning; the statement stays supported).

    ``source``: the cited abstracts parsed once (``Source.of``); ``evidence``: the source sentence that best
    matches the statement."""
    cautions: list[str] = []
    formulas, rest = formula_reasons(statement, source)
    ws = words(statement)
    ev = source.evidence_index(evidence)
    reasons = (formulas + number_reasons(rest, source) + count_reasons(rest, source) + name_reasons(rest, source)
               + _negated_claims(ws, source, cautions) + _denied_claims(ws, source, ev)
               + _prefixed_opposites(ws, source, ev) + _restricted_claims(ws, source, ev)
               + direction_reasons(statement, source, evidence))
    return reasons, cautions


# Each family's verdict until its precision is measured (the family table replaces this): what is unseen in
# the source is "not in the source"; what the source says otherwise is "contradicted".
_FAMILY_VERDICT: dict[str, Verdict] = {
    "formulas": "not_in_source", "numbers": "not_in_source", "counts": "contradicted", "names": "not_in_source",
    "negation": "contradicted", "denial": "contradicted", "opposites": "contradicted", "exclusivity": "contradicted",
    "direction": "contradicted",
}


def findings(statement: str, source: Source, evidence: str) -> list[Finding]:
    """What the rules find wrong with ``statement`` against its ``source``, one ``Finding`` per reason, tagged with
    the family that found it; empty when every rule passes. Cautions are not findings."""
    formulas, rest = formula_reasons(statement, source)
    ws = words(statement)
    ev = source.evidence_index(evidence)
    by_family = (("formulas", formulas), ("numbers", number_reasons(rest, source)),
                 ("counts", count_reasons(rest, source)), ("names", name_reasons(rest, source)),
                 ("negation", _negated_claims(ws, source, [])), ("denial", _denied_claims(ws, source, ev)),
                 ("opposites", _prefixed_opposites(ws, source, ev)),
                 ("exclusivity", _restricted_claims(ws, source, ev)),
                 ("direction", direction_reasons(statement, source, evidence)))
    return [Finding(rule=family, verdict=_FAMILY_VERDICT[family], said=reason, source_says="")
            for family, reasons in by_family for reason in reasons]


def check(statement: str, source: Source, evidence: str) -> list[str]:
    """Why ``statement`` is not what its ``source`` says; empty when every rule passes (cautions not counted)."""
    return review(statement, source, evidence)[0]


@lru_cache(maxsize=128)  # ~140 KB per parsed abstract (tracemalloc): ~20-40 MB when full
def _parsed_source(sentences: tuple[str, ...], terms: frozenset[str], extra: str) -> Source:
    return Source.build(sentences, terms, extra)
