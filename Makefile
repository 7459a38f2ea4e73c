# paperchat — `make help` lists the targets.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SAMPLE := data/sample/*.txt

.DEFAULT_GOAL := help

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  make %-14s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first, pinned: this takes the CPU wheel; a bare `torch` would pull a multi-GB CUDA build
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP) ## create .venv and install paperchat with its dev tools

run: $(STAMP) ## start the chat app on the bundled sample corpus: http://127.0.0.1:7860
	$(BIN)/paperchat ingest $(SAMPLE)
	$(BIN)/paperchat serve

chat: $(STAMP) ## the same conversation in the terminal
	$(BIN)/paperchat ingest $(SAMPLE)
	$(BIN)/paperchat chat

browser: ## install Debian's chromium for the browser tests and curl for the `curl -N` test (needs root)
	@command -v chromium >/dev/null && command -v curl >/dev/null || \
	  { apt-get update -qq && apt-get install -y -qq chromium curl >/dev/null; }

# Test files run in TEST_WORKERS processes (pytest-xdist, a whole file per worker: module fixtures stay shared);
# most of the suite waits on child processes, servers and a browser, so 2 workers suit even a 2-core machine.
TEST_WORKERS ?= 2
test: $(STAMP) browser ## run lint, mypy and the whole test suite (installs Debian's chromium and curl first)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile

eval: $(STAMP) ## answer-quality eval of the seed set, gated by evals/thresholds.toml → eval-reports/seed/
	$(BIN)/paperchat eval --out eval-reports/seed --check

eval-retrieval: $(STAMP) ## paperchat vs BM25, dense and naive LangChain on Cranfield (nDCG@10, R@100, MRR@10)
	$(BIN)/paperchat eval-retrieval ../shared/datasets/cranfield

bench-ingest: $(STAMP) ## ingest throughput vs the bare encoder on Cranfield → docs/benchmarks.md
	$(BIN)/python -m bench.ingest_ratio

bench-retrieval: $(STAMP) ## retrieval quality on Cranfield + NeurIPS known-item → docs/benchmarks.md
	$(BIN)/python -m bench.retrieval --docs

SYSTEMS ?= shipped bm25 dense rrf
bench-quality: $(STAMP) ## SYSTEMS × Cranfield, NeurIPS known-item, seed + NeurIPS distractors, neurips dev/test → reports/quality_sweep.md
	$(BIN)/python -m bench.retrieval --systems $(SYSTEMS)

bench-latency: $(STAMP) ## warm `ask` latency on the sample corpus → docs/benchmarks.md
	$(BIN)/python -m bench.latency

bench-api: $(STAMP) ## /v1/chat/completions vs in-process `ask` on the sample corpus (p50 gap ≤ 30 ms) → docs/benchmarks.md
	$(BIN)/python -m bench.api_overhead

bench-evals: $(STAMP) ## time `paperchat eval` and `eval-retrieval` from an empty home → docs/benchmarks.md
	$(BIN)/python -m bench.evals

bench-crash: $(STAMP) ## kill -9 a 2k-paper ingest 20×, verify every round → reports/crash_loop.json
	$(BIN)/python -m tests.support.crash_loop

bench-writers: $(STAMP) ## 3 ingest processes + 1 asker on one chroma server, one kill -9, 10 rounds vs a sequential ingest → reports/concurrent_writers.json
	$(BIN)/python -m tests.support.concurrent_writers --rounds 10 --kill

bench-load: $(STAMP) ## 20 chat sessions × 60 s against paperchat serve on loopback → reports/load.json
	$(BIN)/python -m bench.load

SIZES ?= 1000 10000
bench-scale: $(STAMP) ## ingest, disk, memory, cold start, latency at SIZES papers (+ chroma server) → docs/benchmarks.md
	$(BIN)/python -m bench.scale --sizes $(SIZES) --server

bench-encoder: $(STAMP) ## the local encoder alone: texts/s by batch size, RSS with and without oneDNN (prints JSON)
	$(BIN)/python -m bench.encoder

bench-injection: $(STAMP) ## prompt injections tried and leaked, both modes → reports/injection.json
	$(BIN)/python -m bench.injection --out reports/injection.json

mutations: $(STAMP) ## break each safeguard in a copy of the tree; its tests must fail (~10 min; not in `make test`) → docs/reliability.md
	@mkdir -p reports
	$(BIN)/python -m bench.mutations --out reports/mutations.json

test-long: $(STAMP) browser ## the long reliability variants (kill -9 loop, load, fuzzers with random seeds) on top of the suite
	$(BIN)/pytest -q --long tests/test_crash_loop.py tests/test_load.py tests/test_fuzz_api.py tests/test_fuzz_mcp.py tests/test_fuzz_mcp_http.py

bench: bench-ingest bench-retrieval bench-latency bench-api bench-evals ## every benchmark

clean: ## remove caches (not your ~/.paperchat)
	rm -rf .pytest_cache .ruff_cache .mypy_cache build *.egg-info

.PHONY: help install run chat browser test eval eval-retrieval bench bench-ingest bench-retrieval bench-quality bench-latency bench-api bench-evals bench-crash bench-writers bench-load bench-injection bench-scale bench-encoder mutations test-long clean
