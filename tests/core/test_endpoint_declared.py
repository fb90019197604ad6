"""The endpoint's settings are declared once, on :class:`combee.llm.Endpoint`: the command
line's endpoint flags, :func:`combee.llm.connect`'s keywords, the validation and the run's
``config.json`` come from the declarations; one added there is found everywhere (the
``retry_after_cap`` case of tests/core/test_settings_declared_once.py)."""

from __future__ import annotations

import dataclasses
import inspect

from combee.llm.connect import ENDPOINT_SETTINGS, Endpoint, connect


def test_connect_takes_the_endpoint_fields_in_order() -> None:
    parameters = list(inspect.signature(connect).parameters.values())
    fields = dataclasses.fields(Endpoint)
    assert [p.name for p in parameters] == [f.name for f in fields]
    assert [p.default for p in parameters] == [f.default for f in fields]
    assert [item.name for item in ENDPOINT_SETTINGS] == [f.name for f in fields]
