"""The project's error tree; the CLI and UI map these to one-line messages."""

from __future__ import annotations


class PaperchatError(Exception):
    """Base class of every error paperchat raises on purpose."""


class InputError(PaperchatError):
    """Bad user input: a file, record, field or question that cannot be used.

    ``where`` names the place (``file``, ``file:line`` or a field) so the message can point at it.
    """

    def __init__(self, message: str, where: str | None = None) -> None:
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


class ConfigError(PaperchatError):
    """A setting is wrong or inconsistent with the store (e.g. another embedding model)."""


class UpstreamError(PaperchatError):
    """A service we depend on (Chroma server, LLM endpoint) failed or is unreachable."""


class BudgetExceeded(PaperchatError):
    """A configured limit (tokens, requests, upload size, question length) was hit."""


class RateLimited(BudgetExceeded):
    """Too many requests in the rate window; ``retry_after_s``: whole seconds until one more is accepted."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class EmptyLibrary(PaperchatError):
    """A question was asked of a store that holds no paper yet."""

    def __init__(self, message: str = "the library is empty: run `paperchat ingest FILE`") -> None:
        super().__init__(message)
