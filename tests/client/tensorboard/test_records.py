"""Event files read record by record with both checksums checked: a damaged
record is named, a file cut mid-record (still being written) ends before it."""

from __future__ import annotations

import numpy as np
import pytest

from curvestream.tensorboard.events import EventDecoder, Histogram, Scalar, Text
from curvestream.tensorboard.records import DamagedRecord, RecordReader, read_records


@pytest.fixture
def event_file(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(tmp_path)) as w:
        for step in range(5):
            w.add_scalar("loss", 1.0 / (step + 1), step, walltime=1000.0 + step)
        w.add_scalar("lr", 0.5, 5, walltime=1006.0, new_style=True)
        w.add_histogram("w", np.array([1.0, 2.0, 2.5]), 6, walltime=1007.0)
        w.add_text("note", "hello", 7, walltime=1008.0)
    (path,) = tmp_path.glob("events.out.tfevents.*")
    return path


def test_every_record_of_a_torch_event_file_decodes_to_its_points(event_file):
    decoder = EventDecoder()
    seen = []
    for _, payload in read_records(str(event_file)):
        event = decoder.parse(payload)
        seen.extend((event.step, event.wall_time, item) for item in decoder.items(event))
    scalars = [(s, w, i.key, i.value) for s, w, i in seen if isinstance(i, Scalar)]
    assert scalars == [(s, 1000.0 + s, "loss", pytest.approx(1.0 / (s + 1))) for s in range(5)] + [
        (5, 1006.0, "lr", 0.5)]
    (hist,) = [i for _, _, i in seen if isinstance(i, Histogram)]
    assert (hist.key, hist.buckets.count, hist.buckets.min, hist.buckets.max) == ("w", 3, 1.0, 2.5)
    assert [(s, i.key, i.text) for s, _, i in seen if isinstance(i, Text)] == [(7, "note", "hello")]


def test_a_flipped_byte_is_reported_with_its_offset(event_file):
    data = bytearray(event_file.read_bytes())
    offsets = [o for o, _ in read_records(str(event_file))]
    data[offsets[2] + 14] ^= 0xFF  # inside the third record's payload
    event_file.write_bytes(bytes(data))
    with pytest.raises(DamagedRecord) as caught:
        list(read_records(str(event_file)))
    assert caught.value.offset == offsets[2] and "payload checksum" in str(caught.value)


def test_a_file_cut_mid_record_ends_before_the_partial_record(event_file):
    data = event_file.read_bytes()
    whole = list(read_records(str(event_file)))
    event_file.write_bytes(data[: whole[-1][0] + 20])
    with open(event_file, "rb") as fh:
        reader = RecordReader(fh, str(event_file))
        assert [o for o, _ in reader] == [o for o, _ in whole[:-1]]
    assert reader.torn_tail
