"""`paperchat` command line: one entry point, one subcommand per job."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag.answer import LENGTHS
from rag.config import Settings, get_settings
from rag.display import author_list
from rag.errors import InputError, PaperchatError

_LENGTH_HELP = ("answer length: brief (2-3 sentences, at most 3 papers), normal (the default) or thorough "
                "(every retrieved paper that bears on the question, grouped by what each says)")

if TYPE_CHECKING:
    from rag.ingest.loaders.base import RecordProblem
    from rag.ingest.pipeline import IngestReport

log = logging.getLogger("paperchat")

Handler = Callable[[argparse.Namespace, Settings], int]
COMMANDS: dict[str, Handler] = {}


def command(name: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        COMMANDS[name] = fn
        return fn
    return register


def parse_mapping(pairs: Sequence[str]) -> dict[str, str] | None:
    """``--map abstract=Summary --map title=Name`` → {"abstract": "Summary", "title": "Name"}."""
    out: dict[str, str] = {}
    for pair in pairs:
        field, sep, column = pair.partition("=")
        if not sep or not field.strip() or not column.strip():
            raise InputError(f"--map expects FIELD=COLUMN, got {pair!r}")
        out[field.strip()] = column.strip()
    return out or None


def _print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")


def _sample() -> list[Path]:
    """The bundled sample corpus (``ingest --sample``)."""
    from rag.resources import sample_corpus

    files = sample_corpus()
    if not files:
        raise InputError("the bundled sample corpus is missing from this install (rag.sample holds no .txt)")
    return files


@command("ingest")
def cmd_ingest(args: argparse.Namespace, settings: Settings) -> int:
    from rag.ingest.report import collecting, counts
    from rag.runtime import Runtime

    paths = [*args.paths, *(_sample() if args.sample else [])]
    if not paths:
        raise InputError("nothing to ingest: name files (or a BEIR folder), or --sample for the bundled sample corpus")
    if args.full_text:
        settings.ingest.full_text = True
    rt = Runtime(settings)
    try:
        if args.rebuild:
            rt.store.reset()
        with collecting() as noted:  # records kept with a caveat, summarised below
            ingestor = rt.ingestor(progress=not args.json)
            if args.ray:  # chunk and embed on a Ray cluster (rag/ingest/ray_ingest.py, the paperchat[ray] extra)
                from rag.ingest.ray_ingest import RayIngestor

                ingestor = ray_ingestor = RayIngestor.like(ingestor, settings, args.ray)
            try:
                report = ingestor.ingest(paths, fmt=args.format, mapping=parse_mapping(args.map),
                                         strict=args.strict, collection=args.collection)
            finally:
                if args.ray:
                    ray_ingestor.close()
    finally:
        rt.close()
    _report_skipped(report, args.report, settings, list(noted))
    if args.json:
        _print_json(report.as_dict() | {"noted": len(noted), "noted_by_reason": counts(noted)})
    else:
        for err in report.file_errors:
            print(f"error: {err}", file=sys.stderr)
        print(report.summary())
    return 1 if report.failed else 0


def _report_skipped(report: IngestReport, path: Path | None, settings: Settings,
                    noted: list[RecordProblem] | None = None) -> None:
    """Write every skipped record, and every record kept with a caveat (``noted``: an abstract cut to the
    length limit, a BibTeX field given twice), to ``path`` (default: a new file under $PAPERCHAT_HOME/reports/
    when there is any) and print one stderr line per reason, so a library with hundreds of entries lacking an
    abstract gives a handful of lines, not one warning each (those are shown with -v)."""
    from rag.ingest import report as skipped

    noted = noted or []
    if not report.skipped_records and not noted and path is None:
        return
    wanted = path or skipped.default_path(settings.home)
    written: Path | None = None
    try:
        written = skipped.write(report.skipped_records, wanted, noted)
        report.report_path = str(written)
    except OSError as e:  # the papers are stored; a report that cannot be written is not worth failing the run
        print(f"paperchat: cannot write the report {wanted}: {e.strerror or e}", file=sys.stderr)
    for line in skipped.summary_lines(report.skipped_records, written, noted):
        print(line, file=sys.stderr)


@command("stats")
def cmd_stats(args: argparse.Namespace, settings: Settings) -> int:
    from rag.runtime import Runtime
    from ui.library import store_stats

    rt = Runtime(settings)
    try:
        stats = store_stats(rt.read_store(), settings)  # the same object as the API's GET /v1/stats
    finally:
        rt.close()
    if args.json:
        _print_json(stats)
    else:
        for k, v in stats.items():
            print(f"{k:>16}: {v}")
    return 0


@command("papers")
def cmd_papers(args: argparse.Namespace, settings: Settings) -> int:
    from rag.index.paper_query import PaperQuery, find_papers, parse_year_range
    from rag.runtime import Runtime

    if args.format:  # refused before the store is opened: an unknown style or --json beside it
        from rag.references import bibliography, paper_item, style_path

        style_path(args.format)
        if args.json:
            raise InputError("--json and --format are two outputs: give one")
    year_from, year_to = parse_year_range(args.year)
    query = PaperQuery(author=args.author, category=args.category, year_from=year_from, year_to=year_to,
                       text=args.search, collection=args.collection)
    rt = Runtime(settings)
    try:
        papers = find_papers(rt.read_store(), _scoped(rt, query), limit=args.limit)
    finally:
        rt.close()
    if args.json:
        _print_json([p.to_dict() for p in papers])
        return 0
    if args.format:
        for entry in bibliography([paper_item(p) for p in papers], args.format):
            print(entry)
        print(f"{len(papers)} paper(s)", file=sys.stderr)
        return 0
    for p in papers:
        authors = author_list(p.authors)
        extra = " · ".join(x for x in (str(p.year or ""), "; ".join(p.categories)) if x)
        print(f"{p.id}  {p.label}\n    {authors}" + (f"  [{extra}]" if extra else ""))
    print(f"{len(papers)} paper(s)", file=sys.stderr)
    return 0


def _scoped(rt: Any, query: Any) -> Any:
    """The query with its collection's members as paper ids (unchanged without a collection)."""
    return rt.collections().scope(query)


@command("collection")
def cmd_collection(args: argparse.Namespace, settings: Settings) -> int:
    """Named sets of papers: list, add (papers matching a search), remove, rename, delete."""
    from rag.index.paper_query import PaperQuery, find_papers, parse_year_range
    from rag.runtime import Runtime

    rt = Runtime(settings)
    try:
        sets = rt.collections()
        if args.action == "list":
            counts = sets.counts()
            if args.json:
                _print_json([{"name": name, "papers": c} for name, c in counts.items()])
            else:
                for name, c in counts.items():
                    print(f"{c:>6}  {name}")
                print(f"{len(counts)} collection(s)", file=sys.stderr)
            return 0
        if args.action == "rename":
            n = sets.rename(args.name, args.new_name)
            print(f"renamed {args.name!r} to {args.new_name!r} ({n} papers)")
            return 0
        if args.action == "delete":
            n = sets.delete(args.name)
            print(f"deleted the collection {args.name!r} ({n} papers; they stay in the library)")
            return 0
        year_from, year_to = parse_year_range(args.year)
        query = PaperQuery(author=args.author, category=args.category, year_from=year_from, year_to=year_to,
                           paper_ids=list(args.paper_id or []), text=args.search)
        if query.is_empty() and not query.text:
            raise InputError(f"collection {args.action}: say which papers: --search WORDS, --author, --category, "
                             "--year or --paper-id (repeatable)")
        found = [p.id for p in find_papers(rt.read_store(), query, limit=sys.maxsize)]
        if args.paper_id:
            missing = sorted(set(args.paper_id) - set(found))
            if missing:
                raise InputError(f"no stored paper with id {', '.join(map(repr, missing[:5]))} "
                                 "(`paperchat papers --json` lists the ids); nothing changed")
        if not found:
            raise InputError("no stored paper matches; nothing changed (try `paperchat papers` with the same options)")
        if args.action == "add":
            n = sets.add(args.name, found)
            print(f"{n} paper(s) added to {args.name!r} ({len(found) - n} already in it)")
        else:
            n = sets.remove(args.name, found)
            print(f"{n} paper(s) removed from {args.name!r}")
    finally:
        rt.close()
    return 0


def read_batch(path: Path) -> list[list[str]]:
    """Conversations from a batch file: a text file (one question per line; # comments) or JSONL
    (objects with ``question`` or ``turns``). Each becomes its own fresh conversation."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(f"cannot read the batch file: {e.strerror or e}", where=str(path)) from None
    lines = [(i, line.strip()) for i, line in enumerate(text.splitlines(), start=1)]
    lines = [(i, line) for i, line in lines if line and not line.startswith("#")]
    jsonl = path.suffix.lower() in (".jsonl", ".ndjson") or bool(lines and lines[0][1].startswith("{"))
    out: list[list[str]] = []
    for i, line in lines:
        if not jsonl:
            out.append([line])
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            raise InputError(f"not JSON: {e}", where=f"{path}:{i}") from None
        turns = obj.get("turns") if isinstance(obj, dict) else None
        question = obj.get("question") if isinstance(obj, dict) else None
        if isinstance(turns, list) and turns and all(isinstance(t, str) and t.strip() for t in turns):
            out.append([t.strip() for t in turns])
        elif isinstance(question, str) and question.strip():
            out.append([question.strip()])
        else:
            raise InputError("expected an object with a 'question' string or a 'turns' list of strings",
                             where=f"{path}:{i}")
    if not out:
        raise InputError("no questions in the batch file", where=str(path))
    return out


@command("ask")
def cmd_ask(args: argparse.Namespace, settings: Settings) -> int:
    if bool(args.questions) == bool(args.batch):
        raise InputError("give the questions of one conversation, or --batch FILE (not both)")
    conversations = read_batch(args.batch) if args.batch else [list(args.questions)]
    from rag.index.paper_query import PaperQuery, parse_year_range

    year_from, year_to = parse_year_range(args.year)

    from rag.answer import render_text
    from rag.qa.chain import AnswerChain, Conversation, resolve_mode
    from rag.runtime import Runtime

    mode = resolve_mode(settings, args.mode)  # fails before any model is loaded
    filters = PaperQuery(author=args.author, category=args.category, year_from=year_from, year_to=year_to,
                         paper_ids=list(args.paper_id or []), collection=args.collection)
    rt = Runtime(settings)
    try:
        chain = AnswerChain(rt)
        first = True
        for turns in conversations:
            conv = Conversation(chain, k=args.k, filters=None if filters.is_empty() else filters, mode=mode,
                                length=args.length)
            conv.pin, conv.exclude = list(args.pin), list(args.exclude)  # rag.qa.why
            for question in turns:
                answer = conv.ask(question)
                if args.json:
                    _print_json(answer.to_dict())
                    sys.stdout.flush()
                    continue
                print(("" if first else "\n") + render_text(answer), flush=True)
                if args.why:
                    from rag.qa.why import why_text

                    print("\n".join(why_text(answer.why, answer.not_cited)), flush=True)
                first = False
                for w in answer.warnings:
                    print(f"paperchat: warning: {w}", file=sys.stderr)
    finally:
        rt.close()
    return 0


@command("chat")
def cmd_chat(args: argparse.Namespace, settings: Settings, read: Callable[[str], str] = input) -> int:
    """A read–answer loop over one conversation, each turn saved (rag.conversations): blank line or Ctrl-D quits,
    /new starts over, ``--resume [ID]`` goes on with a saved conversation (the latest without an ID)."""
    from rag.answer import render_text
    from rag.conversations import LOCAL_OWNER, ConversationStore
    from rag.errors import EmptyLibrary
    from rag.index.paper_query import PaperQuery
    from rag.qa.chain import AnswerChain, Conversation, resolve_mode
    from rag.runtime import Runtime

    mode = resolve_mode(settings, args.mode)
    saved, owner = ConversationStore(settings.conversations_path), LOCAL_OWNER
    restored = saved.pick(owner, args.resume) if args.resume is not None else None  # before any model loads
    rt = Runtime(settings)
    try:
        if rt.store.count_chunks() == 0:  # as `ask` says it (`make chat` ingests the sample first)
            raise EmptyLibrary(f"{EmptyLibrary()}, or `paperchat ingest --sample` for the bundled sample corpus")
        papers = len(rt.store.paper_ids())
        print(f"paperchat — {papers} papers, {mode} answers. Ask a question; /new starts over; an empty line quits.")
        # an unknown or ambiguous name fails before the first question
        scope = PaperQuery(collection=rt.collections().resolve(args.collection)) if args.collection else None
        conv = Conversation(AnswerChain(rt), k=args.k, filters=scope, mode=mode, length=args.length)
        cid = None
        if restored is not None:
            cid, conv.turns = restored.id, list(restored.answers)
            print(f"(resumed {restored.short_id} \u201c{restored.title}\u201d, {len(conv.turns)} turn(s))")
            if conv.turns:
                print(render_text(conv.turns[-1]), flush=True)
        while True:
            try:
                question = read("\n> ").strip()
            except EOFError:
                break
            if not question:
                break
            if question == "/new":
                conv.reset()
                cid = None
                print("(new conversation)")
                continue
            from rag.qa.why import steering_command

            steered = steering_command(question, conv.pin, conv.exclude, conv.turns[-1] if conv.turns else None)
            if steered is not None:  # /pin N|ID, /exclude N|ID: for the questions that follow
                print(steered)
                continue
            try:
                answer = conv.ask(question)
                print(render_text(answer, show_question=False), flush=True)
                cid = saved.append_turn(owner, cid, answer)
            except PaperchatError as e:  # one bad question must not end the session
                print(f"error: {e}")
    finally:
        rt.close()
    return 0


@command("serve")
def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    """The web app (ui.app) over the current store; ingests the sample corpus when the store is empty."""
    from ui.app import serve

    extra = {"api": True} if args.api else {}  # the plain app keeps serve's original signature
    if args.allow_open:
        extra["allow_open"] = True
    return serve(settings, host=args.host, port=args.port, **extra)


@command("api")
def cmd_api(args: argparse.Namespace, settings: Settings) -> int:
    """The OpenAI-compatible HTTP API (ui.api); refuses a non-loopback bind without api.key_hashes."""
    from ui.api import serve

    return serve(settings, host=args.host, port=args.port)


@command("api-key")
def cmd_api_key(args: argparse.Namespace, settings: Settings) -> int:
    """A new API key (shown once) and the sha256 hash that goes into api.key_hashes."""
    from ui.api import new_key

    key, digest = new_key()
    print(f"key:  {key}\nhash: {digest}\n\nGive the key to the client (Authorization: Bearer <key>); configure the "
          f"server with the hash only:\n  PAPERCHAT_API__KEY_HASHES='[\"{digest}\"]'\nor in config.toml:\n"
          f"  [api]\n  key_hashes = [\"{digest}\"]")
    return 0


@command("mcp")
def cmd_mcp(args: argparse.Namespace, settings: Settings) -> int:
    """The library as an MCP server (ui.mcp_server). Over stdio, stdout is the protocol: logs go to stderr
    (``main`` sets that up) and the SDK points fd 1 at stderr while it serves, so stray prints miss the wire."""
    from ui.mcp_server import serve

    if args.transport == "http":
        print(f"paperchat mcp: streamable HTTP on http://{args.host or settings.mcp.host}:"
              f"{args.port or settings.mcp.port}/mcp", file=sys.stderr, flush=True)
    return serve(settings, transport=args.transport, host=args.host, port=args.port)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="paperchat", description="Chat-style question answering over paper abstracts.")
    p.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-v info, -vv debug)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ing = sub.add_parser("ingest", help="add papers from files (listing, arXiv JSONL/Atom, BibTeX, CSV, JSON, BEIR, "
                                        "Zotero, PDF)")
    ing.add_argument("paths", nargs="*", type=Path,
                     help="files (or a BEIR folder, a Zotero data folder, a folder of PDFs) to ingest")
    ing.add_argument("--sample", action="store_true",
                     help="also ingest the sample corpus bundled with paperchat (40 papers)")
    ing.add_argument("--format", help="force a format instead of detecting it")
    ing.add_argument("--map", action="append", default=[], metavar="FIELD=COLUMN",
                     help="map a paper field to a CSV/JSON column, e.g. --map abstract=Summary (repeatable)")
    ing.add_argument("--strict", action="store_true", help="any bad record aborts its file with nothing stored")
    ing.add_argument("--full-text", action="store_true",
                     help="also store each PDF's body (a Zotero item's PDF, else Zotero's extracted text) as "
                          "passages cited to the page (ingest.full_text; ~4 more vectors a page); without it, "
                          "stored passages are kept")
    ing.add_argument("--rebuild", action="store_true", help="drop the collection first (e.g. after changing model)")
    ing.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    ing.add_argument("--collection", metavar="NAME", help="also put every paper of these files in this collection")
    ing.add_argument("--report", type=Path, metavar="FILE",
                     help="write every skipped record (file:line: reason) to FILE (default: a file under "
                          "$PAPERCHAT_HOME/reports/ when any record was skipped)")
    ing.add_argument("--ray", metavar="ADDRESS|auto",
                     help="chunk and embed on a Ray cluster (pip install 'paperchat[ray]'): its head's HOST:PORT, or "
                          "auto (RAY_ADDRESS, the cluster `ray start` runs here, else a new local one); the same "
                          "rows as a plain ingest, and a killed run resumes")

    st = sub.add_parser("stats", help="papers, chunks, model and store location")
    st.add_argument("--json", action="store_true", help="print one JSON object")

    pa = sub.add_parser("papers", help="list and search stored papers")
    pa.add_argument("--author", help="author name or last name (accents and case ignored)")
    pa.add_argument("--category", help="category, e.g. 'Reinforcement Learning'")
    pa.add_argument("--year", help="YEAR or FROM-TO")
    pa.add_argument("--search", help="words that must appear in the title, label or abstract")
    pa.add_argument("--collection", metavar="NAME", help="only papers in this collection")
    pa.add_argument("--limit", type=int, default=100, help="at most this many papers")
    pa.add_argument("--json", action="store_true", help="print a JSON list")
    pa.add_argument("--format", metavar="STYLE", help="print the reference list in a citation style: apa, ieee, "
                    "chicago (author-date), nature, harvard, mla, acs")

    ask = sub.add_parser("ask", help="answer questions from the papers, with verified citations")
    ask.add_argument("questions", nargs="*", metavar="QUESTION",
                     help="one or more questions: successive turns of one conversation")
    ask.add_argument("--batch", type=Path, metavar="FILE",
                     help="answer each line of a text file (or each question/turns of a JSONL file) as its own "
                          "conversation, loading models once")
    ask.add_argument("--k", type=int, help="papers retrieved per answer (default: retrieval.k)")
    ask.add_argument("--mode", choices=["extractive", "llm"],
                     help="extractive (no LLM) or llm (needs PAPERCHAT_LLM__BASE_URL); default: llm when configured")
    ask.add_argument("--author", help="only papers by this author (name or last name; accents and case ignored)")
    ask.add_argument("--category", help="only papers in this category, e.g. 'Reinforcement Learning'")
    ask.add_argument("--year", help="only papers from YEAR or FROM-TO")
    ask.add_argument("--paper-id", action="append", default=[], metavar="ID",
                     help="only these papers (repeatable)")
    ask.add_argument("--collection", metavar="NAME", help="only papers in this collection")
    ask.add_argument("--json", action="store_true", help="print one JSON object per turn, one per line")
    ask.add_argument("--length", choices=LENGTHS, help=_LENGTH_HELP)
    ask.add_argument("--pin", action="append", default=[], metavar="ID",
                     help="a paper that must be considered, even if retrieval would not rank it (repeatable)")
    ask.add_argument("--exclude", action="append", default=[], metavar="ID", help="a paper never cited (repeatable)")
    ask.add_argument("--why", action="store_true",
                     help="after each answer, one line per paper on why it was cited, and the close ones left out")

    chat = sub.add_parser("chat", help="an interactive conversation in the terminal")
    chat.add_argument("--k", type=int, help="papers retrieved per answer (default: retrieval.k)")
    chat.add_argument("--collection", metavar="NAME", help="ask within this collection")
    chat.add_argument("--mode", choices=["extractive", "llm"], help="answer mode (default: llm when configured)")
    chat.add_argument("--length", choices=LENGTHS, help=_LENGTH_HELP)
    chat.add_argument("--resume", nargs="?", const="", metavar="ID", help="go on with a saved conversation (an id "
                      "or its first digits, from `paperchat conversations list`; the latest without one)")

    col = sub.add_parser("collection", help="named sets of papers to ask within: list, add, remove, rename, delete")
    col_sub = col.add_subparsers(dest="action", required=True)
    col_list = col_sub.add_parser("list", help="every collection with its number of papers")
    col_list.add_argument("--json", action="store_true", help='print [{"name": …, "papers": N}, …]')
    for action, what in (("add", "put the matching papers in a collection (made if new)"),
                         ("remove", "take the matching papers out of a collection (they stay in the library)")):
        c = col_sub.add_parser(action, help=what)
        c.add_argument("name", metavar="NAME", help="collection name (Parent/Child for a nested one)")
        c.add_argument("--search", help="words that must all appear in the title, label or abstract")
        c.add_argument("--author", help="papers by this author (name or last name)")
        c.add_argument("--category", help="papers in this category")
        c.add_argument("--year", help="YEAR or FROM-TO")
        c.add_argument("--paper-id", action="append", default=[], metavar="ID", help="this paper (repeatable)")
    ren = col_sub.add_parser("rename", help="give a collection a new name")
    ren.add_argument("name", metavar="NAME")
    ren.add_argument("new_name", metavar="NEW_NAME")
    dele = col_sub.add_parser("delete", help="delete a collection (never its papers)")
    dele.add_argument("name", metavar="NAME")

    srv = sub.add_parser("serve", help="the web app on 127.0.0.1:7860 (ingests the sample corpus into an empty store)")
    srv.add_argument("--host", help="bind address (default: ui.host, 127.0.0.1)")
    srv.add_argument("--port", type=int, help="port (default: ui.port, 7860)")
    srv.add_argument("--api", action="store_true", help="also serve the HTTP API (/v1, as `paperchat api`) "
                                                         "in the same process")
    srv.add_argument("--allow-open", action="store_true", help="serve beyond loopback without a login (refused "
                                                                "otherwise: anyone who can reach it can use it)")

    api = sub.add_parser("api", help="the OpenAI-compatible HTTP API on 127.0.0.1:8080 (chat completions, "
                                     "search, papers, ask)")
    api.add_argument("--host", help="bind address (default: api.host, 127.0.0.1; beyond loopback needs a key)")
    api.add_argument("--port", type=int, help="port (default: api.port, 8080)")
    sub.add_parser("api-key", help="print a new API key and the hash to configure (api.key_hashes)")

    mcp = sub.add_parser("mcp", help="serve the library to assistants (Claude, Cursor…) over MCP: stdio, or "
                                     "streamable HTTP on 127.0.0.1")
    mcp.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                     help="stdio (the client starts paperchat) or http (streamable HTTP at /mcp)")
    mcp.add_argument("--host", help="HTTP bind address (default: mcp.host, 127.0.0.1; loopback only)")
    mcp.add_argument("--port", type=int, help="HTTP port (default: mcp.port, 8765)")

    from evals.cli import register
    from ui.conversation_commands import register as register_conversations
    from ui.logins import register as register_logins

    register(sub, COMMANDS)
    register_conversations(sub, COMMANDS)
    register_logins(sub, COMMANDS)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = get_settings()
        level = [logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)]
        if not args.verbose:
            level = getattr(logging, settings.log_level.upper(), logging.WARNING)
        logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
        return COMMANDS[args.command](args, settings)
    except PaperchatError as e:
        print(f"paperchat: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("paperchat: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # validation errors from settings, etc.: one line, not a traceback
        from pydantic import ValidationError

        if isinstance(e, ValidationError):
            print(f"paperchat: error: invalid settings: {e.errors()[0]['loc']}: {e.errors()[0]['msg']}",
                  file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
