"""The recorder: batches by size and by interval, and owns the queue's overflow policy."""

from __future__ import annotations

import threading

from curvestream_wire.v1 import batch_pb2

from curvestream.encode import BatchBuilder
from curvestream.recorder import FlushMode, Recorder
from curvestream.settings import Settings
from curvestream.spool import Spool

PID = bytes(range(16))


def _recorder(tmp_path, **settings) -> tuple[Recorder, Spool]:
    s = Settings(spool_dir=str(tmp_path), **settings)
    spool = Spool.create(tmp_path, PID, "p", "r")
    counter = iter(range(1, 1_000_000))
    rec = Recorder(s, spool, lambda next_seq: BatchBuilder(PID, "p", "r", next_seq, lambda: next(counter)),
                   on_spooled=lambda: None)
    return rec, spool


def _batches(spool: Spool) -> list[batch_pb2.Batch]:
    return [
        batch_pb2.Batch.FromString(p) for seg in spool.snapshot() for _, _, p in spool.read_from(seg, seg.data_start)
    ]


def test_a_size_flush_seals_only_full_batches_and_the_interval_flush_the_rest(tmp_path):
    rec, spool = _recorder(tmp_path, max_batch_points=100)
    for step in range(250):
        rec.queue.append((step, step + 1, {"loss": float(step)}))
    rec.flush(FlushMode.SIZE)
    assert [sum(len(s.values) for s in b.scalars) for b in _batches(spool)] == [100, 100]
    rec.flush(FlushMode.INTERVAL)
    assert [sum(len(s.values) for s in b.scalars) for b in _batches(spool)] == [100, 100, 50]
    assert [b.seq for b in _batches(spool)] == [1, 2, 3]
    spool.release(remove_if_empty=False)


def test_with_drop_a_full_queue_drops_the_call_and_counts_it(tmp_path):
    rec, spool = _recorder(tmp_path, max_queue_calls=4, queue_full="drop")
    rec.queue.extend(range(4))
    assert rec.backlog(closed=lambda: False) is True
    assert rec.backlog(closed=lambda: False) is True
    assert rec.stats.points_dropped_queue_full == 2
    rec.queue.clear()
    assert rec.backlog(closed=lambda: False) is False
    spool.release(remove_if_empty=False)


def test_with_block_a_full_queue_waits_until_the_recorder_drains_it(tmp_path):
    rec, spool = _recorder(tmp_path, max_queue_calls=4, queue_full="block")
    rec.queue.extend((i, i + 1, {"x": 1.0}) for i in range(4))
    drained = threading.Timer(0.1, rec.queue.clear)
    drained.start()
    assert rec.backlog(closed=lambda: False) is False  # returns only once there is room again
    assert len(rec.queue) < 4
    assert rec.stats.points_dropped_queue_full == 0
    spool.release(remove_if_empty=False)


def test_a_watching_page_only_ever_shortens_the_flush_interval(tmp_path):
    rec, _ = _recorder(tmp_path, flush_interval_ms=200)
    rec.watched(50)
    assert rec.flush_interval_s == 0.05
    rec.watched(1000)  # a hint longer than the trainer's own interval is ignored
    assert rec.flush_interval_s == 0.2
    rec.watched(50)
    rec.watched(None)  # nobody watches any more
    assert rec.flush_interval_s == 0.2
