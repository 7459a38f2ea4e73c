"""What an abstract contributes: which sentence states it, and the short label that names it.

Shared by ingest (the label of an untitled paper, ``Paper.label``) and answers (the summary line of a cited or
listed paper), so both agree on what a paper is about. A leaf over ``rag.text``: it imports nothing that
answers or the index use.

Rules, meant for any abstract (nothing here knows a particular paper):

- A sentence is *background* when it sets the scene rather than speaking of the paper's own work: it comes
  before the abstract first says "we/our/this paper", or it opens with a contrast or a survey of the field
  ("However…", "Recent work…", "Existing methods…") or says what is missing ("remains a challenge"), and it
  has no "we propose/show…" of its own.
- The *contribution* sentence is the one where the authors propose, introduce or present their method (best
  when it names it), or, with no such sentence, where they show, find or prove their main result. A method
  proposed "also"/"further"/"additionally" is a part of the main one; a dataset, benchmark or task they build
  counts for less than the method they build on it.
- The *label* comes from the contribution sentence only, so a component defined elsewhere in the abstract
  ("we also design a GradCAM-guided Mask (GM)") never names the paper: the method's own name with what it is
  ("EPPO: Energy loss-aware PPO algorithm"), else the object of "we propose" ("Efficient algorithm for
  hierarchical k-median clustering"), else the finding ("Many capabilities are highly localized to…").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum

from rag.text import BACKGROUND_ACRONYMS as TEXT_BACKGROUND
from rag.text import acronym_phrase, key_phrase, plain_text_keep_emphasis, split_sentences

_WE = r"(?:we|this (?:paper|work|study|article)|here(?:,)? we|our (?:work|paper|study))"
_ADV = (r"(?:\w+ly\s+|also\s+|further\s+|then\s+|first\s+|here\s+|thus\s+|therefore\s+|now\s+|instead\s+|"
        r"hence\s+|next\s+)?")
# "we build on / our work builds on top of X": X is prior work, not a proposal.
_PROPOSE_VERBS = (r"propos|introduc|present|develop|design|devis|buil(?!ds?\s+(?:on|upon)\b|t\s+(?:on|upon)\b)|"
                  r"construct|formulat|creat|offer|describ|put forward|establish a|establish an|establish the")
_FIND_VERBS = (r"show|find|found|prove|demonstrat|reveal|identif|establish|discover|observ|uncover|"
               r"characteriz|characteris|derive|obtain|report|confirm|highlight")
_STUDY_VERBS = (r"stud|investigat|analy[sz]|explor|examin|re-?examin|revisit|consider|tackl|address|focus|extend|"
                r"generaliz|generalis|seek|initiat")
# "we provide / give" proposes only when a method follows ("we give an efficient algorithm"); "we provide bounds,
# comparisons…" does not.
_METHOD_NOUN = (r"algorithms?|methods?|frameworks?|approach(?:es)?|models?|procedures?|schemes?|techniques?|"
                r"estimators?|samplers?|mechanisms?|architectures?|systems?|solvers?|heuristics?|protocols?|policy|"
                r"policies|networks?|methodology")
_GIVE = rf"(?:provid|giv)\w*(?=\s+(?:[\w\-,]+\s+){{0,5}}?(?:{_METHOD_NOUN})\b)"
_OWN = re.compile(rf"\b{_WE}\s+{_ADV}(?:{_PROPOSE_VERBS}|{_FIND_VERBS}|{_STUDY_VERBS})\w*", re.I)
_PROPOSE = re.compile(rf"\b{_WE}\s+{_ADV}(?:(?:{_PROPOSE_VERBS})\w*|{_GIVE})|"
                      r"\bwe\b[^.;]{0,250}?\band\s+(?:then\s+)?(?:introduce|propose|present|develop|design)\b|"
                      # "our main contribution is a new procedure called…", "our main result is an algorithm…"
                      r"\b(?:our|the|this paper's)\s+(?:(?:main|first|second|key|primary|principal|major|central|"
                      r"essential|technical|core)\s+)*contributions?\s+(?:of (?:this|the) (?:paper|work)\s+)?"
                      r"(?:is|are|consists? (?:of|in))\b|"
                      r"\bour\s+(?:main|first|key|primary|principal|central)\s+results?\s+(?:is|are)(?=\s+(?:a|an)\s)",
                      re.I)
# "…, a Bayesian framework for X is proposed": the proposal in the passive, its object before the verb.
_PASSIVE = re.compile(r"(?:^|[,;:]\s+|\bthis (?:paper|work),?\s+)(?P<obj>(?:a|an|two|three|several|new|novel)\s+"
                      r"[^,;]{3,150}?)\s+(?:is|are)\s+(?:\w+ly\s+|here\s+|then\s+)?(?:proposed|presented|"
                      r"introduced|developed|described|derived)\b", re.I)
_FIND = re.compile(rf"\b{_WE}\s+{_ADV}(?:{_FIND_VERBS})\w*\b(?:[^.;]{{0,90}}?)\s+(?:that|how|whether)\b|"
                   r"\b(?:our|these|the)\s+(?:\w+\s+)?(?:results?|findings?|analys[ie]s|experiments?|theory|"
                   r"evaluations?)\s+(?:\w+ly\s+)?(?:show|suggest|reveal|demonstrate|indicate|establish|prove)",
                   re.I)
_STUDY = re.compile(rf"\b{_WE}\s+{_ADV}(?:{_STUDY_VERBS})\w*", re.I)
# "We prove the first finite-sample convergence rates for…", "we derive an upper PAC bound…": a result stated as
# an object rather than as "that…".
_RESULT_OBJ = re.compile(rf"\b{_WE}\s+{_ADV}(?:prove|derive|establish|obtain|give|provide)[sd]?\b"
                         r"(?=\s+(?:here\s+)?(?:a|an|the|new|novel|first|tight|two|three|several|upper|lower|"
                         r"optimal|improved|sharp|general)\b)", re.I)
_RESULT = re.compile(r"\b(?:experiments?|results?|evaluations?|empirically|extensive)\b.{0,80}\b(?:show|demonstrat|"
                     r"outperform|achiev|improv|reduc|surpass|yield|match)|\b(?:outperform|surpass)s?\b", re.I)
_VOICE = re.compile(r"\b(?:we|our|us)\b|\bthis (?:paper|work|study|article)\b", re.I)
_PART = re.compile(r"^(?:furthermore|moreover|additionally|in addition|also|besides|finally)\b|"
                   rf"\b{_WE}\s+(?:also|further|additionally)\s+(?!propos)", re.I)
_OPENS_BACKGROUND = re.compile(r"^(?:however|despite|although|though|while|whereas|yet|unfortunately|nevertheless|"
                               r"recent(?:ly)?|existing|current(?:ly)?|traditional(?:ly)?|prior|previous(?:ly)?|"
                               r"most|many|conventional|typically|often|in recent|over the past|"
                               r"as \w+ (?:grow|become))\b",
                               re.I)
_SAYS_MISSING = re.compile(r"\b(?:remains?|remained)\s+(?:a\s+|an\s+)?(?:\w+\s+)?(?:challenge|open|unclear|"
                           r"under-?explored|unknown|limited|difficult|elusive)|\b(?:suffers?|struggles?)\b|"
                           r"\b(?:have|has) (?:achieved|attracted|gained|shown|demonstrated|emerged)\b|"
                           r"\blimitations?\b|\bfails? to\b|\bis (?:a|an) (?:fundamental|central|key|important)\b",
                           re.I)
_RELEASE = re.compile(r"https?://|\b(?:code|implementation)\b[^.]{0,60}\b(?:available|released?|public(?:ly)?)\b",
                      re.I)
_DATA_WORDS = re.compile(r"\b(?:dataset|data set|benchmark|corpus|suite|task|testbed|leaderboard)s?\b", re.I)
_NOVEL = re.compile(r"\b(?:novel|new|first|simple|general|unified|principled)\b", re.I)
_ACRONYM_DEF = re.compile(r"((?:[\w\-–²]+\s+){0,9}[\w\-–²]+)\s+\(([A-Z][A-Za-z0-9\-]*[A-Z0-9][A-Za-z0-9\-]*)\)")
_CALLED_WORDS = r"called|named|namely|dubbed|termed|coined|entitled|we call|we term|we dub|we name|refer to as"
_CALLED = re.compile(rf"\b(?:{_CALLED_WORDS})\s+[\"“]?\*{{0,2}}([A-Z][\w\-]*[A-Za-z0-9](?:\s+[A-Z][\w\-]*){{0,4}})|"
                     # "a new extension, which we call smooth interactive submodular set cover, that…"
                     r"\b(?:which|that)\s+we\s+(?:call|term|dub|refer to as)\s+(?:the\s+)?[\"“]?"
                     r"([a-z][\w\-]*(?:\s+[a-z][\w\-]*){1,5})(?=[\"”]?\s*(?:[,;.(]|$))")
# A coined name: an inner capital, a digit or a hyphen joining capitalised parts (FedGMT, P2L, Self-Debias).
_COINED = re.compile(r"(?<![\w\-])([A-Z][a-z]*[A-Z0-9][\w]*(?:-[\w]+)*|[A-Z][a-z]+(?:-[A-Z][\w]*)+|"
                     r"[A-Z]{2,}-[a-z]+)(?![\w\-])")
# "we present Mechanistic PDE Networks": a run of capitalised words right after the verb (and an article).
_TITLE_RUN = re.compile(r"\b(?:propose|introduce|present|develop|design)s?\s+(?:the\s+|a\s+|an\s+)?"
                        r"((?:[A-Z][\w\-]*\s+){0,5}[A-Z][\w\-]*)(?=\s*(?:[,–—(:]|\s+-\s))")
_EMPHASIS = re.compile(r"\*{1,2}([^*]{2,80}?)\*{1,2}")
_STOP_TAIL = {"a", "an", "the", "of", "and", "or", "to", "for", "in", "on", "with", "by", "via", "from", "that",
              "which", "its", "their", "as", "at", "is", "are", "while", "whose", "into", "both"}
# Field-wide acronyms an abstract defines in passing: never the paper's own contribution.
BACKGROUND_ACRONYMS = TEXT_BACKGROUND | {"SAM", "LoRA", "PEFT", "SSM", "CoT", "MAS"}
_GENERIC = {"model", "method", "framework", "approach", "algorithm", "technique", "system", "architecture", "procedure",
            "scheme", "mechanism", "strategy", "pipeline", "tool", "paradigm"}
MAX_WORDS = 12
MAX_CHARS = 80


class Role(IntEnum):
    """What a sentence does in the abstract, from least to most worth summarising."""

    BACKGROUND = 0
    OTHER = 1
    STUDY = 2  # "we study / investigate X": the topic, not yet the result
    RESULT = 3  # an experiment's outcome
    PART = 4  # a part of the method ("we also design…")
    FINDING = 5  # "we show that…", "our results show…"
    PROPOSAL = 6  # "we propose X"


@dataclass(frozen=True)
class Contribution:
    """An abstract's sentences (display text), the role of each, and the one that states the contribution."""

    sentences: tuple[str, ...]
    roles: tuple[Role, ...]
    main: int | None  # index of the contribution sentence; None when the abstract never states one

    def ranked(self) -> list[int]:
        """Sentence indices, best statement of the contribution first (background last)."""
        return sorted(range(len(self.sentences)), key=lambda i: (i != self.main, -self.roles[i], i))


def _role(sentence: str, index: int, first_voice: int | None) -> Role:
    s = sentence.strip()
    own = _OWN.search(s)
    if _PROPOSE.search(s) and not _FIND.search(s[:_PROPOSE.search(s).start()]):  # type: ignore[union-attr]
        return Role.PART if _PART.search(s) else Role.PROPOSAL
    if _PASSIVE.search(s):
        return Role.PART if _PART.search(s) else Role.PROPOSAL
    if _FIND.search(s):
        return Role.FINDING
    if own and _STUDY.search(s) or _RESULT_OBJ.search(s):  # a result as an object counts like a topic
        return Role.STUDY
    if first_voice is not None and index < first_voice:
        return Role.BACKGROUND
    if _OPENS_BACKGROUND.match(s) or (_SAYS_MISSING.search(s) and not _VOICE.search(s)):
        return Role.BACKGROUND
    if _RESULT.search(s):
        return Role.RESULT
    if first_voice is None and index == 0:
        return Role.BACKGROUND
    return Role.OTHER


def _weight(sentence: str, role: Role) -> float:
    """How well a sentence of a role states the main contribution (higher is better)."""
    w = float(role)
    if role == Role.PROPOSAL:
        if method_name(sentence):
            w += 1.0
        if _NOVEL.search(sentence):
            w += 0.3
        # "we construct a dataset / propose a task": a contribution, but the method built on it is the main one
        obj = _object_of(sentence) or ""
        if _DATA_WORDS.search(" ".join(obj.split()[:8])) and not method_name(sentence, skip_data=True):
            w -= 1.5
    return w


def analyse(sentences: list[str] | tuple[str, ...]) -> Contribution:
    """Roles of the sentences of one abstract and its contribution sentence."""
    sents = tuple(sentences)
    first_voice = next((i for i, s in enumerate(sents) if _VOICE.search(s)), None)
    roles = tuple(_role(s, i, first_voice) for i, s in enumerate(sents))
    best: int | None = None
    best_w = float(Role.STUDY)  # below this the abstract states no contribution of its own
    for i, (s, r) in enumerate(zip(sents, roles)):
        if _RELEASE.search(s) or len(s.split()) < 5:
            continue
        w = _weight(s, r)
        if w > best_w:
            best, best_w = i, w
    if best is None:  # no proposal or finding: the first sentence in the authors' own voice, if any
        best = next((i for i, r in enumerate(roles) if r == Role.STUDY), None)
    return Contribution(sents, roles, best)


def analyse_abstract(abstract: str) -> Contribution:
    return analyse(split_sentences(abstract))


# ---- labels -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Name:
    name: str  # what the paper calls its method: "EPPO", "Self-Debias"
    long: str | None  # the words an acronym stands for, when defined
    start: int
    end: int


def _names(sentence: str) -> list[_Name]:
    text = sentence.replace("*", "")
    out: list[_Name] = []
    for m in _CALLED.finditer(text):
        g = 1 if m.group(1) else 2
        out.append(_Name(m.group(g), None, m.start(g), m.end(g)))
    for m in _ACRONYM_DEF.finditer(text):
        long = acronym_phrase(m.group(1), m.group(2), BACKGROUND_ACRONYMS, loose=True)
        if long:
            out.append(_Name(m.group(2), long, m.end(1) - len(long), m.end()))
    for m in _TITLE_RUN.finditer(text):
        one = " " not in m.group(1)
        if one and sum(c.isupper() for c in m.group(1)) < 2 or m.group(1).rstrip("s") in BACKGROUND_ACRONYMS:
            continue
        if not any(n.start <= m.start(1) < n.end for n in out):
            out.append(_Name(m.group(1), None, m.start(1), m.end(1)))
    for m in _COINED.finditer(text):
        w = m.group(1)
        if w.rstrip("s") in BACKGROUND_ACRONYMS or any(n.start <= m.start(1) < n.end for n in out):
            continue
        if w.isupper() and "-" not in w and not any(c.isdigit() for c in w):
            continue  # a bare all-caps word the sentence does not define is more likely a field acronym
        out.append(_Name(w, None, m.start(1), m.end(1)))
    return sorted(out, key=lambda n: n.start)


def _is_called(text: str, n: _Name) -> bool:
    return bool(re.search(rf"\b(?:{_CALLED_WORDS})\s*[\"“]?$", text[max(0, n.start - 16):n.start].rstrip(), re.I))


# Words that, between the verb and a name, put the name in a phrase of its own: "a technique for speeding up
# Alternating Least Squares (ALS)", "an inference algorithm for NRMM models" name what the proposal is for or uses.
_INSIDE = re.compile(r"\b(?:for|of|to|in|on|with|using|via|from|by|based|under|over|than|between|into|against|that|"
                     r"which|where|whose|when|while|up|through|within|beyond|across|toward|towards)\b", re.I)
_FUNCTION = {"which", "that", "to", "for", "in", "on", "with", "by", "via", "and", "or", "is", "are", "as", "of",
             "from", "the", "a", "an", "based", "using", "we", "where", "whose", "while", "when", "can", "will",
             "built", "designed", "inspired", "tailored", "specialized", "aimed", "capable", "able", "consisting"}


def _modifies(text: str, n: _Name) -> bool:
    """The name only qualifies the noun that follows it ("a compressed sensing (CS) calcium imaging framework",
    "PAC-style sample complexity rates", "a Metropolis-Hastings algorithm with…"): the proposal is that noun,
    not a thing of that name. A name followed by a generic noun ("the FooNet framework", "EVO algorithm") still
    names it, unless it is a hyphenated modifier ("PAC-style method")."""
    nxt = re.match(r"\s*([a-z][\w\-]*)", text[n.end:])
    if not nxt:
        return False
    word = nxt.group(1)
    if word in _FUNCTION or (word.endswith("s") and not word.endswith("ss")):  # "…(ACR) achieves": a verb
        return False
    return word not in _GENERIC or "-" in n.name and n.name[-1].islower()


# The last word of an acronym's long form that makes it a task, problem, field or theory rather than a method:
# "Unsupervised anomaly detection (UAD)", "Heterogeneous federated learning (HtFL)", "Extreme Value Theory (EVT)",
# "vehicle routing problem (VRP)". A paper names its method so only with "called"/"named".
_TASK_HEADS = {"detection", "learning", "theory", "problem", "problems", "recognition", "classification",
               "segmentation", "retrieval", "answering", "translation", "understanding", "privacy", "sensing",
               "processing", "mining", "forecasting", "routing", "unlearning", "fine-tuning", "finetuning",
               "captioning", "summarization", "completion", "process", "processes", "space", "spaces", "science",
               "vision", "intelligence"}
# Prior work named before a name ("the Ladder network proposed by", "compared with", "the standard") or after it
# ("Valpola (2015)", "[12]", "proposed by …").
_PRIOR_BEFORE = re.compile(r"\b(?:existing|standard|classical|classic|popular|well-known|widely[- ]used|conventional|"
                           r"baselines?|state-of-the-art|prior|previous|original|vanilla|compared?\s+(?:to|with|against)|"
                           r"than|over|outperform\w*|beyond|unlike|extends?|extending|generaliz\w*|on top of|"
                           r"leverag\w*|employ\w*|adopt\w*|exploit\w*|utiliz\w*|apply\w*|applies|uses?|using|"
                           r"such as|e\.g\.|including)\s+(?:the\s+|a\s+|an\s+)?(?:[\w\-]+\s+){0,2}$", re.I)
_PRIOR_AFTER = re.compile(r"^\)?\s*(?:[\w\-]+\s+){0,3}?(?:(?:was\s+|originally\s+|recently\s+)?(?:proposed|introduced|"
                          r"developed|described)\s+(?:by|in)\b|\(?[A-Z][\w\-]+(?:\s+et al\.?)?,?\s*\(?(?:19|20)\d\d\b|"
                          r"\[\d)", re.I)


def _names_task(n: _Name) -> bool:
    """An acronym whose long form is a task, problem or field ("… detection (UAD)"), not a method "for" one
    ("Hybrid Optimization algorithm for NOn-convex Regularized problems (HONOR)")."""
    return bool(n.long and n.long.split()[-1].casefold() in _TASK_HEADS
                and not re.search(rf"\b(?:{_METHOD_NOUN})\b", n.long, re.I))


def _prior(text: str, n: _Name) -> bool:
    """A name the sentence attributes to others: a baseline, a prior method it builds on or compares with."""
    return bool(_PRIOR_BEFORE.search(text[max(0, n.start - 60):n.start]) or _PRIOR_AFTER.match(text[n.end:n.end + 60]))


def method_name(sentence: str, skip_data: bool = True) -> _Name | None:
    """The name the sentence gives to what it proposes (not a dataset, task or benchmark when ``skip_data``)."""
    text = sentence.replace("*", "")
    verb = _PROPOSE.search(text) or _OWN.search(text)
    after = verb.end() - len(verb.group(0).split()[-1]) if verb else 0
    if verb is None and (passive := _PASSIVE.search(text)):
        after = passive.start("obj")
    # The name sits in the verb's object: a name further on is something the method uses or is compared to.
    names = [n for n in _names(sentence) if n.end > after and (len(text[after:n.start].split()) <= 12 or _is_called(
        text, n))]
    good = []
    for n in names:
        # after a comma the name restates the object ("a mechanism based on X, Grouped Cross Attention (GCA)")
        if not _is_called(text, n) and (_INSIDE.search(text[after:n.start].rsplit(",", 1)[-1]) or _modifies(text, n)
                                        or _prior(text, n) or _names_task(n)):
            continue
        around = (n.long or "") + " " + " ".join(text[n.end:].split()[:6]) + " " + text[max(0, n.start - 25):n.start]
        if skip_data and _DATA_WORDS.search(around) and not re.search(
                r"\b(?:model|method|framework|algorithm|approach|attack|network|architecture)\b", around, re.I):
            continue
        good.append(n)
    called = [n for n in good if _is_called(text, n)]
    chosen = called or good
    return chosen[0] if chosen else None


def _object_of(sentence: str) -> str | None:
    """What "we propose/show…" governs: the object, up to the end of its clause."""
    text = sentence.replace("*", "")
    m = _PROPOSE.search(text)
    if not m:
        passive = _PASSIVE.search(text)
        if passive:
            return re.sub(r"^(?:a|an)\s+", "", passive.group("obj"), flags=re.I)
    m = m or _FIND.search(text) or _RESULT_OBJ.search(text) or _STUDY.search(text)
    if not m:
        return None
    rest = text[m.end():]
    rest = re.sub(r"^\w*\s*", "", rest, count=1) if rest[:1].isalpha() else rest  # the verb's own ending
    rest = re.sub(r"^(?:here\s+)?(?:that|how|whether)\s+|^here\s+", "", rest.strip(), flags=re.I)
    # "we propose and analyze an accelerated variant…": the second verb's object
    rest = re.sub(r"^and\s+(?:then\s+)?(?:analy[sz]e|study|evaluate|implement|test|prove|investigate|apply|validate|"
                  r"discuss|compare|explore|demonstrate|examine|describe|develop|present|introduce|propose)\s+", "",
                  rest, flags=re.I)
    rest = re.sub(r"^(?:a|an|the)\s+", "", rest, flags=re.I)
    rest = re.sub(r"^[“\"]([^”\"]{1,80})[”\"]", r"\1", rest)  # "we introduce a “novel subclass of CRFs”, derived…"
    return rest or None


def _terse(phrase: str) -> str:
    """A noun phrase without the articles inside it, as titles write them ("framework for the estimation of a
    copula" → "framework for estimation of copula"): a label has 80 characters for what the paper is about. A
    clause after it ("…, which", "that aligns the…") keeps its articles."""
    m = re.search(r",|\b(?:that|which|who|where|whose|while|when)\b", phrase)
    head, rest = (phrase[:m.start()], phrase[m.start():]) if m else (phrase, "")
    return re.sub(r"(?<=[\w)])\s+(?:the|a|an)\s+", " ", head) + rest


def clip_phrase(phrase: str, max_words: int = MAX_WORDS, max_chars: int = MAX_CHARS) -> str:
    """At most ``max_words`` words and ``max_chars`` characters, ending on a content word; "…" when cut."""
    phrase = re.sub(r"\s+", " ", phrase).strip(" ,;:.")
    if phrase[:1] in "“\"'" and not re.search(r"[”\"']", phrase[1:]):  # an opening quote whose close was cut off
        phrase = phrase[1:]
    phrase = re.sub(r"^[“\"']([^”\"']+)[”\"']", r"\1", phrase)  # "a “novel subclass of CRFs”, derived…"
    # an aside in brackets ("(in expectation, and also…)", "(i.e., …)") takes room a label needs; an acronym stays
    phrase = re.sub(r"\s*\((?![A-Za-z0-9\-]+s?\))[^()]*\)", "", phrase)
    cut = re.split(r"(?:,\s+(?:which|where|while|thus|thereby|and thus|leading|resulting|enabling|achieving|"
                   r"allowing|making)\b|;|:\s|\s+[–—]\s+|\.\s|,?\s+and\s+(?:\w+ly\s+)?(?:prove|show|demonstrate|"
                   r"evaluate|establish|derive|provide|achieve|validate|analy[sz]e|apply|obtain)\w*\b)",
                   phrase, maxsplit=1)[0]
    words = cut.split()
    clipped = len(words) > max_words or cut != phrase
    words = words[:max_words]
    while words and len(" ".join(words)) > max_chars:
        words.pop()
        clipped = True
    while words and words[-1].lower().strip(",") in _STOP_TAIL:
        words.pop()
    out = " ".join(words).rstrip(" ,;:")
    if not out:
        return ""
    out = out[0].upper() + out[1:]
    return out + ("…" if clipped and len(cut.split()) > max_words else "")


def _description(sentence: str, name: _Name) -> str:
    """What the named method is: its appositive ("X, a framework that…"), else its purpose ("to …", "for …")."""
    text = sentence.replace("*", "")
    after = text[name.end:].lstrip(" )")
    m = re.match(r",\s*(?:a|an|the)\s+(.+)", after)
    if m:
        return m.group(1)
    m = re.match(r",\s*(\w+(?:ed|ing)\s+.+)", after) or re.match(r"(?:,\s*)?(?:to|for|that|which)\s+(.+)", after)
    if m:
        lead = after.lstrip(", ").split(" ", 1)[0]
        return (lead + " " if lead in ("to", "for") else "") + m.group(1)
    # "a novel copula-driven framework, namely FedX": the description before the name
    before = text[:name.start]
    m = re.search(r".*\b(?:a|an|the)\s+(?:novel\s+|new\s+)?([^,]{3,80}?)\s*,?\s*"  # the last article's phrase
                  r"(?:called|named|namely|dubbed|termed)?\s*$", before, re.I)
    return m.group(1) if m else ""


def label_phrase(abstract: str) -> str:
    """The label of an untitled paper: what its contribution sentence names ("" when it has none)."""
    text = plain_text_keep_emphasis(abstract)
    c = analyse(split_sentences(text))
    if c.main is None:
        return ""
    # The contribution sentence, else (when it names nothing: "These guarantees improve on…", or only something
    # stated elsewhere: "we show that our algorithm is…") the next best sentence in the authors' own voice.
    labels = [(c.roles[i], _sentence_label(c.sentences[i], c.roles[i], _named_later(c, i)))
              for i in [c.main] + [i for i in c.ranked() if i != c.main and c.roles[i] >= Role.STUDY]]
    labels = [(role, label) for role, label in labels if label]
    return next((label for role, label in labels if not _weak(label, role)), labels[0][1] if labels else "")


# A finding that leans on what another sentence states: "our algorithm…", "the problem is…", "such a…", "under
# these conditions…", "for pairs of vertices…".
_LEANS = re.compile(r"^(?:our|this|these|those|such|it|they|its|their|there|under|for|with|by|when|if|even|in|"
                    r"resulting|same|above|former|latter|"
                    r"without|among|after|given|unlike|while|although|despite|once|both|each|any|"
                    r"the (?:proposed|problem|algorithm|method|approach|estimator|model|resulting|same))\b", re.I)
_COUNT = r"(?:a|an|one|two|three|four|several|some|new|novel|various|many|twofold|threefold)"


def _weak(label: str, role: Role) -> bool:
    """A label that says little on its own: a bare generic noun ("Algorithms", "Two applications",
    "Twofold"), or a finding about something another sentence names."""
    words = label.rstrip("…").split()
    if len(words) <= 2 and not any(sum(ch.isupper() for ch in w) >= 2 or any(ch.isdigit() for ch in w)
                                   for w in words):
        rest = [w for w in words if not re.fullmatch(_COUNT, w, re.I)]
        if not rest or rest[-1].casefold().rstrip("s") in _GENERIC | {"application", "contribution", "result",
                                                                       "part", "way", "step"}:
            return True
    return role in (Role.FINDING, Role.RESULT) and bool(_LEANS.match(label))


# "Our algorithm, DFacTo, only requires…", "The proposed algorithm, called Semi-Proximal Mirror-Prox, …", "The
# proposed NADE-k is…": the name a later sentence gives to the method the contribution sentence proposes unnamed.
_LATER_NAME = re.compile(rf"\b(?i:our|the proposed|the new|this new)\s+(?:[a-z][\w\-]*\s+){{0,2}}?(?:{_METHOD_NOUN})"
                         rf"\s*,?\s*(?:(?:{_CALLED_WORDS})\s+)?[\"“]?([A-Z][\w\-]*[A-Za-z0-9](?:\s+[A-Z][\w\-]*){{0,4}})|"
                         r"\b(?i:the proposed)\s+([A-Z][\w]*[A-Z0-9][\w\-]*)|"
                         # "We call this approach CostFilter-AD." names the method wherever it stands
                         rf"\b(?i:we\s+(?:call|term|name|dub|coin))\s+(?i:this|our|the|these)\s+"
                         rf"(?:[a-z][\w\-]*\s+){{0,2}}?(?i:{_METHOD_NOUN}|idea|concept|technique)\s+[\"“]?"
                         r"([A-Z][\w\-]*[A-Za-z0-9](?:\s+[A-Z][\w\-]*){0,4})")


def _named_later(c: Contribution, index: int) -> str | None:
    """The name a sentence after ``index`` gives to "our method", or any sentence to "this approach" ("We call
    this approach X"); None when ``index`` names its own, or there is none."""
    if c.roles[index] != Role.PROPOSAL or method_name(c.sentences[index]) is not None:
        return None
    for j, s in enumerate(c.sentences):
        for m in _LATER_NAME.finditer(s.replace("*", "")):
            if j <= index and not m.group(3):
                continue
            name = (m.group(1) or m.group(2) or m.group(3)).strip()
            caps = sum(ch.isupper() for ch in name)
            if name.rstrip("s") not in BACKGROUND_ACRONYMS and (caps >= 2 or " " in name):
                return name
    return None


def _sentence_label(sentence: str, role: Role, later_name: str | None = None) -> str:
    """The label one sentence gives: the method it names with what it is, else its object or finding (after
    ``later_name``, the name another sentence gives the method, when there is one)."""
    if later_name:
        what = re.sub(r"^(?:(?:novel|new|simple|general|first)\s+(?:and\s+\w+\s+)?)+", "", _object_of(sentence) or "",
                      flags=re.I)
        body = clip_phrase(_terse(what), MAX_WORDS - len(later_name.split()), MAX_CHARS - len(later_name) - 2) if what \
            else ""
        return f"{later_name}: {body[0].lower() + body[1:] if not body[:2].isupper() else body}" if body else later_name
    name = method_name(sentence) if role == Role.PROPOSAL else None
    if name is not None:
        head = f"{name.long} ({name.name})" if name.long else name.name
        head = head[0].upper() + head[1:]
        desc = "" if name.long and len(name.long.split()) > 3 else _description(sentence, name)
        desc = re.sub(r"^(?:(?:novel|new|simple|general|first)\s+(?:and\s+\w+\s+)?)+", "", desc.strip(), flags=re.I)
        if desc.casefold() in _GENERIC:
            desc = ""
        if desc and len(head.split()) < MAX_WORDS - 2:
            body = clip_phrase(_terse(desc), MAX_WORDS - len(head.split()), MAX_CHARS - len(head) - 2)
            if body and body.casefold() != head.casefold():
                return f"{head}: {body[0].lower() + body[1:] if not body[:2].isupper() else body}"
        return head
    obj = _object_of(sentence)
    if not obj:
        return ""
    obj = re.sub(r"^(?:novel|new|simple|first)\s+", "", obj, flags=re.I)
    named = _names(sentence)
    if named and re.match(r"(?:it|they)\s", obj, re.I):  # "…demonstrate that it optimizes" → "PMD-mean optimizes"
        obj = named[0].name + obj[obj.index(" "):]
    return clip_phrase(obj if role in (Role.FINDING, Role.RESULT) else _terse(obj))  # a finding stays a sentence


def paper_phrase(abstract: str) -> str:
    """The phrase an untitled paper's label gives after its authors: what the contribution sentence names, else
    ``rag.text.key_phrase`` (a named method or the opening words) for an abstract that states none."""
    return label_phrase(abstract) or key_phrase(abstract)
