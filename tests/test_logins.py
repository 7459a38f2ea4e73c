"""Login users of the web app from the settings (issue 32): ``ui.users`` maps names to password hashes made by
``paperchat ui-user``, read from config.toml or PAPERCHAT_UI__USERS; plain passwords are refused."""

from __future__ import annotations

import io
import json

import pytest
from pydantic import ValidationError

from rag.config import get_settings
from ui.app import check_open_bind, launch_kwargs
from ui.logins import check_password, hash_password, login_check


def test_a_hash_checks_its_password_only() -> None:
    h = hash_password("pw-ann")
    assert h.startswith("pbkdf2_sha256$") and "pw-ann" not in h and h != hash_password("pw-ann")  # salted
    assert check_password("pw-ann", h) and not check_password("pw-bob", h) and not check_password("pw-ann", "x")


def test_users_from_the_environment_and_config_toml(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    ann, bob = hash_password("pw-ann"), hash_password("pw-bob")
    monkeypatch.setenv("PAPERCHAT_HOME", str(tmp_path))
    (tmp_path / "config.toml").write_text(f'[ui.users]\nbob = "{bob}"\n')
    check = launch_kwargs(get_settings())["auth"]
    assert callable(check) and check("bob", "pw-bob") and not check("bob", "pw-ann") and not check("ann", "pw-ann")
    monkeypatch.setenv("PAPERCHAT_UI__USERS", json.dumps({"ann": ann, "bob": bob}))
    monkeypatch.setenv("PAPERCHAT_UI__USERNAME", "cy")
    monkeypatch.setenv("PAPERCHAT_UI__PASSWORD", "pw-cy")
    settings = get_settings(ui={"host": "0.0.0.0"})
    check = login_check(settings.ui)
    assert check is not None and not isinstance(check, tuple)
    assert check("ann", "pw-ann") and check("bob", "pw-bob") and check("cy", "pw-cy")
    assert not check("ann", "pw-bob") and not check("cy", "pw-ann") and not check("", "")
    check_open_bind("0.0.0.0", launch_kwargs(settings)["auth"], settings)  # a login: serving beyond loopback is ok


def test_a_plain_password_in_ui_users_is_refused_naming_the_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAPERCHAT_UI__USERS", json.dumps({"ann": "pw-ann"}))
    with pytest.raises(ValidationError, match="paperchat ui-user NAME.*'ann'") as e:
        get_settings()
    assert "pw-ann" not in str(e.value)


def test_the_ui_user_command_prints_a_hash_for_the_password(monkeypatch, capsys) -> None:
    from rag.cli import main

    monkeypatch.setattr("sys.stdin", io.StringIO("pw-dee\n"))
    assert main(["ui-user", "dee"]) == 0
    out = capsys.readouterr().out
    digest = out.split()[1]
    assert check_password("pw-dee", digest) and f'"dee" = "{digest}"' in out and "PAPERCHAT_UI__USERS=" in out
    monkeypatch.setenv("PAPERCHAT_UI__USERS", json.dumps({"dee": digest}))
    assert login_check(get_settings().ui)("dee", "pw-dee")  # type: ignore[misc, operator]
