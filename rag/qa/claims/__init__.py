"""Claim checks: whether a cited statement is what its source says, by rule families (numbers, formulas, counts,
names, negation, denial, opposites, exclusivity, direction), one module each, with a measured severity each
(``table``): *contradicted*, *not_in_source* or a caution.

``Source.of`` parses the cited abstracts once per answer; ``findings(statement, source, evidence)`` gives what
the families found as ``rag.qa.findings.Finding``; ``hits`` gives them before severity (what ``scoring``
measures); ``review`` and ``check`` are the older string API.
"""

from rag.qa.claims.rules import check, findings, hits, review
from rag.qa.claims.source import Source

__all__ = ["Source", "check", "findings", "hits", "review"]
