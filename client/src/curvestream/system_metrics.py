"""System metrics of the trainer's machine, recorded for every run without a line of code.

One sampler thread per process (``curvestream-system``) reads, every
``system_metrics_interval_ms`` (10 s by default), what the probes measure and
hands the same sample to every run attached to it. A run attaches at
``init()`` and detaches at ``finish()``; the thread ends when the last run
detaches. ``system_metrics=False`` (``CURVESTREAM_SYSTEM_METRICS=0``) keeps a
run out of it.

Keys (all under ``system/``, so the page and Grafana draw them apart)::

    system/cpu_percent                  the machine's CPU use since the last sample, % of all cores
    system/memory_percent               the machine's memory in use, %
    system/memory_used_bytes
    system/process_cpu_percent          this process, % of one core (over 100 with several threads busy)
    system/process_rss_bytes            this process's resident memory
    system/disk_read_bytes_per_s        all disks, since the last sample
    system/disk_write_bytes_per_s
    system/network_recv_bytes_per_s     all interfaces, since the last sample
    system/network_sent_bytes_per_s
    system/gpu<i>/utilization_percent   per NVIDIA GPU, through NVML when ``nvidia-ml-py``
    system/gpu<i>/memory_used_bytes     is importable and a driver answers (nothing otherwise)
    system/gpu<i>/memory_percent
    system/gpu<i>/temperature_c
    system/gpu<i>/power_w

Each probe is a seam (:class:`PsutilProbe` takes the ``psutil`` module,
:class:`NvmlProbe` the ``pynvml`` module), so a test can hand one a fake
library. A probe whose library fails is dropped with one warning: nothing here
raises into the training loop, and a sample never blocks ``log()``.

    >>> probe = PsutilProbe.create()
    >>> sorted(probe.sample())[:2]   # doctest: +SKIP
    ['system/cpu_percent', 'system/disk_read_bytes_per_s']
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["Probe", "PsutilProbe", "NvmlProbe", "SystemSampler", "default_probes", "attach", "detach", "sampler"]

log = logging.getLogger("curvestream")

Sink = Callable[[int, dict[str, float]], None]
"""What a run gives the sampler: called with (wall time in ns, {key: value}) on the sampler's thread."""


class Probe(Protocol):
    name: str

    def sample(self) -> dict[str, float]:
        """The probe's values now; raises when its library fails (the probe is then dropped)."""

    def close(self) -> None: ...


class PsutilProbe:
    """CPU, memory, this process, disk and network I/O, through ``psutil``.

    Rates and percentages are over the time since the previous sample (the
    first sample: since the probe was made)."""

    name = "psutil"

    def __init__(self, psutil: Any, clock: Callable[[], float] = time.monotonic) -> None:
        self._ps = psutil
        self._clock = clock
        self._process = psutil.Process(os.getpid())
        psutil.cpu_percent(interval=None)  # the first call starts the interval the next one measures
        self._process.cpu_percent(interval=None)
        self._last = (clock(), self._disk(), self._net())

    @classmethod
    def create(cls) -> PsutilProbe | None:
        try:
            import psutil
        except ImportError:
            return None
        return cls(psutil)

    def _disk(self) -> tuple[int, int] | None:
        io = self._ps.disk_io_counters()
        return (io.read_bytes, io.write_bytes) if io is not None else None

    def _net(self) -> tuple[int, int] | None:
        io = self._ps.net_io_counters()
        return (io.bytes_recv, io.bytes_sent) if io is not None else None

    def sample(self) -> dict[str, float]:
        ps = self._ps
        memory = ps.virtual_memory()
        out = {
            "system/cpu_percent": float(ps.cpu_percent(interval=None)),
            "system/memory_percent": float(memory.percent),
            "system/memory_used_bytes": float(memory.total - memory.available),
            "system/process_cpu_percent": float(self._process.cpu_percent(interval=None)),
            "system/process_rss_bytes": float(self._process.memory_info().rss),
        }
        now, disk, net = self._clock(), self._disk(), self._net()
        then, disk_then, net_then = self._last
        self._last = (now, disk, net)
        elapsed = now - then
        if elapsed > 0:
            pairs = ((("system/disk_read_bytes_per_s", "system/disk_write_bytes_per_s"), disk, disk_then),
                     (("system/network_recv_bytes_per_s", "system/network_sent_bytes_per_s"), net, net_then))
            for names, new, old in pairs:
                if new is not None and old is not None:
                    for name, a, b in zip(names, new, old):
                        out[name] = max(0, a - b) / elapsed  # a counter that wrapped or was reset reads 0, not < 0
        return out

    def close(self) -> None:
        pass


class NvmlProbe:
    """Per NVIDIA GPU: utilisation, memory, temperature and power, through NVML
    (``pynvml``, from the ``nvidia-ml-py`` package). ``create()`` gives None when
    the library is missing or no driver answers."""

    name = "nvml"

    def __init__(self, nvml: Any) -> None:
        self._nvml = nvml
        nvml.nvmlInit()
        self._handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]

    @classmethod
    def create(cls, nvml: Any = None) -> NvmlProbe | None:
        if nvml is None:
            try:
                import pynvml

                nvml = pynvml
            except ImportError:
                return None
        try:
            probe = cls(nvml)
        except Exception:
            return None
        if not probe._handles:
            probe.close()
            return None
        return probe

    def sample(self) -> dict[str, float]:
        nvml = self._nvml
        out: dict[str, float] = {}
        for i, handle in enumerate(self._handles):
            prefix = f"system/gpu{i}/"
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
            out[prefix + "utilization_percent"] = float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
            out[prefix + "memory_used_bytes"] = float(memory.used)
            out[prefix + "memory_percent"] = 100.0 * memory.used / memory.total if memory.total else 0.0
            out[prefix + "temperature_c"] = float(nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU))
            out[prefix + "power_w"] = nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0  # NVML answers milliwatts
        return out

    def close(self) -> None:
        try:
            self._nvml.nvmlShutdown()
        except Exception:
            pass


def default_probes() -> list[Probe]:
    """The probes this machine has: psutil's (when importable) and NVML's (when a GPU answers)."""
    return [p for p in (PsutilProbe.create(), NvmlProbe.create()) if p is not None]


class SystemSampler:
    """One thread sampling the probes for every attached sink. ``probes`` is
    called when the thread starts (the seam for tests: a fake NVML library)."""

    def __init__(self, probes: Callable[[], list[Probe]] = default_probes,
                 clock_ns: Callable[[], int] = time.time_ns) -> None:
        self._make_probes = probes
        self._clock_ns = clock_ns
        self._lock = threading.Lock()
        self._handing = threading.Lock()  # held while a sample is handed out: detach() waits for it
        self._sinks: dict[Sink, float] = {}  # sink -> its interval in s
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._started: threading.Thread | None = None
        self.samples = 0
        """Samples taken since the process started (what a test waits on)."""
        self.cpu_s = 0.0
        """CPU time the sampler thread spent sampling and handing samples out (bench/system_metrics.py)."""

    def attach(self, sink: Sink, interval_s: float) -> None:
        """Hand ``sink`` every sample from now on, at least every ``interval_s`` (the
        shortest interval of the attached sinks is the sampler's)."""
        with self._lock:
            self._sinks[sink] = interval_s
            if self._thread is None:
                self._wake.clear()
                self._thread = self._started = threading.Thread(target=self._run, name="curvestream-system",
                                                                daemon=True)
                self._thread.start()
            else:
                self._wake.set()  # a shorter interval takes effect now

    def detach(self, sink: Sink) -> None:
        """No sample reaches ``sink`` once this returns; the thread ends with the last sink."""
        with self._handing, self._lock:
            self._sinks.pop(sink, None)
            if not self._sinks:
                self._wake.set()

    @property
    def running(self) -> bool:
        """A sampler thread serves sinks (or is about to end, having none left)."""
        return self._thread is not None

    def join(self, timeout: float) -> None:
        """Wait for the last thread started to end (it ends once no sink is attached)."""
        if self._started is not None:
            self._started.join(timeout)

    def _next(self) -> tuple[float, list[Sink]] | None:
        """The interval and sinks of the next round; None (the thread is over) without sinks.
        Decided under the lock that ``attach`` takes, so a sink never joins a thread that ends."""
        with self._lock:
            if not self._sinks:
                self._thread = None
                return None
            return min(self._sinks.values()), list(self._sinks)

    def _run(self) -> None:
        try:
            probes = self._make_probes()
        except Exception:
            log.warning("curvestream: system metrics are off: their probes failed to start", exc_info=True)
            probes = []
        try:
            last = time.monotonic()
            while (round_ := self._next()) is not None:
                interval, sinks = round_
                now = time.monotonic()
                if now < last + interval:  # woken early (a sink came or went): wait out the rest
                    self._wake.wait(last + interval - now)
                    self._wake.clear()
                    continue
                last = now
                started = time.thread_time()
                values: dict[str, float] = {}
                for probe in list(probes):
                    try:
                        values.update(probe.sample())
                    except Exception as exc:
                        log.warning("curvestream: system metrics of %s stop: %s: %s", probe.name,
                                    type(exc).__name__, exc)
                        probes.remove(probe)
                        probe.close()
                if values:
                    now = self._clock_ns()
                    with self._handing:
                        for sink in sinks:
                            if sink not in self._sinks:
                                continue  # detached since the round began
                            try:
                                sink(now, values)
                            except Exception:
                                log.exception("curvestream: handing system metrics to a run failed")
                    self.samples += 1
                self.cpu_s += time.thread_time() - started
        finally:
            for probe in probes:
                probe.close()

    def after_fork_in_child(self) -> None:
        """A forked child has no sampler thread and no run of the parent's."""
        self._lock = threading.Lock()
        self._handing = threading.Lock()
        self._sinks = {}
        self._thread = self._started = None
        self._wake = threading.Event()


_sampler: SystemSampler | None = None
_sampler_lock = threading.Lock()


def sampler() -> SystemSampler:
    """The process's sampler (made, and the fork hook installed, on first use)."""
    global _sampler
    with _sampler_lock:
        if _sampler is None:
            _sampler = SystemSampler()
            if hasattr(os, "register_at_fork"):
                os.register_at_fork(after_in_child=lambda: _sampler.after_fork_in_child() if _sampler else None)
        return _sampler


def attach(sink: Sink, interval_s: float) -> None:
    sampler().attach(sink, interval_s)


def detach(sink: Sink) -> None:
    if _sampler is not None:
        _sampler.detach(sink)
