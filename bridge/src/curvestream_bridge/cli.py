"""The bridge's command line (``curvestream-bridge``, ``python -m curvestream_bridge``,
``curvestream bridge``).

    curvestream-bridge [--config FILE]                   # serve: settings from CURVESTREAM_* / the file
    curvestream-bridge replay-dead-letters               # ask the running bridge to store the parked batches again
    curvestream-bridge replay-dead-letters --offline     # the bridge is stopped: open the store here
    curvestream-bridge grafana sync ...                  # dashboards and alert rules to Grafana ([grafana] extra)
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import textwrap
import urllib.error
import urllib.request
from typing import Any

from pydantic import ValidationError

from curvestream_bridge.replay import replay_parked
from curvestream_bridge.service import Bridge, run_bridge
from curvestream_bridge.settings import BridgeSettings, describe_error

__all__ = ["main"]

REPLAY = "replay-dead-letters"


COMMANDS = (
    (REPLAY, "store the batches the bridge parked after unexpected store errors, once the cause is fixed "
             "(--offline: with the bridge stopped)"),
    ("grafana sync", "connect an existing Grafana: data sources, dashboards, alert rules, Live token "
                     "(needs the [grafana] extra)"),
)


def main(argv: list[str] | None = None, prog: str = "curvestream-bridge") -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["grafana"]:  # grafana sync ... (its options are its own; needs the [grafana] extra)
        raise SystemExit(_grafana(argv[1:], f"{prog} grafana"))
    parser = argparse.ArgumentParser(
        prog=prog, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run the curvestream bridge (MQTT -> store, the HTTP API and the page), configured by\n"
                    "CURVESTREAM_* environment variables or --config; or one of its commands.",
        epilog="commands (each with --help):\n" + "\n".join(
            f"  {name:21} " + "\n  ".ljust(25).join(textwrap.wrap(text, 70)) for name, text in COMMANDS))
    parser.add_argument("--config", metavar="FILE",
                        help="a file of CURVESTREAM_*=value lines (see bridge/bridge.example.env)")
    parser.add_argument("command", nargs="?", choices=[REPLAY], metavar="COMMAND",
                        help=f"{REPLAY}, or none to run the bridge (grafana sync: see below)")
    cut = argv.index(REPLAY) + 1 if REPLAY in argv else len(argv)  # what follows is the command's
    args, rest = parser.parse_args(argv[:cut]), argv[cut:]
    logging.basicConfig(level=os.environ.get("CURVESTREAM_LOG_LEVEL", "INFO"),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = BridgeSettings(_env_file=args.config) if args.config else BridgeSettings()  # type: ignore[call-arg]
    except ValidationError as exc:
        print(f"curvestream bridge: bad settings: {describe_error(exc)}", file=sys.stderr)
        raise SystemExit(2) from None
    if args.command == REPLAY:
        raise SystemExit(_replay_command(settings, rest))
    try:
        run_bridge(settings)
    except KeyboardInterrupt:
        pass


def _grafana(argv: list[str], prog: str) -> int:
    if argv[:1] == ["sync"]:
        from curvestream_bridge.grafana_sync import main as grafana_sync

        return grafana_sync(argv[1:])
    text = (f"usage: {prog} sync --url URL [--token TOKEN] [--dry-run] [...]\n\n"
            f"  sync  {COMMANDS[1][1]}; `{prog} sync --help` for its options\n")
    if argv[:1] in (["--help"], ["-h"]):
        print(text, end="")
        return 0
    print(text + f"{prog}: unknown command {' '.join(argv) or '(none)'}", file=sys.stderr)
    return 2


def _replay_through_bridge(settings: BridgeSettings, url: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {settings.write_token}"} if settings.write_token else {}
    request = urllib.request.Request(url.rstrip("/") + "/api/v1/parked/replay", data=b"", method="POST",
                                     headers=headers)
    with urllib.request.urlopen(request, timeout=3600) as resp:
        return json.loads(resp.read())


def _replay_offline(settings: BridgeSettings) -> dict[str, Any]:
    bridge = Bridge(settings.model_copy(update={"mqtt_url": ""}))
    bridge.start()  # no subscriber without MQTT; the alert state is read so replayed points are evaluated too
    try:
        return replay_parked(bridge.ingest)
    finally:
        bridge.stop()


def _replay_command(settings: BridgeSettings, argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="curvestream-bridge replay-dead-letters",
                                     description="Store the parked batches (see CURVESTREAM_PARKED_DIR) again.")
    parser.add_argument("--url", default=None, help="the running bridge (default: http://CURVESTREAM_HTTP_ADDR)")
    parser.add_argument("--offline", action="store_true",
                        help="the bridge is stopped: open the store and the parked set in this process")
    args = parser.parse_args(argv)
    if args.offline:
        report = _replay_offline(settings)
    else:
        host, port = settings.http_addr.rsplit(":", 1)
        url = args.url or f"http://{'127.0.0.1' if host in ('0.0.0.0', '', '[::]') else host}:{port}"
        try:
            report = _replay_through_bridge(settings, url)
        except urllib.error.HTTPError as err:
            print(f"curvestream-bridge replay-dead-letters: the bridge at {url} answered {err.code}: "
                  f"{err.read()[:300].decode(errors='replace')}", file=sys.stderr)
            return 2
        except (urllib.error.URLError, OSError) as exc:
            print(f"curvestream-bridge replay-dead-letters: the bridge at {url} did not answer ({exc}); "
                  "start it, or stop it for good and use --offline", file=sys.stderr)
            return 2
    print(json.dumps(report, indent=2))
    return 0 if report["still_parked"] == 0 else 1
