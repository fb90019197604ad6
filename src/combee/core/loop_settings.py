"""The settings of the training loop itself, which every run takes, declared once."""

from __future__ import annotations

from dataclasses import dataclass

from combee.declare import SettingsGroup, setting
from combee.llm.types import DEFAULT_MAX_TOKENS


@dataclass(frozen=True)
class LoopSettings(SettingsGroup):
    epochs: int = setting(1, "Passes over the training samples.", least=1)
    seed: int = setting(0, "Seed of every shuffle, split and sampling choice.", least=0)
    val_every: int = setting(0, "Validate every N iterations (0: once per epoch).", least=0)
    max_failed_share: float = setting(
        0.5,
        "Stop the run when an iteration or evaluation loses more than this share of its "
        "samples to failed calls.",
        least=0.0,
        most=1.0,
    )
    pipeline: bool = setting(
        False, "Map the next batch while this one is reduced (against a context 1 update old)."
    )
    gate: bool = setting(
        True,
        "Apply an update only where it does not lower the score on held-out samples (a "
        "minibatch of the validation split, else a share of each batch kept out of learning); "
        "the parts that lower it are left out, counted as gated.",
    )
    gate_samples: int = setting(
        0,
        "Held-out samples the gate scores each update on (0: an eighth of the batch, at least "
        "2 of the validation split; without one, an eighth of a batch of 8 or more kept out "
        "of learning, none of a smaller batch).",
        least=0,
    )
    gate_margin: float = setting(
        0.0,
        "How much an update may lower the held-out score (a share, 0 to 1) and still be applied.",
        least=0.0,
        most=1.0,
    )
    gate_share: float = setting(
        0.25,
        "The gate's narrowing credit: this share of the run's learning calls (a rollout and a "
        "reflection per sample); each update's first scoring is always made.",
        least=0.0,
        most=10.0,
    )
    baseline: bool = setting(False, "Also score the starting context on the test samples.")
    temperature: float = setting(0.0, "Sampling temperature of every call.", least=0.0)
    max_tokens: int = setting(DEFAULT_MAX_TOKENS, "Completion tokens per call.", least=1)


SPLIT_SETTINGS = ("baseline", "val_every")
"""Settings that score a task's test or validation split (a task without them refuses them)."""
