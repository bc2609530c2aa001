"""Real servers for tests: Mosquitto, InfluxDB 1.x, amqtt and the bridge, each
started on a free loopback port with its own data directory and stopped by pid.

A missing server binary is an error, never a skip: CI must install it.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator

__all__ = ["free_port", "ServerProcess", "Mosquitto", "Influxd", "Amqtt", "BridgeProcess", "wait_until"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate: Callable[[], bool], timeout: float, what: str, interval: float = 0.05) -> None:
    """Poll until predicate() holds; fail the test with ``what`` if it never does."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if predicate():
                return
        except Exception:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def _port_open(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
        return True
    return False


def require_binary(name: str, package: str) -> str:
    path = shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}") if os.path.exists(p)), None)
    if path is None:
        raise RuntimeError(f"{name} is not installed: apt-get install {package} (the test suite needs the real server)")
    return path


class ServerProcess:
    """A server subprocess with a log file; ``stop()`` terminates it by pid, ``kill()`` is ``kill -9``."""

    name = "server"

    def __init__(self, workdir: pathlib.Path) -> None:
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.proc: subprocess.Popen | None = None
        self.port = free_port()
        self._log_fh = None
        self.starts = 0

    def command(self) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        return dict(os.environ)

    def ready(self) -> bool:
        return _port_open(self.port)

    @property
    def log_path(self) -> pathlib.Path:
        return self.workdir / f"{self.name}.log"

    def start(self, timeout: float = 30.0) -> ServerProcess:
        self.starts += 1
        self._log_fh = open(self.log_path, "ab")
        self._log_fh.write(f"\n=== start #{self.starts} ===\n".encode())
        self._log_fh.flush()
        self.proc = subprocess.Popen(self.command(), stdout=self._log_fh, stderr=subprocess.STDOUT,
                                     env=self.env(), cwd=self.workdir, start_new_session=True)
        try:
            wait_until(lambda: self._alive_or_raise() and self.ready(), timeout, f"{self.name} to start")
        except AssertionError:
            self.stop()
            raise AssertionError(f"{self.name} did not start; log:\n{self.log_tail()}") from None
        return self

    def _alive_or_raise(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise AssertionError(f"{self.name} exited with {self.proc.returncode}; log:\n{self.log_tail()}")
        return True

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self._close_log()

    def kill(self) -> None:
        """``kill -9``: no shutdown, no flush."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)
        self._close_log()

    def _close_log(self) -> None:
        if self._log_fh is not None:
            self._log_fh.close()
            self._log_fh = None

    @property
    def url(self) -> str:
        raise NotImplementedError


class Mosquitto(ServerProcess):
    name = "mosquitto"

    def __init__(self, workdir: pathlib.Path, max_queued: int = 100000, password_file: pathlib.Path | None = None,
                 acl_file: pathlib.Path | None = None) -> None:
        """With ``password_file`` (and ``acl_file``): no anonymous access, accounts and their ACL as in compose/."""
        super().__init__(workdir)
        self.binary = require_binary("mosquitto", "mosquitto")
        access = "allow_anonymous true\n"
        if password_file is not None:
            access = f"allow_anonymous false\npassword_file {password_file}\n"
        if acl_file is not None:
            access += f"acl_file {acl_file}\n"
        data = workdir / "data"
        data.mkdir(parents=True, exist_ok=True)
        self.conf = workdir / "mosquitto.conf"
        self.conf.write_text(
            # started as root, mosquitto would drop to its own user, who cannot read pytest's private temp dirs
            ("user root\n" if os.geteuid() == 0 else "")
            + f"listener {self.port} 127.0.0.1\n"
            + access
            + "persistence true\n"
            f"persistence_location {data}/\n"
            "autosave_interval 1\n"
            "log_dest stdout\n"
            "log_type error\nlog_type warning\nlog_type notice\n"
            f"max_queued_messages {max_queued}\n"
            "max_inflight_messages 100\n"
            "message_size_limit 0\n"
        )

    def command(self) -> list[str]:
        return [self.binary, "-c", str(self.conf)]

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    def url_for(self, user: str, password: str) -> str:
        return (
            f"mqtt://{urllib.parse.quote(user, safe='')}:{urllib.parse.quote(password, safe='')}@127.0.0.1:{self.port}"
        )


class Influxd(ServerProcess):
    name = "influxd"

    def __init__(self, workdir: pathlib.Path) -> None:
        super().__init__(workdir)
        self.binary = require_binary("influxd", "influxdb")
        self.rpc_port = free_port()
        self.conf = workdir / "influxdb.conf"
        self.conf.write_text(
            "reporting-disabled = true\n"
            f'bind-address = "127.0.0.1:{self.rpc_port}"\n'
            f'[meta]\n  dir = "{workdir}/meta"\n'
            f'[data]\n  dir = "{workdir}/data"\n  wal-dir = "{workdir}/wal"\n  query-log-enabled = false\n'
            f'[http]\n  bind-address = "127.0.0.1:{self.port}"\n  log-enabled = false\n'
            "  max-body-size = 0\n"
            "[monitor]\n  store-enabled = false\n"
            "[subscriber]\n  enabled = false\n"
            "[continuous_queries]\n  enabled = false\n"
        )

    def command(self) -> list[str]:
        return [self.binary, "run", "-config", str(self.conf)]

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/ping", timeout=0.5) as resp:
                return resp.status == 204
        except (urllib.error.URLError, OSError):
            return False

    def store_url(self, database: str) -> str:
        return f"influxdb://127.0.0.1:{self.port}/{database}"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


class Amqtt(ServerProcess):
    name = "amqtt"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "curvestream_bridge.embedded", "--port", str(self.port)]

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"


class BridgeProcess(ServerProcess):
    """``curvestream bridge`` in its own process, configured by CURVESTREAM_* variables."""

    name = "bridge"

    def __init__(self, workdir: pathlib.Path, store: str, mqtt_url: str, **settings: str) -> None:
        super().__init__(workdir)
        self.settings = {"store": store, "mqtt_url": mqtt_url, "http_addr": f"127.0.0.1:{self.port}",
                         "mqtt_client_id": f"bridge-{workdir.name}-{self.port}",
                         "dead_letter_path": str(workdir / "dead-letters.bin"),
                         "parked_dir": str(workdir / "parked"), **settings}

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CURVESTREAM_")}
        env.update({f"CURVESTREAM_{k.upper()}": str(v) for k, v in self.settings.items()})
        env.setdefault("CURVESTREAM_LOG_LEVEL", "INFO")
        return env

    def command(self) -> list[str]:
        return [sys.executable, "-m", "curvestream_bridge"]

    def ready(self) -> bool:
        """Serving HTTP, and subscribed when it has a broker (the store may still be down)."""
        try:
            with urllib.request.urlopen(f"{self.url}/readyz", timeout=0.5) as resp:
                body = json.loads(resp.read())
        except urllib.error.HTTPError as err:
            body = json.loads(err.read())
            err.close()
        except (urllib.error.URLError, OSError, ValueError):
            return False
        return bool(body.get("mqtt")) or not self.settings.get("mqtt_url")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextlib.contextmanager
def running(server: ServerProcess) -> Iterator[ServerProcess]:
    server.start()
    try:
        yield server
    finally:
        server.stop()
