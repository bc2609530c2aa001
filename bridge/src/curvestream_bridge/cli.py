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
import urllib.error
import urllib.request
from typing import Any

from curvestream_bridge.replay import replay_parked
from curvestream_bridge.service import Bridge, run_bridge
from curvestream_bridge.settings import BridgeSettings

__all__ = ["main"]

REPLAY = "replay-dead-letters"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:2] == ["grafana", "sync"]:  # curvestream-bridge grafana sync ... (needs the [grafana] extra)
        from curvestream_bridge.grafana_sync import main as grafana_sync

        raise SystemExit(grafana_sync(argv[2:]))
    parser = argparse.ArgumentParser(prog="curvestream bridge", description="Run the curvestream bridge.")
    parser.add_argument("--config", help="a file of CURVESTREAM_*=value lines (see bridge.example.env)")
    parser.add_argument("command", nargs="?", choices=[REPLAY],
                        help=f"{REPLAY}: store the parked batches again (--help after it for more)")
    argv = sys.argv[1:] if argv is None else argv
    cut = argv.index(REPLAY) + 1 if REPLAY in argv else len(argv)  # what follows is the command's
    args, rest = parser.parse_args(argv[:cut]), argv[cut:]
    logging.basicConfig(level=os.environ.get("CURVESTREAM_LOG_LEVEL", "INFO"),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = BridgeSettings(_env_file=args.config) if args.config else BridgeSettings()  # type: ignore[call-arg]
    except Exception as exc:  # noqa: BLE001 - pydantic's message names the field
        print(f"curvestream bridge: bad settings: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    if args.command == REPLAY:
        raise SystemExit(_replay_command(settings, rest))
    try:
        run_bridge(settings)
    except KeyboardInterrupt:
        pass


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
