"""One browser session's chat state, typed: what the chat handlers read and change between events."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rag.answer import Answer


@dataclass
class Session:
    """Held in a ``gr.State`` (copied per browser session)."""

    answers: list[Answer] = field(default_factory=list)  # the conversation's answers, one per turn
    # For each chat message, the turn (index into ``answers``) it shows: None for questions and notices.
    msg_turn: list[int | None] = field(default_factory=list)
    stamps: list[float] = field(default_factory=list)  # recent question times, for the per-minute limit
    shown: int | None = None  # the turn whose sources the side panel shows
    conversation: str | None = None  # the saved conversation's id (rag.conversations) once a turn is saved
    pin: list[str] = field(default_factory=list)  # /pin: papers the next answers must consider (rag.qa.why)
    exclude: list[str] = field(default_factory=list)  # /exclude: papers the next answers never cite

    def turn_at(self, index: Any) -> int | None:
        """The turn of the chat message at ``index`` (Gradio's event index: an int or ``[row, col]``), if any."""
        idx = index[0] if isinstance(index, (list, tuple)) else index
        turns = self.msg_turn
        return turns[idx] if isinstance(idx, int) and 0 <= idx < len(turns) else None

    @classmethod
    def resumed(cls, conversation: str, answers: list[Answer], stamps: list[float]) -> Session:
        """A saved conversation taken up again: its answers, each shown after its question."""
        turns: list[int | None] = []
        for i in range(len(answers)):
            turns += [None, i]
        return cls(answers=list(answers), msg_turn=turns, stamps=stamps,
                   shown=len(answers) - 1 if answers else None, conversation=conversation)

    def fresh(self) -> Session:
        """A new conversation: the question times stay, so the rate limit holds across it."""
        return Session(stamps=self.stamps)
