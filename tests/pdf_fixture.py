"""Small PDFs written by the tests themselves: text in Helvetica, one content stream per page.

``write_pdf(path, pages, info)`` writes a PDF 1.4 file whose pages hold the given lines (top to bottom, each
``(text, size)``), with a cross-reference table at the right offsets and the ``info`` strings as the document
information (``Title``, ``Author``, …). ``encrypt(path, password)`` rewrites it behind a user password
(pypdf, a dev dependency). Text is Latin-1 (Helvetica's WinAnsi encoding).
"""

from __future__ import annotations

from pathlib import Path

Line = tuple[str, float]

_WIDTH, _HEIGHT = 612, 792


def _escape(text: str) -> bytes:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("latin-1")


def _content(lines: list[Line]) -> bytes:
    out = [b"BT"]
    y = _HEIGHT - 72
    for text, size in lines:
        y -= size * 1.4
        out.append(b"/F1 %.1f Tf 1 0 0 1 72 %.1f Tm (%s) Tj" % (size, y, _escape(text)))
    out.append(b"ET")
    if not lines:  # a page with only a drawing, as a scan without a text layer
        out = [b"0.5 g 72 72 400 600 re f"]
    return b"\n".join(out)


def write_pdf(path: Path, pages: list[list[Line]], info: dict[str, str] | None = None) -> Path:
    """Write ``pages`` (lists of ``(text, font size)``) to ``path`` as a PDF; return ``path``."""
    n = len(pages)
    # objects: 1 catalog, 2 pages, 3 font, 4 info, then (page, content) per page
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % (5 + 2 * i) for i in range(n)), n),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        b"<< " + b" ".join(b"/%s (%s)" % (k.encode(), _escape(v)) for k, v in (info or {}).items()) + b" >>",
    ]
    for i, lines in enumerate(pages):
        stream = _content(lines)
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Resources << /Font << /F1 3 0 R >> >> "
                       b"/Contents %d 0 R >>" % (_WIDTH, _HEIGHT, 6 + 2 * i))
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    data = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(data))
        data += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(data)
    data += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    data += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    data += b"trailer\n<< /Size %d /Root 1 0 R /Info 4 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(data))
    return path


def encrypt(path: Path, password: str) -> Path:
    """Rewrite the PDF at ``path`` so that it opens only with ``password``."""
    from pypdf import PdfWriter

    writer = PdfWriter(clone_from=str(path))
    writer.encrypt(user_password=password, owner_password=password + "-owner", algorithm="AES-128")
    with open(path, "wb") as f:
        writer.write(f)
    return path
