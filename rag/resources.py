"""Files shipped inside the package: the sample corpus, the eval question sets and the eval thresholds.

They are located through importlib.resources, never relative to the source tree, so the same call finds them
in a checkout's editable install and in an installed wheel. pyproject's package data lists what ships:
``data/sample`` of the checkout installs as the resource package ``rag.sample``; the question sets and
thresholds travel inside ``evals``.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

SAMPLE_PACKAGE = "rag.sample"


def resource_path(package: str, *parts: str) -> Path:
    """A file or folder bundled with ``package``, as a filesystem path.

    Callers hand these paths to code that opens files by name (the ingest pipeline, report metadata), so a
    resource must live on disk: pip installs wheels unzipped, and a zipped install is refused here."""
    node = files(package).joinpath(*parts)
    if not isinstance(node, Path):
        raise RuntimeError(f"{package} is installed in a form paperchat cannot read files from ({node!r}); "
                           "install it with pip, unzipped")
    return node


def sample_dir() -> Path:
    """The folder of the bundled sample corpus."""
    return resource_path(SAMPLE_PACKAGE)


def sample_corpus(folder: Path | None = None) -> list[Path]:
    """The files of the sample corpus, in a stable order: the bundled one (listing pages, 40 papers), or the
    ``*.txt`` of ``folder``; none when the folder is missing."""
    folder = sample_dir() if folder is None else folder
    return sorted(folder.glob("*.txt")) if folder.is_dir() else []
