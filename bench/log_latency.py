"""log() cost on the training thread: p50 / p99 per call.

    .venv/bin/python bench/log_latency.py [--calls 200000]

Compared in the same process with the floor (time.time_ns() + deque.append of
the same tuple) and, when installed, TensorBoard's SummaryWriter.add_scalar.
The run is offline (spool only) so the figure is the trainer's side alone; the
recorder thread runs meanwhile, as it does in training.
"""

from __future__ import annotations

import argparse
import collections
import gc
import platform
import statistics
import sys
import tempfile
import time

import curvestream


def measure(fn, calls: int) -> list[int]:
    samples = [0] * calls
    clock = time.perf_counter_ns
    for i in range(calls):
        t0 = clock()
        fn(i)
        samples[i] = clock() - t0
    return samples


def pct(samples: list[int], p: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(len(s) * p))] / 1000


def row(name: str, samples: list[int]) -> str:
    return (f"{name:<46} p50 {pct(samples, 0.50):6.2f} µs   p99 {pct(samples, 0.99):6.2f} µs   "
            f"mean {statistics.fmean(samples) / 1000:6.2f} µs")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200_000)
    args = parser.parse_args()
    n = args.calls
    print(f"# log() latency, {n} calls each; Python {platform.python_version()} on {platform.machine()}")
    print(f"# reproduce: {sys.executable} bench/log_latency.py --calls {n}")
    gc.collect()

    queue: collections.deque = collections.deque()
    time_ns = time.time_ns

    def floor(i: int) -> None:
        queue.append((i, time_ns(), {"loss": 0.5}))
        if len(queue) > 10000:
            queue.clear()

    results = [row("floor: time_ns() + deque.append", measure(floor, n))]
    with tempfile.TemporaryDirectory() as spool:
        run = curvestream.init(project="bench", id="latency", mode="offline", spool_dir=spool,
                               spool_max_bytes=8 * 1024**3)
        results.append(row("curvestream run.log({'loss': x}, step=i)",
                           measure(lambda i: run.log({"loss": 0.5}, step=i), n)))
        eight = {f"metric/{k}": 0.5 for k in range(8)}
        results.append(row("curvestream run.log(dict of 8 scalars, step=i)",
                           measure(lambda i: run.log(eight, step=n + i), n)))
        results.append(row("curvestream run.log({'loss': x}) (auto step)",
                           measure(lambda i: run.log({"loss": 0.5}), n)))
        run.finish()
    try:
        from torch.utils.tensorboard import SummaryWriter  # type: ignore[import-not-found]
    except ImportError:
        try:
            from tensorboardX import SummaryWriter  # type: ignore[import-not-found,no-redef]
        except ImportError:
            SummaryWriter = None  # type: ignore[assignment,misc]
    if SummaryWriter is not None:
        with tempfile.TemporaryDirectory() as logdir:
            writer = SummaryWriter(logdir)
            results.append(row("TensorBoard SummaryWriter.add_scalar", measure(
                lambda i: writer.add_scalar("loss", 0.5, i), min(n, 50_000))))
            writer.close()
    else:
        results.append("TensorBoard SummaryWriter: not installed (pip install tensorboard torch to compare)")
    print("\n".join(results))


if __name__ == "__main__":
    main()
