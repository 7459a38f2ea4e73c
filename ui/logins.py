"""Who may sign in to the web app: ``ui.username``/``ui.password`` (one user) and ``ui.users`` (any number, each
with a salted PBKDF2 hash of the password, never the password). ``paperchat ui-user NAME`` makes the hash.

Each signed-in user keeps their own saved conversations (rag.conversations, ``owner_for``)."""

from __future__ import annotations

import argparse
import getpass
import hashlib
import hmac
import secrets
import sys
from collections.abc import Callable
from typing import Any

from rag.config import PASSWORD_HASH, Settings, UISettings
from rag.errors import InputError

ITERATIONS = 200_000  # PBKDF2-SHA256 rounds of a new hash (~0.1 s a check: only at sign-in)
Auth = Callable[[str, str], bool]


def hash_password(password: str, iterations: int = ITERATIONS) -> str:
    """``pbkdf2_sha256$<iterations>$<salt hex>$<digest hex>`` for ``password`` (a random 16-byte salt)."""
    if not password:
        raise InputError("the password is empty")
    salt = secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    return f"pbkdf2_sha256${iterations}${salt.hex()}${digest.hex()}"


def check_password(password: str, stored: str) -> bool:
    """Whether ``password`` matches a hash made by ``hash_password`` (compared in constant time)."""
    m = PASSWORD_HASH.fullmatch(stored)
    if not m:
        return False
    iterations, salt, digest = int(m["iterations"]), bytes.fromhex(m["salt"]), bytes.fromhex(m["digest"])
    return hmac.compare_digest(hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations), digest)


def login_check(ui: UISettings) -> Auth | tuple[str, str] | None:
    """The app's sign-in check from the settings, as Gradio's ``auth`` takes it (None: no login; the pair of
    ``ui.username``/``ui.password`` alone; else a check of the pair and of ``ui.users``' hashes). A username
    without a password (or the reverse) is refused."""
    if bool(ui.username) != bool(ui.password):
        raise InputError("set both PAPERCHAT_UI__USERNAME and PAPERCHAT_UI__PASSWORD for login, or neither")
    single = (ui.username, ui.password.get_secret_value()) if ui.username and ui.password else None
    users = dict(ui.users)
    if not users:
        return single

    def check(username: str, password: str) -> bool:
        if single and hmac.compare_digest(username.encode(), single[0].encode()):
            return hmac.compare_digest(password.encode(), single[1].encode())
        stored = users.get(username)
        return check_password(password, stored) if stored else False

    return check


def register(sub: Any, commands: dict[str, Any]) -> None:
    """``paperchat ui-user NAME``, registered by rag.cli."""
    p = sub.add_parser("ui-user", help="print the password hash of a login user of the app (ui.users)")
    p.add_argument("name", metavar="NAME", help="the user's sign-in name")
    commands["ui-user"] = cmd_ui_user


def cmd_ui_user(args: argparse.Namespace, settings: Settings) -> int:
    """Read a password (asked for on a terminal, else the first line of stdin) and print its hash with the
    config.toml / environment lines that add the user."""
    name = args.name.strip()
    if not name or any(c in name for c in "\"'\\\n"):
        raise InputError(f"ui-user: {args.name!r} is not a usable sign-in name (empty or with quotes)")
    if sys.stdin.isatty():
        password = getpass.getpass(f"password for {name}: ")
        if getpass.getpass("again: ") != password:
            raise InputError("ui-user: the two passwords differ")
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    digest = hash_password(password)
    print(f"hash: {digest}\n\nAdd the user in $PAPERCHAT_HOME/config.toml:\n  [ui.users]\n"
          f"  \"{name}\" = \"{digest}\"\nor in the environment (every user in one JSON object):\n"
          f"  PAPERCHAT_UI__USERS='{{\"{name}\": \"{digest}\"}}'")
    return 0
