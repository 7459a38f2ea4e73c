"""A formula as one token sequence however it was written (``canonical``): LaTeX, Unicode or plain text,
exponents evaluated, roots as powers, division by a symbol as a negative power.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from fractions import Fraction

from rag.qa.claims.symbols import _GREEK, _SUPERSCRIPT

_HEADS = {"O", "Ω", "Θ", "o", "ω"}
_DECORATION = re.compile(r"\\(?:widetilde|tilde|widehat|hat|bar|overline|mathcal|mathrm|mathbf|mathbb|mathit|"
                         r"operatorname|text|textrm|math|boldsymbol|mathsf)\s*\{([^{}]*)\}")


_FORMULA_TOKEN = re.compile(r"\d+(?:\.\d+)?|(?:polylog|poly|log|ln|exp|sqrt|max|min|ceil|floor|nnz|sup|lim|det|OPT)"
                            r"|[A-Za-z]|[^\sA-Za-z\d]")


def _groups(s: str, command: str, n: int) -> str:
    """``\\command{a}{b}`` (nested braces allowed) → "((a)/(b))" for frac, "(a)^(1/2)" for sqrt."""
    out: list[str] = []
    i = 0
    while True:
        k = s.find("\\" + command, i)
        if k < 0:
            return "".join(out) + s[i:]
        args, j = [], k + len(command) + 1
        for _ in range(n):
            while j < len(s) and s[j] == " ":
                j += 1
            if j >= len(s) or s[j] != "{":
                break
            depth, start = 0, j
            for j in range(start, len(s)):
                depth += {"{": 1, "}": -1}.get(s[j], 0)
                if depth == 0:
                    break
            args.append(s[start + 1:j])
            j += 1
        if len(args) < n:
            out.append(s[i:k + len(command) + 1])
            i = k + len(command) + 1
            continue
        out.append(s[i:k] + ("((" + args[0] + ")/(" + args[1] + "))" if n == 2 else "(" + args[0] + ")^(1/2)"))
        i = j


_ROOT_DEGREE = {"square": 2, "cube": 3, "cubic": 3, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "eighth": 8}
# "the fourth root of K", "square root of $n$": a power written in words.
_ROOT_WORDS = re.compile(r"\b(" + "|".join(_ROOT_DEGREE) + r")\s+root\s+of\s+(?:the\s+)?\$?\s*([A-Za-z])\s*\$?(?!\w)",
                         re.IGNORECASE)


# LaTeX math commands with a standard meaning (kept as their names); any other command is a macro the paper
# defined for itself (``\nX`` for |X|, ``\R`` for the reals), which a statement cannot write the same way.
_KNOWN_COMMANDS = {"log", "ln", "exp", "min", "max", "sup", "inf", "lim", "liminf", "limsup", "det", "sum", "prod",
                   "int", "in", "notin", "mid", "to", "infty", "partial", "nabla", "ldots", "dots", "cdots", "top",
                   "prime", "star", "ast", "pm", "mp", "approx", "sim", "simeq", "propto", "neq", "ne", "ll", "gg",
                   "setminus", "cup", "cap", "subset", "subseteq", "forall", "exists", "rightarrow", "leftarrow",
                   "Rightarrow", "mapsto", "langle", "rangle", "lVert", "rVert", "Vert", "vert", "lvert", "rvert",
                   "quad", "qquad", "ell", "hbar", "emptyset", "polylog", "poly", "arg", "argmin", "argmax", "Pr",
                   "mathbb", "mathbf", "mathrm", "ceil", "floor", "tr", "rank", "diag", "sign", "cos", "sin", "tan",
                   "choose", "binom", "equiv", "circ", "otimes", "oplus", "wedge", "vee", "neg", "cdot", "times",
                   "div", "le", "ge", "lesssim", "gtrsim", "asymp", "leq", "geq", "mathsf", "mathit", "bf",
                   "rm", "it", "cal", "displaystyle", "textstyle", "limits", "nolimits", "over", "atop"}
WILDCARD = "\u00a4"  # a paper's own macro in a source formula: it stands for some run of symbols


def _command(m: re.Match[str]) -> str:
    name = m.group(0)[1:]
    if name in _GREEK:
        return _GREEK[name]
    return m.group(2) if m.group(2) in _KNOWN_COMMANDS or m.group(1) else f" {WILDCARD} "


def canonical(expr: str) -> tuple[str, ...]:
    """A formula as tokens that read the same however it was written: LaTeX or Unicode or plain text,
    ``\\widetilde{O}`` = Õ = O, ``\\sqrt{n}`` = √n = n^{1/2}, n² = n^2, exponents evaluated (5/8 → 0.625),
    braces and ``\\left(`` as parentheses, subscripts, implicit products and spacing dropped,
    ε = epsilon = ``\\epsilon``."""
    s = re.sub(r"[⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺]+", lambda m: "^(" + m.group(0).translate(_SUPERSCRIPT) + ")", expr)
    s = unicodedata.normalize("NFKD", s).replace("\u0303", "")  # Õ → O
    s = re.sub(r"\\eps(?![A-Za-z])", r"\\epsilon", s)  # the usual macro for epsilon
    s = s.replace("$", " ").replace("\u2212", "-").replace("\u2013", "-").replace("\\\\", "\\")
    prev = None
    while prev != s:
        prev, s = s, _DECORATION.sub(r"\1", s)
    s = re.sub(r"\\(?:tilde|widetilde|hat|widehat|bar|mathcal|operatorname|left|right|(?:big|Big|bigg|Bigg)[lrm]?)"
               r"(?![A-Za-z])", "", s)
    s = re.sub(r"\\(?:geq?|geqslant)(?![A-Za-z])|>=", "≥", s)
    s = re.sub(r"\\(?:leq?|leqslant)(?![A-Za-z])|<=", "≤", s)
    s = _ROOT_WORDS.sub(lambda m: f"({m.group(2)})^(1/{_ROOT_DEGREE[m.group(1).casefold()]})", s)
    s = re.sub(r"\\l(ceil|floor)(?![A-Za-z])", r" \1(", s)
    s = re.sub(r"\\r(?:ceil|floor)(?![A-Za-z])", ")", s)
    s = s.replace("⌈", " ceil(").replace("⌉", ")").replace("⌊", " floor(").replace("⌋", ")")
    s = _groups(_groups(s, "frac", 2), "sqrt", 1)
    s = re.sub(r"√\s*(\([^()]*\)|\{[^{}]*\}|[\w.]+)", r"(\1)^(1/2)", s)
    s = re.sub(r"\bsqrt\s*(\([^()]*\))", r"(\1)^(1/2)", s)
    s = re.sub(r"_(?:\{[^{}]*\}|\\?[A-Za-z0-9]+|[^\s{])", "", s)  # subscripts: o_n(1) is o(1)
    s = re.sub(r"\\(var)?([A-Za-z]+)", _command, s)
    s = re.sub(r"\b(var)?(epsilon|eps|alpha|beta|gamma|delta|lambda|sigma|theta|mu|Omega|Theta)\b",
               lambda m: _GREEK.get(m.group(2), "ε" if m.group(2) == "eps" else m.group(2)), s)
    s = s.replace("ϵ", "ε").replace("{", "(").replace("}", ")").replace("[", "(").replace("]", ")")
    s = re.sub(r"[×·*~\s]|\\[,;!: ]", "", s)
    return tuple(_reciprocals(_simplify(_FORMULA_TOKEN.findall(s))))


def _number_token(v: Fraction | float) -> str:
    f = float(v)
    return str(int(f)) if f.is_integer() else f"{f:.4f}".rstrip("0")


def _evaluate(tokens: Sequence[str]) -> Fraction | None:
    """The value of a purely numeric token run ("5", "/", "8"; "-", "1"), else None."""
    text = "".join(tokens)
    if not re.fullmatch(r"[-+]?\d+(?:\.\d+)?(?:/[-+]?\d+(?:\.\d+)?)?", text):
        return None
    try:
        num, _, den = text.partition("/")
        value = Fraction(num) / (Fraction(den) if den else 1)
    except (ValueError, ZeroDivisionError):
        return None
    return value


def _closing(tokens: Sequence[str], i: int) -> int:
    """Index of the parenthesis closing the one at ``i`` (or the last index)."""
    depth = 0
    for k in range(i, len(tokens)):
        depth += {"(": 1, ")": -1}.get(tokens[k], 0)
        if depth == 0:
            return k
    return len(tokens) - 1


def _simplify(tokens: list[str]) -> list[str]:
    """Exponents evaluated (^(5/8) → ^0.625, ^(1/2) → ^0.5), parentheses around one token dropped unless they
    hold a head's argument (O(1) stays, log^2(n) → log^2 n)."""
    out = list(tokens)
    changed = True
    while changed:
        changed = False
        for i in range(len(out) - 2):
            if out[i] == "(" and out[i + 2] == ")" and (i == 0 or out[i - 1] not in _HEADS):
                out[i:i + 3] = [out[i + 1]]
                changed = True
                break
            if out[i] == "(" and out[i + 1] == "(":
                m = _closing(out, i + 1)
                if m + 1 < len(out) and out[m + 1] == ")" and _closing(out, i) == m + 1:
                    del out[m + 1], out[i]  # ((x)) → (x)
                    changed = True
                    break
            if out[i] == "^" and out[i + 1] == "(":
                depth, k = 0, i + 1
                for k in range(i + 1, len(out)):
                    depth += {"(": 1, ")": -1}.get(out[k], 0)
                    if depth == 0:
                        break
                value = _evaluate(out[i + 2:k])
                if value is not None:
                    out[i + 1:k + 1] = [_number_token(value)]
                    changed = True
                    break
        for i in range(len(out)):
            if re.fullmatch(r"\d+\.\d+|\d+", out[i]) and out[i] != _number_token(float(out[i])):
                out[i] = _number_token(float(out[i]))
    return out


_NUMERIC = re.compile(r"-?\d+(?:\.\d+)?")
_AFTER_TERM = {")", "+", "-", ",", "/", "|"}


def _is_atom(token: str) -> bool:
    """One symbol a power may apply to: a letter or a Greek letter (not a function name such as log)."""
    return len(token) == 1 and (token.isalpha() or token == "ε")


def _reciprocals(tokens: list[str]) -> list[str]:
    """Division by a symbol written as a negative power, so 1/T^2 = T^{-2}, 1/√p = p^{-1/2}, n/T = n T^{-1}:
    "1", "/", "T", "^", "2" → "T", "^", "-2". Only a letter or a parenthesised group with an optional numeric
    power that ends a term is rewritten ("1/T log T" is left alone); numeric denominators stay (1/2)."""
    out = list(tokens)
    for i in range(len(out) - 2):  # "^", "-", "2" → "^", "-2"
        if out[i] == "^" and out[i + 1] == "-" and _NUMERIC.fullmatch(out[i + 2]):
            out[i + 1:i + 3] = ["-" + out[i + 2]]
            if i + 3 >= len(out):
                break
    while any(t == "/" and _divided(out, i) for i, t in enumerate(out)):
        pass
    return out


def _divided(out: list[str], i: int) -> bool:
    """Rewrite the division at ``out[i]`` (a "/") as a negative power in place when its denominator is a letter or
    a parenthesised group, with an optional numeric power, that ends a term; whether it did."""
    if i + 1 >= len(out):
        return False
    j = i + 1
    if _is_atom(out[j]):
        end = j + 1
    elif out[j] == "(":
        end = _closing(out, j) + 1
    else:
        return False
    power = Fraction(1)
    if end + 1 < len(out) and out[end] == "^" and _NUMERIC.fullmatch(out[end + 1]):
        power, end_all = Fraction(out[end + 1]), end + 2
    else:
        end_all = end
    if end_all < len(out) and out[end_all] not in _AFTER_TERM:
        return False
    base = out[j:end]
    inner = base[1:-1] if base[0] == "(" else []
    if len(inner) == 3 and _is_atom(inner[0]) and inner[1] == "^" and _NUMERIC.fullmatch(inner[2]):
        base, power = [inner[0]], power * Fraction(inner[2])  # 1/(√T) = T^{-1/2}
    start = i
    if i >= 1 and out[i - 1] == "1" and (i == 1 or out[i - 2] in {"(", "+", "-", ",", "/"}):
        start = i - 1  # the "1" of 1/T goes
    out[start:end_all] = base + ["^", _number_token(-power)]
    return True
