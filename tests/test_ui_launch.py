"""The launch defaults that keep the app private and bounded, asserted as data and on a running server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import gradio as gr
import httpx
import pytest

from rag.config import get_settings
from rag.errors import InputError
from tests.support.servers import free_port
from ui.app import launch, launch_kwargs, queue_kwargs


def test_safe_defaults(paperchat_home: Path) -> None:
    kw = launch_kwargs(get_settings())
    assert kw["share"] is False
    assert kw["server_name"] == "127.0.0.1" and kw["server_port"] == 7860
    assert kw["auth"] is None
    assert kw["max_file_size"] == 50 * 1024 * 1024
    assert kw["show_error"] is False
    assert kw["allowed_paths"] == []
    assert kw["blocked_paths"] == [str(paperchat_home.resolve())]
    assert kw["ssr_mode"] is False and kw["mcp_server"] is False and kw["pwa"] is False
    assert kw["strict_cors"] is True and kw["enable_monitoring"] is False
    assert queue_kwargs(get_settings()) == {"default_concurrency_limit": 4, "max_size": 64, "api_open": False}


def test_settings_flow_into_launch_and_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in {"PAPERCHAT_UI__HOST": "0.0.0.0", "PAPERCHAT_UI__PORT": "8123", "PAPERCHAT_UI__USERNAME": "ada",
                       "PAPERCHAT_UI__PASSWORD": "s3cret", "PAPERCHAT_UI__CONCURRENCY": "2",
                       "PAPERCHAT_UI__QUEUE_SIZE": "5", "PAPERCHAT_LIMITS__UPLOAD_MB": "1.5"}.items():
        monkeypatch.setenv(key, value)
    settings = get_settings()
    kw = launch_kwargs(settings)
    assert (kw["server_name"], kw["server_port"], kw["auth"]) == ("0.0.0.0", 8123, ("ada", "s3cret"))
    assert kw["max_file_size"] == int(1.5 * 1024 * 1024)
    assert queue_kwargs(settings)["default_concurrency_limit"] == 2 and queue_kwargs(settings)["max_size"] == 5
    assert "s3cret" not in repr(settings.ui)  # the password stays a secret in logs and reprs
    monkeypatch.delenv("PAPERCHAT_UI__PASSWORD")
    with pytest.raises(InputError, match="both"):
        launch_kwargs(get_settings())


@pytest.fixture
def tiny_app(paperchat_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[gr.Blocks, str]]:
    """A minimal Blocks launched through ``ui.app.launch`` with a 1 MB, 3-file upload limit and a login."""
    monkeypatch.setenv("PAPERCHAT_LIMITS__UPLOAD_MB", "1")
    monkeypatch.setenv("PAPERCHAT_LIMITS__UPLOAD_FILES", "3")
    monkeypatch.setenv("PAPERCHAT_UI__USERNAME", "ada")
    monkeypatch.setenv("PAPERCHAT_UI__PASSWORD", "s3cret")
    paperchat_home.mkdir(parents=True, exist_ok=True)
    (paperchat_home / "feedback.jsonl").write_text('{"secret": 1}\n')
    with gr.Blocks(analytics_enabled=False) as app:
        gr.File(label="f")
    launch(app, get_settings(), block=False, server_port=free_port())
    try:
        yield app, app.local_url
    finally:
        app.close()


def test_running_server_is_private_bounded_and_logged_in(tiny_app: tuple[gr.Blocks, str]) -> None:
    app, url = tiny_app
    assert url.startswith("http://127.0.0.1:") and app.share_url is None
    assert app._queue.max_size == 64 and app._queue.default_concurrency_limit == 4
    with httpx.Client(base_url=url, timeout=10) as client:
        assert client.get("/config").status_code == 401  # nothing without the login
        assert client.post("/login", data={"username": "ada", "password": "wrong"}).status_code == 400
        assert client.post("/login", data={"username": "ada", "password": "s3cret"}).status_code == 200
        assert client.get("/config").status_code == 200
        small = client.post("/gradio_api/upload", files={"files": ("a.csv", b"title,abstract\n")})
        assert small.status_code == 200
        big = client.post("/gradio_api/upload", files={"files": ("b.csv", b"x" * (1024 * 1024 + 10))})
        assert big.status_code == 413

        def files(n: int, size: int) -> list[tuple[str, tuple[str, bytes]]]:
            return [("files", (f"p{i}.csv", b"t,a\n" + b"y" * size)) for i in range(n)]

        three = client.post("/gradio_api/upload", files=files(3, 300_000))  # at the count limit: every file kept
        assert three.status_code == 200 and len(three.json()) == 3
        for n, size in ((4, 10), (4, 300_000), (200, 10)):  # small parts in one chunk; large ones across chunks
            many = client.post("/gradio_api/upload", files=files(n, size))
            assert many.status_code == 413 and "PAPERCHAT_LIMITS__UPLOAD_FILES" in many.json()["detail"], many.text
        assert client.post("/gradio_api/upload", files=files(1, 10)).status_code == 200  # still serving
        home = Path(get_settings().home).resolve()
        leaked = client.get(f"/gradio_api/file={home / 'feedback.jsonl'}")
        assert leaked.status_code == 403 and "secret" not in leaked.text


def test_serve_command_delegates_to_the_app(monkeypatch: pytest.MonkeyPatch) -> None:
    import ui.app
    from rag.cli import main

    calls: list[tuple[str | None, int | None]] = []
    monkeypatch.setattr(ui.app, "serve", lambda settings, host=None, port=None: calls.append((host, port)) or 0)
    assert main(["serve", "--port", "9911"]) == 0
    assert main(["serve", "--host", "127.0.0.2"]) == 0
    assert calls == [(None, 9911), ("127.0.0.2", None)]


def test_an_open_bind_without_a_login_refuses_to_start(paperchat_home: Path) -> None:
    """`paperchat serve --host 0.0.0.0` without a login exits at once, naming the fixes, before loading anything;
    a login or --allow-open (ui.allow_open) lets the bind through, loopback needs neither."""
    import subprocess
    import sys

    from rag.errors import ConfigError
    from ui.app import check_open_bind

    done = subprocess.run([sys.executable, "-m", "rag.cli", "serve", "--host", "0.0.0.0", "--port", str(free_port())],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0, done.stdout + done.stderr
    assert "refusing to serve the app on 0.0.0.0 without a login" in done.stderr and "--allow-open" in done.stderr
    assert not (paperchat_home / "chroma").exists()  # refused before the store (or the sample ingest) was touched
    settings = get_settings()
    with pytest.raises(ConfigError, match="without a login"):
        check_open_bind("192.0.2.10", None, settings)
    check_open_bind("127.0.0.1", None, settings)
    check_open_bind("0.0.0.0", ("ada", "s3cret"), settings)
    check_open_bind("0.0.0.0", None, settings.with_overrides(ui={"allow_open": True}))
