"""A settings group is a factory's parameter: the engine offers each group by its owner's name and
each setting by its own, so a factory that takes the group takes all of its settings, one that
takes plain keywords still gets them, and a setting neither way taken is refused by name."""

from __future__ import annotations

from typing import Any

import pytest

from combee.declare import groups_in, offered
from combee.errors import ConfigError
from combee.methods.ace.settings import AceSettings
from combee.plugins import call_with_accepted
from combee.settings import run_settings
from combee.strategies.settings import CombeeSettings, TopKSettings


def takes_the_group(*, ace: AceSettings = AceSettings()) -> AceSettings:
    return ace


def takes_a_keyword(*, token_budget: int | None = 1) -> int | None:
    return token_budget


def takes_neither(*, seed: int = 0) -> int:
    return seed


def test_each_group_is_made_from_the_run_settings() -> None:
    settings = run_settings({"token_budget": 500, "duplication": 3, "top_k": 4, "epochs": 2})
    made = groups_in(settings, ("ace", "combee", "topk"))
    assert made == [
        TopKSettings(top_k=4),
        CombeeSettings(duplication=3),
        AceSettings(token_budget=500),
    ]


def test_a_factory_gets_the_group_or_its_settings_by_name() -> None:
    options: dict[str, Any] = offered([AceSettings(token_budget=700, screen=False)])
    assert call_with_accepted(takes_the_group, options, insist={"token_budget", "screen"}) == (
        AceSettings(token_budget=700, screen=False)
    )
    assert call_with_accepted(takes_a_keyword, options, insist={"token_budget"}) == 700


def test_a_setting_the_factory_does_not_take_either_way_is_refused_by_name() -> None:
    options = offered([AceSettings(screen=False)])
    with pytest.raises(ConfigError) as caught:
        call_with_accepted(takes_neither, options, insist={"screen"}, name="method 'mine'")
    assert caught.value.setting == "screen" and "method 'mine' does not take it" in str(
        caught.value
    )
    with pytest.raises(ConfigError) as caught:
        call_with_accepted(takes_a_keyword, options, insist={"screen"}, name="method 'mine'")
    assert caught.value.setting == "screen"


@pytest.mark.parametrize(
    ("made", "setting"),
    [
        (lambda: AceSettings(token_budget=0), "token_budget"),
        (lambda: CombeeSettings(groups="cube-root"), "groups"),
        (lambda: TopKSettings(top_k=True), "top_k"),
    ],
)
def test_a_group_made_by_hand_is_checked_like_the_run_settings(made: Any, setting: str) -> None:
    with pytest.raises(ConfigError) as caught:
        made()
    assert caught.value.setting == setting


@pytest.mark.parametrize("tau", [0, 0.0, -0.5])
def test_tau_must_be_above_zero_as_the_controller_needs(tau: float) -> None:
    with pytest.raises(ConfigError) as refused:
        run_settings({"tau": tau})
    assert refused.value.setting == "tau" and "more than 0" in str(refused.value)
    assert run_settings({"tau": 1e-9}).tau == 1e-9
