"""Saved conversations: every turn kept server-side in SQLite (``Settings.conversations_path``,
$PAPERCHAT_HOME/conversations.sqlite by default), one owner's never shown to another.

An owner is the signed-in user when the app has a login, ``LOCAL_OWNER`` otherwise (the terminal, an app without
login). A conversation has an id (32 hex digits; any unambiguous prefix names it), a title (its first question,
shortened), created and updated times (UTC, ISO 8601) and its turns: each turn's question and its ``Answer`` as
the JSON of ``Answer.to_dict`` (citations, statements and filters included), so a resumed conversation's follow-ups
resolve against the papers it cited. The file is in WAL mode and each turn is one transaction: a server killed
while answering loses at most the turn being answered.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rag.answer import Answer
from rag.errors import ConfigError, InputError

log = logging.getLogger(__name__)

LOCAL_OWNER = "local"  # the owner when there is no login
NEW = "new"  # a conversation id that starts a new conversation (the API's and MCP's ask)
HISTORY_TURNS = 10  # the earlier turns a resumed conversation's next question sees (the API's and MCP's ask)
SCHEMA_VERSION = 1
TITLE_CHARS = 80
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY, owner TEXT NOT NULL, title TEXT NOT NULL, created TEXT NOT NULL, updated TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS conversations_by_owner ON conversations (owner, updated);
CREATE TABLE IF NOT EXISTS turns (
    conversation TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE, n INTEGER NOT NULL,
    question TEXT NOT NULL, answer TEXT NOT NULL, created TEXT NOT NULL, PRIMARY KEY (conversation, n));
"""
_COLUMNS = {"conversations": {"id", "owner", "title", "created", "updated"},
            "turns": {"conversation", "n", "question", "answer", "created"}}


@dataclass
class ConversationInfo:
    """One conversation as a list shows it (``turns``: how many), and with its answers once loaded."""

    id: str
    owner: str
    title: str
    created: str
    updated: str
    turns: int = 0
    answers: list[Answer] = field(default_factory=list)  # filled by ``load``

    @property
    def short_id(self) -> str:
        return self.id[:8]

    def to_dict(self) -> dict[str, object]:
        return {"id": self.id, "title": self.title, "created": self.created, "updated": self.updated,
                "turns": self.turns}


def owner_for(username: str | None) -> str:
    """The owner of a signed-in user's conversations ("user:NAME"), or ``LOCAL_OWNER`` without a login: a user
    who happens to be called "local" still never sees the conversations kept without a login."""
    return f"user:{username}" if username else LOCAL_OWNER


def owner_for_key(key_hash: str | None) -> str:
    """The owner of the conversations asked through the HTTP API with a key (its sha256 hex digest): "key:" and
    the digest's first 16 digits; ``LOCAL_OWNER`` for a loopback API without keys, as the terminal."""
    return f"key:{key_hash[:16]}" if key_hash else LOCAL_OWNER


def title_of(question: str) -> str:
    """A conversation's title from its first question: one line, at most ``TITLE_CHARS`` characters."""
    text = " ".join(question.split())
    return text if len(text) <= TITLE_CHARS else text[:TITLE_CHARS - 1].rstrip() + "\u2026"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


class ConversationStore:
    """The conversations file. Every method takes the owner and never reads or changes another owner's rows.

    A connection per call: the app answers on several threads, and SQLite's WAL lets readers go on while one
    turn is written."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._ready = False

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        if not self._ready:
            self._open_schema()
        con = sqlite3.connect(self.path, timeout=30)
        try:
            con.execute("PRAGMA foreign_keys = ON")
            with con:  # one transaction: committed on success, rolled back on any error
                yield con
        except sqlite3.DatabaseError as e:
            raise self._unreadable(e) from None
        finally:
            con.close()

    def _unreadable(self, e: Exception) -> ConfigError:
        return ConfigError(f"{self.path}: the conversations file cannot be read ({e}); move it aside to start "
                           "a new one (the library is not affected)")

    def _open_schema(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            con = sqlite3.connect(self.path, timeout=30)
        except sqlite3.Error as e:
            raise self._unreadable(e) from None
        try:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables:
                self._check_schema(con, tables)
            con.execute("PRAGMA journal_mode = WAL")
            with con:
                con.executescript(_SCHEMA)
                con.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        except sqlite3.DatabaseError as e:
            raise self._unreadable(e) from None
        finally:
            con.close()
        self._ready = True

    def _check_schema(self, con: sqlite3.Connection, tables: set[str]) -> None:
        """A file from another version (or not paperchat's) is refused, naming what differs."""
        version = None
        if "meta" in tables:
            row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            version = row[0] if row else None
        for table, wanted in _COLUMNS.items():
            have = {r[1] for r in con.execute(f"PRAGMA table_info({table})")} if table in tables else set()
            if version != str(SCHEMA_VERSION) or not wanted <= have:
                missing = ", ".join(sorted(wanted - have)) or "none"
                raise ConfigError(f"{self.path}: not a conversations file of this paperchat (schema version "
                                  f"{version or 'missing'}, expected {SCHEMA_VERSION}; table {table!r} lacks "
                                  f"columns: {missing}); move it aside to start a new one")

    # ---- reading ----------------------------------------------------------------------------------
    def list(self, owner: str) -> list[ConversationInfo]:
        """The owner's conversations, most recently updated first."""
        with self._connect() as con:
            rows = con.execute(
                "SELECT c.id, c.owner, c.title, c.created, c.updated, (SELECT COUNT(*) FROM turns t WHERE "
                "t.conversation = c.id) FROM conversations c WHERE c.owner = ? ORDER BY c.updated DESC, "
                "c.rowid DESC", (owner,)).fetchall()
        return [ConversationInfo(*r) for r in rows]

    def latest(self, owner: str) -> ConversationInfo | None:
        """The owner's most recently updated conversation, loaded; None when there is none."""
        listed = self.list(owner)
        return self.load(owner, listed[0].id) if listed else None

    def pick(self, owner: str, wanted: str = "") -> ConversationInfo:
        """The conversation ``wanted`` names (an id or its prefix), or the latest for "", loaded; an
        ``InputError`` when the owner has none."""
        if wanted:
            return self.load(owner, wanted)
        latest = self.latest(owner)
        if latest is None:
            raise InputError("no saved conversation yet (`paperchat chat` and the app's chat save them)")
        return latest

    def resolve(self, owner: str, prefix: str) -> str:
        """The full id of the owner's conversation whose id starts with ``prefix``; an ``InputError`` when
        none does or several do (naming them)."""
        key = prefix.strip().lower()
        if not key or any(c not in "0123456789abcdef" for c in key):
            raise InputError(f"{prefix!r} is not a conversation id (hex digits; `paperchat conversations list` "
                             "shows them)")
        with self._connect() as con:
            rows = con.execute("SELECT id, title FROM conversations WHERE owner = ? AND substr(id, 1, ?) = ? "
                               "ORDER BY updated DESC", (owner, len(key), key)).fetchall()
        if not rows:
            raise InputError(f"no conversation with id {prefix!r} (`paperchat conversations list` shows them)")
        if len(rows) > 1:
            names = "; ".join(f"{i[:8]} {t!r}" for i, t in rows[:5])
            raise InputError(f"the id {prefix!r} is ambiguous: {len(rows)} conversations start with it ({names}); "
                             "give more of it")
        return str(rows[0][0])

    def load(self, owner: str, conversation_id: str) -> ConversationInfo:
        """One conversation with its answers (``conversation_id``: a full id or a prefix)."""
        cid = self.resolve(owner, conversation_id)
        with self._connect() as con:
            head = con.execute("SELECT id, owner, title, created, updated FROM conversations WHERE id = ? "
                               "AND owner = ?", (cid, owner)).fetchone()
            rows = con.execute("SELECT n, answer FROM turns WHERE conversation = ? ORDER BY n", (cid,)).fetchall()
        info = ConversationInfo(*head)
        info.turns = len(rows)
        for n, text in rows:
            try:
                info.answers.append(Answer.from_dict(json.loads(text)))
            except ValueError as e:
                raise ConfigError(f"{self.path}: conversation {cid[:8]}, turn {n + 1}: unreadable answer ({e})") \
                    from None
        return info

    def history(self, owner: str, conversation_id: str | None) -> tuple[str | None, Sequence[Answer]]:
        """The conversation a question goes on with (its full id) and its last ``HISTORY_TURNS`` answers, so a
        follow-up resolves against the papers they cited; (None, []) to start one (no id, "" or ``NEW``)."""
        if not conversation_id or conversation_id.strip().lower() == NEW:
            return None, []
        info = self.load(owner, conversation_id)
        return info.id, info.answers[-HISTORY_TURNS:]

    def shown(self, owner: str, conversation_id: str) -> dict[str, Any]:
        """One conversation as JSON: its id, title, times, turn count and each turn's ``Answer.to_dict()``."""
        info = self.load(owner, conversation_id)
        return {**info.to_dict(), "answers": [a.to_dict() for a in info.answers]}

    # ---- writing ----------------------------------------------------------------------------------
    def create(self, owner: str, title: str = "") -> str:
        """A new, empty conversation of the owner; its id. The title comes from the first turn when not given."""
        cid, now = uuid.uuid4().hex, _now()
        with self._connect() as con:
            con.execute("INSERT INTO conversations VALUES (?, ?, ?, ?, ?)", (cid, owner, title_of(title), now, now))
        return cid

    def append_turn(self, owner: str, conversation_id: str | None, answer: Answer) -> str:
        """Save one answered turn (one transaction), creating the conversation when ``conversation_id`` is None
        (or no longer there: deleted elsewhere); the conversation's id."""
        now, data = _now(), json.dumps(answer.to_dict(), ensure_ascii=False)
        cid = conversation_id or ""
        with self._connect() as con:
            row = con.execute("SELECT title FROM conversations WHERE id = ? AND owner = ?", (cid, owner)).fetchone()
            if row is None:
                cid = uuid.uuid4().hex
                con.execute("INSERT INTO conversations VALUES (?, ?, ?, ?, ?)",
                            (cid, owner, title_of(answer.question), now, now))
            elif not row[0]:
                con.execute("UPDATE conversations SET title = ? WHERE id = ?", (title_of(answer.question), cid))
            # the turn's number in the same statement: two tabs answering at once never take the same one
            con.execute("INSERT INTO turns SELECT ?, COALESCE(MAX(n) + 1, 0), ?, ?, ? FROM turns WHERE "
                        "conversation = ?", (cid, answer.question, data, now, cid))
            con.execute("UPDATE conversations SET updated = ? WHERE id = ?", (now, cid))
        return cid

    def rename(self, owner: str, conversation_id: str, title: str) -> str:
        """Give the owner's conversation a new title (one line, shortened); its full id."""
        new = title_of(title)
        if not new:
            raise InputError("a conversation's title cannot be empty")
        cid = self.resolve(owner, conversation_id)
        with self._connect() as con:
            con.execute("UPDATE conversations SET title = ? WHERE id = ? AND owner = ?", (new, cid, owner))
        return cid

    def delete(self, owner: str, conversation_id: str) -> str:
        """Delete the owner's conversation and its turns; its full id."""
        cid = self.resolve(owner, conversation_id)
        with self._connect() as con:
            con.execute("DELETE FROM turns WHERE conversation = ?", (cid,))
            con.execute("DELETE FROM conversations WHERE id = ? AND owner = ?", (cid, owner))
        return cid
