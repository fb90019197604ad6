"""The endpoint's settings are declared once, on :class:`combee.llm.Endpoint`: the command
line's endpoint flags, :func:`combee.llm.connect`'s keywords, the validation and the run's
``config.json`` come from the declarations; one added there is found everywhere (the
``retry_after_cap`` case of tests/core/test_settings_declared_once.py)."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from combee.errors import ConfigError
from combee.llm.connect import ENDPOINT_SETTINGS, Endpoint, connect


def test_connect_takes_the_endpoint_fields_in_order() -> None:
    parameters = list(inspect.signature(connect).parameters.values())
    fields = dataclasses.fields(Endpoint)
    assert [p.name for p in parameters] == [f.name for f in fields]
    assert [p.default for p in parameters] == [f.default for f in fields]
    assert [item.name for item in ENDPOINT_SETTINGS] == [f.name for f in fields]


@pytest.mark.parametrize("timeout_s", [0, 0.0, -5.0, float("nan"), float("inf"), "30"])
def test_a_timeout_that_is_not_a_positive_number_is_refused_naming_it(timeout_s: Any) -> None:
    with pytest.raises(ConfigError) as caught:
        Endpoint(timeout_s=timeout_s)
    assert caught.value.setting == "timeout_s"
    assert str(caught.value).startswith("timeout_s must be ")
    assert "more than 0" in str(caught.value)


def test_the_timeout_bound_is_declared() -> None:
    (item,) = [item for item in ENDPOINT_SETTINGS if item.name == "timeout_s"]
    assert item.bounds.above == 0.0
    assert Endpoint(timeout_s=0.001).timeout_s == 0.001
