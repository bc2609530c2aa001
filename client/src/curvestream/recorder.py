"""One run's side of the batching engine: its in-memory queue and the policy
when that queue is full, its batch builder, and what it does in a flush round
(seal columnar batches by size, and at least every ``flush_interval_ms``;
append them to the run's spool). The thread that runs the rounds of every run
of the process is :class:`curvestream.flush_loop.FlushLoop`.

The training thread only appends to the queue, asks :meth:`Recorder.backlog`
once the queue is long, and :meth:`Recorder.resume` when the run was idle.
An idle run (nothing logged for a whole interval) costs no wake-up at all.

Everything else runs off the training thread; nothing raises into it.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import logging
import math
import threading
import time
from collections.abc import Callable

from curvestream.encode import BatchBuilder
from curvestream.settings import Settings
from curvestream.spool import Spool

__all__ = ["Recorder", "RecorderStats", "FlushMode"]

log = logging.getLogger("curvestream.recorder")

ROOM_RETRY_S = 0.5
"""With ``spool_full="block"``: how often a batch waiting for room is tried again (a disk
gets room back without telling anyone)."""


class FlushMode(enum.Enum):
    INTERVAL = "interval"  # the interval is over: drain, seal everything
    SIZE = "size"  # the queue grew long: drain, seal full batches only (the rest waits for the interval)
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
        on_spooled: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.queue: collections.deque = collections.deque()
        self.max_queue = settings.max_queue_calls
        self.wake_len = min(settings.max_queue_calls, max(1024, settings.max_batch_points // 2))
        """Queue length at which the producer calls :meth:`backlog` (wakes the flush loop early)."""
        self.spool = spool
        self.stats = RecorderStats()
        self._builder = builder_factory(self._next_seq)
        self.on_spooled = on_spooled
        """Called after a round that spooled something (when no flush loop serves this recorder)."""
        self.on_dropped: Callable[[RecorderStats, str], None] | None = None
        """Called on the flush thread each time a batch could not be spooled (counts, why)."""
        self._clock = clock
        self._wake_loop: Callable[[], None] = lambda: None
        self._final = threading.Event()
        self._done = threading.Event()
        self._drained = threading.Event()  # set each time a round has emptied the queue, while log() waits
        self._blocked = False  # log() waits for room (queue_full="block")
        self._warned_quota = float("-inf")
        self._size_wake = False
        self._waiting: tuple[int, bytes, int] | None = None  # a sealed batch waiting for room (spool_full=block)
        self._retry_at = 0.0
        self.flush_interval_s = settings.flush_interval_ms / 1000
        """Seal at least this often: ``flush_interval_ms``, or shorter while a live page watches."""
        self.next_due = self._tick_after(clock())
        self.idle = False
        """True once a whole interval passed with nothing logged: the flush loop no longer wakes
        for this run until :meth:`resume`."""

    def _tick_after(self, now: float) -> float:
        """The end of the interval that ``now`` falls in. Intervals are counted from the clock's
        zero, so the runs of a process with the same interval are due together: one round (one
        wake-up, one sync, one word to the uploader) for all of them, not one each."""
        interval = self.flush_interval_s
        due = (math.floor(now / interval) + 1) * interval
        return due if due > now else due + interval

    def _next_seq(self) -> int:
        self.stats.last_seq += 1
        return self.stats.last_seq

    # ------------------------------------------------------------------ the training thread
    def attach(self, wake_loop: Callable[[], None]) -> None:
        """Served from now on by the flush loop that ``wake_loop`` wakes."""
        self._wake_loop = wake_loop

    def wake(self) -> None:
        self._wake_loop()

    def resume(self) -> None:
        """Something was queued while idle: rounds again, the first one an interval from now."""
        self.next_due = self._tick_after(self._clock())
        self.idle = False
        self._wake_loop()

    def backlog(self, closed: Callable[[], bool]) -> bool:
        """The queue is long: wake the flush loop; True when the caller's item is to be
        dropped (``queue_full="drop"``). With ``block``, waits while the queue is full."""
        if not self._size_wake:  # every call past wake_len lands here: wake the loop once, not each time
            self._size_wake = True
            self.idle = False
            self._wake_loop()
        if len(self.queue) < self.max_queue:
            return False
        if self.settings.queue_full == "drop":
            self.stats.points_dropped_queue_full += 1
            if self.stats.points_dropped_queue_full == 1:
                log.warning("curvestream: queue full (%d calls); dropping points (CURVESTREAM_QUEUE_FULL=drop)",
                            self.max_queue)
            return True
        self._blocked = True
        while len(self.queue) >= self.max_queue and not closed():
            self._size_wake = True
            self._wake_loop()
            self._drained.wait(0.05)  # the loop says when it took the queue (no spinning on the GIL)
            self._drained.clear()
        self._blocked = False
        return False

    def watched(self, hint_ms: int | None) -> None:
        """A live page watches the run and asks for batches every ``hint_ms`` (None: nobody
        watches). Only ever shortens the configured interval."""
        configured = self.settings.flush_interval_ms
        ms = configured if hint_ms is None or hint_ms <= 0 else min(configured, hint_ms)
        if ms / 1000 != self.flush_interval_s:
            self.flush_interval_s = ms / 1000
            self.next_due = self._tick_after(self._clock())  # the pending interval moves too
            self._wake_loop()

    def space_freed(self) -> None:
        """The uploader freed spool space: a batch waiting for room is tried at once."""
        if self._waiting is not None:
            self._retry_at = 0.0
            self._wake_loop()

    def finish(self, timeout: float) -> bool:
        """Drain everything, seal the last batch and close the open segment."""
        self._final.set()
        self._wake_loop()
        return self._done.wait(timeout)

    @property
    def finished(self) -> bool:
        return self._done.is_set()

    # ------------------------------------------------------------------ the flush thread
    def due(self, now: float) -> FlushMode | None:
        """What this recorder's round is now, or None when it has none."""
        if self._done.is_set():
            return None
        if self._final.is_set():  # a batch waiting for room is dropped now if it must be
            return FlushMode.FINAL
        if self._waiting is not None and now < self._retry_at:
            return None
        if now >= self.next_due and not self.idle:  # an idle run has nothing: another run's round passes it by
            return FlushMode.INTERVAL
        if self._size_wake or self._waiting is not None:
            return FlushMode.SIZE
        return None

    def wake_at(self) -> float | None:
        """When the flush loop must next look at this recorder (None: only when woken)."""
        if self._done.is_set():
            return None
        if self._waiting is not None:
            return self._retry_at
        return None if self.idle else self.next_due

    def flush(self, mode: FlushMode) -> bool:
        """One round; True when something was appended to the spool (not yet synced)."""
        self._size_wake = False
        wrote = False
        if self._waiting is not None:
            if not self._spool_waiting():
                return False
            wrote = True
        queue = self.queue
        builder = self._builder
        max_points = self.settings.max_batch_points
        popleft = queue.popleft
        had_items = bool(queue)
        while queue:
            try:
                item = popleft()
            except IndexError:
                break
            builder.add(item)
            if builder.points >= max_points:
                if self._blocked:
                    self._drained.set()  # a blocked log() may go on while this batch is spooled
                self._waiting = builder.seal()
                if not self._spool_waiting():
                    return wrote  # the rest waits in the queue (log() blocks once it is full)
                wrote = True
        if self._blocked:
            self._drained.set()
        if not builder.empty and mode is not FlushMode.SIZE:
            self._waiting = builder.seal()
            wrote = self._spool_waiting() or wrote
        now = self._clock()
        if mode is FlushMode.FINAL:
            if self._waiting is None:
                self.spool.close_for_writing()
        else:
            self.spool.rotate_if_due(now, self.settings.segment_max_bytes, self.settings.segment_max_age_ms / 1000)
        if mode is FlushMode.INTERVAL:
            self.next_due = self._tick_after(now)
            if not had_items and builder.empty and self._waiting is None:
                self.idle = True  # nothing for a whole interval: no more rounds until resume()
                if queue:  # an item queued while idle was being set: log() may have missed it
                    self.idle = False
        return wrote

    def round_done(self, mode: FlushMode) -> None:
        """After the round's sync: a final round that left nothing behind ends the recorder."""
        if mode is FlushMode.FINAL and self._waiting is None and not self.queue:
            self._done.set()

    def _spool_waiting(self) -> bool:
        """Append the sealed batch waiting; False when it must wait for room (``block``)."""
        assert self._waiting is not None
        seq, payload, points = self._waiting
        outcome = self._spool(seq, payload, points)
        if outcome == "wait":
            self._retry_at = self._clock() + ROOM_RETRY_S
            return False
        self._waiting = None
        return outcome == "written"

    def _spool(self, seq: int, payload: bytes, points: int) -> str:
        """``written``, ``dropped`` or ``wait`` (for room: the quota or a full disk, with ``block``)."""
        quota = self.settings.spool_max_bytes
        block = self.settings.spool_full == "block" and not self._final.is_set()
        if self.spool.bytes_on_disk + len(payload) > quota:
            if block:
                self._warn_quota(f"curvestream: spool quota of {quota} bytes reached in {self.spool.dir}; "
                                 "waiting for the bridge to take batches")
                return "wait"
            self._drop(points, f"spool quota of {quota} bytes reached")
            self._warn_quota(f"curvestream: spool quota of {quota} bytes reached in {self.spool.dir}; "
                             f"dropped {self.stats.points_dropped_spool_full} points so far "
                             "(raise CURVESTREAM_SPOOL_MAX_BYTES or set CURVESTREAM_SPOOL_FULL=block)")
            return "dropped"
        if self.spool.bytes_on_disk + len(payload) > 0.8 * quota:
            self._warn_quota(f"curvestream: spool {self.spool.dir} is over 80 % of its {quota}-byte quota")
        try:
            self.spool.append(seq, payload, self._clock())
        except OSError as exc:
            self.stats.spool_errors += 1
            if block:
                self._warn_quota(f"curvestream: cannot write the spool ({exc}); waiting for room "
                                 "(CURVESTREAM_SPOOL_FULL=block)")
                return "wait"
            self._drop(points, f"cannot write the spool: {exc}")
            self._warn_quota(f"curvestream: cannot write the spool ({exc}); batch {seq} dropped")
            return "dropped"
        self.stats.batches_sealed += 1
        self.stats.points_spooled += points
        return "written"

    def _drop(self, points: int, reason: str) -> None:
        self.stats.batches_dropped_spool_full += 1
        self.stats.points_dropped_spool_full += points
        if self.on_dropped is not None:
            self.on_dropped(self.stats, reason)

    def _warn_quota(self, message: str) -> None:
        now = self._clock()
        if now - self._warned_quota >= 30:
            self._warned_quota = now
            log.warning(message)

    def forget_after_fork(self) -> None:
        self._done.set()
