"""Settings renamed for one word per concept (issue 30) are still read under their old names, with a warning
naming both, from the environment, config.toml and explicit arguments; both names at once must agree."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from pydantic import ValidationError

from rag.config import Settings, get_settings


def _renamed_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "rag.config" and r.levelno == logging.WARNING]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PAPERCHAT_HOME", str(tmp_path))
    for var in ("PAPERCHAT_STORE__COLLECTION", "PAPERCHAT_STORE__CHROMA_COLLECTION"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)  # no .env of the checkout
    return tmp_path


def test_the_new_name_is_read_without_a_warning(home: Path, monkeypatch: pytest.MonkeyPatch,
                                                caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("PAPERCHAT_STORE__CHROMA_COLLECTION", "newname")
    assert get_settings().store.chroma_collection == "newname"
    assert _renamed_warnings(caplog) == []


def test_the_old_environment_variable_is_read_with_a_warning(home: Path, monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("PAPERCHAT_STORE__COLLECTION", "oldname")
    assert get_settings().store.chroma_collection == "oldname"
    (msg,) = _renamed_warnings(caplog)
    assert "PAPERCHAT_STORE__COLLECTION" in msg and "PAPERCHAT_STORE__CHROMA_COLLECTION" in msg


def test_the_old_name_in_config_toml_and_in_arguments_is_read(home: Path, caplog: pytest.LogCaptureFixture) -> None:
    (home / "config.toml").write_text('[store]\ncollection = "fromtoml"\n', encoding="utf-8")
    assert Settings().store.chroma_collection == "fromtoml"
    assert get_settings(store={"collection": "fromargs"}).store.chroma_collection == "fromargs"
    assert len(_renamed_warnings(caplog)) == 2
    (home / "config.toml").unlink()
    caplog.clear()
    assert get_settings().store.chroma_collection == "papers" and _renamed_warnings(caplog) == []


def test_both_names_with_different_values_are_refused_naming_them(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAPERCHAT_STORE__COLLECTION", "one")
    monkeypatch.setenv("PAPERCHAT_STORE__CHROMA_COLLECTION", "two")
    with pytest.raises(ValidationError, match="store.collection is the old name of store.chroma_collection"):
        get_settings()
    monkeypatch.setenv("PAPERCHAT_STORE__CHROMA_COLLECTION", "one")
    assert get_settings().store.chroma_collection == "one"


def test_the_old_name_is_validated_like_the_new(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAPERCHAT_STORE__COLLECTION", "x")  # too short for a Chroma collection name
    with pytest.raises(ValidationError, match="chroma_collection"):
        get_settings()
