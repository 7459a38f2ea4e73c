"""Test doubles for external services; they listen on 127.0.0.1 only.

- ``tests.fakes.openai_server.FakeOpenAIServer``: a scriptable OpenAI-compatible HTTP server
  (chat completions incl. SSE streaming, embeddings, models, fault injection).

Import from the submodule; this package deliberately re-exports nothing, so that
``python -m tests.fakes.openai_server`` runs without a double-import warning.
"""
