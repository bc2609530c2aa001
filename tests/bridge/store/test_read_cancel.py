"""A series read whose client went away (a page that zoomed again aborts the
request of the zoom before) stops instead of running for nobody: the API
notices the closed connection, the engine interrupts its statement."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import duckdb
import httpx
import numpy as np
import pytest
import uvicorn
from test_store_support import batches, curve

from curvestream_bridge.service import Bridge
from curvestream_bridge.settings import BridgeSettings
from curvestream_bridge.store import open_store
from curvestream_bridge.store.base import SeriesQuery
from curvestream_bridge.store.cancel import CANCEL, ReadCancel, ReadCancelled, check, interrupting
from servers import free_port


class WaitingStore:
    """The real DuckDB store, whose series reads wait (up to 20 s) for their client to go away."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.cancelled = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def series_many(self, queries: Sequence[SeriesQuery]) -> Any:
        gone = CANCEL.get()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if gone is not None and gone.is_set():
                self.cancelled.set()
                check()
            time.sleep(0.01)
        return self.inner.series_many(queries)


@pytest.fixture()
def served(tmp_path) -> Iterator[tuple[str, WaitingStore]]:
    store = WaitingStore(open_store(f"duckdb:///{tmp_path}/store.duckdb"))
    bridge = Bridge(BridgeSettings(mqtt_url="", dead_letter_path=str(tmp_path / "dead.bin")), store)  # type: ignore[arg-type]
    bridge.start()
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(bridge.app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.01)
        yield f"http://127.0.0.1:{port}", store
    finally:
        server.should_exit = True
        thread.join(10)
        bridge.stop()


def test_a_series_request_whose_client_went_away_stops_its_read(served):
    base, store = served
    with pytest.raises(httpx.ReadTimeout):  # the client gives up and closes its connection
        httpx.get(f"{base}/api/v1/series", params={"run": "p/r", "key": "loss"}, timeout=0.5)
    assert store.cancelled.wait(5), "the read went on for nobody"
    metrics = httpx.get(f"{base}/metrics").text
    assert "curvestream_series_reads_cancelled_total 1" in metrics


def test_a_read_whose_client_is_gone_raises_instead_of_answering_in_duckdb(tmp_path):
    store = open_store(f"duckdb:///{tmp_path}/store.duckdb")
    try:
        store.write(batches(curve(np.random.default_rng(3), 5000), [2500]))
        q = SeriesQuery("proj", "run", "loss", "step", None, None, 100)
        gone = ReadCancel()
        token = CANCEL.set(gone)
        try:
            assert store.series_many([q])[0].total == 5000  # still there: answered
            gone.set()
            with pytest.raises(ReadCancelled):
                store.series_many([q])
            with pytest.raises(ReadCancelled):
                store.series(q)
        finally:
            CANCEL.reset(token)
        assert store.series(q).total == 5000  # the cursor is fine for the next read
    finally:
        store.close()


def test_a_duckdb_statement_running_when_the_client_goes_away_is_interrupted():
    cur = duckdb.connect().cursor()
    gone = ReadCancel()
    token = CANCEL.set(gone)
    try:
        threading.Timer(0.2, gone.set).start()
        with pytest.raises(ReadCancelled), interrupting(cur.interrupt):
            cur.execute("SELECT sum(i * j) FROM range(2000000000) t(i), range(3) u(j)").fetchall()
    finally:
        CANCEL.reset(token)
    assert cur.execute("SELECT 42").fetchall() == [(42,)]


def test_a_cancel_never_interrupts_a_cursor_once_its_read_has_ended():
    """A thread's cursor serves its next read: a cancel running hooks while a read ends
    must not reach that read's cursor after its block is over (it would interrupt the next one)."""
    gone = ReadCancel()
    ended = threading.Event()
    called_after_end: list[bool] = []
    second = gone.hook(lambda: called_after_end.append(ended.is_set()))

    def first() -> None:
        # meanwhile, on another thread, the second read's block ends
        def end() -> None:
            second.__exit__(None, None, None)
            ended.set()
        threading.Thread(target=end).start()
        ended.wait(0.5)

    with gone.hook(first):  # the first read's hook, then the second's
        second.__enter__()
        gone.set()
    assert ended.wait(5)
    assert called_after_end == [False], "a hook ran after its read had ended"


def test_a_transaction_left_open_on_a_threads_cursor_does_not_fail_its_next_read(tmp_path):
    store = open_store(f"duckdb:///{tmp_path}/store.duckdb")
    try:
        store.write(batches(curve(np.random.default_rng(4), 5000), [2500]))
        q = SeriesQuery("proj", "run", "loss", "step", None, None, 100)
        cur = store._cursor()  # this thread's: the one its reads use
        cur.execute("BEGIN TRANSACTION")  # as a read whose ROLLBACK was interrupted leaves it
        assert store.series(q).total == 5000
        cur.execute("BEGIN TRANSACTION")
        with pytest.raises(duckdb.Error):
            cur.execute("SELECT * FROM no_such_table")  # aborted, as an interrupted statement leaves it
        assert store.series_many([q])[0].total == 5000
    finally:
        store.close()
