"""Word classes the rules read: negation and denial cues, restrictions, direction poles (the opposite pairs),
prefixes that make an opposite, and the small words that end a phrase; and the rules' window sizes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

WINDOW = 4  # words either side of a word that say what it is about
SCOPE = 3  # words after a negation cue that it negates
ROUNDED = 0.03  # a statement's number may round a source value by at most this share of it
DERIVED = 0.005  # … or a difference or ratio of two source values by at most this share



@dataclass(frozen=True)
class WordClass:
    """A class of words the rules read one way, named for what its words do (``word in CLASS`` tests one)."""

    name: str
    words: frozenset[str]

    def __contains__(self, word: object) -> bool:
        return word in self.words

    @classmethod
    def joined(cls, name: str, *classes: WordClass, but: WordClass | None = None) -> WordClass:
        """The words of ``classes``, except those of ``but``: one named class made of others."""
        words = frozenset(w for c in classes for w in c.words if but is None or w not in but)
        return cls(name, words)


SETTING_ASIDE = WordClass("verbs that set aside what follows them, as a negation does (direction rule)", frozenset({
    "skip", "skips", "skipped", "skipping", "bypass", "bypasses", "bypassed", "bypassing", "circumvent",
    "circumvents", "circumvented", "dispense", "dispenses", "dispensed", "obviate", "obviates", "obviated", "forgo",
    "forgoes", "forgoing", "drop", "drops", "dropped", "dropping", "omit", "omits", "omitted", "omitting",
    "avoid", "avoids", "avoided", "avoiding", "eliminate", "eliminates", "eliminated", "eliminating", "ignore",
    "ignores", "ignored", "ignoring", "neglect", "neglects", "neglected", "neglecting", "remove", "removes",
    "removed", "removing"}))

# ---- words ---------------------------------------------------------------------------------------
_TOKEN = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*|[,;:()\u2014]", re.U)
_BOUNDARY = {",", ";", ":", "(", ")", "\u2014"}
NEGATION = WordClass("negation words: they negate the words after them", frozenset({
    "not", "no", "never", "none", "neither", "nor", "cannot", "without", "fail", "fails", "failed", "failing", "unable",
    "lack", "lacks", "lacking", "nothing"}))
DENIAL = WordClass(
    "verbs that deny what follows them as a negation does (\"overlooks rare events\", \"eliminates the need for "
    "annotations\", \"avoids retraining\"), and contrast markers whose object is what the sentence does not do or say "
    "(\"rather than the gradients\", \"instead of retraining\", \"unlike binary classification\")", frozenset({
        "overlook", "overlooks", "overlooked", "overlooking", "ignore", "ignores", "ignored", "ignoring", "neglect",
        "neglects", "neglected", "neglecting", "avoid", "avoids", "avoided", "avoiding", "eliminate", "eliminates",
        "eliminated", "eliminating", "miss", "misses", "missed", "instead", "rather", "unlike", "little", "few",
        "omit", "omits", "omitted", "omitting", "leave-out", "leaves-out", "left-out", "leaving-out",
        "break-free", "breaks-free", "breaking-free", "broke-free"}))
NAMING_ONLY = WordClass(
    "denial cues a statement uses without denying: \"unlike X\" names what is contrasted, \"few\"/\"little\" may "
    "only say how much", frozenset({"unlike", "little", "few", "miss", "misses", "missed"}))
CONTRAST = WordClass("contrast cues of a statement (\"A instead of B\", \"A rather than B\"): what they set aside is "
                     "named, not denied", frozenset({"instead", "rather"}))
LIMITING = WordClass(
    "words under which a negated statement can be a fair reading of a positive source (\"only one pass\" → \"does "
    "not need two passes\"), looked for before the word, besides the negation and denial cues", frozenset({
        "only", "unnecessary", "absent", "absence", "less", "fewer", "merely", "solely", "single", "beyond", "whereas",
        "but", "however", "limited", "insufficient", "struggle", "struggles", "remains", "challenge", "challenging",
        "difficult", "hard", "inability", "impossible", "poorly", "remove", "removes", "removed", "removing",
        "obviate", "obviates", "obviating", "bypass", "bypasses", "circumvent", "circumvents", "dispense",
        "dispenses"}))
CUES = WordClass.joined("negation and denial cues", NEGATION, DENIAL)
STATEMENT_CUES = WordClass.joined("what a statement can deny with (\"uses A rather than B\", \"avoids retraining\")",
                                  CUES, but=NAMING_ONLY)
RESTRICTIVE = WordClass.joined("cues and limiting words", CUES, LIMITING)
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


_ONLY = {"only", "solely", "exclusively"}
_CONFINED = {"restricted", "limited", "confined"}  # "… to X"
_COORD = {"and", "or"}
_PHRASE_END = {"to", "of", "with", "in", "on", "for", "by", "at", "from", "that", "which", "is", "are", "be", "was",
               "were", "can", "will", "over", "under", "around", "within", "as"}
_MODIFIER = {"a", "an", "the", "its", "their", "both", "either", "also", "to", "on", "in", "with", "of"}
