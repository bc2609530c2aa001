"""The spool: CRC-framed records in segments; damage is reported and skipped."""

from __future__ import annotations

import pathlib

import pytest

from curvestream.spool import Spool, SpoolLocked, iter_records, list_producers


def _spool_with(tmp_path: pathlib.Path, n: int, per_segment: int = 0) -> Spool:
    spool = Spool.create(tmp_path, bytes(range(16)), "proj", "run / ü")
    for seq in range(1, n + 1):
        spool.append(seq, f"payload-{seq}".encode() * 10, now=0.0)
        if per_segment and seq % per_segment == 0:
            spool.rotate_if_due(now=1e9, max_bytes=1, max_age_s=0)
    spool.sync()
    return spool


def _replay(directory: pathlib.Path) -> tuple[list[int], list[str]]:
    adopted = Spool.adopt(directory)
    seqs = [seq for seg in adopted.segments for _, seq, _ in adopted.read_from(seg, seg.data_start)]
    damage = [str(d) for d in adopted.damage]
    adopted.release(remove_if_empty=False)
    return seqs, damage


def test_a_truncated_last_record_and_a_flipped_byte_lose_only_those_records(tmp_path):
    spool = _spool_with(tmp_path, 50)
    seg = spool.segments[0]
    spool.release(remove_if_empty=False)
    data = bytearray(seg.path.read_bytes())
    positions = [pos for pos, _, _ in iter_records(bytes(data), seg.data_start, len(data))]
    data[positions[20] + 30] ^= 0xFF  # one flipped byte inside record 21's payload
    data = data[:-7]  # a torn tail: record 50 cut short
    seg.path.write_bytes(bytes(data))

    seqs, damage = _replay(seg.path.parent)

    assert seqs == [s for s in range(1, 50) if s != 21]
    assert len(damage) == 2
    assert any("checksum mismatch" in d for d in damage)
    assert any("torn tail" in d for d in damage)


def test_a_damaged_record_header_is_skipped_by_resynchronising_on_the_next_record(tmp_path):
    spool = _spool_with(tmp_path, 10)
    seg = spool.segments[0]
    spool.release(remove_if_empty=False)
    data = bytearray(seg.path.read_bytes())
    positions = [pos for pos, _, _ in iter_records(bytes(data), seg.data_start, len(data))]
    data[positions[3] + 5] ^= 0x55  # the length field of record 4
    seg.path.write_bytes(bytes(data))

    seqs, damage = _replay(seg.path.parent)

    assert seqs == [1, 2, 3, 5, 6, 7, 8, 9, 10]
    assert len(damage) == 1


def test_segments_rotate_and_committed_closed_segments_are_deleted(tmp_path):
    spool = _spool_with(tmp_path, 12, per_segment=4)
    assert [(s.first_seq, s.last_seq, s.closed) for s in spool.segments] == [(1, 4, True), (5, 8, True), (9, 12, True)]
    freed = spool.drop_committed(lambda first, last: last <= 8)
    assert freed > 0
    assert [s.first_seq for s in spool.segments] == [9]
    assert sorted(p.name for p in spool.dir.glob("*.seg")) == ["00000000000000000009.seg"]
    spool.release()
    assert spool.dir.exists()  # segment 9..12 is still uncommitted


def test_a_live_producer_cannot_be_adopted_and_a_released_empty_one_leaves_nothing(tmp_path):
    spool = _spool_with(tmp_path, 3)
    with pytest.raises(SpoolLocked):
        Spool.adopt(spool.dir)
    spool.drop_committed(lambda first, last: True)
    spool.close_for_writing()
    spool.drop_committed(lambda first, last: True)
    spool.release()
    assert list_producers(tmp_path) == []


def test_adopting_restores_project_and_run_from_the_segment_header(tmp_path):
    spool = _spool_with(tmp_path, 3)
    spool.release(remove_if_empty=False)
    adopted = Spool.adopt(spool.dir)
    assert (adopted.project, adopted.run) == ("proj", "run / ü")
    assert adopted.producer_id == bytes(range(16))
    adopted.release(remove_if_empty=False)


def test_runs_starting_together_in_one_spool_directory_never_remove_each_others_spools(tmp_path, monkeypatch):
    """A run sends the leftovers of dead producers it finds in its spool directory (and
    removes them when empty); a run starting at that very moment must not be taken for one."""
    import os

    take_lock = Spool._take_lock

    def another_run_sweeps_first(spool: Spool) -> None:
        if spool.owned:  # between the new run's directory and its lock: another run's sweep
            for directory in list_producers(tmp_path):
                try:
                    Spool.adopt(directory).release()
                except SpoolLocked:
                    pass
        take_lock(spool)

    monkeypatch.setattr(Spool, "_take_lock", another_run_sweeps_first)
    spools = [Spool.create(tmp_path, os.urandom(16), "p", f"run {i}") for i in range(3)]
    for i, spool in enumerate(spools):
        spool.append(1, f"point of run {i}".encode(), 0.0)
    assert sorted(list_producers(tmp_path)) == sorted(s.dir for s in spools)
    for spool in spools:
        spool.release(remove_if_empty=False)
    for spool in spools:
        adopted = Spool.adopt(spool.dir)
        assert adopted.run == spool.run and sum(seg.records for seg in adopted.segments) == 1
        adopted.release(remove_if_empty=False)
