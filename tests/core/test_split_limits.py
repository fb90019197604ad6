"""The rule of a run's sample limits: validation and test follow the training limit unless
given."""

from __future__ import annotations

import pytest

from combee.settings import run_settings


@pytest.mark.parametrize(
    ("given", "limits"),
    [
        ({}, (None, None, None)),
        ({"train_limit": 8}, (8, 8, 8)),
        ({"train_limit": 8, "val_limit": 0}, (8, 0, 8)),
        ({"train_limit": 8, "test_limit": 50}, (8, 8, 50)),
        ({"val_limit": 5}, (None, 5, None)),
    ],
)
def test_validation_and_test_follow_the_training_limit_unless_given(
    given: dict[str, int], limits: tuple[int | None, ...]
) -> None:
    assert run_settings(given).split_limits() == limits
