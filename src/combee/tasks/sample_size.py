"""How large one sample may be: a sample is sent whole to the model in every call about it, so
one far larger than any prompt (a 200 MB line) is refused when the run starts, naming its file
and line and the setting that bounds it."""

from __future__ import annotations

from collections.abc import Iterable

from combee.errors import DatasetError, parameter
from combee.tasks.base import Sample

DEFAULT_MAX_SAMPLE_CHARS = 4_000_000
"""About a million tokens: more than any model reads in one call."""


def sample_chars(sample: Sample) -> int:
    """The characters of ``sample`` sent to the model: its question, context and answer."""
    return len(sample.question) + len(sample.context) + len(sample.answer)


def check_sample_sizes(samples: Iterable[Sample], most: int, task: str) -> None:
    """A DatasetError naming the file and line (else the task and the sample's id) of the first
    sample of more than ``most`` characters."""
    for sample in samples:
        size = sample_chars(sample)
        if size <= most:
            continue
        source, line = sample.meta.get("source"), sample.meta.get("line")
        where = str(source) if source else f"{task} sample {sample.id}"
        raise DatasetError(
            where,
            line if isinstance(line, int) else None,
            f"the sample holds {size:,} characters (question, context and answer), more than "
            f"{parameter('max_sample_chars', most)} allows: shorten it, or raise "
            f"{parameter('max_sample_chars')}",
        )
