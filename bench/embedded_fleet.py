"""The embedded stack (`curvestream up`: amqtt, the bridge, DuckDB) facing a fleet.

    nice .venv/bin/python bench/embedded_fleet.py [--connections 1000] [--processes 10] [--trials 10]

1. A new trainer known to the bridge: a fresh process calls ``init()``; the time from
   just before ``init()`` until the run is listed by ``GET /api/v1/runs`` (goal ≤ 0.5 s),
   ``--trials`` times, each in a new process (a new connection with its Last Will).
2. ``--connections`` trainer connections at once from ``--processes`` processes, each
   as a trainer's session makes it: MQTT 5 first (refused at once, then 3.1.1), a Last
   Will, the subscriptions of a run (commits, the live hint), and the run's retained
   meta and status. Printed: the time until every connection is up (goal ≤ 10 s), and
   until the bridge lists every run.

Prints figures and the load average; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _servers import free_port, wait_until  # noqa: E402
from query_m4 import machine  # noqa: E402

TESTS = pathlib.Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))
from helpers import get_json  # noqa: E402

TRAINER = """
import sys, time
t0 = time.time()
import curvestream
run = curvestream.init(project="known", run=sys.argv[2], mqtt_url=sys.argv[1], bridge_url="", spool_dir=sys.argv[3])
print(t0, flush=True)
sys.stdin.readline()
"""


def connections(url: str, first: int, count: int) -> None:
    """A process holding ``count`` trainer-like connections; prints when all are up, then waits for stdin."""
    import threading

    from curvestream_wire.mqtt import Callbacks, MqttConnection, MqttEndpoint, SessionOptions
    from curvestream_wire.topics import Topics
    from curvestream_wire.v1 import run_pb2

    endpoint = MqttEndpoint.parse(url)
    up = threading.Semaphore(0)
    conns = []
    started = time.time()
    for j in range(first, first + count):
        session = os.urandom(16)
        run = f"r{j}"
        will = run_pb2.RunStatus(version=1, state=run_pb2.RUN_STATE_LOST, session=session).SerializeToString()

        def on_connect(client, userdata, flags, reason_code, properties, run=run, session=session):  # noqa: ANN001
            if reason_code.is_failure:
                return
            producer = os.urandom(16)
            client.subscribe([(Topics.commit(producer), 1), (Topics.watched("fleet", run), 1)])
            meta = run_pb2.RunMeta(version=1, project="fleet", run=run, producer_id=producer, session=session)
            status = run_pb2.RunStatus(version=1, project="fleet", run=run, state=run_pb2.RUN_STATE_RUNNING,
                                       producer_id=producer, session=session, updated_ns=time.time_ns())
            client.publish(Topics.meta("fleet", run), meta.SerializeToString(), qos=1, retain=True)
            client.publish(Topics.status("fleet", run), status.SerializeToString(), qos=1, retain=True)
            up.release()

        options = SessionOptions(client_id=f"cs-fleet-{j}-{os.getpid()}", keepalive_s=60,
                                 will=(Topics.session(session), will))
        conn = MqttConnection(endpoint, options, Callbacks(on_connect=on_connect))
        conn.start()
        conns.append(conn)
    pending = list(conns)
    for _ in range(count):
        while not up.acquire(timeout=0.05):
            for conn in pending:
                conn.downgrade_if_needed(False)  # what a trainer's uploader thread does (here: on a timer)
    print(json.dumps({"up_s": time.time() - started, "up_at": time.time()}), flush=True)
    sys.stdin.readline()
    for conn in conns:
        conn.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--processes", type=int, default=10)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        connections(args.worker[0], int(args.worker[1]), int(args.worker[2]))
        return
    print(f"# reproduce: nice {sys.executable} bench/embedded_fleet.py --connections {args.connections} "
          f"--processes {args.processes} --trials {args.trials}")
    port, mqtt_port = free_port(), free_port()
    base, url = f"http://127.0.0.1:{port}", f"mqtt://127.0.0.1:{mqtt_port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CURVESTREAM_")}
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = pathlib.Path(tmp)
        up = subprocess.Popen([sys.executable, "-m", "curvestream.cli", "up", "--data", str(tmpdir / "data"),
                               "--port", str(port), "--mqtt-port", str(mqtt_port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        procs: list[subprocess.Popen] = []
        try:
            wait_until(lambda: get_json(base, "/api/v1/runs") is not None, 60, "curvestream up")
            machine("before")
            latencies = []
            for trial in range(args.trials):
                trainer = subprocess.Popen([sys.executable, "-c", TRAINER, url, f"t{trial}", str(tmpdir / "spool")],
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
                init_at = float(trainer.stdout.readline())

                def listed(name: str = f"t{trial}") -> bool:
                    return any(r["run"] == name for r in get_json(base, "/api/v1/runs", project="known")["runs"])

                while not listed():
                    time.sleep(0.005)
                latencies.append(time.time() - init_at)
                trainer.stdin.close()
                trainer.wait(60)
            latencies.sort()
            print(f"a new trainer listed after init(): median {latencies[len(latencies) // 2] * 1000:.0f} ms, "
                  f"max {latencies[-1] * 1000:.0f} ms over {len(latencies)} processes (goal <= 500 ms; "
                  "from just before init() in a process already running Python)")
            each = args.connections // args.processes
            t0 = time.time()
            for p in range(args.processes):
                procs.append(subprocess.Popen([sys.executable, __file__, "--worker", url, str(p * each), str(each)],
                                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env))
            ups = [json.loads(proc.stdout.readline()) for proc in procs]
            all_up = max(u["up_at"] for u in ups) - t0
            print(f"{each * args.processes} connections from {args.processes} processes: all up after {all_up:.1f} s "
                  f"(goal <= 10 s; each process's own: {min(u['up_s'] for u in ups):.1f}-"
                  f"{max(u['up_s'] for u in ups):.1f} s)")
            wait_until(lambda: len(get_json(base, "/api/v1/runs", project="fleet", limit=100000)["runs"])
                       >= each * args.processes, 600, "every run listed", interval=0.2)
            print(f"  every run listed by the bridge after {time.time() - t0:.1f} s")
            machine("after")
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.stdin.close()
                    try:
                        proc.wait(30)
                    except subprocess.TimeoutExpired:
                        proc.kill()
            up.terminate()
            try:
                up.wait(30)
            except subprocess.TimeoutExpired:
                up.kill()


if __name__ == "__main__":
    main()
