"""The batching engine: one daemon thread (``curvestream-recorder``) that drains
the in-memory queue, seals columnar batches (by size, and at least every
``flush_interval_ms``), appends them to the spool, fsyncs once per interval and
wakes the uploader. Scalars, histograms, text and run status share it.

The recorder owns the queue and its overflow policy: the training thread only
appends, and asks :meth:`Recorder.backlog` once the queue is long.

Everything here runs off the training thread; nothing raises into it.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import logging
import threading
import time
from typing import Callable

from curvestream.encode import BatchBuilder
from curvestream.settings import Settings
from curvestream.spool import Spool

__all__ = ["Recorder", "RecorderStats", "FlushMode"]

log = logging.getLogger("curvestream.recorder")


class FlushMode(enum.Enum):
    INTERVAL = "interval"  # the timer fired: drain, seal everything, fsync
    SIZE = "size"  # the queue grew long: drain, seal full batches only (the rest waits for the timer)
    FINAL = "final"  # finish(): drain everything, seal, close the segment


@dataclasses.dataclass
class RecorderStats:
    batches_sealed: int = 0
    points_spooled: int = 0
    batches_dropped_spool_full: int = 0
    points_dropped_spool_full: int = 0
    spool_errors: int = 0
    points_dropped_queue_full: int = 0
    last_seq: int = 0


class Recorder:
    def __init__(
        self,
        settings: Settings,
        spool: Spool,
        builder_factory: Callable[[Callable[[], int]], BatchBuilder],
        on_spooled: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.queue: collections.deque = collections.deque()
        self.max_queue = settings.max_queue_calls
        self.wake_len = min(settings.max_queue_calls, max(1024, settings.max_batch_points // 2))
        """Queue length at which the producer calls :meth:`backlog` (wakes the recorder early)."""
        self.spool = spool
        self.stats = RecorderStats()
        self._builder = builder_factory(self._next_seq)
        self._on_spooled = on_spooled
        self.on_dropped: Callable[[RecorderStats, str], None] | None = None
        """Called on the recorder thread each time a batch could not be spooled (counts, why)."""
        self._clock = clock
        self._wake = threading.Event()
        self._final = threading.Event()
        self._done = threading.Event()
        self._space = threading.Event()
        self._drained = threading.Event()  # set each time the recorder has emptied the queue
        self._warned_quota = 0.0
        self._size_wake = False
        self._thread: threading.Thread | None = None
        self.flush_interval_s = settings.flush_interval_ms / 1000
        """Seal at least this often: ``flush_interval_ms``, or shorter while a live page watches."""

    def _next_seq(self) -> int:
        self.stats.last_seq += 1
        return self.stats.last_seq

    # ------------------------------------------------------------------ life
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="curvestream-recorder", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def backlog(self, closed: Callable[[], bool]) -> bool:
        """The queue is long: wake the recorder; True when the caller's item is to be
        dropped (``queue_full="drop"``). With ``block``, waits while the queue is full."""
        self._size_wake = True
        if not self._wake.is_set():  # every call past wake_len lands here: set the event once, not each time
            self._wake.set()
        if len(self.queue) < self.max_queue:
            return False
        if self.settings.queue_full == "drop":
            self.stats.points_dropped_queue_full += 1
            if self.stats.points_dropped_queue_full == 1:
                log.warning("curvestream: queue full (%d calls); dropping points (CURVESTREAM_QUEUE_FULL=drop)",
                            self.max_queue)
            return True
        while len(self.queue) >= self.max_queue and not closed():
            self.wake()
            self._drained.wait(0.05)  # the recorder says when it took the queue (no spinning on the GIL)
            self._drained.clear()
        return False

    def watched(self, hint_ms: int | None) -> None:
        """A live page watches the run and asks for batches every ``hint_ms`` (None: nobody
        watches). Only ever shortens the configured interval."""
        configured = self.settings.flush_interval_ms
        ms = configured if hint_ms is None or hint_ms <= 0 else min(configured, hint_ms)
        if ms / 1000 != self.flush_interval_s:
            self.flush_interval_s = ms / 1000
            self.wake()  # the next interval starts from the new length

    def space_freed(self) -> None:
        self._space.set()

    def finish(self, timeout: float) -> bool:
        """Drain everything, seal the last batch and close the open segment."""
        self._final.set()
        self._wake.set()
        return self._done.wait(timeout)

    def _run(self) -> None:
        interval = self.flush_interval_s
        next_interval = self._clock() + interval
        while True:
            if self.flush_interval_s != interval:  # watched or no longer: the pending interval moves too
                next_interval += self.flush_interval_s - interval
                interval = self.flush_interval_s
            self._wake.wait(max(0.0, next_interval - self._clock()))
            self._wake.clear()
            final = self._final.is_set()
            size_wake, self._size_wake = self._size_wake, False
            if final:
                mode = FlushMode.FINAL
            elif size_wake and self._clock() < next_interval:
                mode = FlushMode.SIZE
            else:
                mode = FlushMode.INTERVAL
                next_interval = self._clock() + interval
            try:
                self.flush(mode)
            except Exception:  # noqa: BLE001
                self.stats.spool_errors += 1
                log.exception("curvestream: recorder round failed")
            if final:
                self._done.set()
                return

    # ------------------------------------------------------------------ one round
    def flush(self, mode: FlushMode) -> None:
        queue = self.queue
        builder = self._builder
        max_points = self.settings.max_batch_points
        wrote = False
        popleft = queue.popleft
        while queue:
            try:
                item = popleft()
            except IndexError:
                break
            builder.add(item)
            if builder.points >= max_points:
                self._drained.set()  # a blocked log() may go on while this batch is spooled
                self._spool(*builder.seal())
                wrote = True
        self._drained.set()
        if not builder.empty and mode is not FlushMode.SIZE:
            self._spool(*builder.seal())
            wrote = True
        if wrote:
            self.spool.sync()
        now = self._clock()
        if mode is FlushMode.FINAL:
            self.spool.close_for_writing()
        else:
            self.spool.rotate_if_due(now, self.settings.segment_max_bytes, self.settings.segment_max_age_ms / 1000)
        if wrote or mode is FlushMode.FINAL:
            self._on_spooled()

    def _spool(self, seq: int, payload: bytes, points: int) -> None:
        quota = self.settings.spool_max_bytes
        while self.spool.bytes_on_disk + len(payload) > quota:
            if self.settings.spool_full == "drop" or self._final.is_set():
                self.stats.batches_dropped_spool_full += 1
                self.stats.points_dropped_spool_full += points
                self._dropped(f"spool quota of {quota} bytes reached")
                self._warn_quota(f"curvestream: spool quota of {quota} bytes reached in {self.spool.dir}; "
                                 f"dropped {self.stats.points_dropped_spool_full} points so far "
                                 "(raise CURVESTREAM_SPOOL_MAX_BYTES or set CURVESTREAM_SPOOL_FULL=block)")
                return
            self._warn_quota(f"curvestream: spool quota of {quota} bytes reached in {self.spool.dir}; "
                             "waiting for the bridge to take batches")
            self._space.wait(0.5)
            self._space.clear()
        if self.spool.bytes_on_disk + len(payload) > 0.8 * quota:
            self._warn_quota(f"curvestream: spool {self.spool.dir} is over 80 % of its {quota}-byte quota")
        failure = self._append(seq, payload)
        if failure is not None:
            self.stats.batches_dropped_spool_full += 1
            self.stats.points_dropped_spool_full += points
            self._dropped(f"cannot write the spool: {failure}")
            self._warn_quota(f"curvestream: cannot write the spool ({failure}); batch {seq} dropped")
            return
        self.stats.batches_sealed += 1
        self.stats.points_spooled += points

    def _append(self, seq: int, payload: bytes) -> OSError | None:
        """Append to the spool; on a full disk, wait for room with ``spool_full=block``
        (until the run finishes), else give up. Returns what stopped it."""
        while True:
            try:
                self.spool.append(seq, payload, self._clock())
                return None
            except OSError as exc:
                self.stats.spool_errors += 1
                if self.settings.spool_full == "drop" or self._final.is_set():
                    return exc
                self._warn_quota(f"curvestream: cannot write the spool ({exc}); waiting for room "
                                 "(CURVESTREAM_SPOOL_FULL=block)")
                self._space.wait(0.5)  # a disk gets room back without telling anyone: look again
                self._space.clear()

    def _dropped(self, reason: str) -> None:
        if self.on_dropped is not None:
            self.on_dropped(self.stats, reason)

    def _warn_quota(self, message: str) -> None:
        now = self._clock()
        if now - self._warned_quota >= 30:
            self._warned_quota = now
            log.warning(message)

    def forget_after_fork(self) -> None:
        self._thread = None
        self._done.set()
