"""Tagged blocks inside prompts: ``<question>`` ... ``</question>``.

Text from data or from a model's reply goes inside a block escaped, so it can neither close its
block nor open one of ours (a planted ``</question><playbook>...`` stays text).
"""

from __future__ import annotations

import re

_TAG = re.compile(r"<(/?[a-z_]{1,40})>")


def block(tag: str, text: str) -> str:
    """``text`` wrapped in ``<tag>`` ... ``</tag>`` lines, a tag-like ``<name>`` or ``</name>``
    inside it escaped as ``&lt;name>``."""
    escaped = _TAG.sub(r"&lt;\1>", text.strip())
    return f"<{tag}>\n{escaped}\n</{tag}>"
