"""How finish() and sync show a long wait: a bar on a terminal, sentences elsewhere, nothing for a short wait."""

from __future__ import annotations

import io

from curvestream.progress import WaitProgress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_terminal_gets_a_bar_redrawn_in_place_and_ended_with_a_newline():
    out, clock = Terminal(), Clock()
    show = WaitProgress("sync", stream=out, clock=clock)
    for left in (4, 2, 0):
        show(left)
        clock.now += 1
    assert out.getvalue() == ("\rsync [------------------------------] 0/4 batches"
                              "\rsync [###############---------------] 2/4 batches"
                              "\rsync [##############################] 4/4 batches\n")


def test_a_log_gets_a_sentence_every_few_seconds_and_a_short_wait_gets_nothing():
    out, clock = io.StringIO(), Clock()
    show = WaitProgress("run p/r", stream=out, points_per_batch=10, delay_s=1.0, every_s=5.0, clock=clock)
    show(9)
    clock.now = 0.5
    show(3)
    show(0)
    assert out.getvalue() == ""  # done within a second: nothing to say
    show = WaitProgress("run p/r", stream=out, points_per_batch=10, delay_s=1.0, every_s=5.0, clock=clock)
    for t, left in ((0.5, 9), (1.5, 8), (3.0, 7), (7.0, 5), (8.0, 0)):
        clock.now = t
        show(left)
    assert out.getvalue().splitlines() == ["run p/r: 8 of 9 batches left (~80 points)",
                                           "run p/r: 5 of 9 batches left (~50 points)",
                                           "run p/r: all 9 batches done"]
