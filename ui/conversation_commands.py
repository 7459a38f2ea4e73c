"""`paperchat conversations list|show|export|rename|delete`: the saved conversations (rag.conversations) in the
terminal, registered by rag.cli. They read the conversations file only: no model or store is opened."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rag.config import Settings
from rag.conversations import ConversationStore, owner_for
from rag.references import STYLES


def register(sub: Any, commands: dict[str, Any]) -> None:
    cv = sub.add_parser("conversations", help="saved chat conversations: list, show, export, rename, delete")
    cv.add_argument("--user", metavar="NAME",
                    help="the conversations of this signed-in user of the app (default: the ones kept without a "
                         "login, as `paperchat chat` and an app without login save them)")
    acts = cv.add_subparsers(dest="action", required=True)
    ls = acts.add_parser("list", help="id, date, turns and title of each, the latest first")
    ls.add_argument("--json", action="store_true", help='print [{"id", "title", "created", "updated", "turns"}]')
    show = acts.add_parser("show", help="a conversation's questions, answers and references")
    show.add_argument("id", nargs="?", default="", metavar="ID", help="id or its first digits (default: the latest)")
    show.add_argument("--json", action="store_true", help="print each turn as `paperchat ask --json` does")
    ex = acts.add_parser("export", help="a conversation as Markdown, its cited papers as .bib or in a citation style")
    ex.add_argument("id", nargs="?", default="", metavar="ID", help="id or its first digits (default: the latest)")
    ex.add_argument("--format", default="md", metavar="FORMAT",
                    help=f"md (the conversation), bib, or a citation style: {', '.join(STYLES)} (default: md)")
    ex.add_argument("--out", type=Path, metavar="FILE", help="write to FILE instead of printing")
    ren = acts.add_parser("rename", help="give a conversation a new title")
    ren.add_argument("id", metavar="ID")
    ren.add_argument("title", metavar="TITLE")
    dele = acts.add_parser("delete", help="delete a conversation")
    dele.add_argument("id", metavar="ID")
    commands["conversations"] = cmd_conversations


def cmd_conversations(args: argparse.Namespace, settings: Settings) -> int:
    from rag.answer import render_text
    from ui.export import conversation_export

    saved, owner = ConversationStore(settings.conversations_path), owner_for(args.user)
    if args.action == "list":
        listed = saved.list(owner)
        if args.json:
            sys.stdout.write(json.dumps([c.to_dict() for c in listed], ensure_ascii=False) + "\n")
        for c in listed if not args.json else []:
            print(f"{c.short_id}  {c.updated[:16].replace('T', ' ')}  {c.turns:>3} turn(s)  {c.title}")
        print(f"{len(listed)} conversation(s)", file=sys.stderr)
    elif args.action == "show":
        conv = saved.pick(owner, args.id)
        if args.json:
            for a in conv.answers:
                sys.stdout.write(json.dumps(a.to_dict(), ensure_ascii=False) + "\n")
        else:
            print(f"# {conv.title}  ({conv.short_id}, {conv.created[:16].replace('T', ' ')} UTC)")
            print("\n\n".join(render_text(a) for a in conv.answers))
    elif args.action == "export":
        conv = saved.pick(owner, args.id)
        text, _suffix = conversation_export(conv.answers, args.format)
        if args.out:
            args.out.write_text(text, encoding="utf-8")
            print(f"wrote {args.out} ({conv.short_id} \u201c{conv.title}\u201d)", file=sys.stderr)
        else:
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
    elif args.action == "rename":
        cid = saved.rename(owner, args.id, args.title)
        print(f"renamed {cid[:8]} to \u201c{saved.load(owner, cid).title}\u201d")
    else:
        cid = saved.delete(owner, args.id)
        print(f"deleted the conversation {cid[:8]}")
    return 0
