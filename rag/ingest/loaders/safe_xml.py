"""XML read safely: expat into an ElementTree, each element's line recorded, DTDs and entities refused
(no entity expansion: a "billion laughs" file is an error, not a hang). Shared by the Atom and OAI-PMH loaders."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any
from xml.parsers import expat

from rag.errors import InputError
from rag.ingest.loaders.common import MAX_WHOLE_FILE_BYTES, open_binary


class SafeTree:
    """Parse XML with expat into an ElementTree, recording each element's line; DTDs are refused."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.builder = ET.TreeBuilder()
        self.lines: dict[int, int] = {}
        p = expat.ParserCreate(namespace_separator="}")
        p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        for handler in ("StartDoctypeDeclHandler", "EntityDeclHandler", "ExternalEntityRefHandler"):
            setattr(p, handler, self._refuse)
        p.StartElementHandler = self._start
        p.EndElementHandler = lambda tag: self.builder.end(self._tag(tag))
        p.CharacterDataHandler = self.builder.data
        p.buffer_text = True
        self.parser = p

    def _refuse(self, *args: Any) -> None:
        raise InputError("XML with a DOCTYPE or entity declarations is refused (entity expansion is unsafe)",
                         where=f"{self.path}:{self.parser.CurrentLineNumber}")

    @staticmethod
    def _tag(tag: str) -> str:
        return "{" + tag if "}" in tag else tag

    def _start(self, tag: str, attrs: dict[str, str]) -> None:
        el = self.builder.start(self._tag(tag), {self._tag(k): v for k, v in attrs.items()})
        self.lines[id(el)] = self.parser.CurrentLineNumber

    def parse(self) -> ET.Element:
        if self.path.stat().st_size > MAX_WHOLE_FILE_BYTES:
            raise InputError("the feed is too large to parse", where=str(self.path))
        try:
            with open_binary(self.path) as f:
                while chunk := f.read(1 << 16):
                    self.parser.Parse(chunk, False)
            self.parser.Parse(b"", True)
        except expat.ExpatError as e:
            raise InputError(f"malformed XML: {expat.ErrorString(e.code)} (column {e.offset + 1})",
                             where=f"{self.path}:{e.lineno}") from None
        return self.builder.close()
