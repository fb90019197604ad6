"""Every row of the report says which of ACE's repairs its run had on."""

from __future__ import annotations

from combee.methods.ace.settings import REPAIRS, AceSettings
from combee.report.table import COLUMNS, repairs


def test_the_row_names_the_repairs_that_were_on() -> None:
    assert all(getattr(AceSettings(), name) is True for name in REPAIRS)  # on by default
    assert repairs({"method": "ace", **dict.fromkeys(REPAIRS, True)}) == "on"
    assert repairs({"method": "ace-traces", **dict.fromkeys(REPAIRS, False)}) == "off"
    some = {"method": "ace", "copy_rules": True, "drop_contradictions": False}
    assert repairs({**some, "overrule_drops": True}) == "copy_rules+overrule_drops"
    assert repairs({"method": "ace"}) == "on"  # before they were settings, they always ran
    assert repairs({"method": "gepa"}) is None
    assert "repairs" in [column.key for column in COLUMNS]
