"""The report's first sentence: which configuration to use, if any.

Only a configuration that beat the starting playbook beyond the spread over seeds is recommended
(every seed's accuracy above every run's score of the start; with the start not scored, above 0,
which any start scores at least); when none did, the sentence says so and names none. Among
those, the most accurate (mean accuracies equal at two decimals tie). A speed-up is named only
beyond timing noise: at least :data:`FASTER_ENOUGH` times faster and, with two or more seeds each,
no seed's time of the faster one reaching the slower one's. Ties whose times are within that
noise go to the first configuration in the table's order (strategy as given, then batch size),
so identical runs are recommended alike. Pure functions over :class:`Group`."""

from __future__ import annotations

from collections.abc import Sequence

from combee.report.summary import (
    TIE_DIGITS,
    Group,
    Stat,
    accuracy_text,
    front_of,
    range_text,
    scored,
    seconds_text,
)

FASTER_ENOUGH = 1.1
"""A configuration is faster than another only when it takes at most 1/this of its time."""


def recommendation(groups: Sequence[Group]) -> str:
    """One sentence: the configuration to use (or that none beat the starting playbook), a
    faster one on the Pareto front when it is faster beyond noise, and what the seeds allow one
    to conclude."""
    candidates = scored(groups)
    if not candidates:
        return "No finished run has a test accuracy yet, so there is nothing to recommend."
    with_method = len({g.method for g in groups}) > 1
    start = start_of(groups)
    gainers = [g for g in candidates if beats_start(g, start)]
    if not gainers:
        return _nothing_beat(candidates, start, with_method)
    best = max(_accuracy(g) for g in gainers)
    top = [g for g in gainers if _accuracy(g) == best]
    pick = next(g for g in top if not any(clearly_faster(o, g) for o in top))
    assert pick.accuracy is not None
    cost = f", USD {pick.cost.mean:.4f}" if pick.cost is not None and pick.cost.mean > 0 else ""
    sentence = (
        f"{pick.label(with_method)}: accuracy {accuracy_text(pick.accuracy)} "
        f"in {seconds_text(_seconds(pick))}{cost}, {_above_start(pick, start)}"
    )
    if len(candidates) == 1:
        sentence += "; the only configuration with a test accuracy, so nothing to compare it with"
    elif len(top) > 1:
        sentence += _tie(pick, [g for g in top if g is not pick], with_method)
    else:
        sentence += _against_the_rest(pick, gainers, candidates, with_method)
    left = len(candidates) - len(gainers)
    if left:
        sentence += (
            f"; {left} other configuration{'s' if left > 1 else ''} did not beat the starting "
            "playbook beyond the spread over seeds"
        )
    if max(g.accuracy.count for g in candidates if g.accuracy is not None) == 1:
        sentence += (
            ". One seed per configuration: the spread between seeds is unknown, so a small "
            "difference may be noise (give two or more seeds)"
        )
    return sentence + "."


def start_of(groups: Sequence[Group]) -> Stat | None:
    """The starting playbook's test accuracy over every run that scored it (``--baseline``)."""
    low = [g.baseline for g in groups if g.baseline is not None]
    if not low:
        return None
    count = sum(b.count for b in low)
    mean = sum(b.mean * b.count for b in low) / count
    return Stat(mean, min(b.low for b in low), max(b.high for b in low), None, count)


def beats_start(group: Group, start: Stat | None) -> bool:
    """Whether ``group`` beat the starting playbook beyond the spread over seeds: its mean
    above the start's at the sentence's decimals, and its lowest seed above the start's
    highest score (its own runs' when they scored it, else every run's; 0 when none did)."""
    accuracy = group.accuracy
    if accuracy is None:
        return False
    base = group.baseline or start
    if base is None:
        return accuracy.low > 0
    above = round(accuracy.mean, TIE_DIGITS) > round(base.mean, TIE_DIGITS)
    return above and accuracy.low > base.high


def clearly_faster(fast: Group, slow: Group) -> bool:
    """Whether ``fast`` trains faster than ``slow`` beyond timing noise."""
    if fast.seconds is None or slow.seconds is None:
        return False
    if fast.seconds.mean * FASTER_ENOUGH > slow.seconds.mean:
        return False
    apart = fast.seconds.high < slow.seconds.low
    return apart or fast.seconds.count < 2 or slow.seconds.count < 2


def _start_text(start: Stat) -> str:
    mean = f"{start.mean:.{TIE_DIGITS}f}"
    return mean if start.low == start.high else f"{mean} ({range_text(start)})"


def _above_start(pick: Group, start: Stat | None) -> str:
    base = pick.baseline or start
    if base is None:
        return "above 0 on every seed (the starting playbook was not scored: give --baseline)"
    return f"above the starting playbook's {_start_text(base)} on every seed"


def _nothing_beat(candidates: Sequence[Group], start: Stat | None, with_method: bool) -> str:
    best = max(candidates, key=_accuracy)  # the first of equals, in the table's order
    assert best.accuracy is not None
    named = f"the most accurate, {best.label(with_method)}, scored {accuracy_text(best.accuracy)}"
    if start is None:
        if all(g.accuracy is not None and g.accuracy.high == 0 for g in candidates):
            return (
                "Nothing to recommend: every configuration scored 0.00 on the test set, so none "
                "shows that it learned anything (check the model and the scorer; give --baseline "
                "to score the starting playbook too)."
            )
        return (
            f"Nothing to recommend: no configuration scored above 0 on every seed; {named} "
            "(the starting playbook was not scored: give --baseline)."
        )
    return (
        f"Nothing to recommend: no configuration beat the starting playbook "
        f"({_start_text(start)}) beyond the spread over seeds; {named}."
    )


def _tie(pick: Group, others: Sequence[Group], with_method: bool) -> str:
    """The tie clause: the fastest named when it is faster than the others beyond noise,
    else the first in the table, said to be so."""
    clause = f"; it ties for the highest accuracy with {_names(others, with_method)}"
    if all(clearly_faster(pick, o) for o in others):
        nearest = min(others, key=_seconds)
        return clause + (
            f" and is the fastest of them ({_seconds(nearest) / _seconds(pick):.1f}x faster "
            f"than {nearest.label(with_method)})"
        )
    return clause + (
        " and trains about as fast (within timing noise) as "
        f"{_names([o for o in others if not clearly_faster(pick, o)], with_method)}, so the "
        "first of them in the table is named"
    )


def _against_the_rest(
    pick: Group, gainers: Sequence[Group], candidates: Sequence[Group], with_method: bool
) -> str:
    """How the single most accurate ``pick`` compares: fastest or not, a configuration that
    also beat the start and is faster beyond noise on the Pareto front, and whether the
    runner-up's seeds reach into its own."""
    assert pick.accuracy is not None
    clause = "; the most accurate"
    if not any(clearly_faster(g, pick) for g in candidates):
        clause += " and as fast as any (within timing noise)"
    faster = [g for g in front_of(gainers) if clearly_faster(g, pick)]
    if faster:
        quick = faster[0]
        clause += (
            f"; {quick.label(with_method)} is {_seconds(pick) / _seconds(quick):.1f}x faster "
            f"at {_accuracy(quick):.{TIE_DIGITS}f}"
        )
    rest = [g for g in candidates if g is not pick]
    runner = max(rest, key=_accuracy)
    if (
        runner.accuracy is not None
        and pick.accuracy.count > 1
        and runner.accuracy.high >= pick.accuracy.low
    ):
        clause += (
            f"; but its seeds overlap those of {runner.label(with_method)} "
            f"({range_text(runner.accuracy)}), so the lead is within seed-to-seed spread"
        )
    return clause


def _names(groups: Sequence[Group], with_method: bool) -> str:
    names = [g.label(with_method) for g in groups]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _accuracy(group: Group) -> float:
    """The mean accuracy as the sentence shows it (equal ones tie)."""
    assert group.accuracy is not None
    return round(group.accuracy.mean, TIE_DIGITS)


def _seconds(group: Group) -> float:
    assert group.seconds is not None
    return group.seconds.mean
