"""Sentences lifted from an abstract made to read on their own (issue 32, item 2).

In its abstract a sentence leans on the one before: "Moreover, to enhance stealthiness, we introduce…",
"This method reaches 90% accuracy.", "It also scales to…". Shown alone in an answer or on a citation card it
must not. :func:`standalone` drops a leading connective ("Moreover,", "In addition,", "However,", "To this
end,") and capitalises the next word, and resolves a leading noun phrase pointing back with the paper's
authors ("This method" → "The method of Gao et al."); a leading pronoun whose antecedent is in the sentence
before ("They", "It", "These" before a verb) cannot be resolved, so the sentence is reported as not standing
alone (None) and the generator picks another one. :func:`name_subject` names the authors where the
rewording of "we" left a "they" as the subject of a sentence shown without them.
"""

from __future__ import annotations

import re

from rag.display import prose_surnames

_CONNECTIVES = ("moreover", "in addition", "additionally", "however", "furthermore", "further", "to this end",
                "besides", "also", "thus", "therefore", "hence", "consequently", "as a result", "finally",
                "meanwhile", "nevertheless", "nonetheless", "specifically", "in particular", "similarly",
                "likewise", "in contrast", "on the other hand", "instead", "accordingly", "importantly",
                "notably", "indeed", "then", "next", "second", "secondly", "third", "thirdly", "lastly",
                "to address this", "to address these issues", "to address this issue", "to this aim",
                "for this purpose", "by doing so", "in doing so", "in this way", "as such")
_CONNECTIVE = re.compile(r"^(?:" + "|".join(sorted((re.escape(c) for c in _CONNECTIVES), key=len, reverse=True))
                         + r")\s*,\s*", re.I)
# "This method", "These models", "Such an approach", "The proposed method": a noun phrase pointing back
_NOUNS = (r"(?:method|approach|model|framework|technique|system|algorithm|architecture|scheme|strategy|"
          r"procedure|pipeline|design|formulation|mechanism|tool|network|estimator|objective|module|"
          r"benchmark|dataset|analysis|work|paper|study|idea|extension|variant)s?")
_POINTER = re.compile(rf"^(?:this|these|such(?: an?)?|the latter|the former)\s+"
                      rf"(?:new\s+|novel\s+|simple\s+|proposed\s+)?({_NOUNS})\b", re.I)
# A bare pronoun as the subject: "They are…", "It outperforms…", "This allows…", "These are…"
_BARE = re.compile(r"^(?:they|their|them|it|its|this|these|those|such|both|he|she|his|her)\b", re.I)
# "It is known that…", "It is well established…": an empty subject reads on its own
_EXPLETIVE = re.compile(r"^it\s+(?:is|was|has been|remains|seems|appears)\s+(?:\w+ly\s+)?(?:known|shown|"
                        r"established|believed|clear|possible|unclear|important|necessary|common|"
                        r"well[- ]known|often|widely|generally)\b", re.I)
# The first subject of a sentence, after an optional fronted phrase ("To enhance stealthiness, we …")
_SUBJECT = r"^((?:(?:here|in this (?:paper|work|study|article)|to this end),?\s+|[^,.;:()\[\]]{1,100},\s+)?)"
_WE = re.compile(_SUBJECT + r"(?:we|our)\b", re.I)
_THEY = re.compile(_SUBJECT + r"(they|their)\b", re.I)
_BASE_VERB = re.compile(r"^(\s+(?:also\s+|further\s+|then\s+|\w+ly\s+)?)([a-z]+)\b")


def third_person(verb: str) -> str:
    """"propose" → "proposes", "study" → "studies"."""
    if re.search(r"(s|sh|ch|x|z|o)$", verb):
        return verb + "es"
    if re.search(r"[^aeiou]y$", verb):
        return verb[:-1] + "ies"
    return verb + "s"


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:] if text[:1].islower() else text


def drop_connective(sentence: str) -> str:
    """The sentence without a leading connective, its next word capitalised ("Moreover, we…" → "We…")."""
    s = sentence.strip()
    for _ in range(2):  # "However, in addition, …"
        m = _CONNECTIVE.match(s)
        if not m or not s[m.end():].strip():
            break
        s = _capitalise(s[m.end():])
    return s


def leans_back(sentence: str) -> bool:
    """Whether an abstract's sentence begins (after a connective) with a pronoun whose antecedent is in the
    sentence before ("They are…", "It also…", "These show…"), so it cannot be shown alone."""
    s = drop_connective(sentence)
    return not _POINTER.match(s) and bool(_BARE.match(s)) and not _EXPLETIVE.match(s)


def standalone(sentence: str, authors: list[str] | tuple[str, ...]) -> str | None:
    """An abstract's ``sentence`` as it reads alone (see the module docstring); None when it begins with a
    pronoun whose antecedent is in the sentence before."""
    s = drop_connective(sentence)
    if leans_back(s):
        return None
    m = _POINTER.match(s)
    if m:
        who = prose_surnames(list(authors))
        if not who:
            return None
        noun = m.group(1).lower()
        by = "by" if noun.rstrip("s") in ("work", "paper", "study", "studie") else "of"
        return f"The {noun} {by} {who}{s[m.end():]}"
    return s


def name_subject(reworded: str, original: str, authors: list[str] | tuple[str, ...]) -> str:
    """``reworded`` (``original`` with "we" turned into "they") with that leading "they" (or "their") naming
    the authors: "To enhance stealthiness, they introduce…" → "To enhance stealthiness, Gao et al. introduce…"."""
    who = prose_surnames(list(authors))
    m = _THEY.match(reworded)
    if not who or not m or not _WE.match(original):
        return reworded
    rest = reworded[m.end():]
    if m.group(2).lower() == "their":
        name = f"{who}'s"
    else:
        name = who
        v = _BASE_VERB.match(rest)
        if len(authors) == 1 and v and v.group(2) not in ("can", "may", "will", "must", "should", "could", "would",
                                                          "have", "are", "were", "do"):
            rest = v.group(1) + third_person(v.group(2)) + rest[v.end():]
        elif len(authors) == 1 and v and v.group(2) in ("have", "are", "were", "do"):
            verb = {"have": "has", "are": "is", "were": "was", "do": "does"}[v.group(2)]
            rest = v.group(1) + verb + rest[v.end():]
    lead = m.group(1)
    return lead + (name if lead else _capitalise(name)) + rest
