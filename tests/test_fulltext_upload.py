"""The Library tab's upload of a PDF, with and without "With full text" (issue 31): the handler called as a plain
method over a real runtime (the session's model, real Chroma)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import gradio as gr

from rag.config import get_settings
from rag.qa.chain import AnswerChain
from rag.runtime import Runtime
from tests.gfs_fixture import write_gfs
from ui import services
from ui.tabs import library as library_tab
from ui.tabs.context import AppContext


def test_a_pdf_upload_stores_its_body_only_with_full_text(embedder: Any, tmp_path: Path) -> None:
    assert ".pdf" in services.UPLOAD_SUFFIXES
    settings = get_settings(home=tmp_path / "home")
    rt = Runtime(settings, _embedder=embedder)
    try:
        handlers = library_tab.LibraryHandlers(AppContext(rt, settings, AnswerChain(rt), gr.Blocks()))
        pdf = write_gfs(tmp_path / "gfs.pdf")

        def upload(full_text: bool) -> str:
            sent = tmp_path / "sent" / "The Google File System.pdf"  # Gradio's copy: the handler removes it
            sent.parent.mkdir(exist_ok=True)
            shutil.copyfile(pdf, sent)
            report, *_ = handlers.add_file(str(sent), "auto", full_text, progress=lambda *a, **k: None)
            assert not sent.exists()
            return str(report)

        first = upload(False)
        assert "added 1," in first and "full text" not in first, first
        [paper] = rt.store.papers()
        assert paper.title == "The Google File System" and not rt.store.passage_states([paper.id])
        second = upload(True)  # the same PDF again: its abstract unchanged, its passages added
        assert "added 0," in second and "unchanged 1," in second and "full text of 1 papers" in second, second
        [(present, expected, _)] = rt.store.passage_states([paper.id])[paper.id].values()
        assert present == expected > 0
    finally:
        rt.close()
