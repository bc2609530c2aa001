"""System metrics: the psutil probe on this machine's real counters, the NVML probe
on a fake NVML library handed in at its seam (this machine has no GPU; the real
``pynvml`` here finds no driver, and then the probe is simply absent), and the
one sampler thread a process shares between its runs."""

from __future__ import annotations

import math
import os
import socket
import threading
import types

import psutil
import pytest

from curvestream import system_metrics
from curvestream.factory import start_run
from curvestream.settings import Settings
from curvestream.system_metrics import NvmlProbe, PsutilProbe, SystemSampler
from servers import wait_until

PSUTIL_KEYS = {
    "system/cpu_percent", "system/memory_percent", "system/memory_used_bytes", "system/process_cpu_percent",
    "system/process_rss_bytes", "system/disk_read_bytes_per_s", "system/disk_write_bytes_per_s",
    "system/network_recv_bytes_per_s", "system/network_sent_bytes_per_s",
}


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _loopback_bytes(n: int) -> None:
    """Send ``n`` bytes through the loopback interface and read them back."""
    server = socket.create_server(("127.0.0.1", 0))
    out = socket.create_connection(server.getsockname())
    conn, _ = server.accept()
    received = 0

    def read() -> None:
        nonlocal received
        while received < n:
            received += len(conn.recv(1 << 16))

    reader = threading.Thread(target=read)
    reader.start()
    out.sendall(b"x" * n)
    reader.join()
    for s in (out, conn, server):
        s.close()


def test_the_psutil_probe_reads_this_machine_and_this_process_with_rates_over_the_interval():
    clock = _Clock()
    probe = PsutilProbe(psutil, clock)
    ballast = bytearray(64 << 20)  # this process's resident memory grows by 64 MB
    ballast[::4096] = b"x" * len(ballast[::4096])
    _loopback_bytes(4 << 20)
    clock.now += 2.0
    got = probe.sample()
    assert set(got) == PSUTIL_KEYS and all(math.isfinite(v) and v >= 0 for v in got.values())
    assert 0 <= got["system/cpu_percent"] <= 100 and 0 < got["system/memory_percent"] <= 100
    rss = psutil.Process(os.getpid()).memory_info().rss
    assert 0.8 * rss <= got["system/process_rss_bytes"] <= 1.2 * rss and got["system/process_rss_bytes"] > 64 << 20
    # loopback traffic counts as sent and received: at least the 4 MB over the 2 s the clock says passed
    assert got["system/network_sent_bytes_per_s"] >= (4 << 20) / 2
    assert got["system/network_recv_bytes_per_s"] >= (4 << 20) / 2
    assert got["system/memory_used_bytes"] <= psutil.virtual_memory().total
    del ballast


class FakeNvml(types.SimpleNamespace):
    """The functions of NVML's Python bindings (``pynvml``) the probe calls, answering
    for ``gpus`` made-up devices; ``broken`` makes nvmlInit fail as without a driver."""

    NVML_TEMPERATURE_GPU = 0

    class NVMLError(Exception):
        pass

    def __init__(self, gpus: int, broken: bool = False) -> None:
        super().__init__(gpus=gpus, broken=broken, shut_down=False, fail_after=None, calls=0)

    def nvmlInit(self) -> None:
        if self.broken:
            raise self.NVMLError("NVML Shared Library Not Found")

    def nvmlShutdown(self) -> None:
        self.shut_down = True

    def nvmlDeviceGetCount(self) -> int:
        return self.gpus

    def nvmlDeviceGetHandleByIndex(self, i: int) -> str:
        return f"gpu-{i}"

    def nvmlDeviceGetUtilizationRates(self, h: str) -> types.SimpleNamespace:
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise self.NVMLError("GPU is lost")
        return types.SimpleNamespace(gpu=40 + int(h[-1]), memory=10)

    def nvmlDeviceGetMemoryInfo(self, h: str) -> types.SimpleNamespace:
        return types.SimpleNamespace(used=(1 + int(h[-1])) << 30, total=8 << 30, free=0)

    def nvmlDeviceGetTemperature(self, h: str, sensor: int) -> int:
        assert sensor == self.NVML_TEMPERATURE_GPU
        return 60 + int(h[-1])

    def nvmlDeviceGetPowerUsage(self, h: str) -> int:
        return 150_500 + int(h[-1]) * 1000  # milliwatts


def test_the_nvml_probe_gives_each_gpus_utilisation_memory_temperature_and_power_from_a_fake_nvml():
    nvml = FakeNvml(gpus=2)
    probe = NvmlProbe.create(nvml)
    assert probe is not None
    assert probe.sample() == {
        "system/gpu0/utilization_percent": 40.0, "system/gpu0/memory_used_bytes": float(1 << 30),
        "system/gpu0/memory_percent": 12.5, "system/gpu0/temperature_c": 60.0, "system/gpu0/power_w": 150.5,
        "system/gpu1/utilization_percent": 41.0, "system/gpu1/memory_used_bytes": float(2 << 30),
        "system/gpu1/memory_percent": 25.0, "system/gpu1/temperature_c": 61.0, "system/gpu1/power_w": 151.5,
    }
    probe.close()
    assert nvml.shut_down


def test_without_a_driver_or_a_gpu_there_is_no_nvml_probe_and_the_real_bindings_here_find_none():
    assert NvmlProbe.create(FakeNvml(gpus=1, broken=True)) is None
    assert NvmlProbe.create(FakeNvml(gpus=0)) is None
    import pynvml  # nvidia-ml-py, installed; this machine has no NVIDIA driver

    assert NvmlProbe.create(pynvml) is None
    assert NvmlProbe.create() is None
    assert [p.name for p in system_metrics.default_probes()] == ["psutil"]


def test_one_sampler_thread_serves_every_run_and_ends_with_the_last_one(caplog):
    nvml = FakeNvml(gpus=1)
    nvml.fail_after = 6  # the GPU's library starts failing: its metrics stop, the others go on
    sampler = SystemSampler(lambda: [p for p in (PsutilProbe.create(), NvmlProbe.create(nvml)) if p])
    got: dict[str, list[dict[str, float]]] = {"a": [], "b": []}

    def sink_a(wall_ns: int, values: dict[str, float]) -> None:
        got["a"].append(values)

    def sink_b(wall_ns: int, values: dict[str, float]) -> None:
        got["b"].append(values)

    sampler.attach(sink_a, 0.02)
    sampler.attach(sink_b, 0.02)
    wait_until(lambda: len(got["b"]) >= 3, 30, "samples for both sinks")
    threads = [t for t in threading.enumerate() if t.name == "curvestream-system"]
    assert len(threads) == 1
    sampler.detach(sink_a)
    after_detach = len(got["a"])
    wait_until(lambda: len(got["b"]) >= after_detach + 10, 30, "samples after one sink left")
    assert len(got["a"]) == after_detach  # nothing reached the detached sink
    assert "system/gpu0/power_w" in got["b"][0] and "system/gpu0/power_w" not in got["b"][-1]
    assert PSUTIL_KEYS <= set(got["b"][-1])
    assert "system metrics of nvml stop: NVMLError: GPU is lost" in caplog.text
    sampler.detach(sink_b)
    sampler.join(30)
    assert not sampler.running and nvml.shut_down
    assert not [t for t in threading.enumerate() if t.name == "curvestream-system"]
    sampler.attach(sink_a, 0.02)  # a later run starts it again
    wait_until(lambda: len(got["a"]) > after_detach, 30, "samples of a new thread")
    sampler.detach(sink_a)
    sampler.join(30)
    assert not sampler.running


def test_system_metrics_are_on_by_default_and_one_setting_turns_them_off():
    assert Settings().system_metrics is True and Settings().system_metrics_interval_ms == 10_000
    assert Settings.from_env({"CURVESTREAM_SYSTEM_METRICS": "0"}).system_metrics is False
    assert Settings.from_env({"CURVESTREAM_SYSTEM_METRICS_INTERVAL_MS": "500"}).system_metrics_interval_ms == 500
    with pytest.raises(ValueError, match="system_metrics_interval_ms"):
        Settings(system_metrics_interval_ms=0)


def test_an_idle_runs_samples_are_spooled_without_waiting_for_its_next_log(spool_dir):
    settings = Settings(spool_dir=str(spool_dir), mode="offline", flush_interval_ms=20, system_metrics=True,
                        system_metrics_interval_ms=300)
    run = start_run("sys", "idle", settings=settings)
    try:
        run.log({"loss": 1.0}, step=4)
        wait_until(lambda: run.recorder.idle, 30, "the run idle (a whole flush interval without a point)")
        logged = run.recorder.stats.points_spooled
        wait_until(lambda: run.recorder.stats.points_spooled >= logged + 2 * len(PSUTIL_KEYS), 30,
                   "two samples spooled while the run logs nothing")
    finally:
        run.finish()
