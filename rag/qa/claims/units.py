"""Units of measurement as sources write them glued to their number ("10degree", "1400degreek", "636TB", "1,700f."):
the number is the quantity all the same, so "ten degrees", "1400 K" and "636 terabytes" are what they say.
"""

from __future__ import annotations

import re

from rag.qa.claims.lexicon import WordClass

ANGLES_AND_TEMPERATURES = WordClass("angle and temperature units, as OCR and old abstracts glue them", frozenset({
    "degree", "degrees", "deg", "degreek", "degreesk", "degreef", "degreesf", "degreec", "degreesc", "degk", "degf",
    "degc", "k", "f", "c", "rad", "rads", "radians"}))
# not "m": "5m" is as often five million as five metres
LENGTHS_AND_MASSES = WordClass("length, area and mass units", frozenset({
    "nm", "um", "µm", "mm", "cm", "km", "ft", "in", "mi", "kg", "g", "mg", "lb", "lbs"}))
FORCES_AND_RATES = WordClass("pressure, energy, power, frequency and rate units", frozenset({
    "pa", "kpa", "mpa", "psi", "psia", "atm", "bar", "j", "kj", "ev", "kev", "mev", "w", "kw", "mw", "v", "kv",
    "hz", "khz", "mhz", "ghz", "rpm", "fps"}))
DATA_SIZES = WordClass("data sizes", frozenset({"kb", "mb", "gb", "tb", "pb", "kib", "mib", "gib", "tib"}))
GLUED_UNITS = WordClass.joined("units a number may be glued to", ANGLES_AND_TEMPERATURES, LENGTHS_AND_MASSES,
                               FORCES_AND_RATES, DATA_SIZES)

_LETTERS = re.compile(r"[^\W\d_]+")


def glued_unit(text: str, end: int) -> bool:
    """The letters right after a number ending at ``end`` are a unit glued to it ("10degree", "636TB")."""
    m = _LETTERS.match(text, end)
    return m is not None and m.group(0).casefold() in GLUED_UNITS
