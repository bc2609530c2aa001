"""What recording system metrics costs a trainer: CPU time of the sampler
thread per sample (psutil's reads of /proc and handing the sample to the runs,
measured by the thread's own CPU clock), and the recorder's extra CPU time for
a batch that carries a sample beside the training rows; as a share of one
core at the default interval of 10 s (goal: at most 0.1 %).

    nice .venv/bin/python bench/system_metrics.py [--samples 2000] [--runs 1]

No GPU here: NVML's calls are not in these figures. Prints, never asserts.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from curvestream.encode import BatchBuilder
from curvestream.system_metrics import SystemSampler, default_probes
from query_m4 import machine

INTERVAL_S = 10.0


def wait_for(predicate, timeout: float = 600.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("the sampler took no samples")
        time.sleep(0.01)


def sampler_cost(samples: int, runs: int) -> tuple[float, dict[str, float]]:
    """CPU µs of the sampler thread per sample, with ``runs`` runs attached; and one sample."""
    sampler = SystemSampler(default_probes)
    queues = [collections.deque() for _ in range(runs)]
    sinks = [lambda wall_ns, values, q=q: q.append((0, wall_ns, values)) for q in queues]
    for sink in sinks:
        sampler.attach(sink, 0.002)
    wait_for(lambda: sampler.samples >= 20)  # probes made, first samples taken: not measured
    cpu0, n0 = sampler.cpu_s, sampler.samples
    wait_for(lambda: sampler.samples >= n0 + samples)
    cpu, n = sampler.cpu_s - cpu0, sampler.samples - n0
    for sink in sinks:
        sampler.detach(sink)
    sampler.join(10)
    return cpu / n * 1e6, queues[0][-1][2]


def recorder_cost(sample: dict[str, float], rows: int = 2000, keys: int = 5, repeat: int = 200) -> tuple[float, float]:
    """CPU µs to seal a batch of ``rows`` training rows, without and with a system sample among them."""
    counter = itertools.count(1)
    builder = BatchBuilder(b"p" * 16, "bench", "run", lambda: next(counter), time.time_ns)
    training = [(i, 1_000 + i, {f"k{j}": float(i + j) for j in range(keys)}) for i in range(rows)]

    def seal(with_sample: bool) -> float:
        best = float("inf")
        for _ in range(repeat):
            started = time.process_time()
            for i, row in enumerate(training):
                builder.add(row)
                if with_sample and i == rows // 2:
                    builder.add((i, 1_000 + i, sample))
            builder.seal()
            best = min(best, time.process_time() - started)
        return best * 1e6

    return seal(False), seal(True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=1, help="runs attached to the one sampler")
    args = parser.parse_args()
    machine("system metrics")
    per_sample_us, sample = sampler_cost(args.samples, args.runs)
    without, with_sample = recorder_cost(sample)
    extra_us = max(0.0, with_sample - without)
    share = (per_sample_us + extra_us) / 1e6 / INTERVAL_S * 100
    print(f"keys per sample: {len(sample)} ({', '.join(sorted(sample))})")
    print(f"sampler thread: {per_sample_us:.0f} CPU µs per sample ({args.samples} samples, "
          f"{args.runs} run(s) attached)")
    print(f"recorder: a batch of 2,000 rows x 5 keys sealed in {without:.0f} µs, {with_sample:.0f} µs with a sample "
          f"among them (+{extra_us:.0f} µs)")
    print(f"at one sample every {INTERVAL_S:g} s: {share:.4f} % of one core (goal: <= 0.1 %)")
    print(f"command: nice .venv/bin/python bench/system_metrics.py --samples {args.samples} --runs {args.runs}")


if __name__ == "__main__":
    main()
