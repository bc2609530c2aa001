from __future__ import annotations

import random

from curvestream_wire.seqset import SeqSet


def test_random_additions_match_a_plain_set():
    rng = random.Random(3)
    ref: set[int] = set()
    s = SeqSet()
    for _ in range(2000):
        a = rng.randint(1, 500)
        b = a + rng.randint(0, 5)
        s.add(a, b)
        ref.update(range(a, b + 1))
        probe = rng.randint(0, 510)
        assert (probe in s) == (probe in ref)
    assert len(s) == len(ref)
    for first, last in s.ranges():
        assert all(x in ref for x in range(first, last + 1))
    assert all(s.ranges()[i][1] + 1 < s.ranges()[i + 1][0] for i in range(len(s.ranges()) - 1))


def test_covers_and_contiguous_prefix():
    s = SeqSet([(1, 3), (5, 9)])
    assert s.covers(5, 9) and not s.covers(3, 5)
    assert s.contiguous_from(1) == 3
    s.add(4, 4)
    assert s.ranges() == [(1, 9)]


def test_count_within_counts_only_the_members_inside_the_range():
    s = SeqSet([(1, 3), (5, 9), (20, 20)])
    assert s.count_within(1, 20) == 9
    assert s.count_within(2, 6) == 4
    assert s.count_within(10, 19) == 0
