"""``SummaryWriter.add_scalar`` through curvestream beside torch's own, in one process.

    .venv/bin/python bench/summary_writer.py [--calls 200000]

Per call p50 / p99, and amortized: the whole loop plus ``close()`` (which
drains what is queued: torch writes its event file, curvestream spools every
point) divided by the calls. curvestream's writer is offline (spool only), so
the figure is the trainer's side, as in ``log_latency.py``.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import tempfile
import time

from log_latency import measure, pct


def _bench(name: str, make, calls: int, **kwargs) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        writer = make(os.path.join(tmp, "runs", "bench"))
        gc.collect()
        t0 = time.perf_counter()
        samples = measure(lambda i: writer.add_scalar("train/loss", 0.5, i, **kwargs), calls)
        writer.close()
        amortized = (time.perf_counter() - t0) / calls * 1e6
    return (f"{name:<52} p50 {pct(samples, 0.50):6.2f} µs   p99 {pct(samples, 0.99):7.2f} µs   "
            f"amortized {amortized:6.2f} µs")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200_000)
    args = parser.parse_args()
    n = args.calls
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    from curvestream.tensorboard import SummaryWriter

    print(f"# SummaryWriter.add_scalar, {n} calls each; Python {platform.python_version()} on "
          f"{platform.machine()}, load average {os.getloadavg()[0]:.2f}")
    print(f"# reproduce: {sys.executable} bench/summary_writer.py --calls {n}")
    with tempfile.TemporaryDirectory() as spool:
        def ours(log_dir: str, **extra) -> SummaryWriter:
            return SummaryWriter(log_dir, mode="offline", spool_dir=spool, spool_max_bytes=8 * 1024**3, **extra)

        rows = [
            _bench("torch.utils.tensorboard add_scalar(tag, x, step)", TorchWriter, n),
            _bench("curvestream add_scalar(tag, x, step)", ours, n),
            _bench("curvestream add_scalar(tag, x, step, walltime=t)", ours, n, walltime=1.7e9),
            _bench("curvestream add_scalar, tee=True (both writers)", lambda d: ours(d, tee=True), n),
        ]
    print("\n".join(rows))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
