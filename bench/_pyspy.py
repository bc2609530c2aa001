"""py-spy around a benchmark: sample processes while it runs, then sum the samples
by function (inclusive) per process. ``pip install py-spy``; needs ptrace (root here)."""

from __future__ import annotations

import collections
import pathlib
import shutil
import subprocess
import sys

__all__ = ["Sampler"]


class Sampler:
    def __init__(self, out_dir: pathlib.Path, pids: dict[str, int], rate_hz: int = 50) -> None:
        self.out_dir = out_dir
        self.pids = pids
        self.rate_hz = rate_hz
        self.procs: dict[str, subprocess.Popen] = {}
        exe = shutil.which("py-spy") or str(pathlib.Path(sys.executable).with_name("py-spy"))
        self.exe = exe

    def __enter__(self) -> Sampler:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        for name, pid in self.pids.items():
            self.procs[name] = subprocess.Popen(
                [self.exe, "record", "-p", str(pid), "-r", str(self.rate_hz), "-f", "raw", "--nonblocking",
                 "-o", str(self.out_dir / f"{name}.txt")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs.values():
            proc.send_signal(2)  # SIGINT: py-spy writes its file and exits
        for proc in self.procs.values():
            proc.wait(30)

    def report(self, interesting: tuple[str, ...], top: int = 12) -> str:
        lines = []
        for name in self.pids:
            path = self.out_dir / f"{name}.txt"
            if not path.exists():
                continue
            total, inclusive = 0, collections.Counter()
            for line in path.read_text().splitlines():
                stack, _, n = line.rpartition(" ")
                if not stack:
                    continue
                total += int(n)
                for frame in {f.split(" (")[0] for f in stack.split(";")}:
                    inclusive[frame] += int(n)
            lines.append(f"{name}: {total} samples at {self.rate_hz} Hz (busy threads only)")
            shown = [(f, c) for f, c in inclusive.most_common() if any(i in f for i in interesting)][:top]
            lines += [f"  {100 * c / max(total, 1):5.1f}%  {f}" for f, c in shown]
        return "\n".join(lines)
