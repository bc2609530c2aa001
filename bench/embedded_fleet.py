"""The embedded stack (`curvestream up`: amqtt, the bridge, DuckDB) facing a fleet.

    nice .venv/bin/python bench/embedded_fleet.py [--connections 1000] [--processes 10] [--trials 10]

1. A new trainer known to the bridge: a fresh process calls ``init()``; the time from
   just before ``init()`` (``curvestream`` imported) until the run is listed by
   ``GET /api/v1/runs`` (goal ≤ 0.5 s), and the import's own time before it, ``--trials``
   times, each in a new process (a new connection with its Last Will).
2. ``--connections`` trainer connections at once from ``--processes`` processes, each
   as a trainer's session makes it: MQTT 5 first (refused at once, then 3.1.1), a Last
   Will, the subscriptions of a run (commits, the live hint), and the run's retained
   meta and status. Printed: the time until every connection is up (goal ≤ 10 s), and
   until the bridge lists every run. The connections are paho clients (a thread each,
   as trainers have) or, with ``--asyncio``, asyncio clients in one process (amqtt's
   own client after a raw MQTT 5 CONNECT), so that the broker, not a thousand client
   threads on the same cores, is what is measured.

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

from _servers import free_port, wait_until
from query_m4 import machine

TESTS = pathlib.Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))
from helpers import get_json  # noqa: E402

TRAINER = """
import sys, time
started = time.time()
import curvestream
t0 = time.time()
run = curvestream.init(project="known", id=sys.argv[2], mqtt_url=sys.argv[1], bridge_url="", spool_dir=sys.argv[3])
print(t0, t0 - started, flush=True)
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

        def on_connect(client, userdata, flags, reason_code, properties, run=run, session=session):
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


V5_CONNECT = bytes([0x10, 14, 0, 4]) + b"MQTT" + bytes([5, 2, 0, 60, 0, 0, 1]) + b"x"


def asyncio_connections(url: str, first: int, count: int) -> None:
    """Like :func:`connections`, with asyncio clients in this one process."""
    import asyncio
    import sys as _sys

    from amqtt.client import MQTTClient
    from amqtt.mqtt.constants import QOS_1

    from curvestream_wire.mqtt import MqttEndpoint
    from curvestream_wire.topics import Topics
    from curvestream_wire.v1 import run_pb2

    endpoint = MqttEndpoint.parse(url)
    late: list[str] = []

    async def one(j: int) -> MQTTClient:
        reader, writer = await asyncio.open_connection(endpoint.host, endpoint.port)
        writer.write(V5_CONNECT)  # what a trainer tries first
        await writer.drain()
        assert (await reader.readexactly(4))[3] == 1, "refused at once: unacceptable protocol version"
        writer.close()
        session, producer, run = os.urandom(16), os.urandom(16), f"r{j}"
        client = MQTTClient(client_id=f"cs-fleet-{j}-{os.getpid()}", config={
            "keep_alive": 60, "auto_reconnect": False,
            "will": {"topic": Topics.session(session), "message": "lost", "qos": 1, "retain": True}})
        await client.connect(url)
        await client.subscribe([(Topics.commit(producer), QOS_1), (Topics.watched("fleet", run), QOS_1)])
        meta = run_pb2.RunMeta(version=1, project="fleet", run=run, producer_id=producer, session=session)
        status = run_pb2.RunStatus(version=1, project="fleet", run=run, state=run_pb2.RUN_STATE_RUNNING,
                                   producer_id=producer, session=session, updated_ns=time.time_ns())
        for topic, message in ((Topics.meta("fleet", run), meta), (Topics.status("fleet", run), status)):
            try:
                await client.publish(topic, message.SerializeToString(), qos=QOS_1, retain=True)
            except TimeoutError:  # amqtt's client gives up on a PUBACK after 5 s; the broker still has it
                late.append(topic)
        return client

    async def run_all() -> None:
        started = time.time()
        clients = await asyncio.gather(*(one(j) for j in range(first, first + count)))
        print(json.dumps({"up_s": time.time() - started, "up_at": time.time(), "late_pubacks": len(late)}), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, _sys.stdin.readline)
        await asyncio.gather(*(c.disconnect() for c in clients), return_exceptions=True)

    asyncio.run(run_all())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--processes", type=int, default=10)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--asyncio", action="store_true", help="asyncio clients, one process (see above)")
    parser.add_argument("--skip-trials", action="store_true")
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        work = asyncio_connections if args.asyncio else connections
        work(args.worker[0], int(args.worker[1]), int(args.worker[2]))
        return
    print(f"# reproduce: nice {sys.executable} bench/embedded_fleet.py --connections {args.connections} "
          f"--processes {args.processes} --trials {args.trials}" + (" --asyncio" if args.asyncio else ""))
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
            latencies, imports = [], []
            for trial in range(0 if args.skip_trials else args.trials):
                trainer = subprocess.Popen([sys.executable, "-c", TRAINER, url, f"t{trial}", str(tmpdir / "spool")],
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
                init_at, import_s = map(float, trainer.stdout.readline().split())
                imports.append(import_s)

                def listed(name: str = f"t{trial}") -> bool:
                    return any(r["run"] == name for r in get_json(base, "/api/v1/runs", project="known")["runs"])

                while not listed():
                    time.sleep(0.005)
                latencies.append(time.time() - init_at)
                trainer.stdin.close()
                trainer.wait(60)
            latencies.sort()
            if latencies:
                imports.sort()
                print(f"a new trainer listed after init(): median {latencies[len(latencies) // 2] * 1000:.0f} ms, "
                      f"max {latencies[-1] * 1000:.0f} ms over {len(latencies)} processes (goal <= 500 ms; "
                      "from just before init(), curvestream imported); `import curvestream` before it: median "
                      f"{imports[len(imports) // 2] * 1000:.0f} ms, max {imports[-1] * 1000:.0f} ms")
            each = args.connections // args.processes
            if not each:  # --connections 0: the trials alone
                return
            t0 = time.time()
            for p in range(args.processes):
                procs.append(subprocess.Popen([sys.executable, __file__, "--worker", url, str(p * each), str(each),
                                               *(["--asyncio"] if args.asyncio else [])],
                                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env))
            ups = [json.loads(proc.stdout.readline()) for proc in procs]
            all_up = max(u["up_at"] for u in ups) - t0
            print(f"{each * args.processes} connections from {args.processes} processes: all up after {all_up:.1f} s "
                  f"(goal <= 10 s; each process's own: {min(u['up_s'] for u in ups):.1f}-"
                  f"{max(u['up_s'] for u in ups):.1f} s; PUBACKs later than 5 s: "
                  f"{sum(u.get('late_pubacks', 0) for u in ups)})")
            listed, deadline = 0, time.time() + 300
            while listed < each * args.processes and time.time() < deadline:
                listed = len(get_json(base, "/api/v1/runs", project="fleet")["runs"])
                time.sleep(0.5)
            print(f"  {listed} of {each * args.processes} runs listed by the bridge after {time.time() - t0:.1f} s")
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
