"""Numbers, units, formulas and math symbols read one way, so a statement and its abstract compare.

An abstract writes ``$10^{-3}$``, ``18.6\\%``, ``50\u00d7``, ``$\\widetilde{O}(T^{5/8})$`` and ``$\\ell_1$``; an answer
writes 0.001, "18.6 percent", "fifty-fold", "\u00d5(T^0.625)" and "L1". This module is the rules' one door to the
modules that do it:

- ``symbols``: ``fold_symbols`` (math names as words), ``numeric_text`` (numbers written one way), ``decimal``;
- ``quantity``, ``number_words``, ``quantities``: ``quantities`` finds every quantity of a text (digits with their
  units, numbers in words, fractions, multipliers, orders of magnitude, durations), ``counts`` what numbers count;
- ``values``: ``source_values`` and ``matches`` say whether a quantity is one a source states, rounds or derives;
- ``formula_tokens``, ``formula_spans``: ``formula_spans`` finds asymptotic and power expressions, ``canonical``
  writes them as one token sequence, ``contains``, ``loose`` and ``reordered`` compare them.
"""

from __future__ import annotations

from rag.qa.claims.formula_spans import blank_formulas, checked, contains, formula_spans, loose, reordered
from rag.qa.claims.formula_tokens import WILDCARD, canonical
from rag.qa.claims.quantities import counts, quantities
from rag.qa.claims.quantity import Quantity
from rag.qa.claims.symbols import GREEK_NAMES, decimal, fold_symbols, numeric_text
from rag.qa.claims.values import Values, matches, source_values

__all__ = [
    "GREEK_NAMES",
    "WILDCARD",
    "Quantity",
    "Values",
    "blank_formulas",
    "canonical",
    "checked",
    "contains",
    "counts",
    "decimal",
    "fold_symbols",
    "formula_spans",
    "loose",
    "matches",
    "numeric_text",
    "quantities",
    "reordered",
    "source_values",
]
