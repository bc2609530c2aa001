"""``curvestream runs``: a stored run after the fact, through the bridge's API
(write token: ``CURVESTREAM_WRITE_TOKEN``).

    curvestream runs rename PROJECT RUN NAME          the name shown (identity and curves stay)
    curvestream runs tag PROJECT RUN [TAG ...] [--remove TAG ...]
    curvestream runs notes PROJECT RUN TEXT
    curvestream runs rm PROJECT RUN [RUN ...] [--yes]  delete, for good (asks first on a terminal)

RUN is the run's identity, as the runs list's ``run`` names it (``lr=0.1-k3x9q2``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_parser"]


def _run(args: argparse.Namespace, run: str) -> Any:
    from curvestream.api import Api, ApiRun
    from curvestream.settings import Settings

    settings = Settings.from_env()
    return ApiRun(Api(settings.bridge_url, settings.read_token, write_token=settings.write_token),
                  {"project": args.project, "run": run})


def _done(command: str, fn: Any) -> int:
    """Run ``fn``; a bridge's refusal is one line on stderr and exit status 2."""
    from curvestream.api import ApiError

    try:
        fn()
    except ApiError as exc:
        why = "no such run" if exc.status == 404 else str(exc).removeprefix("curvestream.Api: ")
        print(f"curvestream runs {command}: {why}", file=sys.stderr)
        return 2
    return 0


def cmd_rename(args: argparse.Namespace) -> int:
    return _done("rename", lambda: _run(args, args.run).rename(args.name))


def cmd_tag(args: argparse.Namespace) -> int:
    if not args.tags and not args.remove:
        print("curvestream runs tag: name a tag to add, or one to take away with --remove", file=sys.stderr)
        return 2
    return _done("tag", lambda: _run(args, args.run).update(add_tags=args.tags, remove_tags=args.remove or []))


def cmd_notes(args: argparse.Namespace) -> int:
    return _done("notes", lambda: _run(args, args.run).update(notes=args.text))


def cmd_rm(args: argparse.Namespace) -> int:
    names = ", ".join(f"{args.project}/{r}" for r in args.runs)
    if not args.yes:
        if not sys.stdin.isatty():
            print(f"curvestream runs rm: deleting {names} cannot be undone; add --yes to do it", file=sys.stderr)
            return 2
        answer = input(f"Delete {names} and every point, alert and record of it, for good? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("curvestream runs rm: nothing deleted", file=sys.stderr)
            return 1
    for run in args.runs:
        code = _done("rm", lambda run=run: _run(args, run).delete())
        if code:
            return code
        print(f"curvestream runs rm: deleted {args.project}/{run}", file=sys.stderr)
    return 0


def add_parser(sub: Any) -> None:
    runs = sub.add_parser("runs", help="rename, tag, annotate or delete a stored run (needs the write token)")
    commands = runs.add_subparsers(dest="runs_command", required=True, metavar="COMMAND")
    rename = commands.add_parser("rename", help="show a run under another name (its identity and curves stay)")
    tag = commands.add_parser("tag", help="add tags to a run, or take some away")
    notes = commands.add_parser("notes", help="set a run's notes")
    rm = commands.add_parser("rm", help="delete runs and everything of them, for good")
    for parser in (rename, tag, notes, rm):
        parser.add_argument("project", help="the run's project")
    for parser in (rename, tag, notes):
        parser.add_argument("run", help="the run's identity, as the runs list's `run` names it")
    rename.add_argument("name", help="the new name")
    rename.set_defaults(func=cmd_rename)
    tag.add_argument("tags", nargs="*", help="tags to add")
    tag.add_argument("--remove", action="append", metavar="TAG", help="a tag to take away (repeat for several)")
    tag.set_defaults(func=cmd_tag)
    notes.add_argument("text", help="the notes (empty: none)")
    notes.set_defaults(func=cmd_notes)
    rm.add_argument("runs", nargs="+", metavar="RUN", help="the runs' identities")
    rm.add_argument("--yes", action="store_true", help="do not ask first")
    rm.set_defaults(func=cmd_rm)
