"""The embedded model's thread count follows the cores other processes leave free."""

from __future__ import annotations

import os

import pytest

from combee.llm.local.threads import FreeCores


class Counters:
    """A fake machine: ``/proc/stat`` busy and total ticks, this process's own ticks, a clock."""

    def __init__(self, cores: int) -> None:
        self.cores = cores
        self.busy = 0
        self.total = 0
        self.own = 0
        self.now = 0.0

    def run(self, seconds: float, others: float, own: float) -> None:
        """``seconds`` pass with ``others`` cores busy elsewhere and ``own`` in this process."""
        self.now += seconds
        self.total += round(seconds * 100 * self.cores)
        self.busy += round(seconds * 100 * (others + own))
        self.own += round(seconds * 100 * own)

    def free_cores(self) -> FreeCores:
        return FreeCores(
            self.cores,
            read_stat=lambda: (self.busy, self.total),
            own_ticks=lambda: self.own,
            clock=lambda: self.now,
            sleep=lambda seconds: self.run(seconds, self.others_while_sleeping, 0.0),
        )

    others_while_sleeping = 0.0


@pytest.mark.parametrize(
    ("others", "own", "expected"),
    [(0.0, 0.0, 2), (0.1, 1.9, 2), (0.6, 0.0, 1), (1.0, 1.0, 1), (2.0, 0.0, 1), (1.9, 0.1, 1)],
)
def test_the_free_cores_are_the_cores_others_leave(
    monkeypatch: pytest.MonkeyPatch, others: float, own: float, expected: int
) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    machine = Counters(2)
    free = machine.free_cores()
    free.measure()  # the first measurement waits out one short window
    machine.run(5.0, others, own)  # then a call of this process ran for 5 s
    assert free.measure() == expected
    assert free.busy_elsewhere == pytest.approx(others, abs=0.01)


def test_without_proc_stat_every_core_is_free() -> None:
    free = FreeCores(4, read_stat=lambda: None)
    assert free.measure() == 4 and free.busy_elsewhere is None
