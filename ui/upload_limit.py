"""How many files one upload request to the app may carry (``limits.upload_files``).

Gradio's upload route (``/gradio_api/upload``) checks each file's size (``limits.upload_mb``, 413 beyond) but
takes up to 1,000 files in one multipart request, each written to a temp file. ``UploadCount`` counts the parts
of such a request as its body streams through (the multipart boundary delimiters, across chunk edges) and
answers 413 as soon as there are more than the limit; the app then sees a client that went away, and anything
it would send is dropped. Other requests pass untouched.
"""

from __future__ import annotations

import json
import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)


def _boundary(scope: Scope) -> bytes | None:
    ctype = dict(scope.get("headers") or []).get(b"content-type", b"")
    if not ctype.lower().startswith(b"multipart/form-data"):
        return None
    for param in ctype.split(b";")[1:]:
        key, _, value = param.strip().partition(b"=")
        if key.lower() == b"boundary" and value:
            return value.strip(b'"')
    return None


class UploadCount:
    """ASGI middleware: a multipart POST to a path ending in ``/upload`` with more than ``max_files`` parts gets
    413 (``{"detail": …}``, as Gradio's own size refusal) naming PAPERCHAT_LIMITS__UPLOAD_FILES."""

    def __init__(self, app: ASGIApp, max_files: int) -> None:
        self.app, self.max_files = app, max_files

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        boundary = None
        if scope["type"] == "http" and scope.get("method") == "POST" and str(scope.get("path", "")).endswith("/upload"):
            boundary = _boundary(scope)
        if boundary is None:
            await self.app(scope, receive, send)
            return
        delimiter = b"--" + boundary
        seen, tail, refused = 0, b"", False

        async def counted() -> Message:
            nonlocal seen, tail, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] != "http.request":
                return message
            data = tail + message.get("body", b"")
            seen += data.count(delimiter)  # the tail kept is too short to hold a whole delimiter: none counted twice
            tail = data[-(len(delimiter) - 1):]
            if seen > self.max_files + 1:  # delimiters = parts + the closing one
                refused = True
                await self._refuse(send)
                return {"type": "http.disconnect"}
            return message

        async def guarded(message: Message) -> None:
            if not refused:
                await send(message)

        await self.app(scope, counted, guarded)

    async def _refuse(self, send: Send) -> None:
        log.warning("upload refused: more than %d files in one request", self.max_files)
        body = json.dumps({"detail": f"more than {self.max_files} files in one upload; the limit is "
                                     f"{self.max_files} (PAPERCHAT_LIMITS__UPLOAD_FILES)"}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})
