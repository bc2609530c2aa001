"""The embedded broker of ``curvestream up``: amqtt (MQTT 3.1.1, pure Python)
in its own thread and event loop, on loopback, with anonymous access."""

from __future__ import annotations

import asyncio
import logging
import threading

__all__ = ["EmbeddedBroker"]

log = logging.getLogger("curvestream.bridge.broker")


class EmbeddedBroker:
    def __init__(self, host: str = "127.0.0.1", port: int = 1883) -> None:
        self.host = host
        self.port = port
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="curvestream-broker", daemon=True)

    @property
    def url(self) -> str:
        return f"mqtt://{self.host}:{self.port}"

    def start(self, timeout: float = 15.0) -> None:
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError("embedded MQTT broker did not start")
        if self._error is not None:
            raise RuntimeError(f"embedded MQTT broker failed on {self.host}:{self.port}: {self._error}")

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # noqa: BLE001
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        from amqtt.broker import Broker

        for name in ("amqtt", "transitions"):
            logging.getLogger(name).setLevel(logging.WARNING)
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        broker = Broker({
            "listeners": {"default": {"type": "tcp", "bind": f"{self.host}:{self.port}"}},
            "plugins": {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}},
        })
        await broker.start()
        self._ready.set()
        await self._stop.wait()
        await broker.shutdown()

    def stop(self, timeout: float = 5.0) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout)


def main(argv: list[str] | None = None) -> None:
    """``python -m curvestream_bridge.embedded --port N``: the embedded broker alone."""
    import argparse
    import signal

    parser = argparse.ArgumentParser(prog="python -m curvestream_bridge.embedded")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=1883)
    args = parser.parse_args(argv)
    broker = EmbeddedBroker(args.host, args.port)
    broker.start()
    print(f"amqtt broker on {broker.url}", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    broker.stop()


if __name__ == "__main__":
    main()
