"""The report's answer to "which strategy should I use", as pure logic: runs in numeric order with
their seeds together, each strategy × batch size over its seeds, the recommendation sentence, and
the figure helpers that keep labels and equal lines readable."""

from __future__ import annotations

import statistics
from typing import Any

import pytest

from combee.report.plot_style import LineStyle, pyplot, shift_percent, sizes_axis
from combee.report.plot_timeline import run_label
from combee.report.recommend import recommendation
from combee.report.summary import Stat, groups_of, ordered


def row(
    strategy: str,
    batch: int | str,
    seed: int,
    accuracy: float | None = None,
    seconds: float | None = None,
    *,
    chosen: int | None = None,
    method: str = "ace",
    status: str = "finished",
) -> dict[str, Any]:
    size = chosen if isinstance(batch, str) else batch
    return {
        "name": f"{strategy}-b{batch}-s{seed}",
        "method": method,
        "strategy": strategy,
        "batch_size": batch,
        "effective_batch_size": size,
        "seed": seed,
        "status": status,
        "test_accuracy": accuracy,
        "train_seconds": seconds,
        "cost": None,
        "baseline_test_accuracy": None,
    }


def names(rows: list[dict[str, Any]]) -> list[str]:
    return [rows[i]["name"] for i in ordered(rows)]


def test_rows_go_in_numeric_batch_order_with_seeds_together() -> None:
    # As a directory listing gives them: b16 before b4, seeds apart.
    listed = [
        row("combee", 16, 1), row("combee", 16, 0), row("combee", 4, 1), row("combee", 4, 0),
        row("naive", 16, 0), row("naive", 4, 0), row("combee", "auto", 0, chosen=8),
        row("naive", 4, 1),
    ]  # fmt: skip
    assert names(listed) == [
        "combee-b4-s0", "combee-b4-s1", "combee-b16-s0", "combee-b16-s1", "combee-bauto-s0",
        "naive-b4-s0", "naive-b4-s1", "naive-b16-s0",
    ]  # fmt: skip
    # Strategies keep the order they come in (a grid's own order), not the alphabet's.
    grid = [row("naive", 16, 0), row("combee", 4, 0), row("naive", 4, 0)]
    assert names(grid) == ["naive-b4-s0", "naive-b16-s0", "combee-b4-s0"]


def test_each_strategy_and_batch_size_is_summarised_over_its_finished_seeds() -> None:
    rows = [
        row("naive", 16, 0, 0.75, 10.0), row("naive", 16, 1, 0.5, 14.0),
        row("naive", 16, 2, 0.25, 12.0), row("naive", 4, 0, 0.9, 40.0),
        row("naive", 4, 1, None, 3.0, status="unfinished"),
    ]  # fmt: skip
    small, large = groups_of(rows)
    assert (small.batch, large.batch) == ("4", "16")
    assert large.seeds == (0, 1, 2) and large.runs == (
        "naive-b16-s0",
        "naive-b16-s1",
        "naive-b16-s2",
    )
    accuracy = large.accuracy
    assert accuracy is not None and accuracy.count == 3
    assert accuracy.mean == pytest.approx(statistics.mean([0.75, 0.5, 0.25]))
    assert (accuracy.low, accuracy.high) == (0.25, 0.75)
    assert accuracy.std == pytest.approx(statistics.stdev([0.75, 0.5, 0.25]))
    assert large.seconds is not None and large.seconds.mean == pytest.approx(12.0)
    # The unfinished run is listed but not averaged: one seed, no standard deviation.
    assert small.runs == ("naive-b4-s0", "naive-b4-s1") and small.seeds == (0,)
    assert small.accuracy == Stat(0.9, 0.9, 0.9, None, 1)
    assert small.seconds is not None and small.seconds.mean == 40.0


def test_auto_cells_whose_seeds_chose_apart_show_both_sizes() -> None:
    (group,) = groups_of(
        [row("combee", "auto", 0, 0.5, 1.0, chosen=8), row("combee", "auto", 1, 0.5, 1.0, chosen=4)]
    )
    assert group.batch == "auto→4/8" and group.batch_size == 6.0


def test_the_sentence_names_the_most_accurate_and_a_faster_pareto_choice() -> None:
    rows = [
        row("combee", 16, 0, 0.80, 40.0), row("combee", 16, 1, 0.82, 42.0),
        row("naive", 16, 0, 0.60, 20.0), row("naive", 16, 1, 0.64, 22.0),
        row("naive", 4, 0, 0.50, 80.0), row("naive", 4, 1, 0.52, 82.0),
    ]  # fmt: skip
    assert recommendation(groups_of(rows)) == (
        "combee at batch 16: accuracy 0.81 (0.80–0.82 over 2 seeds) in 41 s, above 0 on every "
        "seed (the starting playbook was not scored: give --baseline); the most accurate; "
        "naive at batch 16 is 2.0x faster at 0.62."
    )


def test_the_sentence_says_when_the_lead_is_within_the_seeds_spread() -> None:
    rows = [
        row("combee", 8, 0, 0.70, 10.0), row("combee", 8, 1, 0.90, 10.0),
        row("naive", 8, 0, 0.60, 5.0), row("naive", 8, 1, 0.76, 5.0),
    ]  # fmt: skip
    sentence = recommendation(groups_of(rows))
    assert sentence.startswith("combee at batch 8: accuracy 0.80 (0.70–0.90 over 2 seeds) in 10 s")
    assert "naive at batch 8 is 2.0x faster at 0.68" in sentence
    assert sentence.endswith(
        "but its seeds overlap those of naive at batch 8 (0.60–0.76), so the lead is within "
        "seed-to-seed spread."
    )


def test_ties_go_to_the_fastest_and_are_said_to_be_ties() -> None:
    rows = [
        row("combee", 16, 0, 0.875, 0.38), row("combee", 16, 1, 0.875, 0.38),
        row("naive", 16, 0, 0.875, 0.30), row("naive", 16, 1, 0.875, 0.30),
        row("naive", 4, 0, 0.876, 0.77), row("naive", 4, 1, 0.874, 0.77),
    ]  # fmt: skip
    sentence = recommendation(groups_of(rows))
    assert sentence == (
        "naive at batch 16: accuracy 0.88 (0.88–0.88 over 2 seeds) in 0.3 s, above 0 on every "
        "seed (the starting playbook was not scored: give --baseline); it ties for the "
        "highest accuracy with combee at batch 16 and naive at batch 4 and is the fastest of them "
        "(1.3x faster than combee at batch 16)."
    )


def test_one_seed_is_said_to_leave_the_spread_unknown() -> None:
    rows = [row("combee", 4, 0, 0.9, 12.0), row("naive", 4, 0, 0.7, 11.9)]
    sentence = recommendation(groups_of(rows))
    assert sentence.startswith(
        "combee at batch 4: accuracy 0.90 (1 seed) in 12 s, above 0 on every seed (the starting "
        "playbook was not scored: give --baseline); the most accurate"
    )
    assert "faster" not in sentence  # 12 s against 11.9 s is no real difference
    assert sentence.endswith(
        "One seed per configuration: the spread between seeds is unknown, so a small difference "
        "may be noise (give two or more seeds)."
    )


def test_one_configuration_or_none_finished_is_said_plainly() -> None:
    alone = recommendation(
        groups_of([row("combee", 4, 0, 0.5, 3.0), row("combee", 4, 1, 0.7, 5.0)])
    )
    assert alone == (
        "combee at batch 4: accuracy 0.60 (0.50–0.70 over 2 seeds) in 4 s, above 0 on every seed "
        "(the starting playbook was not scored: give --baseline); the only configuration with a "
        "test accuracy, so nothing to compare it with."
    )
    unfinished = [row("combee", 4, 0, None, 3.0, status="unfinished")]
    assert recommendation(groups_of(unfinished)).startswith("No finished run has a test accuracy")


def test_two_methods_are_named_in_the_sentence() -> None:
    rows = [row("combee", 4, 0, 0.9, 5.0, method="gepa"), row("combee", 4, 0, 0.6, 5.0)]
    assert recommendation(groups_of(rows)).startswith("gepa combee at batch 4: accuracy 0.90")


def test_a_timeline_row_names_its_iterations_and_reduce_calls() -> None:
    assert run_label([{"reduce_levels": [2, 1]}] * 4) == "4 iterations, reduce calls 2+1 each"
    assert run_label([{"reduce_levels": [4, 1]}]) == "1 iteration, reduce calls 4+1"
    mixed = [{"reduce_levels": [2, 1]}, {"reduce_levels": [2, 1]}, {"reduce_levels": [1]}]
    assert run_label(mixed) == "3 iterations, reduce calls 2+1 ×2, 1 ×1"
    assert run_label([{"wall_s": 1.0}] * 3) == "3 iterations"  # a GEPA run records none


def test_equal_lines_differ_in_marker_style_and_position() -> None:
    styles = [LineStyle.of(i, 3) for i in range(3)]
    assert len({s.marker for s in styles}) == len({s.linestyle for s in styles}) == 3
    assert styles[0].shift < styles[1].shift == 1.0 < styles[2].shift
    assert styles[0].size > styles[1].size > styles[2].size  # equal points nest
    assert shift_percent(3) == pytest.approx(100 * (styles[2].shift - 1))


def test_batch_size_ticks_are_the_sizes_as_numbers() -> None:
    plt = pyplot()
    if plt is None:
        pytest.skip("matplotlib is not installed")
    figure, axis = plt.subplots()
    axis.plot([1, 4, 16, 32], [0.1, 0.2, 0.3, 0.4])
    sizes_axis(axis, [1.0, 4.0, 16.0, 32.0])
    figure.canvas.draw()
    assert [t.get_text() for t in axis.get_xticklabels()] == ["1", "4", "16", "32"]
    assert axis.get_xscale() == "log"
    plt.close(figure)


def with_start(rows: list[dict[str, Any]], *starts: float) -> list[dict[str, Any]]:
    """``rows`` with the starting playbook scored, seed by seed (``starts[seed]``)."""
    return [{**r, "baseline_test_accuracy": starts[r["seed"]]} for r in rows]


def test_nothing_is_recommended_when_every_accuracy_is_zero() -> None:
    rows = [
        row("naive", 4, 0, 0.0, 10.0), row("naive", 4, 1, 0.0, 11.0),
        row("combee", 4, 0, 0.0, 6.0), row("combee", 4, 1, 0.0, 6.5),
    ]  # fmt: skip
    sentence = recommendation(groups_of(rows))
    assert sentence.startswith("Nothing to recommend: every configuration scored 0.00")
    assert "at batch" not in sentence and "faster" not in sentence
    scored_start = recommendation(groups_of(with_start(rows, 0.0, 0.0)))
    assert scored_start.startswith(
        "Nothing to recommend: no configuration beat the starting playbook (0.00) beyond the "
        "spread over seeds"
    )


def test_only_a_gain_beyond_the_spread_over_seeds_is_recommended() -> None:
    rows = with_start(
        [
            # combee's mean is higher, but its lower seed is no better than the start's best.
            row("combee", 4, 0, 0.40, 5.0), row("combee", 4, 1, 0.90, 5.0),
            row("naive", 4, 0, 0.60, 9.0), row("naive", 4, 1, 0.65, 9.0),
        ],
        0.40, 0.50,
    )  # fmt: skip
    sentence = recommendation(groups_of(rows))
    assert sentence.startswith("naive at batch 4: accuracy 0.62 (0.60–0.65 over 2 seeds) in 9 s")
    assert "above the starting playbook's 0.45 (0.40–0.50) on every seed" in sentence
    assert "1 other configuration did not beat the starting playbook" in sentence
    assert "combee at batch 4 is" not in sentence  # faster, but no gain to recommend
    nothing = with_start([r for r in rows if r["strategy"] == "combee"], 0.40, 0.50)
    assert recommendation(groups_of(nothing)).startswith(
        "Nothing to recommend: no configuration beat the starting playbook (0.45 (0.40–0.50))"
    )


def test_a_tie_within_timing_noise_goes_to_the_first_in_the_table_whatever_the_noise() -> None:
    def grid(naive: tuple[float, float], combee: tuple[float, float]) -> str:
        rows = [
            row("naive", 16, 0, 0.875, naive[0]), row("naive", 16, 1, 0.875, naive[1]),
            row("combee", 16, 0, 0.875, combee[0]), row("combee", 16, 1, 0.875, combee[1]),
        ]  # fmt: skip
        return recommendation(groups_of(rows))

    # The same grid twice: which configuration came out a few percent faster is noise.
    first, second = grid((1.70, 1.74), (1.68, 1.73)), grid((1.69, 1.72), (1.71, 1.76))
    assert first == second
    assert first.startswith("naive at batch 16: accuracy 0.88")
    assert "x faster" not in first
    assert first.endswith(
        "it ties for the highest accuracy with combee at batch 16 and trains about as fast "
        "(within timing noise) as combee at batch 16, so the first of them in the table is named."
    )
    # 10% faster on the means, but the seeds' times overlap: no speed-up is claimed.
    overlapping = grid((1.0, 1.6), (1.4, 1.5))
    assert "x faster" not in overlapping and overlapping.startswith("naive at batch 16")


def test_a_speed_up_is_named_only_beyond_noise() -> None:
    rows = [
        row("combee", 16, 0, 0.90, 40.0), row("combee", 16, 1, 0.92, 41.0),
        row("naive", 16, 0, 0.60, 39.0), row("naive", 16, 1, 0.64, 40.5),
    ]  # fmt: skip
    sentence = recommendation(groups_of(rows))
    assert "faster at" not in sentence and "1.0x" not in sentence
    assert "the most accurate and as fast as any (within timing noise)" in sentence
