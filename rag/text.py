"""Text normalisation: scraped LaTeX made readable, plain text for indexing, sentences, key phrases.

Display text keeps Markdown emphasis and non-trivial ``$math$`` so the UI can render it; plain text
(for embeddings and BM25) turns the math into Unicode approximations and drops the markup.
"""

from __future__ import annotations

import re
import unicodedata

from rag.latex import BOLD_CMDS, EMPH_CMDS, PLAIN_CMDS, clean_latex, keep_math, sub_math, unwrap_cmds
from rag.latex import latex_text as latex_text  # re-exported: titles and names are cleaned by it
from rag.latex import strip_html as strip_html  # re-exported

_SYMBOLS = {
    r"\times": "×", r"\sim": "~", r"\approx": "≈", r"\leq": "≤", r"\le": "≤", r"\geq": "≥",
    r"\ge": "≥", r"\neq": "≠", r"\pm": "±", r"\cdot": "·", r"\to": "→", r"\rightarrow": "→",
    r"\leftarrow": "←", r"\infty": "∞", r"\ell": "ℓ", r"\in": "∈", r"\log": "log", r"\mid": "|",
    r"\alpha": "α", r"\beta": "β", r"\gamma": "γ", r"\delta": "δ", r"\epsilon": "ε",
    r"\varepsilon": "ε", r"\zeta": "ζ", r"\eta": "η", r"\theta": "θ", r"\kappa": "κ",
    r"\lambda": "λ", r"\mu": "μ", r"\nu": "ν", r"\xi": "ξ", r"\pi": "π", r"\rho": "ρ",
    r"\sigma": "σ", r"\tau": "τ", r"\phi": "φ", r"\varphi": "φ", r"\chi": "χ", r"\psi": "ψ",
    r"\omega": "ω", r"\Gamma": "Γ", r"\Delta": "Δ", r"\Theta": "Θ", r"\Lambda": "Λ",
    r"\Sigma": "Σ", r"\Phi": "Φ", r"\Omega": "Ω", r"\ldots": "…", r"\dots": "…", r"\cdots": "⋯",
    r"\%": "%", r"\#": "#", r"\&": "&", r"\_": "_", r"\{": "{", r"\}": "}", r"\$": "$",
    r"\,": " ", r"\;": " ", r"\:": " ", r"\>": " ", r"\!": "", r"\ ": " ", r"\quad": " ", r"\star": "*",
    r"\|": "‖",
}
_SYMBOL_RE = re.compile("|".join(re.escape(k) + (r"(?![A-Za-z])" if k[-1].isalpha() else "")
                                 for k in sorted(_SYMBOLS, key=len, reverse=True)))
# Math that is only numbers, units and simple symbols reads better as text than as a formula.
_SIMPLE_MATH = re.compile(r"^[\s\d.,+\-−%/()<>=:|~]*(" + "|".join(
    re.escape(k) for k in (r"\times", r"\sim", r"\approx", r"\leq", r"\le", r"\geq", r"\ge", r"\pm",
                           r"\%", r"\#", r"\cdot", r"\to", r"\rightarrow", r"\infty", r"\,",
                           r"\mathrm", r"\text")) + r")?[\s\d.,+\-−%/()<>=:|~a-zA-Z{}\\]*$")


# Font commands of math mode whose argument reads the same as plain text: "\mathcal{O}(n)" → "O(n)".
_MATH_FONTS = ("mathcal", "mathbb", "mathfrak", "mathscr", "operatorname", "mathnormal")


def _math_to_text(inner: str) -> str:
    s = unwrap_cmds(inner, PLAIN_CMDS + EMPH_CMDS + BOLD_CMDS + _MATH_FONTS, "")
    s = re.sub(r"\\sqrt\s*\{([^{}]*)\}", r"√(\1)", s)
    s = _SYMBOL_RE.sub(lambda m: _SYMBOLS[m.group(0)], s)
    s = re.sub(r"\\(left|right|big|Big|bigg|Bigg)\b", "", s)
    s = re.sub(r"\\[a-zA-Z]+", lambda m: m.group(0)[1:], s)
    s = re.sub(r"\\(?![a-zA-Z])", "", s)  # an escape without a stand-in: its character alone
    s = s.replace("{", "").replace("}", "")
    return re.sub(r"\s+", " ", s).strip()


# The commands simple math may use: those with a Unicode stand-in, and font commands around plain text.
_TEXT_MATH_CMDS = frozenset(k[1:] for k in _SYMBOLS if k[1:].isalpha()) | frozenset(
    PLAIN_CMDS + EMPH_CMDS + BOLD_CMDS + ("left", "right"))


def _display_math(fence: str, inner: str) -> str:
    """A formula of an abstract: simple ones ("$5\\%$", "$\\theta$") read as text, real ones stay for the UI."""
    bare = inner.strip()
    if (_SIMPLE_MATH.match(bare) and "^" not in bare and "_" not in bare
            and all(c in _TEXT_MATH_CMDS for c in re.findall(r"\\([A-Za-z]+)", bare))):
        return _math_to_text(bare)
    return keep_math(fence, inner)  # a real formula ("\\mathcal{O}(n)", "\\sqrt{n}"): the UI renders it


# A publisher's rights line closing an abstract: "© 2021 Elsevier B.V. All rights reserved.", "Copyright © 2019
# … Published by …", "(c) 2003 …". Only at the end, and only when a year or a rights phrase follows the mark.
_COPYRIGHT = re.compile(r"(?:^|(?<=[.!?\s]))\s*(?:copyright\s*(?:©|\(c\)|(?=\d{4}\b))|c?\s?©|\(c\))\s*"
                        r"(?=[^©]{0,40}?(?:\b(?:1[89]|20)\d\d\b|all rights reserved|published by))[^©]{0,240}$", re.I)


def strip_copyright(text: str) -> str:
    """``text`` without a trailing publisher copyright line (an abstract that is nothing else is kept)."""
    m = _COPYRIGHT.search(text)
    return text[:m.start()].rstrip() if m and m.start() > 0 else text


def normalize_abstract(raw: str) -> str:
    """Scraped abstract → readable display text: text-mode LaTeX decoded (``rag.latex``), Markdown emphasis,
    simple math as Unicode, real formulas kept as ``$…$`` for the UI to render, whitespace folded."""
    s = unicodedata.normalize("NFC", raw.replace("\r\n", "\n").replace("\x00", ""))
    return strip_copyright(clean_latex(s, markdown=True, math=_display_math))


def plain_text(display: str) -> str:
    """Display text → plain text for embeddings and BM25: math in Unicode, no Markdown marks."""
    s = sub_math(display, lambda _, inner: _math_to_text(inner))
    s = re.sub(r"(\*\*|\*|__|`)(?=\S)(.+?)(?<=\S)\1", r"\2", s)
    return re.sub(r"\s+", " ", s).strip()


def normalize_for_hash(s: str) -> str:
    """Canonical form for duplicate detection: plain, case-folded, alphanumerics only."""
    # \w keeps letters of every script: a Chinese or Greek abstract must not hash to "".
    return re.sub(r"[\W_]+", " ", plain_text(s).casefold()).strip()


_ABBREV = ("e.g", "i.e", "et al", "etc", "vs", "cf", "fig", "figs", "eq", "eqs", "sec", "resp",
           "approx", "no", "dr", "mr", "ms", "prof", "ref", "refs", "al", "viz", "incl")
# A sentence ends at .!? before a letter, digit or markup. Before a lower-case letter (some corpora,
# Cranfield among them, are all lower case) only after a real word, not "no. of" or "e.g. this".
# The closing quotes and brackets after the stop (group 1) end the sentence with it: 'the "Twin Paradox."'.
_SENT_END = re.compile(r"(?<=[.!?])([\"”')\]]*)\s+(?=[\"“(\[]?[A-Za-z0-9$*\\])")


def split_sentences(text: str) -> list[str]:
    """Split display text into sentences, keeping abbreviations, decimals and ``$math$`` intact."""
    text = text.strip()
    if not text:
        return []
    masked = sub_math(text, lambda fence, inner: fence + "\x01" * len(inner) + fence)
    out: list[str] = []
    start = 0
    for m in _SENT_END.finditer(masked):
        # Only the word before the end matters; a bounded window keeps runs of skipped ends ("e.g. e.g. …") linear.
        before = masked[max(start, m.start() - 64):m.start()].rstrip("\"”')]")
        word = re.search(r"(\S+)[.!?]$", before)
        if word and (word.group(1).lower().rstrip(".") in _ABBREV or re.fullmatch(r"[A-Za-z]", word.group(1))):
            continue
        nxt = masked[m.end():m.end() + 1]
        if nxt.islower() and not (word and len(word.group(1)) >= 3 and word.group(1).isalpha()):
            continue
        out.append(text[start:m.end(1)].strip())
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return [s for s in out if s]


_PROPOSE = re.compile(
    r"\b(?:we|this (?:paper|work)|here we)\s+(?:first\s+|then\s+|further\s+)?(?:propose|introduce|present|develop|"
    r"design|study|identify|investigate|analy[sz]e|formulate|provide|call|term|name)s?\s+(?:a |an |the )?"
    r"(?:new |novel |simple |general |unified |principled )?"
    r"(.+?)(?=,|;|:|\.(?:\s|$)| that | which | to | for | in | by | via | where | using | as | based | with | and "
    r"(?:prove|show|demonstrate|evaluate|find|analy[sz]e|use|apply)\b)",
    re.I,
)
_EMPHASIS = re.compile(r"\*([^*]{3,80})\*")
# "Long Name (ACR)": up to six words before a parenthesised acronym.
_ACRONYM_DEF = re.compile(r"((?:[\w\-–]+\s+){0,5}[\w\-–]+)\s+\(([A-Z][A-Za-z0-9\-]*[A-Z0-9][A-Za-z0-9\-]*)\)")
_CALLED = re.compile(r"\b(?:called|named|dubbed|termed|coined)\s+\*?([A-Z][\w\-]*(?:\s+[A-Z][\w\-]*){0,4})")
_GENERIC = {"framework", "method", "approach", "model", "algorithm", "setting", "alternative setting", "technique",
            "system", "paradigm", "mechanism", "strategy", "analysis", "study", "problem", "task", "architecture",
            "practical algorithm", "new method", "attention mechanism", "theoretical analysis", "pipeline", "benchmark",
            "dataset", "sparsity", "scheme", "solution", "formulation", "procedure", "concept", "idea", "tool"}


# Field-wide acronyms an abstract defines in passing: never the paper's own contribution.
BACKGROUND_ACRONYMS = {"LLM", "LM", "RL", "ML", "AI", "NLP", "DNN", "CNN", "RNN", "GNN", "VLM", "MLLM", "RLHF", "FL",
                        "SGD", "MDP", "KL", "GPU", "VQA", "QA", "MT", "ASR", "SE", "CV", "LVLM", "NN", "PDE", "MoE",
                        "MOE", "OOD", "SOTA", "KV", "TTFT", "RAG"}


def acronym_phrase(long: str, acr: str, background: frozenset[str] | set[str] = BACKGROUND_ACRONYMS,
                   loose: bool = False) -> str | None:
    """The words of ``long`` that the acronym abbreviates (its letters, in order), or None. ``loose`` also takes
    a run whose capitals start with the acronym ("Clean-Label Backdoor Attack on VLMs via Diffusion Models" for
    CBV): labels want the method's full name even when the acronym skips a word."""
    if acr.rstrip("s") in background:
        return None
    words = long.split()
    letters = "".join(c for c in acr.upper() if c.isalpha())
    for start in range(len(words) - 1, -1, -1):  # the shortest run of words that spells it
        cand = words[start:]
        initials = "".join(re.sub(r"[^A-Za-z]", "", w)[:1].upper() for w in cand)
        parts = [p for w in cand for p in re.split(r"[-–]", w) if p]
        part_initials = "".join(p[0].upper() for p in parts if p[0].isalpha())
        caps = "".join(c for w in cand for c in w if c.isupper())
        if letters in (initials, part_initials, caps) or (loose and len(letters) >= 3 and caps.startswith(letters)
                                                         and len(cand) <= len(letters) + 2):
            return " ".join(cand)
    if not loose:
        return None
    # A title-cased run (short connectors allowed) that starts with the acronym's first letter names it too.
    run: list[str] = []
    for w in reversed(words):
        if w[:1].isupper() or (run and w in ("on", "of", "for", "via", "with", "and", "to", "in", "from")):
            run.insert(0, w)
        else:
            break
    while run and not run[0][:1].isupper():
        run.pop(0)
    if sum(w[:1].isupper() for w in run) >= 2 and run[0][:1].upper() == letters[:1]:
        return " ".join(run)
    return None


def _clean_candidate(c: str, max_words: int) -> str | None:
    c = re.sub(r"[*]", "", c).strip(" .,;:")
    words = c.split()
    # "a simple yet general algorithm FedGMT" → "FedGMT": the name, not its generic description
    if len(words) > 1 and re.fullmatch(r"[\w\-]+", words[-1]) and sum(ch.isupper() for ch in words[-1]) >= 2 \
            and words[-2].islower():
        return words[-1]
    if not (1 <= len(words) <= max_words):
        return None
    if re.fullmatch(r"(it|this|that|these|those|how|whether|why|what|when|our|its|their)\b.*", c, re.I):
        return None
    if c.casefold() in _GENERIC or (len(words) <= 2 and words[-1].casefold() in _GENERIC and not
                                    any(ch.isupper() for ch in c[1:])):
        return None
    return c[0].upper() + c[1:]


def key_phrase(abstract: str, max_words: int = 8) -> str:
    """The phrase a reader would use to name the paper: its named method or emphasised idea.

    Preference: a method the authors name ("we propose X (ACR)", "called X"), an emphasised phrase,
    the object of "we propose/introduce/study", an acronym defined after the first sentence; else
    the opening words of the abstract. These rules look at every sentence, so they can pick a component or a
    dataset: labels ask ``rag.contribution.paper_phrase`` first, which keeps them for abstracts that state no
    contribution of their own."""
    text = plain_text_keep_emphasis(abstract)
    sentences = split_sentences(text)
    candidates: list[str] = []
    for sent in sentences:
        m = _PROPOSE.search(sent)
        if m:
            a = _ACRONYM_DEF.search(sent[m.start(1):])
            if a:
                phrase = acronym_phrase(a.group(1), a.group(2))
                if phrase:
                    candidates.append(f"{phrase} ({a.group(2)})")
            c = _CALLED.search(sent)
            if c:
                candidates.append(c.group(1))
    proposed = [m.group(1) for m in (_PROPOSE.search(s) for s in sentences) if m]
    named = [c for c in proposed if re.search(r"\b[A-Z][a-z]*[A-Z][\w\-]*", c)]  # SyncMind, FedGMT, P2L
    candidates += named
    candidates += [e.group(1) for e in _EMPHASIS.finditer(text)][:1]
    candidates += proposed
    for sent in sentences[1:]:
        for a in _ACRONYM_DEF.finditer(sent):
            phrase = acronym_phrase(a.group(1), a.group(2))
            if phrase:
                candidates.append(f"{phrase} ({a.group(2)})")
    for cand in candidates:
        cleaned = _clean_candidate(cand, max_words)
        if cleaned:
            return cleaned
    first = split_sentences(plain_text(abstract))
    if not first:
        return ""
    words = first[0].split()
    phrase = " ".join(words[:max_words]).rstrip(" .,;:")
    return phrase + ("…" if len(words) > max_words else "")


def plain_text_keep_emphasis(display: str) -> str:
    """Plain text but with ``*emphasis*`` kept (key-phrase extraction looks for it)."""
    return re.sub(r"\s+", " ", sub_math(display, lambda _, inner: _math_to_text(inner))).strip()
