"""Ingest on a Ray cluster: `paperchat ingest --ray ADDRESS|auto FILE…` (the optional extra ``paperchat[ray]``).

The same rows and the same write protocol as the single-process :class:`~rag.ingest.pipeline.Ingestor`, which
:class:`RayIngestor` extends. The driver (this process) reads the files, dedupes the records (DOI, arXiv id,
abstract hash) and compares them with the store batch by batch, as a plain ingest does: that is cheap and
needs the store. What a plain ingest would then chunk and embed goes into one streaming Ray Data pipeline
instead: a source pulling the planned batches from a bounded queue, then ``map_batches`` on a pool of
:class:`ChunkEmbedder` actors (one per CPU of the cluster, or per GPU when the device setting allows it), each
loading the model once and calling :func:`~rag.ingest.pipeline.paper_rows`, the very function the
single-process ingest uses. The rows stream back to the driver, which writes them through its
``ChromaStore`` (embedded, or a Chroma server) in batches: a paper's new version before its old chunks are
deleted, the store generation bumped before the first write, a file's collections once all its papers are
written, and the lexical index synced at the end. Full-text passages (``--full-text``) are embedded on the driver,
as a plain ingest does, once their paper's abstract rows are written. A job killed at any point and run again ends
with the papers, chunk ids and vectors a single-process ingest of the same files gives.

Ray is imported here only, and only when a Ray ingest runs: a plain install does not need it.
"""

from __future__ import annotations

import logging
import pickle
import socket
import tempfile
import threading
import time
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from rag.config import APISettings, EvalSettings, LLMSettings, RaySettings, Settings, StoreSettings, prepare_runtime
from rag.errors import ConfigError, PaperchatError, UpstreamError
from rag.index.embeddings import Embedder, make_embedder
from rag.index.rows import paper_of_chunk
from rag.index.store import ChromaStore, ChunkRow
from rag.ingest import passages as full_text
from rag.ingest.loaders.base import RecordProblem
from rag.ingest.pipeline import Ingestor, IngestReport, paper_rows
from rag.records import Paper

log = logging.getLogger(__name__)

LOOPBACK = ("127.0.0.1", "localhost", "::1")
# Ray Data merges what a source yields into blocks of up to ``target_max_block_size`` bytes (128 MB by default)
# before passing them on, and cuts bigger ones. Set here to about one worker batch (a paper is ~1-4 KB): a
# planned batch reaches the workers at once, and blocks stay few (one block per paper halved the throughput).
_BYTES_PER_PAPER = 1024


def _import_ray() -> Any:
    try:
        import ray
        import ray.data  # noqa: F401  (ray[data]: pyarrow and the streaming executor)
    except ImportError as e:
        raise ConfigError(f"--ray needs Ray Data, which is not installed ({e}): pip install 'paperchat[ray]'") from e
    return ray


def _host(address: str) -> str:
    """The host of a Ray address (``host:port``, ``[v6]:port``, ``ray://host:port``)."""
    rest = address.split("://", 1)[-1]
    if rest.startswith("["):
        return rest[1:rest.find("]")]
    return rest.rsplit(":", 1)[0] if rest.count(":") == 1 else rest


def connect(address: str, cfg: RaySettings) -> str:
    """Join the Ray cluster at ``address`` (its head's ``host:port``), or with ``auto`` the one Ray finds
    (``RAY_ADDRESS``, else the cluster `ray start` last started on this machine), or with ``auto`` and none
    running (or ``local``) start one on 127.0.0.1 with ``ray.local_cpus`` CPUs. Returns what was joined."""
    ray = _import_ray()
    if ray.is_initialized():
        return "the Ray cluster already joined"
    # Private Ray helpers, for two things its public API cannot say: which cluster `auto` means, and that a
    # cluster on 127.0.0.1 must be reached there (Ray swaps a loopback address for the machine's network one).
    from ray._private import ray_constants, services

    target: str | None = None
    if address == "auto":
        try:
            found = services.get_ray_address_from_environment("auto", None)
        except Exception:  # noqa: BLE001 - nothing running: start a local cluster below
            found = None
        target = found if found and found != "auto" else None
    elif address != "local":
        target = address
    if target is not None and target.startswith("ray://"):
        raise ConfigError(f"--ray {address}: Ray Client addresses ({target}) are not supported; run the ingest on a "
                          "node of the cluster with its head's HOST:PORT (the driver reads the files and writes the "
                          "store)")
    if target is None or _host(target) in LOOPBACK:
        ray_constants.ENABLE_RAY_CLUSTER = False
    if target is not None:
        _probe(target)
    quiet: dict[str, Any] = {"logging_level": logging.INFO if log.isEnabledFor(logging.INFO) else logging.ERROR,
                             "log_to_driver": log.isEnabledFor(logging.DEBUG)}
    try:
        if target is None:
            ray.init(num_cpus=cfg.local_cpus or None, object_store_memory=cfg.object_store_mb * 2**20,
                     include_dashboard=False, _node_ip_address="127.0.0.1", **quiet)
            where = "a new local Ray cluster on 127.0.0.1"
        else:
            ray.init(address=target, **quiet)
            where = f"the Ray cluster at {target}"
    except (ConnectionError, TimeoutError, RuntimeError, ValueError) as e:
        raise UpstreamError(f"cannot join the Ray cluster at {target or 'this machine'} ({e.__class__.__name__}: "
                            f"{e}); start one (`ray start --head --node-ip-address 127.0.0.1 --port 6379`) or give "
                            "its head's address: --ray HOST:PORT (--ray auto starts a local one when none runs)"
                            ) from e
    res = ray.cluster_resources()
    log.info("joined %s: %d CPUs, %d GPUs, %d nodes", where, int(res.get("CPU", 0)), int(res.get("GPU", 0)),
             len([n for n in ray.nodes() if n.get("Alive")]))
    return where


def _probe(address: str, timeout_s: float = 5.0) -> None:
    """Fail at once when nothing listens at a cluster's address (``ray.init`` would retry for minutes)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout_s):
            pass
    except (OSError, ValueError) as e:
        raise UpstreamError(f"cannot join the Ray cluster at {address}: nothing answers there ({e}); start one "
                            "(`ray start --head --node-ip-address 127.0.0.1 --port 6379`) or give its head's "
                            "address: --ray HOST:PORT (--ray auto starts a local one when none runs)") from e


def _worker_settings(settings: Settings) -> Settings:
    """What the workers need: the embedding and chunking settings, a scratch home on their own machine, and no
    secret they do not use (the LLM key only travels when the embeddings endpoint may fall back to it)."""
    return settings.model_copy(update={
        "home": Path(tempfile.gettempdir()) / "paperchat-ray",
        "store": StoreSettings(),
        "llm": settings.llm if settings.embeddings.provider == "openai" else LLMSettings(),
        "evals": EvalSettings(),
        "api": APISettings(),
    })


class ChunkEmbedder:
    """The Ray Data actor: loads the embedder once, then turns batches of planned papers into their rows
    (pickled per paper, with the model that embedded them, which the driver checks against the store's)."""

    def __init__(self, settings: Settings, max_chunk_tokens: int, overlap: int) -> None:
        prepare_runtime(settings)
        self.embedder: Embedder = make_embedder(settings)
        self.max_tokens = min(max_chunk_tokens, self.embedder.max_tokens) if max_chunk_tokens else \
            self.embedder.max_tokens
        self.overlap = overlap

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        papers: list[tuple[Paper, str]] = [(pickle.loads(b), str(h)) for b, h in zip(batch["paper"], batch["hash"])]
        by_paper: dict[str, list[ChunkRow]] = {p.id: [] for p, _ in papers}
        for row in paper_rows(papers, self.embedder, self.max_tokens, self.overlap):
            by_paper[row.paper_id].append(row)
        n = len(by_paper)
        return {"paper_id": list(by_paper), "rows": [pickle.dumps(rs, protocol=5) for rs in by_paper.values()],
                "model": [self.embedder.name] * n, "dim": [self.embedder.dim] * n}


def _queue_source(queue: Any) -> Any:
    """A Ray Data source that yields the driver's planned batches as they are queued, until ``None``. One read
    task, on the driver's node, holding no CPU: the workers' CPUs are for embedding."""
    import pyarrow as pa
    from ray.data import Datasource, ReadTask
    from ray.data.block import BlockMetadata

    def read() -> Iterator[Any]:
        while (item := queue.get()) is not None:
            papers, hashes = item
            yield pa.table({"paper": pa.array(papers, pa.binary()), "hash": pa.array(hashes, pa.string())})

    class PlannedBatches(Datasource):
        def estimate_inmemory_data_size(self) -> int | None:
            return None

        @property
        def supports_distributed_reads(self) -> bool:
            return False

        def get_read_tasks(self, parallelism: int, per_task_row_limit: int | None = None,
                           data_context: Any = None) -> list[Any]:
            meta = BlockMetadata(num_rows=None, size_bytes=None, input_files=None, exec_stats=None)
            return [ReadTask(read, meta)]

    return PlannedBatches()


@dataclass
class _PendingFile:
    """A file whose records are all planned; its collections are joined once ``ids`` are all written."""

    collection: str | None
    origin: str | None
    placed: list[tuple[str, list[str]]]
    ids: set[str] = field(default_factory=set)


class RayIngestor(Ingestor):
    """An :class:`Ingestor` whose chunking and embedding run on a Ray cluster; everything else is the driver's."""

    def __init__(self, store: ChromaStore, embedder: Embedder, settings: Settings, address: str, **kwargs: Any) -> None:
        super().__init__(store, embedder, **kwargs)
        self.settings, self.address = settings, address
        self.ray_cfg = settings.ray
        self._lock = threading.Lock()  # one thread at a time in the store (planning, writes, collections)
        self._queue: Any = None
        self._writer: threading.Thread | None = None
        self._error: BaseException | None = None
        self._report: IngestReport | None = None
        self._stale: dict[str, list[str]] = {}  # paper id → chunk ids of its old versions, deleted after the new
        self._unwritten: set[str] = set()  # papers sent to the workers whose rows have not been written yet
        self._file_ids: set[str] = set()  # papers of the current file sent to the workers
        self._pending: list[_PendingFile] = []
        self._with_passages: list[Paper] = []  # records whose passages wait for their paper's rows to be written
        if self.sentence_vectors:
            log.warning("ingest.sentence_vectors is not applied by a Ray ingest: answers embed sentences on first use")
            self.sentence_vectors = False

    @classmethod
    def like(cls, base: Ingestor, settings: Settings, address: str) -> RayIngestor:
        """A Ray ingestor configured as ``base`` (store, embedder, chunking, batches, hooks)."""
        return cls(base.store, base.embedder, settings, address, max_chunk_tokens=base.max_tokens,
                   overlap=base.overlap, on_change=base.on_change, progress=base.progress,
                   batch_papers=base.batch_papers, abstract_chars=base.abstract_chars,
                   max_pdf_pages=base.max_pdf_pages, passage_tokens=base.passage_tokens,
                   sentence_vectors=base.sentence_vectors)

    # ---- the run --------------------------------------------------------------------------------------
    def ingest(self, paths: Iterable[Path | str], **kwargs: Any) -> IngestReport:
        connect(self.address, self.ray_cfg)  # before anything is read or written: a bad address changes nothing
        try:
            return super().ingest(paths, **kwargs)
        finally:
            self._stop()

    def ingest_papers(self, papers: Iterable[Paper], collection: str | None = None) -> IngestReport:
        connect(self.address, self.ray_cfg)
        try:
            return super().ingest_papers(papers, collection=collection)
        finally:
            self._stop()

    def close(self) -> None:
        """Leave the cluster (a local one this process started stops with it)."""
        self._stop()
        ray = _import_ray()
        if ray.is_initialized():
            ray.shutdown()

    def _ingest_items(self, path: Path, items: Iterator[Paper | RecordProblem], report: IngestReport) -> None:
        self._file_ids = set()  # a file that failed midway leaves nothing for the next one to wait for
        super()._ingest_items(path, items, report)

    def _write_batch(self, batch: list[Paper], report: IngestReport) -> None:
        """Plan the batch here; send what needs embedding to the workers; delete at once only the old versions
        of papers whose new version is already complete (the writer deletes the others after writing them)."""
        self._raise_if_failed()
        with self._lock:
            plan = self._plan_batch(batch, report)
            writing = {p.id for p, _ in plan.to_write}
            repaired = [cid for cid in plan.stale if paper_of_chunk(cid) not in writing]
            for cid in plan.stale:
                if paper_of_chunk(cid) in writing:
                    self._stale.setdefault(paper_of_chunk(cid), []).append(cid)
            if repaired:
                self._before_first_write()
                self.store.delete(repaired)
            self._unwritten |= writing
            self._with_passages.extend(p for p in batch if p.passages)
        self._placed.extend(plan.placed)
        self._file_ids |= writing
        log.info("batch planned: %d papers to embed, %d stale chunks deleted", len(plan.to_write), len(repaired))
        if plan.to_write:
            self._send(plan.to_write, report)
        self._collect_ready(report)

    def _file_done(self, report: IngestReport, collection: str | None, origin: str | None) -> None:
        self._pending.append(_PendingFile(collection, origin, self._placed, self._file_ids))
        self._placed, self._file_ids = [], set()
        self._collect_ready(report)

    def _drain(self, report: IngestReport) -> None:
        """Wait for the workers' last rows, then join the collections still waiting."""
        if self._writer is not None:
            self._put(None)
            while self._writer.is_alive():
                self._writer.join(0.5)
            self._raise_if_failed()
        if self._unwritten:
            log.warning("%d papers came back from the workers without rows", len(self._unwritten))
            self._unwritten.clear()
        self._collect_ready(report)

    def _collect_ready(self, report: IngestReport) -> None:
        """Passages of the papers now written (embedded outside the lock: the writer thread goes on storing the
        workers' rows meanwhile), then the collections of the files whose papers are all written, in file order."""
        with self._lock:
            ready: list[Paper] = []
            waiting: list[Paper] = []
            for p in self._with_passages:
                (waiting if self._canon.get(p.id, p.id) in self._unwritten else ready).append(p)
            self._with_passages = waiting
            todo = self._plan_passages(ready)
        if todo.to_write or todo.stale:
            rows = full_text.rows(todo.to_write, self.embedder)
            with self._lock:
                self._store_passages(todo, rows, report)
        with self._lock:
            while self._pending and self._pending[0].ids.isdisjoint(self._unwritten):
                f = self._pending.pop(0)
                self._collect(report, f.collection, f.origin, f.placed)

    # ---- the pipeline -----------------------------------------------------------------------------------
    def _start(self, report: IngestReport) -> None:
        """The streaming pipeline, started on the first batch to embed (an unchanged re-ingest starts none)."""
        ray = _import_ray()
        from ray.data import ActorPoolStrategy, DataContext
        from ray.util.queue import Queue

        res = ray.cluster_resources()
        cpus, gpus = int(res.get("CPU", 0)), int(res.get("GPU", 0))
        device = self.settings.embeddings.device
        local = self.settings.embeddings.provider != "openai"
        if local and device.startswith("cuda") and not gpus:
            raise ConfigError(f"embeddings.device is {device!r} but the Ray cluster has no GPU: use auto or cpu")
        on_gpu = local and gpus > 0 and (device == "auto" or device.startswith("cuda"))
        if not cpus:
            raise ConfigError("the Ray cluster has no CPU to run embedding workers on")
        workers = self.ray_cfg.workers or (gpus if on_gpu else cpus)
        log.info("embedding on %d Ray workers (%s)", workers, "1 GPU each" if on_gpu else "1 CPU each")
        ctx = DataContext.get_current()
        ctx.enable_progress_bars = False
        ctx.print_on_execution_start = False
        ctx.target_max_block_size = max(4096, self.ray_cfg.batch_papers * _BYTES_PER_PAPER)
        if not log.isEnabledFor(logging.DEBUG):
            logging.getLogger("ray.data").setLevel(logging.ERROR)
            # a small input fits one block, so one actor gets it all: true, and no reason to warn
            warnings.filterwarnings("ignore", message="The minimum number of concurrent actors", category=UserWarning)
        self._queue = Queue(maxsize=self.ray_cfg.queue_batches, actor_options={"num_cpus": 0})
        ds = ray.data.read_datasource(_queue_source(self._queue), override_num_blocks=1, num_cpus=0)
        ds = ds.map_batches(ChunkEmbedder, batch_size=self.ray_cfg.batch_papers, batch_format="numpy",
                            compute=ActorPoolStrategy(size=workers), num_cpus=1, num_gpus=1 if on_gpu else 0,
                            fn_constructor_kwargs={"settings": _worker_settings(self.settings),
                                                   "max_chunk_tokens": self.max_tokens, "overlap": self.overlap})
        self._report, self._error = report, None
        self._writer = threading.Thread(target=self._write_results, args=(ds,), name="ray-ingest-writer", daemon=True)
        self._writer.start()

    def _send(self, to_write: list[tuple[Paper, str]], report: IngestReport) -> None:
        if self._writer is None:
            self._start(report)
        self._put(([pickle.dumps(p, protocol=5) for p, _ in to_write], [h for _, h in to_write]))

    def _put(self, item: Any) -> None:
        """Queue a planned batch (``None`` ends the stream), waiting while the workers are behind."""
        from ray.util.queue import Full

        while True:
            self._raise_if_failed()
            if self._writer is None or not self._writer.is_alive():
                if item is None:
                    return
                raise UpstreamError("the Ray pipeline ended before the driver finished sending papers; what was "
                                    "written is kept: run the same command again to finish")
            try:
                self._queue.put(item, timeout=1.0)
                return
            except Full:
                continue

    def _write_results(self, ds: Any) -> None:
        """The writer thread: rows as the workers finish them, written a batch at a time."""
        bar = tqdm(desc="embedded on Ray and written", unit=" papers", position=1, leave=False,
                   disable=None if self.progress else True)
        try:
            for batch in ds.iter_batches(batch_size=self.ray_cfg.batch_papers, batch_format="numpy"):
                self._write_rows(batch)
                bar.update(len(batch["paper_id"]))
        except BaseException as e:  # noqa: BLE001 - handed to the driver's thread, which raises it
            self._error = e
        finally:
            bar.close()

    def _write_rows(self, batch: dict[str, Any]) -> None:
        ids = [str(x) for x in batch["paper_id"]]
        models = {(str(m), int(d)) for m, d in zip(batch["model"], batch["dim"])}
        if models != {(self.store.model_name, self.store.dim)}:
            (model, dim), *_ = sorted(models)
            raise ConfigError(f"the Ray workers embed with {model} ({dim} dims) but the store holds "
                              f"{self.store.model_name} ({self.store.dim} dims): install the same paperchat and "
                              "model on every node, or give the same embeddings settings")
        rows = [r for blob in batch["rows"] for r in pickle.loads(blob)]
        started = time.perf_counter()
        with self._lock:
            self._before_first_write()
            if rows:
                self.store.upsert(rows)
            stale = [cid for pid in ids for cid in self._stale.pop(pid, [])]
            if stale:
                self.store.delete(stale)
            self._unwritten.difference_update(ids)
        if self._report is not None:
            self._report.embedded_chunks += len(rows)
        log.info("batch written: %d papers, %d chunks embedded, %d stale chunks deleted (%.2f s)", len(ids),
                 len(rows), len(stale), time.perf_counter() - started)

    def _raise_if_failed(self) -> None:
        e = self._error
        if e is None:
            return
        cause = _cause(e)
        if isinstance(cause, PaperchatError):
            raise cause
        raise UpstreamError(f"the Ray ingest failed ({cause.__class__.__name__}: {cause}); what was written is "
                            "kept: run the same command again to finish") from e

    def _stop(self) -> None:
        """End the pipeline, whatever state it is in (the job's actors go with the driver's connection)."""
        writer, self._writer = self._writer, None
        if writer is not None and writer.is_alive():
            self._error = self._error or UpstreamError("ingest stopped")
            try:
                self._queue.put(None, timeout=1.0)
            except Exception:  # noqa: BLE001 - the queue may be full or gone: leaving the cluster ends the job
                pass
            writer.join(5.0)
            if writer.is_alive():
                ray = _import_ray()
                ray.shutdown()
                writer.join(5.0)
        self._queue = None
        self._stale.clear()
        self._unwritten.clear()
        self._pending.clear()
        self._with_passages.clear()


def _cause(e: BaseException) -> BaseException:
    """The exception a worker raised, out of Ray's wrappers (``RayTaskError.cause``)."""
    for _ in range(5):
        inner = getattr(e, "cause", None)
        if not isinstance(inner, BaseException) or inner is e:
            break
        e = inner
    return e
