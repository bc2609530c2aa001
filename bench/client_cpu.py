"""What the trainer's process spends: one wide log() call, and many runs against one fast one.

    nice .venv/bin/python bench/client_cpu.py [--seconds 20] [--wide-keys 10000]

1. ``log()`` of a dict of ``--wide-keys`` scalars (per-layer statistics): the call on the
   training thread (p50, p99), and the process CPU per such step once the recorder has
   batched and spooled it (offline, so the figure is the trainer's side alone).
2. The same 20,000 points/s (2 keys) logged by 1 run at 10,000 steps/s and by 100 runs at
   100 steps/s each, in a trainer process of its own, through a real Mosquitto into a real
   bridge (DuckDB): the trainer process's CPU seconds (user + system, from getrusage) over
   the stream and until ``finish()`` has every batch committed, per million points, and the
   ratio of the two (goal ≤ 2×); batches sealed, and the fixed cost of a batch estimated as
   the extra CPU of the 100 runs over the extra batches they made.

Prints figures and the load average; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _servers import BridgeProcess, Mosquitto
from query_m4 import machine

KEYS = ("loss", "acc")


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def thread_cpu_s() -> dict[str, float]:
    """User and system CPU seconds of the live threads of this process, by thread name (Linux /proc)."""
    import threading

    tick = os.sysconf("SC_CLK_TCK")
    names = {t.native_id: t.name for t in threading.enumerate()}
    out: dict[str, float] = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            fields = pathlib.Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        name = names.get(int(tid), "other")
        if name.startswith("paho-mqtt-client"):
            name = "paho"
        for kind, value in (("user", fields[11]), ("sys", fields[12])):
            out[f"{name} {kind}"] = out.get(f"{name} {kind}", 0.0) + int(value) / tick
    return out


def pct(samples: list[float], p: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(len(s) * p))]


def wide_log(keys: int, calls: int) -> None:
    import curvestream

    data = {f"layers/{i // 8}/{('mean', 'std', 'min', 'max', 'norm', 'grad_mean', 'grad_std', 'grad_norm')[i % 8]}":
            float(i) for i in range(keys)}
    with tempfile.TemporaryDirectory() as spool:
        run = curvestream.init(project="bench", run="wide", mode="offline", spool_dir=spool,
                               spool_max_bytes=8 * 1024**3)
        run.log(data, step=0)  # the keys' names are checked once, on first sight
        samples = []
        cpu0 = cpu_s()
        for step in range(1, calls + 1):
            t0 = time.perf_counter()
            run.log(data, step=step)
            samples.append((time.perf_counter() - t0) * 1000)
        run.recorder.wake()
        while run.recorder.queue:
            time.sleep(0.001)
        report = run.finish()
        cpu = cpu_s() - cpu0
    print(f"log() of a {keys:,}-key dict: p50 {pct(samples, 0.5):.2f} ms, p99 {pct(samples, 0.99):.2f} ms "
          f"(goal <= 2 ms); process CPU per step, batched and spooled: {cpu / calls * 1000:.2f} ms "
          f"({report.points_spooled:,} points in {report.batches} batches)")


def worker(runs: int, steps_per_s: float, seconds: float, settings: dict) -> None:
    """A trainer process: ``runs`` runs logging ``steps_per_s`` steps each; prints its CPU as JSON."""
    import curvestream

    cpu_start = cpu_s()
    handles = [curvestream.init(project="cpu", run=f"r{runs}-{j}", **settings) for j in range(runs)]
    cpu_init = cpu_s()
    started = time.monotonic()
    total = round(steps_per_s * seconds)
    chunk = max(1, round(steps_per_s * 0.01))
    step = 0
    while step < total:
        end = min(step + chunk, total)
        for run in handles:
            for s in range(step, end):
                run.log({KEYS[0]: s * 0.5, KEYS[1]: s * 0.25}, step=s)
        step = end
        delay = started + step / steps_per_s - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    cpu_stream = cpu_s()
    threads = thread_cpu_s()
    streamed = time.monotonic() - started
    reports = [run.finish() for run in handles]
    print(json.dumps({
        "runs": runs, "init_cpu_s": cpu_init - cpu_start, "stream_cpu_s": cpu_stream - cpu_init,
        "finish_cpu_s": cpu_s() - cpu_stream, "streamed_s": streamed,
        "points": sum(r.points_spooled for r in reports), "batches": sum(r.batches for r in reports),
        "complete": all(r.complete for r in reports), "threads_cpu_s_at_stream_end": threads}))


def fleet(seconds: float, client_path: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = pathlib.Path(tmp)
        broker = Mosquitto(tmpdir / "mosquitto")
        broker.start()
        bridge = BridgeProcess(tmpdir / "bridge", f"duckdb:///{tmpdir / 'store.duckdb'}", broker.url,
                               log_level="WARNING")
        bridge.start()
        try:
            results = {}
            for runs, rate in ((1, 10_000), (100, 100)):
                settings = {"mqtt_url": broker.url, "bridge_url": bridge.url, "spool_dir": str(tmpdir / f"s{runs}"),
                            "finish_timeout_ms": 600_000}
                env = dict(os.environ)
                if client_path:  # another checkout's client and wire package (A/B), the same bridge
                    env["PYTHONPATH"] = f"{client_path}/client/src:{client_path}/proto/src"
                out = subprocess.run([sys.executable, __file__, "--worker", str(runs), str(rate), str(seconds),
                                      json.dumps(settings)], capture_output=True, text=True, check=True, env=env)
                res = json.loads(out.stdout.strip().splitlines()[-1])
                results[runs] = res
                cpu = res["stream_cpu_s"] + res["finish_cpu_s"]
                print(f"{runs:>3} run(s) × {rate:,} steps/s × 2 keys for {res['streamed_s']:.1f} s: "
                      f"{res['points']:,} points in {res['batches']:,} batches, complete: {res['complete']}; "
                      f"trainer CPU {res['stream_cpu_s']:.2f} s streaming + {res['finish_cpu_s']:.2f} s finishing "
                      f"= {cpu / res['points'] * 1e6:.2f} s per M points ({cpu / res['streamed_s'] * 100:.1f} % of "
                      f"a core); init {res['init_cpu_s']:.2f} s; by thread (stream end): "
                      + ", ".join(f"{k} {v:.2f} s" for k, v in sorted(res["threads_cpu_s_at_stream_end"].items())))
            one, many = results[1], results[100]
            cpu_one = one["stream_cpu_s"] + one["finish_cpu_s"]
            cpu_many = many["stream_cpu_s"] + many["finish_cpu_s"]
            extra_batches = many["batches"] - one["batches"]
            print(f"100 runs / 1 run: {cpu_many / cpu_one:.2f}× the CPU (goal <= 2×); fixed cost of a batch "
                  f"(extra CPU / extra batches): {(cpu_many - cpu_one) / max(1, extra_batches) * 1e6:.0f} µs")
            machine("after the fleet runs")
        finally:
            bridge.stop()
            broker.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--wide-keys", type=int, default=10_000)
    parser.add_argument("--wide-calls", type=int, default=300)
    parser.add_argument("--client-path", default="", help="a checkout whose client the trainers use (A/B)")
    parser.add_argument("--skip-wide", action="store_true")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        runs, rate, seconds, settings = args.worker
        worker(int(runs), float(rate), float(seconds), json.loads(settings))
        return
    print(f"# reproduce: nice {sys.executable} bench/client_cpu.py --seconds {args.seconds:g} "
          f"--wide-keys {args.wide_keys}" + (f" --client-path {args.client_path}" if args.client_path else ""))
    machine("before")
    if not args.skip_wide:
        wide_log(args.wide_keys, args.wide_calls)
    fleet(args.seconds, args.client_path)


if __name__ == "__main__":
    main()
