"""The one settings object. Nothing else in paperchat reads the environment.

Sources, highest first: explicit arguments, ``PAPERCHAT_*`` environment variables (nested with
``__``, e.g. ``PAPERCHAT_LLM__BASE_URL``), a ``.env`` file, ``$PAPERCHAT_HOME/config.toml``, defaults.
"""

from __future__ import annotations

import logging
import os
import re
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

log = logging.getLogger(__name__)

StoreMode = Literal["embedded", "server", "cloud"]


def _read_renamed(section: str, renamed: dict[str, str], data: Any) -> Any:
    """A section's settings given under an old name (``renamed``: old → new) are read under the new one, with a
    warning naming both; kept for one release. Both names given with different values is an error."""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    for old, new in renamed.items():
        if old not in data:
            continue
        value = data.pop(old)
        if new in data and data[new] != value:
            raise ValueError(f"{section}.{old} is the old name of {section}.{new} and both are set to different "
                             f"values: keep {section}.{new}")
        data[new] = value
        log.warning("the setting %s.%s (PAPERCHAT_%s__%s) is now %s.%s (PAPERCHAT_%s__%s); the old name is read "
                    "for this release only", section, old, section.upper(), old.upper(), section, new,
                    section.upper(), new.upper())
    return data


class StoreSettings(BaseModel):
    model_config = ConfigDict(hide_input_in_errors=True)  # its token, key and headers are secrets

    mode: StoreMode = Field(
        "embedded", description="embedded PersistentClient, a Chroma server (HttpClient) or Chroma Cloud (CloudClient)")
    path: Path | None = Field(None, description="embedded store directory (default: $PAPERCHAT_HOME/chroma)")
    host: str = Field("127.0.0.1", description="Chroma server host (server mode)")
    port: int = Field(8000, ge=1, le=65535, description="Chroma server port (server mode)")
    ssl: bool = Field(False, description="use https to reach the Chroma server")
    chroma_collection: str = Field(
        "papers", min_length=3, max_length=63, pattern=r"^[a-zA-Z0-9][a-zA-Z0-9._-]*[a-zA-Z0-9]$",
        description="the Chroma collection that holds the papers' chunks (not a reading list: those are "
        "`paperchat collection`); formerly store.collection, still read with a warning")
    timeout_s: float = Field(30.0, gt=0, le=600, description="Chroma server request timeout")
    token: SecretStr | None = Field(None, description="token of a Chroma server behind token authentication "
                                    "(server mode), sent with every request; a secret, never logged or shown")
    token_header: Literal["Authorization", "X-Chroma-Token"] = Field(
        "Authorization", description="how the token is sent: `Authorization: Bearer <token>` or `X-Chroma-Token: "
        "<token>` (Chroma's two token transports)")
    headers: dict[str, SecretStr] = Field(default_factory=dict, description="extra HTTP headers sent with every "
                                          "request (server and cloud mode), e.g. a gateway's key; values are "
                                          "secrets. Env: PAPERCHAT_STORE__HEADERS='{\"X-Api-Key\": \"...\"}'")
    tenant: str = Field("default_tenant", min_length=1, max_length=128, description="Chroma tenant (server, cloud; "
                        "in cloud mode the default means the API key's own)")
    database: str = Field("default_database", min_length=1, max_length=128, description="Chroma database (server, "
                          "cloud; in cloud mode the default means the API key's own, if it grants exactly one)")
    api_key: SecretStr | None = Field(None, description="Chroma Cloud API key (cloud mode); a secret, never logged "
                                      "or shown")
    cloud_url: str = Field("https://api.trychroma.com", description="Chroma Cloud API endpoint (cloud mode); change "
                           "it only for a test or a compatible gateway")
    share_lexical: Literal["auto", "on", "off"] = Field(
        "auto", description="share the BM25 index through the store (rag/index/shared_lexical.py): the process that "
        "updates it publishes it to a side collection, and a host without one installs it instead of rebuilding; "
        "auto and on share on a `chroma run` server only (an embedded store has one host; Chroma Cloud's quotas "
        "refuse the pieces), off never")

    RENAMED: ClassVar[dict[str, str]] = {"collection": "chroma_collection"}  # old name → new (one release)

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        return _read_renamed("store", cls.RENAMED, data)

    @field_validator("token", "api_key")
    @classmethod
    def _secret(cls, v: SecretStr | None) -> SecretStr | None:
        # The error never quotes the value: hide_input_in_errors, here and on Settings.
        if v is None:
            return None
        text = v.get_secret_value().strip()  # a token pasted or read from a file often ends in a newline
        if not text or any(c.isspace() or not c.isprintable() or not c.isascii() for c in text):
            raise ValueError("must be one word of printable ASCII, without spaces or control characters")
        return SecretStr(text)

    @field_validator("headers")
    @classmethod
    def _header_fields(cls, v: dict[str, SecretStr]) -> dict[str, SecretStr]:
        for name, value in v.items():
            if not name or any(c not in _HEADER_NAME_CHARS for c in name):
                raise ValueError(f"{name!r} is not an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)")
            if any(c in "\r\n\0" for c in value.get_secret_value()):
                raise ValueError(f"the value of header {name!r} holds a line break or NUL")
        return v

    @field_validator("cloud_url")
    @classmethod
    def _cloud_url(cls, v: str) -> str:
        from urllib.parse import urlsplit

        u = urlsplit(v.strip())
        try:
            u.port  # noqa: B018 - raises on a bad port
        except ValueError:
            raise ValueError("the port in cloud_url is not a number from 1 to 65535") from None
        if u.scheme not in ("http", "https") or not u.hostname or u.username or u.password or u.path.strip("/") \
                or u.query or u.fragment:
            raise ValueError("cloud_url is an http(s)://host[:port] address, without a path or credentials "
                             "(the key goes in store.api_key)")
        return f"{u.scheme}://{u.netloc}"

    @model_validator(mode="after")
    def _one_authorization(self) -> StoreSettings:
        if self.token is not None and self.token_header.lower() in (h.lower() for h in self.headers):
            raise ValueError(f"store.token is sent as {self.token_header}, which store.headers also sets: keep one")
        return self


_HEADER_NAME_CHARS = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


class EmbeddingSettings(BaseModel):
    provider: Literal["sentence-transformers", "openai"] = Field(
        "sentence-transformers", description="local sentence-transformers model or an OpenAI-compatible endpoint")
    model: str = Field("all-MiniLM-L6-v2", description="model name or local path; the default is bundled offline")
    batch_size: int = Field(16, ge=1, le=4096,
                            description="texts per encoder batch (16 was fastest on 2 CPU cores)")
    device: str = Field("auto", description="torch device of the local model: auto (cuda when torch sees a GPU, else "
                        "cpu), or a torch device (cpu, cuda, cuda:1, mps); on Ray workers auto takes the worker's GPU")
    base_url: str | None = Field(None, description="OpenAI-compatible base URL for provider=openai")
    api_key: SecretStr | None = Field(None, description="API key for provider=openai (falls back to llm.api_key)")
    dimensions: int | None = Field(None, ge=1, le=8192, description="requested output size (OpenAI v3 models)")
    max_retries: int = Field(2, ge=0, le=10, description="retries of an embeddings request on 429/5xx/timeouts/"
                             "dropped connections (provider=openai), within a time cap")
    cache: bool = Field(True, description="cache embeddings by content hash so re-ingest never recomputes them")
    query_threads: int = Field(1, ge=0, le=64, description="torch threads for small (query-time) embeds; 0 = torch "
                               "default. One thread answers a single question ~20× faster when the CPU is shared")
    runtime: Literal["auto", "torch"] = Field(
        "auto", description="local BERT models: auto = ONNX Runtime from the export an ingest writes (checked "
        "against torch, kept in the cache; a process that only asks never imports torch), torch when there is "
        "none or on a GPU; torch = always torch")
    sentence_scoring: Literal["int8", "exact"] = Field(
        "int8", description="what answers score abstract sentences with: int8 = a quantised copy of the ONNX "
        "export (written with it; ~1.8x faster on CPU, cosine ~0.99 to exact; stored and query vectors stay exact), "
        "exact = the encoder itself")
    export_cache: Path | None = Field(
        None, description="folder for the local encoder's ONNX export and its int8 copy (checked against the "
        "weights they were made from, so homes may share one): a machine with several homes writes it once; "
        "default: the home's cache folder")


class ChunkSettings(BaseModel):
    max_tokens: int = Field(0, ge=0, le=8192, description="max model tokens per chunk; 0 = the embedder's window")
    overlap_sentences: int = Field(1, ge=0, le=5, description="sentences repeated between neighbouring chunks")


class IngestSettings(BaseModel):
    batch_papers: int = Field(1024, ge=1, le=100_000,
                              description="papers embedded and written per step (larger pads less, "
                                          "smaller resumes finer)")
    sentence_vectors: bool = Field(False, description="also embed every abstract sentence at ingest (into the "
                                   "embedding cache), so no answer waits to embed its papers' sentences; "
                                   "roughly doubles ingest time")
    max_pdf_pages: int = Field(500, ge=1, le=100_000, description="a PDF with more pages is refused with its "
                               "reason (a book or a proceedings volume, not a paper); the rest of the run goes on")
    full_text: bool = Field(False, description="also store each PDF's full text as passages beside its abstract "
                            "(`ingest --full-text`), so answers can cite a page; costs ~4 more vectors a page")
    passage_tokens: int = Field(200, ge=50, le=1000, description="largest full-text passage, in cl100k tokens")


class RaySettings(BaseModel):
    """`paperchat ingest --ray ADDRESS|auto` (rag/ingest/ray_ingest.py): chunk and embed on a Ray cluster."""

    workers: int = Field(0, ge=0, le=100_000, description="embedding workers (Ray actors, each loads the model "
                         "once); 0 = one per GPU of the cluster when the device allows it, else one per CPU")
    batch_papers: int = Field(64, ge=1, le=100_000, description="papers per worker call; the store is written in "
                              "batches of this size (smaller resumes finer)")
    queue_batches: int = Field(8, ge=1, le=10_000, description="planned batches waiting for a worker at most "
                               "(bounds the driver's memory ahead of the cluster)")
    local_cpus: int = Field(0, ge=0, le=1024, description="CPUs of the local cluster that `--ray auto` starts when "
                            "none is running (0 = all of this machine's)")
    object_store_mb: int = Field(200, ge=75, le=1_000_000, description="object store of that local cluster, in MB "
                                 "(Ray spills to disk beyond it)")


class RetrievalSettings(BaseModel):
    k: int = Field(5, ge=1, le=50, description="papers per answer")
    candidates: int = Field(50, ge=5, le=1000, description="hits fetched from each retriever before fusion")
    # Score fusion keeps how decisive each retriever is (a BM25 top score far above the rest stays far
    # above); rank fusion sees only ranks and let a dense list that ranks the paper nowhere outvote it.
    # Chosen on all collections in one run (bench/retrieval.py; docs/benchmarks.md).
    fusion: Literal["score", "rrf"] = Field("score", description="score: convex combination of each list's "
                                            "min-max normalised scores; rrf: reciprocal-rank fusion")
    bm25_weight: float = Field(1.0, ge=0, le=10, description="weight of BM25 in fusion")
    dense_weight: float = Field(1.0, ge=0, le=10, description="weight of dense retrieval in fusion")
    rrf_k: int = Field(60, ge=1, le=1000, description="RRF constant (fusion=rrf)")
    # A filter that leaves a few hundred papers (a collection, one author) is answered from those papers'
    # stored vectors: Chroma's filtered vector search costs several times an unfiltered one at 10k papers.
    local_scope: int = Field(300, ge=0, le=100_000, description="a filter allowing at most this many papers is "
                             "scored locally from their stored vectors instead of by Chroma's filtered search "
                             "(0 = never)")
    anchor_df: int = Field(3, ge=0, le=100, description="a named identifier in the question (acronym, CamelCase, "
                           "hyphenated or with digits) found in at most this many papers puts them first (0 = off)")
    # 3 feedback papers, blended with the first pass: +0.01 nDCG@10 on Cranfield and on a NeurIPS
    # known-item set over the first pass alone.
    feedback_docs: int = Field(3, ge=0, le=50, description="pseudo-relevance feedback papers (0 = off)")
    feedback_dense: float = Field(0.5, ge=0, le=5, description="Rocchio weight of the feedback centroid")
    feedback_blend: bool = Field(True, description="fuse first-pass and feedback rankings (else feedback replaces)")
    feedback_skip_agree: bool = Field(False, description="skip feedback when BM25 and dense agree on the top paper")


class LLMSettings(BaseModel):
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint; unset = offline extractive answers")
    model: str = Field("gpt-4o-mini", description="chat model name at the endpoint")
    api_key: SecretStr | None = Field(None, description="API key (many local servers accept any value)")
    timeout_s: float = Field(60.0, gt=0, le=600, description="request timeout")
    max_tokens: int = Field(700, ge=16, le=32000, description="max tokens in an answer")
    temperature: float = Field(0.1, ge=0, le=2, description="sampling temperature")
    context_tokens: int = Field(6000, ge=500, le=200000, description="budget for the prompt's abstracts")
    max_retries: int = Field(2, ge=0, le=10, description="retries on 429/5xx/timeouts/dropped streams before any text, "
                                                          "within a time cap (rag.openai_client's policy)")


class VerifySettings(BaseModel):
    """Who judges whether the cited abstracts say each cited statement (rag.qa.verify, rag.qa.llm_judge)."""

    judge: Literal["auto", "rules", "llm"] = Field(
        "auto", description="auto = the LLM judge for answers a model wrote when an LLM endpoint is configured "
        "(llm.base_url), else the offline rules (an extractive answer quotes its abstracts: the rules suffice); "
        "rules = the offline rules only; llm = the LLM judge for every answer (needs llm.base_url). When the LLM "
        "judge fails (timeout, refusal, unparsable reply) the rules judge and a warning says so")
    judge_timeout_s: float = Field(30.0, gt=0, le=600, description="timeout of the LLM judge's one call per answer "
                                   "(one attempt, no retries: the answer is waiting and the rules stand in)")
    judge_max_statements: int = Field(12, ge=1, le=100, description="cited statements the LLM judge checks in its "
                                      "one call per answer; further statements keep the rules' verdict")


# A password hash of ui.users (ui.logins.hash_password): PBKDF2-SHA256, its rounds, salt and digest
PASSWORD_HASH = re.compile(r"pbkdf2_sha256\$(?P<iterations>[1-9]\d{3,7})\$(?P<salt>[0-9a-f]{16,128})"
                           r"\$(?P<digest>[0-9a-f]{64})")


class UISettings(BaseModel):
    host: str = Field("127.0.0.1", description="bind address; loopback unless you mean to expose it")
    port: int = Field(7860, ge=1, le=65535, description="HTTP port")
    username: str | None = Field(None, description="optional basic-auth user")
    password: SecretStr | None = Field(None, description="optional basic-auth password")
    users: dict[str, str] = Field(default_factory=dict, description="login users of the app: name → password hash "
                                  "from `paperchat ui-user NAME` (config.toml [ui.users], or PAPERCHAT_UI__USERS="
                                  "'{\"ann\": \"pbkdf2_sha256$…\"}'); each keeps their own conversations")
    allow_open: bool = Field(False, description="serve beyond loopback without a login (anyone who can reach it can "
                                                "read and change the library); off: such a bind refuses to start")
    concurrency: int = Field(4, ge=1, le=64, description="answers computed at once")
    queue_size: int = Field(64, ge=1, le=10000, description="waiting requests before new ones are refused")
    stream_delay_ms: int = Field(40, ge=0, le=2000,
                                 description="pause between streamed pieces of an extractive answer (reading pace)")

    @field_validator("users")
    @classmethod
    def _hashed(cls, v: dict[str, str]) -> dict[str, str]:
        bad = [name for name, h in v.items() if not name.strip() or not PASSWORD_HASH.fullmatch(h)]
        if bad:
            raise ValueError(f"ui.users maps each name to a password hash made by `paperchat ui-user NAME`, not a "
                             f"password: fix {', '.join(map(repr, bad))}")
        return v


class LimitSettings(BaseModel):
    """Limits on what users can make paperchat do; checked by rag.limits."""

    question_chars: int = Field(2000, ge=10, le=100000, description="longest accepted question")
    upload_mb: float = Field(50.0, gt=0, le=10000, description="largest accepted upload")
    upload_files: int = Field(10, ge=1, le=1000, description="most files in one upload request to the app (413 "
                                                            "beyond)")
    abstract_chars: int = Field(100_000, ge=1000, le=10_000_000, description="longer abstracts are cut, with a warning")
    requests_per_minute: int = Field(30, ge=1, le=10000, description="questions per UI session per minute")
    request_tokens: int = Field(16_000, ge=1000, le=1_000_000,
                                description="most cl100k tokens one LLM request may use (prompt + max answer); "
                                            "checked before it is sent")


class MCPSettings(BaseModel):
    """`paperchat mcp` (ui/mcp_server.py): the library as tools for another assistant."""

    allow_ingest: bool = Field(False, description="offer an ingest_papers tool that adds files from the server's "
                               "machine to the store; off, the server is read-only")
    host: str = Field("127.0.0.1", description="bind address of the streamable HTTP transport (no auth: keep it "
                      "on loopback)")
    port: int = Field(8765, ge=1, le=65535, description="port of the streamable HTTP transport")


class APISettings(BaseModel):
    """`paperchat api` (ui/api.py): the OpenAI-compatible HTTP API. Keys are never stored, only their sha256:
    `paperchat api-key` prints a new key and the hash to put here."""

    host: str = Field("127.0.0.1", description="bind address; beyond loopback the API refuses to start without "
                      "key_hashes")
    port: int = Field(8080, ge=1, le=65535, description="HTTP port")
    key_hashes: list[str] = Field(default_factory=list, description="sha256 hex digests of the accepted bearer keys "
                                  "(`paperchat api-key`; env: PAPERCHAT_API__KEY_HASHES='[\"<hex>\"]'); empty = no "
                                  "key needed, allowed on loopback only")
    requests_per_minute: int = Field(60, ge=1, le=100000, description="questions and searches per key (per client "
                                     "address without keys) per minute")
    max_body_kb: int = Field(256, ge=1, le=100_000, description="largest accepted request body (413 beyond)")
    max_messages: int = Field(64, ge=1, le=10000, description="most messages in one chat request (the history)")
    concurrency: int = Field(4, ge=1, le=64, description="answers computed at once; further requests wait")

    @field_validator("key_hashes")
    @classmethod
    def _hex(cls, v: list[str]) -> list[str]:
        out = [h.strip().lower() for h in v]
        bad = [h for h in out if len(h) != 64 or any(c not in "0123456789abcdef" for c in h)]
        if bad:
            raise ValueError("api.key_hashes holds sha256 hex digests (64 hex characters), not keys: "
                             "run `paperchat api-key` for a key and its hash")
        return out


class EvalSettings(BaseModel):
    judge_base_url: str | None = Field(None, description="OpenAI-compatible endpoint of the LLM judge; unset = "
                                                         "deterministic metrics only")
    judge_model: str = Field("gpt-4o-mini", description="judge model name at that endpoint")
    judge_api_key: SecretStr | None = Field(None, description="judge API key (falls back to llm.api_key)")
    judge_timeout_s: float = Field(60.0, gt=0, le=600, description="judge request timeout")
    judge_max_retries: int = Field(2, ge=0, le=10, description="judge retries on 429/5xx/timeouts/dropped "
                                   "connections, within a time cap (rag.openai_client's policy)")


class Settings(BaseSettings):
    """Every knob paperchat has, with a default, a bound and a description."""

    model_config = SettingsConfigDict(
        env_prefix="PAPERCHAT_", env_nested_delimiter="__", env_file=".env", extra="ignore",
        validate_default=True,
        hide_input_in_errors=True,  # a rejected value may be a secret (a token, a key): errors name the field only
    )

    home: Path = Field(Path("~/.paperchat"), description="where stores, caches and feedback live")
    log_level: str = Field("WARNING", description="logging level for the CLI")
    conversations_file: Path | None = Field(None, description="the saved conversations (SQLite; default: "
                                            "$PAPERCHAT_HOME/conversations.sqlite): every answered turn of the "
                                            "chat, per signed-in user")
    store: StoreSettings = Field(default_factory=StoreSettings)
    embeddings: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    chunking: ChunkSettings = Field(default_factory=ChunkSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    verify: VerifySettings = Field(default_factory=VerifySettings)
    ui: UISettings = Field(default_factory=UISettings)
    limits: LimitSettings = Field(default_factory=LimitSettings)
    evals: EvalSettings = Field(default_factory=EvalSettings)
    api: APISettings = Field(default_factory=APISettings)
    mcp: MCPSettings = Field(default_factory=MCPSettings)
    ray: RaySettings = Field(default_factory=RaySettings)

    @field_validator("home")
    @classmethod
    def _expand(cls, v: Path) -> Path:
        return v.expanduser()

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        home = Path(os.environ.get("PAPERCHAT_HOME", "~/.paperchat")).expanduser()
        toml = TomlConfigSettingsSource(settings_cls, toml_file=home / "config.toml")
        return init_settings, env_settings, dotenv_settings, toml

    @cached_property
    def store_path(self) -> Path:
        return (self.store.path or self.home / "chroma").expanduser()

    @property
    def conversations_path(self) -> Path:
        return (self.conversations_file or self.home / "conversations.sqlite").expanduser()

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    @property
    def encoder_cache_dir(self) -> Path:
        """Where the local encoder's ONNX export is kept: ``embeddings.export_cache``, else the home's cache."""
        shared = self.embeddings.export_cache
        return shared.expanduser() if shared is not None else self.cache_dir

    @property
    def tiktoken_cache_dir(self) -> Path:
        return self.home / "cache" / "tiktoken"

    @property
    def offline(self) -> bool:
        """True when answers are extractive because no LLM endpoint is configured."""
        return not self.llm.base_url

    def with_overrides(self, **sections: Any) -> Settings:
        """A copy with some nested fields replaced, validated like the original."""
        data = self.model_dump()
        for name, values in sections.items():
            if isinstance(values, dict):
                data[name] = {**data[name], **values}
            else:
                data[name] = values
        return Settings(**data)


def get_settings(**overrides: Any) -> Settings:
    """Build settings from the environment (the only place it is read) plus explicit overrides."""
    return Settings(**overrides)


def prepare_runtime(settings: Settings) -> None:
    """Process-wide switches every entry point needs before heavy imports: offline hubs, tokenizers,
    and tiktoken's cache holding the bundled cl100k file under its public name."""
    from rag.tokens import ensure_tiktoken_cache

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # a Ray cluster paperchat starts never reports usage
    try:
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(ensure_tiktoken_cache(settings.tiktoken_cache_dir)))
    except OSError:  # a read-only home only loses the plain-cl100k alias, not offline counting
        pass
