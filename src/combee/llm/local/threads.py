"""How many threads the embedded model computes with, and how they wait for each other.

llama.cpp splits every step of a call over its threads, and the threads wait for each other at
the end of each step (hundreds of times per generated token). When every thread has a core of
its own, that wait is short. When other processes keep the cores busy, one of the threads is
often not running, and the others wait for it, spinning, for a whole scheduler time slice: on
2 cores with two CPU-bound competitors, 2 threads wrote 2 tokens/s instead of 89 (44x slower,
where the lost CPU share alone would explain 2-3x). One thread never waits for another: it slows
down just by its lost share of a core. So the backend counts, before each call, the cores other
processes are keeping busy, and uses the cores left (at least one): all of them on a quiet
machine, fewer on a busy one (:class:`FreeCores`). The measurements are in
``benchmarks/local_busy_cpu.py``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

SAMPLE_S = 0.1
"""The shortest window the load is measured over (the time since the last call counts)."""

BUSY_THRESHOLD = 0.5
"""A core counts as busy elsewhere when other processes use at least this share of it."""


def available_cores() -> int:
    """CPU cores this process may run on (llama.cpp's default of half of them is much slower)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _read_proc_stat() -> tuple[int, int] | None:
    """Busy and total CPU time of the whole machine in clock ticks (``/proc/stat``), or None."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = stat.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [int(value) for value in fields[1:9]]  # user nice system idle iowait irq softirq steal
    idle = ticks[3] + ticks[4]
    total = sum(ticks)
    return total - idle, total


def _own_cpu_ticks() -> int:
    """CPU time of this process (all its threads) in the same clock ticks."""
    times = os.times()
    hertz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    return round((times.user + times.system) * hertz)


class FreeCores:
    """Cores not kept busy by other processes, measured from the machine's CPU counters.

    Busy time of the whole machine (``/proc/stat``: every state but idle and iowait) minus this
    process's own CPU time, over the window since the previous measurement (at least
    :data:`SAMPLE_S`: a shorter window is waited out), divided by the window's length: the cores
    other processes kept busy. A core counts as busy at :data:`BUSY_THRESHOLD` of it. Where
    ``/proc/stat`` does not exist (not Linux) every core counts as free.
    """

    def __init__(
        self,
        cores: int,
        *,
        read_stat: Callable[[], tuple[int, int] | None] = _read_proc_stat,
        own_ticks: Callable[[], int] = _own_cpu_ticks,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.cores = cores
        self._read_stat = read_stat
        self._own_ticks = own_ticks
        self._clock = clock
        self._sleep = sleep
        self._last: tuple[float, tuple[int, int], int] | None = None
        self.busy_elsewhere: float | None = None
        """Cores other processes kept busy in the last window (None before a measurement)."""

    def _snapshot(self) -> tuple[float, tuple[int, int], int] | None:
        stat = self._read_stat()
        if stat is None:
            return None
        return self._clock(), stat, self._own_ticks()

    def measure(self) -> int:
        """The free cores now, at least 1 and at most :attr:`cores`."""
        if self._last is None or self._clock() - self._last[0] < SAMPLE_S:
            if self._last is None:
                self._last = self._snapshot()
                if self._last is None:
                    return self.cores
            self._sleep(max(0.0, SAMPLE_S - (self._clock() - self._last[0])))
        now = self._snapshot()
        if now is None or self._last is None:
            return self.cores
        (_, (busy_before, total_before), own_before) = self._last
        (_, (busy_now, total_now), own_now) = now
        self._last = now
        total = total_now - total_before
        if total <= 0:
            return self.cores
        machine_cores = os.cpu_count() or self.cores
        window_cores = total / machine_cores  # the window's length, in ticks of one core
        others = max(0, (busy_now - busy_before) - (own_now - own_before))
        self.busy_elsewhere = others / window_cores
        busy = int(self.busy_elsewhere + (1 - BUSY_THRESHOLD))
        return max(1, min(self.cores, machine_cores - busy))
