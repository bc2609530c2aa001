"""The ``curvestream`` command.

    curvestream up [--data DIR] [--port 8080] [--mqtt-port 1883]   embedded stack on 127.0.0.1
    curvestream demo [--duration 60] [--runs 3]                      a real training loop streaming into it
    curvestream sync [DIR]                                           replay spooled batches
    curvestream status [DIR]                                         what is waiting in the spool
    curvestream import tensorboard DIR [--project P]                 TensorBoard event files, every point
    curvestream import wandb DIR [--project P]                       W&B offline run folders, every history row
    curvestream import mlflow MLRUNS [--project P]                   MLflow's file store, every metric line
    curvestream export PROJECT RUN [--key K] [--format parquet|csv] [-o FILE]   every point of a run, to a file
    curvestream runs rename|tag|notes|rm PROJECT RUN ...             a stored run after the fact (runs_cli.py)
    curvestream bridge [--config FILE]                               the bridge alone, for production
    curvestream mqtt add-user PROJECT [--user U] [--passwd-file F --acl-file F]   a trainer account for Mosquitto
    curvestream bridge replay-dead-letters [--offline]               store the bridge's parked batches again
    curvestream alerts test --rules FILE PROJECT RUN                 what rules would raise on a stored run
    curvestream grafana sync --url URL --token TOKEN [--dry-run]     dashboards etc. into an existing Grafana
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from curvestream import runs_cli

if TYPE_CHECKING:
    from curvestream_wire.seqset import SeqSet

    from curvestream.settings import Settings

__all__ = ["main"]


def _need_bridge() -> None:
    try:
        import curvestream_bridge  # noqa: F401
    except ImportError:
        sys.exit("curvestream: this command needs the bridge: pip install curvestream-bridge (or ./bridge)")


def _fail(line: str) -> None:
    """A known failure: one line on stderr, exit status 2."""
    print(line, file=sys.stderr)
    raise SystemExit(2)


def _bridge_alive(url: str) -> bool:
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/healthz", timeout=1.0) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def cmd_up(args: argparse.Namespace) -> None:
    _need_bridge()
    from curvestream_bridge.service import StartError, run_embedded

    try:
        run_embedded(args.data, args.port, args.mqtt_port, host=args.host)
    except StartError as exc:
        _fail(f"curvestream up: {exc}")
    except KeyboardInterrupt:
        pass


def cmd_demo(args: argparse.Namespace) -> None:
    from curvestream.demo import run_sweep

    bridge_url = f"http://127.0.0.1:{args.port}"
    settings = {"bridge_url": bridge_url, "mqtt_url": f"mqtt://127.0.0.1:{args.mqtt_port}"}
    if not _bridge_alive(bridge_url):
        settings["mqtt_protocol"] = "3.1.1"  # the embedded broker (amqtt) speaks 3.1.1 only
    if args.spool_dir:
        settings["spool_dir"] = args.spool_dir
    stop = threading.Event()

    running = _bridge_alive(bridge_url)

    def train() -> None:
        into = f"the curvestream already running at {bridge_url}" if running else bridge_url
        print(f"curvestream demo: training {args.runs} runs for ~{args.duration:g} s; watch them at {into}",
              flush=True)
        run_sweep(project=args.project, runs=args.runs, steps=args.steps, seconds=args.duration, stop=stop,
                  **settings)
        if stop.is_set():
            return
        if running:
            print(f"curvestream demo: training done; the curves stay at {bridge_url}, served by the curvestream "
                  "that was already running there", flush=True)
        else:
            print("curvestream demo: training done" + ("" if args.exit else f"; the curves stay at {bridge_url} "
                  "(Ctrl-C to stop)"), flush=True)

    if running:
        try:
            train()
        except KeyboardInterrupt:
            stop.set()
        return
    _need_bridge()
    from curvestream_bridge.service import StartError, run_embedded

    def train_then_exit() -> None:
        train()
        if args.exit:
            os.kill(os.getpid(), signal.SIGINT)

    trainer = threading.Thread(target=train_then_exit, name="curvestream-demo", daemon=True)

    def finish_training() -> None:
        stop.set()  # the runs finish while the broker and the bridge still run
        if trainer.is_alive():
            trainer.join(60)

    try:
        run_embedded(args.data, args.port, args.mqtt_port, on_ready=trainer.start, on_shutdown=finish_training)
    except StartError as exc:
        _fail(f"curvestream demo: {exc}")
    except KeyboardInterrupt:
        pass


def _progress(label: str, total: int, unit: str = "batches") -> Callable[[int], None]:
    from curvestream.progress import WaitProgress

    return WaitProgress(label, total, unit=unit)


def cmd_sync(args: argparse.Namespace) -> int:
    from curvestream.settings import Settings
    from curvestream.spool_replay import sync_spool

    overrides = {"spool_dir": args.dir} if args.dir else {}
    settings = Settings.from_env(**overrides)
    report = sync_spool(settings, timeout_s=args.timeout, progress=_progress)
    print(json.dumps(report, indent=2))
    return 0 if report["left_batches"] == 0 else 1


def cmd_status(args: argparse.Namespace) -> int:
    from curvestream.losses import read_losses
    from curvestream.notices import sync_command
    from curvestream.settings import Settings
    from curvestream.spool_replay import spool_status

    overrides = {"spool_dir": args.dir} if args.dir else {}
    settings = Settings.from_env(**overrides)
    bridge = settings.bridge_url
    reachable = bool(bridge) and _bridge_alive(bridge)
    status = spool_status(settings.spool_path, _stored_ranges(settings) if reachable else None)
    print(f"spool: {settings.spool_path}")
    print(f"bridge: {bridge} ({'reachable' if reachable else 'not reachable'})")
    for loss in read_losses(settings.spool_path):
        print(f"  {loss['project']}/{loss['run']}  lost {loss['points']} points ({loss['batches']} batches "
              f"not spooled): {loss['reason']}  [remove {loss['file']} once noted]")
    pending = [p for p in status if p["live"] or p["batches"] > p.get("stored_batches", 0)]
    stored_on_disk = sum(p.get("stored_batches", 0) for p in status if not p["live"])
    if not pending:
        print("nothing pending")
    for p in pending:
        who = "live process" if p["live"] else "pending sync"
        batches = p["batches"] if p["batches"] is None else p["batches"] - p.get("stored_batches", 0)
        print(f"  {p['project']}/{p['run']}  producer {p['producer'][:8]}  {batches} batches "
              f"({p['bytes']} bytes, {p['segments']} segments)  [{who}]")
    if any(not p["live"] for p in pending):
        unsure = "" if reachable else " (the bridge is not reachable: some may be stored already)"
        print(f"send them with `{sync_command(settings)}`{unsure}")
    if stored_on_disk:
        print(f"({stored_on_disk} batch(es) on disk are stored already; the next sync or run in this spool "
              "directory frees them)")
    return 0


def _stored_ranges(settings: Settings) -> Callable[[bytes], SeqSet | None]:
    """The bridge's stored seqs of a producer, None when it cannot be asked."""
    from curvestream.http_fallback import BridgeHttp
    from curvestream.importing import stored_batches

    http = BridgeHttp(settings.bridge_url, settings.read_token, timeout_s=5.0)
    return lambda producer_id: stored_batches(http, producer_id)


def _importer(source: str) -> Callable[..., Any]:
    if source == "tensorboard":
        from curvestream.tensorboard.importer import import_tensorboard

        return import_tensorboard
    if source == "wandb":
        from curvestream.importers.wandb import import_wandb

        return import_wandb
    from curvestream.importers.mlflow import import_mlflow

    return import_mlflow


def cmd_import(args: argparse.Namespace) -> int:
    from curvestream.settings import Settings

    settings = Settings.from_env(**({"spool_dir": args.spool_dir} if args.spool_dir else {}))
    bars: dict[int, Callable[[int], None]] = {}

    def progress(done: int, total: int) -> None:
        show = bars.setdefault(total, _progress("curvestream import", total, "bytes"))
        show(total - done)

    try:
        report = _importer(args.source)(args.dir, settings, project=args.project, timeout_s=args.timeout,
                                        progress=progress)
    except (FileNotFoundError, ImportError, RuntimeError, ValueError) as exc:
        print(f"curvestream import: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2))
    print(f"curvestream import {args.source}: {report['summary']}", file=sys.stderr)
    return 0 if report["left_batches"] == 0 else 1


def cmd_export(args: argparse.Namespace) -> int:
    from curvestream.api import Api, ApiError, ApiRun
    from curvestream.settings import Settings

    settings = Settings.from_env()
    target = args.output or "".join(c if c.isalnum() or c in "-_.=" else "_" for c in args.run) + f".{args.format}"
    try:
        found = ApiRun(Api(settings.bridge_url, settings.read_token), {"project": args.project, "run": args.run})
        if target == "-":
            written = found.export(sys.stdout.buffer, args.format, args.key)
        else:
            written = found.export(target, args.format, args.key)
    except (ApiError, LookupError, OSError) as exc:
        print(f"curvestream export: {exc}", file=sys.stderr)
        return 2
    if target != "-":
        print(f"curvestream export: {args.project}/{args.run} -> {target} ({written:,} bytes)", file=sys.stderr)
    return 0


def cmd_bridge(argv: list[str]) -> None:
    _need_bridge()
    from curvestream_bridge.cli import main as bridge_main

    bridge_main(argv, prog="curvestream bridge")


def cmd_mqtt_add_user(args: argparse.Namespace) -> int:
    from curvestream.mqtt_accounts import add_user, new_password

    user = args.user or f"trainer-{args.project}"
    password = args.password or new_password()
    try:
        leftover = add_user(args.project, user, password, args.passwd_file, args.acl_file)
    except (ValueError, OSError) as exc:
        sys.exit(str(exc))
    for text in leftover:
        print(text + "\n")
    wrote = [f for f in (args.passwd_file, args.acl_file) if f]
    if wrote:
        print(f"added {user} to {' and '.join(wrote)}; restart Mosquitto to load them")
    if not args.password:
        print(f"CURVESTREAM_MQTT_URL=mqtt://{user}:{password}@<broker host>:1883")
    return 0


def cmd_alerts(argv: list[str]) -> int:
    _need_bridge()
    from curvestream_bridge.alerts.replay import main as replay_main

    return replay_main(argv)


def grafana_sync(options: list[str]) -> int:
    _need_bridge()
    from curvestream_bridge.grafana_sync import main as sync_main

    return sync_main(options)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:2] == ["alerts", "test"]:  # its own parser: `curvestream alerts test --help` shows every option
        raise SystemExit(cmd_alerts(argv[2:]))
    if argv[:2] == ["grafana", "sync"]:  # its options are the bridge's (argparse cannot pass them through)
        sys.exit(grafana_sync(argv[2:]))
    if argv[:1] == ["bridge"]:  # the bridge's own parser: `curvestream bridge --help` lists its commands
        cmd_bridge(argv[1:])
        return
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=os.environ.get("CURVESTREAM_LOG_LEVEL", "WARNING"),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    code = args.func(args)
    sys.exit(code or 0)


def build_parser() -> argparse.ArgumentParser:
    """Every command and option, each with its help (``alerts test``, ``grafana sync`` and ``bridge``
    have parsers of their own, in the bridge)."""
    parser = argparse.ArgumentParser(prog="curvestream", description="Stream ML training curves.")
    sub = parser.add_subparsers(dest="command", required=True)

    up = sub.add_parser("up", help="embedded stack: amqtt + bridge + DuckDB + page on 127.0.0.1:8080")
    up.add_argument("--data", default="./curvestream-data", metavar="DIR",
                    help="data directory (default ./curvestream-data)")
    up.add_argument("--port", type=int, default=8080, metavar="N", help="HTTP port of the page and API (default 8080)")
    up.add_argument("--mqtt-port", type=int, default=1883, metavar="N",
                    help="port of the embedded MQTT broker (default 1883)")
    up.add_argument("--host", default="127.0.0.1",
                    help="HTTP bind address (default 127.0.0.1; anything but loopback needs tokens)")
    up.set_defaults(func=cmd_up)

    demo = sub.add_parser("demo", help="a real training loop streaming into curvestream (starts `up` if needed)")
    demo.add_argument("--data", default="./curvestream-data", metavar="DIR",
                      help="data directory of the stack it starts (default ./curvestream-data)")
    demo.add_argument("--port", type=int, default=8080, metavar="N",
                      help="HTTP port of the page (default 8080): trains into the curvestream answering there, "
                           "else starts one")
    demo.add_argument("--mqtt-port", type=int, default=1883, metavar="N", help="port of the MQTT broker (default 1883)")
    demo.add_argument("--project", default="demo", metavar="NAME", help="project of the runs (default demo)")
    demo.add_argument("--runs", type=int, default=3, metavar="N",
                      help="runs trained at once, one learning rate each (default 3)")
    demo.add_argument("--steps", type=int, default=3000, metavar="N", help="training steps per run (default 3000)")
    demo.add_argument("--duration", type=float, default=60.0, metavar="SECONDS",
                      help="seconds the training is spread over (default 60)")
    demo.add_argument("--spool-dir", default=None, metavar="DIR",
                      help="the trainers' spool directory (default CURVESTREAM_SPOOL_DIR, else "
                           "~/.cache/curvestream/spool)")
    demo.add_argument("--exit", action="store_true", help="stop the embedded stack when training is done")
    demo.set_defaults(func=cmd_demo)

    sync = sub.add_parser("sync", help="send spooled batches (offline or killed runs) to the bridge")
    sync.add_argument("dir", nargs="?", default=None, help="spool directory (default CURVESTREAM_SPOOL_DIR)")
    sync.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                      help="seconds to wait for the bridge's commits before giving up (default 600)")
    sync.set_defaults(func=cmd_sync)

    status = sub.add_parser("status", help="show what waits in the spool")
    status.add_argument("dir", nargs="?", default=None, help="spool directory (default CURVESTREAM_SPOOL_DIR)")
    status.set_defaults(func=cmd_status)

    imports = sub.add_parser("import", help="bring existing logs into curvestream")
    sources = imports.add_subparsers(dest="source", required=True)
    for source, what, where, project in (
            ("tensorboard", "every event file under DIR becomes a run, every point kept", "a TensorBoard log directory",
             "DIR's name"),
            ("wandb", "every W&B run file under DIR (wandb/offline-run-*) becomes a run, every history row kept",
             "a wandb/ folder, one run's folder, or any folder above them", "the W&B project of each run"),
            ("mlflow", "every run of an MLflow file store becomes a run, every metric line kept",
             "an mlruns/ folder (or one experiment's or run's folder)", "the experiment's name")):
        one = sources.add_parser(source, help=what)
        one.add_argument("dir", help=where)
        one.add_argument("--project", default=None, help=f"project of the runs (default: {project})")
        one.add_argument("--spool-dir", default=None, metavar="DIR",
                         help="spool directory (default CURVESTREAM_SPOOL_DIR)")
        one.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                         help="seconds to wait for the bridge's commits at the end (default 600)")
        one.set_defaults(func=cmd_import)

    export = sub.add_parser("export", help="every point of a run's scalar series to a Parquet or CSV file")
    export.add_argument("project", help="the run's project")
    export.add_argument("run", help="the run as the runs list names it")
    export.add_argument("--key", action="append", default=None,
                        help="a metric key, exactly as logged (repeat for several; default: every scalar key)")
    export.add_argument("--format", choices=["parquet", "csv"], default="parquet",
                        help="file format (columns key, step, time_ns, value; default parquet)")
    export.add_argument("-o", "--output", default=None, help="file to write, '-' for stdout (default: RUN.FORMAT)")
    export.set_defaults(func=cmd_export)

    runs_cli.add_parser(sub)

    sub.add_parser("bridge", help="run the bridge alone (production); `curvestream bridge --help` for its "
                                  "commands (replay-dead-letters, grafana sync)", add_help=False)

    mqtt = sub.add_parser("mqtt", help="broker accounts").add_subparsers(dest="mqtt_command", required=True)
    add_user = mqtt.add_parser("add-user", help="a trainer account that may write one project's topics only")
    add_user.add_argument("project", help="the project whose topics the account may write")
    add_user.add_argument("--user", default=None, help="account name (default trainer-PROJECT)")
    add_user.add_argument("--password", default=None, help="default: a new random password, printed")
    add_user.add_argument("--passwd-file", default=None, help="append the password line here (else print it)")
    add_user.add_argument("--acl-file", default=None, help="append the ACL block here (else print it)")
    add_user.set_defaults(func=cmd_mqtt_add_user)
    alerts = sub.add_parser("alerts", help="alert rules: `curvestream alerts test --rules FILE PROJECT RUN` replays "
                                           "a stored run through them")
    alerts_sub = alerts.add_subparsers(dest="alerts_command", required=True, metavar="COMMAND")
    alerts_sub.add_parser("test", help="replay a stored run through alert rules and print what would fire, where "
                                       "and why (`curvestream alerts test --help` for its options)", add_help=False)
    grafana = sub.add_parser("grafana", help="connect to an existing Grafana (needs curvestream-bridge[grafana])")
    grafana_sub = grafana.add_subparsers(dest="grafana_command", required=True)
    grafana_sub.add_parser("sync", help="data sources, dashboards, contact point, Live token (see --help)")
    return parser


if __name__ == "__main__":
    main()
