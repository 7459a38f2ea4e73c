"""Ingest flow: files → records (loaders) → token-window chunks → embeddings → the store (pipeline)."""
