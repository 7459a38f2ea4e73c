"""A small GFS-like PDF for the full-text tests: its abstract says nothing of the chunk size, its body does
(page 3, section "2.5 Chunk Size"). ``body`` changes the body text only, for a "changed PDF"."""

from __future__ import annotations

from pathlib import Path

from tests.pdf_fixture import write_pdf

ABSTRACT = [
    ("We have designed and implemented the Google File System, a scalable distributed file system for large", 10),
    ("distributed data-intensive applications. It provides fault tolerance while running on inexpensive", 10),
    ("commodity hardware, and it delivers high aggregate performance to a large number of clients.", 10),
]

BODY_PAGE2 = [
    ("2 Design Overview", 12),
    ("The system is built from many inexpensive commodity components that often fail. A cluster consists of a", 10),
    ("single master and multiple chunkservers and is accessed by multiple clients. Files are divided into", 10),
    ("fixed-size chunks, each identified by an immutable and globally unique chunk handle.", 10),
]

CHUNK_SIZE = [
    ("2.5 Chunk Size", 12),
    ("Chunk size is one of the key design parameters. We have chosen 64 MB, which is much larger than typical", 10),
    ("file system block sizes. Each chunk replica is stored as a plain Linux file on a chunkserver.", 10),
    ("3 System Interactions", 12),
    ("The master grants a chunk lease to one of the replicas, which we call the primary.", 10),
]


def write_gfs(path: Path, body: list[tuple[str, float]] | None = None) -> Path:
    """The GFS-like paper as a three-page PDF (title, authors and abstract on page 1)."""
    first = [("The Google File System", 20), ("Sanjay Ghemawat, Howard Gobioff, Shun-Tak Leung", 11),
             ("Abstract", 12), *ABSTRACT, ("1 Introduction", 12),
             ("We have designed the Google File System to meet the demands of data processing workloads.", 10)]
    return write_pdf(path, [first, BODY_PAGE2, body if body is not None else CHUNK_SIZE],
                     info={"Title": "The Google File System"})
