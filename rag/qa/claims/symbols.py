"""Math written one way: LaTeX, Unicode and plain-text spellings of symbols and numbers, so a statement and its
abstract compare. ``fold_symbols`` spells math names as words (``$\\ell_1$`` → "l1", α → "alpha"); ``numeric_text``
writes numbers one way (``$10^{-3}$`` → 0.001, ``\\%`` → %); ``decimal`` writes a value as a number is written.
"""

from __future__ import annotations

import math
import re
import unicodedata

_MATH = re.compile(r"(?<!\\)\$(?!\$)((?:\\\$|[^$])+?)(?<!\\)\$")
_GREEK = {"alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε", "zeta": "ζ",
          "eta": "η", "theta": "θ", "vartheta": "θ", "iota": "ι", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν",
          "xi": "ξ", "pi": "π", "rho": "ρ", "sigma": "σ", "tau": "τ", "upsilon": "υ", "phi": "φ", "varphi": "φ",
          "chi": "χ", "psi": "ψ", "omega": "ω", "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ",
          "Pi": "Π", "Sigma": "Σ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω"}
_GREEK_NAME = {v: k.lower() for k, v in _GREEK.items() if not k.startswith("var")} | {"ϵ": "epsilon", "µ": "mu"}
GREEK_NAMES = frozenset(_GREEK_NAME.values())  # the Greek letters as words: "alpha", "beta"…
_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")


_GLUED_MATH = re.compile(r"(?<=[A-Za-z])(?=\$\\[A-Za-z])")  # a word, then math opening with a command


def fold_symbols(text: str) -> str:
    """Math names as an answer writes them in words: ``$\\ell_1$`` → "l1", ``$L^2$`` → "L2", α → "alpha",
    ``\\infty`` → "inf"; the ``$``, braces, ``^`` and ``_`` go."""
    # Math glued to the word before it ("within$\\ell_1$", a lost space) starts a word of its own.
    text = _GLUED_MATH.sub(" ", text)
    s = unicodedata.normalize("NFKC", text.replace("\u2113", "l"))  # ℓ, and ² → 2
    s = re.sub(r"\\ell(?![A-Za-z])", "l", s)
    s = re.sub(r"(?<![\w\\])[Ee]ll[-_ ]?(?=\d)", "l", s)  # ℓ spelled out: "ell-1", "ell_2"
    s = re.sub(r"\\(?:infty)(?![A-Za-z])|\u221e", "inf", s)
    s = re.sub(r"\\(var)?([A-Za-z]+)", lambda m: m.group(2).lower() if m.group(0)[1:] in _GREEK else "", s)
    s = "".join(_GREEK_NAME.get(c, c) for c in s)
    return re.sub(r"[${}^_\\]", "", s)


def decimal(v: float) -> str:
    """A number as written: 7.0 → "7", 0.25 → "0.25"."""
    s = f"{v:.12f}".rstrip("0").rstrip(".")
    return s or "0"


# A root of a number, with an optional factor: ``2\sqrt{2}``, "3√2" (a constant: 2.83, not the numbers 2 and 2).
_NUMERIC_ROOT = re.compile(r"(?<![\w.^{/])(?:(\d+(?:\.\d+)?)\s*)?(?:\\sqrt\s*\{\s*(\d+(?:\.\d+)?)\s*\}|"
                           r"\u221a\s*(\d+(?:\.\d+)?)(?![\d.]))(?![A-Za-z(\\{])")


def _root_value(m: re.Match[str]) -> str:
    factor = float(m.group(1)) if m.group(1) else 1.0
    return decimal(round(factor * math.sqrt(float(m.group(2) or m.group(3))), 6))


def numeric_text(text: str) -> str:
    """Text whose numbers read one way: ``\\%`` → %, ``$99.42\\%$`` → 99.42%, ``$10^{-3}$``, 10^-3, 1e-3 →
    0.001, ``2\\times 10^{4}`` → 20000, ``$\\times 2$`` → 2×, thin spaces and ``{,}`` dropped, Unicode minus → -."""
    s = text.replace("\\\\%", "%").replace("\\%", "%").replace("\u2212", "-").replace("{,}", ",")
    s = re.sub(r"\\[,;!: ]|~", " ", s)
    s = re.sub(r"\\(?:times|cdot)(?![A-Za-z])", "×", s)
    s = re.sub(r"\\(?:text|mathrm|mathit|textrm)\s*\{([^{}]*)\}", r"\1", s)
    s = re.sub(r"\\mu(?![A-Za-z])", "µ", s)
    s = re.sub(r"(?<![\d.])10([⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)", lambda m: "10^" + m.group(1).translate(_SUPERSCRIPT), s)

    def power(m: re.Match[str]) -> str:
        base = float(m.group(1)) if m.group(1) else 1.0
        return decimal(base * 10 ** int(m.group(2)))

    # the space after a bare power ("10^4 images") is not the power's
    s = re.sub(r"(?<![\w.^])(?:(\d+(?:\.\d+)?)\s*[×x·]\s*)?10\s*\^\s*\{?\s*([-+]?\d{1,2})(?:\s*\})?(?!\d|\.\d)",
               power, s)
    s = _NUMERIC_ROOT.sub(_root_value, s)
    s = re.sub(r"(?<![\w.])(\d+(?:\.\d+)?)[eE]([-+]?\d{1,2})(?!\w|\.\d)",
               lambda m: decimal(float(m.group(1)) * 10 ** int(m.group(2))), s)
    s = re.sub(r"(?<![\w\d])×\s*(\d+(?:\.\d+)?)(?![\d.])", r"\1×", s)  # "×2" → "2×"
    # Math that is now only a number ("$64$", "$99.42%$", "$0.001$") loses its dollars.
    return re.sub(r"\$\s*([-+]?[\d.,]+\s*[%×]?\s*(?:µ\w*)?)\s*\$", r"\1", s)
