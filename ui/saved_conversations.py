"""Saved conversations (rag.conversations) through the HTTP API and MCP: list them, show one, and ask within one
so that a follow-up resolves against the papers its earlier turns cited.

The owner is the caller: through the API, the bearer key (``owner_for_key``; a loopback API without keys and the
MCP server, which has no login, use ``LOCAL_OWNER``, as the terminal and an app without login do). A question
asked with a conversation id ("new" starts one) is saved as that conversation's next turn, in one transaction."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from rag.answer import Answer
from rag.conversations import ConversationStore
from ui import library
from ui.library import Library


def store_of(lib: Library) -> ConversationStore:
    return ConversationStore(lib.settings.conversations_path)


def listed(lib: Library, owner: str) -> list[dict[str, object]]:
    """The owner's conversations, the latest first: id, title, created, updated, turns."""
    return [c.to_dict() for c in store_of(lib).list(owner)]


def ask_saved(lib: Library, owner: str, conversation_id: str, question: str, **ask: Any) -> tuple[Answer, str]:
    """Answer ``question`` as the next turn of the owner's conversation ``conversation_id`` (an id or its first
    digits; "new" starts one), its earlier answers as history, and save the turn; the answer and the
    conversation's full id. ``ask``: ``ui.library.ask``'s options (mode, k, filters, length, pin, exclude)."""
    saved = store_of(lib)
    cid, earlier = saved.history(owner, conversation_id)  # an unknown id fails here, before any answer
    answer = library.ask(lib, question, earlier, **ask)
    return answer, saved.append_turn(owner, cid, answer)


def add_routes(app: Any, lib: Library, owner_of: Callable[..., str],
               compute: Callable[..., Awaitable[Any]]) -> None:
    """``GET /v1/conversations`` and ``GET /v1/conversations/{id}`` on the API ``app``; ``owner_of`` is the
    route dependency naming the caller's owner, ``compute`` runs a blocking call off the event loop."""
    from fastapi import Depends

    @app.get("/v1/conversations", tags=["paperchat"])
    async def conversations(owner: str = Depends(owner_of)) -> list[dict[str, Any]]:
        """The caller's saved conversations, the latest first (``paperchat conversations list --json``)."""
        result: list[dict[str, Any]] = await compute(listed, lib, owner)
        return result

    @app.get("/v1/conversations/{conversation_id}", tags=["paperchat"])
    async def conversation(conversation_id: str, owner: str = Depends(owner_of)) -> dict[str, Any]:
        """One of the caller's conversations with every turn as ``/v1/ask`` returned it; ``conversation_id``:
        its id or first digits."""
        result: dict[str, Any] = await compute(store_of(lib).shown, owner, conversation_id)
        return result


def turn_with_id(answer: Answer, conversation_id: str, view: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
                 ) -> dict[str, Any]:
    """The ``ask --json`` turn (through ``view``, if given) with the conversation it was saved in."""
    turn = answer.to_dict()
    return {"conversation_id": conversation_id, **(view(turn) if view else turn)}

