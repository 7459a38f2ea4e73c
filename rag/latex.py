"""Text-mode LaTeX of exported titles, names and abstracts decoded to Unicode; the formulas kept for the renderer.

Exports mix text-mode markup (accents, ``\\emph``, ``{\\it …}``, ties, escaped spaces, HTML entities) with
formulas. ``clean_latex`` finds the formulas first (``$…$``, ``$$…$$``, ``\\(…\\)``, ``\\[…\\]``), sets each aside
as one private-use character, cleans all the text around them by one set of rules (so a group that holds a
formula, ``\\emph{the $\\ell_1$ norm}``, is unwrapped whole), then puts the formulas back unchanged. Every field
of every input format goes through it. A leaf like ``rag.text``, which builds display abstracts on it.
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata
from collections.abc import Callable
from typing import Any

# A scraped "\\%" is an escaped escape, not a LaTeX line break followed by a comment.
_DOUBLE_ESCAPE = re.compile(r"\\\\(?=[%#&_${}a-zA-Z])")
_PAREN_MATH = re.compile(r"(?<!\\)\\\((.+?)\\\)", re.S)
_BRACKET_MATH = re.compile(r"(?<!\\)\\\[(.+?)\\\]", re.S)
# $$display$$ before $inline$; "\$" is a dollar sign. Paired as LaTeX pairs them, unless a dollar is left over.
_LATEX_PAIRS = re.compile(r"(?<!\\)\$\$(.+?)(?<!\\)\$\$|(?<!\\)\$((?:\\\$|[^$])+?)(?<!\\)\$", re.S)
# Left over (a "5$ fee", a formula that lost its opening "$"): only a dollar before a non-blank opens and one
# after a non-blank closes, as the UI's renderer reads them (ui.safe.MATH).
_STRICT_PAIRS = re.compile(r"(?<!\\)\$\$(?=\S)(.+?)(?<=[^\s\\])\$\$|"
                           r"(?<!\\)\$(?=\S)((?:\\\$|[^$])+?)(?<=[^\s\\])\$", re.S)
_DOLLAR = re.compile(r"(?<!\\)\$")
# A superscript or subscript typed in text mode, its caret often pasted as "ˆ" (U+02C6): "Nˆ{2/3}" is $N^{2/3}$.
_SCRIPT = re.compile(r"(?<![\\\w])([A-Za-z0-9]{1,6})\s?([ˆ^_])\{([^{}$\\]{1,40})\}")
# Math by command: "\ensuremath{x}", and the "\math{x}" some authors define for it (NeurIPS scrapes keep it).
_MATH_CMD = re.compile(r"\\(?:ensuremath|math)\s*\{((?:[^{}]|\{(?:[^{}]|\{[^{}]*\})*\})*)\}")
_MARK = 0xF0000  # a formula set aside: one character of Unicode's private-use plane 15 per formula
_MARKS = re.compile("[\U000F0000-\U000FFFFD]")


def formulas(s: str) -> list[re.Match[str]]:
    """The formulas of ``s`` in order: group 1 the inside of ``$$…$$``, group 2 that of ``$…$``."""
    if "$" not in s:
        return []
    found = list(_LATEX_PAIRS.finditer(s))
    if _DOLLAR.search(_LATEX_PAIRS.sub("", s)):
        found = list(_STRICT_PAIRS.finditer(s))
    return found


def sub_math(s: str, fn: Callable[[str, str], str], text: Callable[[str], str] = str) -> str:
    """``s`` with every formula replaced by ``fn(fence, inside)`` (fence ``$`` or ``$$``) and every stretch of
    text between them by ``text(stretch)``."""
    out, pos = [], 0
    for m in formulas(s):
        display = m.group(1) is not None
        out += [text(s[pos:m.start()]), fn("$$" if display else "$", m.group(1) if display else m.group(2))]
        pos = m.end()
    out.append(text(s[pos:]))
    return "".join(out)


def keep_math(fence: str, inner: str) -> str:
    """A formula as the renderer wants it: unchanged but for blanks at its ends and line breaks (a pasted
    "ˆ" is the caret it stands for)."""
    return fence + re.sub(r"\s*\n\s*", " ", inner.strip()).replace("ˆ", "^") + fence


def _mask(s: str) -> tuple[str, list[tuple[str, str]]]:
    """``s`` with each formula replaced by one private-use character, and the formulas as (fence, inside)."""
    if "\\" in s:
        s = _PAREN_MATH.sub(lambda m: f"${m.group(1)}$", s)
        s = _BRACKET_MATH.sub(lambda m: f"${m.group(1)}$", s)
    found: list[tuple[str, str]] = []

    def hold(fence: str, inner: str) -> str:
        found.append((fence, inner))
        return chr(_MARK + len(found) - 1)

    def scripts(text: str) -> str:  # formulas written without dollars, in the text between the others
        if "{" not in text:
            return text
        text = _MATH_CMD.sub(lambda m: hold("$", m.group(1)), text) if "\\" in text else text
        return _SCRIPT.sub(lambda m: hold("$", f"{m.group(1)}{'^' if m.group(2) == 'ˆ' else m.group(2)}"
                                                   f"{{{m.group(3)}}}"), text)

    return sub_math(s, hold, scripts), found


def _unmask(s: str, found: list[tuple[str, str]], math: Callable[[str, str], str]) -> str:
    if not found:
        return s
    return _MARKS.sub(lambda m: math(*found[ord(m.group(0)) - _MARK]), s)


def clean_latex(s: str, *, markdown: bool = False, math: Callable[[str, str], str] = keep_math) -> str:
    """``s`` with its text-mode LaTeX, HTML entities and tags decoded and whitespace folded; each formula given
    back by ``math(fence, inside)``. ``markdown``: emphasis and bold become ``*…*`` and ``**…**``, else plain."""
    if not _MARKUP.search(s):  # plain text (most records of most exports): only the blanks to fold
        return _tidy(s).strip()
    if _MARKS.search(s):  # the characters that stand for formulas below are no text of an export
        s = _MARKS.sub("\ufffd", s)
    masked, found = _mask(_DOUBLE_ESCAPE.sub(r"\\", s))
    return _unmask(text_mode(masked, markdown), found, math).strip()


def latex_text(s: str) -> str:
    """Decode accents, ligatures, dashes, quotes and text commands of LaTeX text mode (titles, author names);
    formulas are kept as they are."""
    return clean_latex(s)


EMPH_CMDS = ("emph", "textit", "textsl", "mathit")
BOLD_CMDS = ("textbf", "mathbf", "boldsymbol")
PLAIN_CMDS = ("textsc", "texttt", "textrm", "textsf", "text", "mathrm", "mathsf", "mathtt",
               "textnormal", "textup", "mbox", "hbox", "url", "uppercase", "MakeUppercase")
_DROP = re.compile(r"\\(?:cite[pt]?|citealp|ref|eqref|label|footnote)\*?(?:\[[^\]]*\])?\{[^{}]*\}")
_HREF = re.compile(r"\\href\{[^{}]*\}\{([^{}]*)\}")
# Old-style font switches inside a group: "{\it exact}", "{\em predictive information}", "{\bf not}".
_EMPH_DECL, _BOLD_DECL = ("em", "it", "sl", "itshape", "slshape"), ("bf", "bfseries")
_PLAIN_DECL = ("rm", "sf", "tt", "sc", "scshape", "rmfamily", "sffamily", "ttfamily", "upshape", "normalfont",
               "mdseries", "tiny", "small", "footnotesize", "normalsize", "large", "Large")
_DECL = re.compile(r"\{\\(" + "|".join(_EMPH_DECL + _BOLD_DECL + _PLAIN_DECL) + r")(?![A-Za-z])\s*([^{}]*)\}")
# A LaTeX tie after a word ("Fig.~2", "i.e.~the", "gradients~\cite{…}"); a "~" after a blank or a bracket
# ("~5 Hz", "(~5%)") means "about", and "/~user" is a path.
_TIE = re.compile(r"(?<=[\w.,;:)\]\U000F0000-\U000FFFFD])~")


def unwrap_cmds(text: str, names: tuple[str, ...], wrap: str) -> str:
    """Each ``\\name{arg}`` of ``names`` in ``text`` → ``wrap + arg + wrap`` (an empty argument → nothing)."""
    pat = re.compile(r"\\(" + "|".join(names) + r")\*?\s*\{([^{}]*)\}")
    prev = None
    while prev != text:  # innermost first, so nested commands unwrap fully
        prev = text
        text = pat.sub(lambda m: f"{wrap}{m.group(2)}{wrap}" if m.group(2).strip() else "", text)
    return text


def _declaration(m: re.Match[str], markdown: bool) -> str:
    body = m.group(2)
    wrap = "*" if m.group(1) in _EMPH_DECL else "**" if m.group(1) in _BOLD_DECL else ""
    if not body.strip():
        return body
    return f"{wrap if markdown else ''}{body.strip()}{wrap if markdown else ''}" + (" " if body[-1].isspace() else "")


# What text-mode cleaning acts on; text without any of it only has its blanks folded.
_MARKUP = re.compile(r"[\\{}$&<~^ˆ_`]|--|''")
_LIGATURE_RE = re.compile(r"\\(ss|o|O|ae|AE|oe|aa|AA|l|L|i)(?![A-Za-z])\s?")


def _tidy(t: str) -> str:
    return re.sub(r" ([,.;:])(?=\s|$)", r"\1", re.sub(r"\s+", " ", t))


def text_mode(t: str, markdown: bool = False) -> str:
    """Text-mode LaTeX (no formulas in it) decoded to Unicode, whitespace folded."""
    if "\\" in t:
        t = _HREF.sub(r"\1", _DROP.sub("", t))
        t = unwrap_cmds(t, EMPH_CMDS, "*" if markdown else "")
        t = unwrap_cmds(t, BOLD_CMDS, "**" if markdown else "")
        t = unwrap_cmds(t, PLAIN_CMDS, "")
        prev = None
        while prev != t:  # innermost first: "{\it exact {\bf x}}"
            prev, t = t, _DECL.sub(lambda m: _declaration(m, markdown), t)
    t = strip_html(t)
    if "\\" in t:  # an entity may have hidden an accent: "Lov\&#39;asz"
        t = _LIGATURE_RE.sub(lambda m: _LIGATURES[m.group(1)], _ACCENT_RE.sub(_accent, t))
    t = t.replace("---", "—").replace("--", "–").replace("``", "“").replace("''", "”")
    t = strip_html(latex_to_unicode(_unbrace(_TIE.sub(" ", t) if "~" in t else t)))
    if "\\" in t:
        t = re.sub(r"\\(%|#|&|_)", r"\1", t)
        t = re.sub(r"\\(ldots|dots)\b", "…", t)
        t = re.sub(r"\\(?:newline|linebreak)\b|\\\\", " ", t)
    return _tidy(t)


_ACCENTS = {"'": "\u0301", "`": "\u0300", "^": "\u0302", '"': "\u0308", "~": "\u0303",
            "=": "\u0304", ".": "\u0307", "u": "\u0306", "v": "\u030c", "H": "\u030b",
            "c": "\u0327", "k": "\u0328", "r": "\u030a"}
_ACCENT_RE = re.compile(r"\{?\\([`'^\"~=.])\s*\{?([A-Za-z])\}?\}?|\{?\\([uvHckr])\s*\{([A-Za-z])\}\}?|"
                        r"\{?\\([uvHckr]) ([A-Za-z])\}?")
_LIGATURES = {"ss": "ß", "o": "ø", "O": "Ø", "ae": "æ", "AE": "Æ", "oe": "œ", "aa": "å", "AA": "Å", "l": "ł",
              "L": "Ł", "i": "ı"}


def _accent(m: re.Match[str]) -> str:
    mark, letter = next((m.group(i), m.group(i + 1)) for i in (1, 3, 5) if m.group(i))
    s = m.string
    # "Erd{\H O}s": a capital inside a lower-case word is an exporter's case change, not the name's spelling.
    if letter.isupper() and s[m.start() - 1:m.start()].islower() and s[m.end():m.end() + 1].islower():
        letter = letter.lower()
    return unicodedata.normalize("NFC", letter + _ACCENTS[mark])


# Tags that HTML exports leave in titles and abstracts (JATS from Crossref, <p> from publishers' feeds).
# Only these names: a formula's "a<b>c" is no tag. Inline tags go without a trace ("CO<sub>2</sub>" is "CO2"),
# block tags leave a space between the words they separated.
_INLINE_TAG = re.compile(r"</?(?:i|b|u|em|strong|sup|sub|span|a|inf|sc|scp|small|jats:(?:italic|bold|sup|sub|sc|"
                         r"underline|monospace|inline-formula)|mml:[a-z]+)\b[^<>]*/?>", re.I)
_HTML_TAG = re.compile(r"</?(?:p|br|hr|div|ul|ol|li|h[1-6]|title|abstract|sec|jats:[a-z\-]+)\b[^<>]*/?>", re.I)


def strip_html(s: str) -> str:
    """HTML entities decoded (``&amp;`` ``&#xa0;`` ``&lt;p&gt;``) and tags removed."""
    if "&" in s:
        s = html.unescape(s)
    return _HTML_TAG.sub(" ", _INLINE_TAG.sub("", s)) if "<" in s else s


# Text-mode characters that LaTeX reads as syntax (a comment, a table cell, math) but exports mean literally.
_LITERAL = {"%": "\ue000", "&": "\ue001", "#": "\ue002", "~": "\ue003", "^": "\ue004", "_": "\ue005", "$": "\ue006"}
# Commands glued to their argument ("\emphWhat", "\textsuperscript1", "\relax An"): split so they parse.
_GLUED = re.compile(r"\\(emph|textit|textbf|textsc|textsuperscript|textsubscript|relax)(?=[A-Z0-9])")


@functools.lru_cache(maxsize=1)
def _converter() -> Any:
    """pylatexenc's LaTeX → Unicode converter, taught the text-mode symbols exports use that it lacks."""
    from pylatexenc.latex2text import LatexNodes2Text, MacroTextSpec, get_default_latex_context_db
    from pylatexenc.latexwalker import get_default_latex_context_db as walker_db
    from pylatexenc.macrospec import MacroSpec

    extra = {"textless": "<", "textgreater": ">", "copyright": "©", "textcopyright": "©", "textregistered": "®",
             "texttrademark": "™", "relax": "", "textsuperscript": "%s", "textsubscript": "%s", "textbar": "|",
             "textbackslash": "\\", "textasciitilde": "~", "textunderscore": "_", "S": "§", "P": "¶", "ddag": "‡",
             "|": "‖", "LaTeX": "LaTeX", "TeX": "TeX"}
    db = get_default_latex_context_db().filter_context(keep_categories=None)
    db.add_context_category("paperchat", prepend=True,
                            macros=[MacroTextSpec(k, simplify_repl=v) for k, v in extra.items()])
    wdb = walker_db()
    wdb.add_context_category("paperchat", prepend=True,
                             macros=[MacroSpec("textsuperscript", "{"), MacroSpec("textsubscript", "{"),
                                     MacroSpec("relax", "")])
    return LatexNodes2Text(latex_context=db, math_mode="verbatim"), wdb


def latex_to_unicode(s: str) -> str:
    """Text-mode LaTeX the hand-written rules left (``\\textendash``, ``{\\textless}``, stray braces) → Unicode, by
    pylatexenc; ``s`` holds no formula (a "$" is a dollar). Text without a backslash or brace is returned as is."""
    if "\\" not in s and "{" not in s and "}" not in s:
        return s
    from pylatexenc.latexwalker import LatexWalker

    conv, wdb = _converter()
    t = _GLUED.sub(r"\\\1 ", s)
    for k, v in _LITERAL.items():
        t = re.sub(r"(?<!\\)" + re.escape(k), v, t)
    try:
        out = conv.nodelist_to_text(LatexWalker(t, latex_context=wdb, tolerant_parsing=True).get_latex_nodes()[0])
    except Exception:  # noqa: BLE001  a parse pylatexenc gives up on: keep the text, drop only the braces
        out = t.replace("{", "").replace("}", "")
    for k, v in _LITERAL.items():
        out = out.replace(v, k)
    return out


_GROUP = re.compile(r"(\\[A-Za-z]+\s*)?\{([^{}\\]+)\}")


def _unbrace(t: str) -> str:
    """BibTeX case-protection braces removed, nested ones too (``{{BERT}}``); ``t`` holds no formula (a formula's
    ``\\mathcal{O}`` keeps its group). An empty ``{}`` stays: "\\textendash{}" ends a command with it."""
    if "{" not in t:
        return t
    prev = None
    while prev != t:  # a command's argument keeps its braces: "\emph{stable}" is no "\emphstable"
        prev, t = t, _GROUP.sub(lambda m: m.group(0) if m.group(1) else m.group(2), t)
    return t
