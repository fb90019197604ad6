"""llama-cpp-python, imported when the embedded model is first used, with OpenMP's waiting
policy set for a CPU other processes share."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from combee.errors import ConfigError

INSTALL_HINT = (
    "the embedded model needs llama-cpp-python: run `pip install 'combee[local]'` "
    "(it compiles llama.cpp, about 6 minutes)"
)


OMP_SPIN_COUNT = "1000"
"""``GOMP_SPINCOUNT`` for llama.cpp's OpenMP threads (the llama-cpp-python wheels link GNU
OpenMP): how many times a thread that waits for the others checks before it sleeps. OpenMP's
default (300,000, about a millisecond) is harmless when every thread has a core; on a busy CPU
the waiting threads spin away the time the late thread needs, and one call ran 44x slower. At
1,000 a quiet machine measured the same speed. Set only when neither ``GOMP_SPINCOUNT`` nor
``OMP_WAIT_POLICY`` is set, and only before llama.cpp is first loaded (OpenMP reads it once;
a process that loaded OpenMP earlier, through another library, keeps that library's setting).
"""


def import_llama_cpp() -> Any:
    """The ``llama_cpp`` module, or a :class:`ConfigError` telling how to install it.

    The first import loads llama.cpp and OpenMP: :data:`OMP_SPIN_COUNT` is put in the
    environment just before, unless the user chose a waiting policy.
    """
    if "llama_cpp" not in sys.modules and not (
        os.environ.get("GOMP_SPINCOUNT") or os.environ.get("OMP_WAIT_POLICY")
    ):
        os.environ["GOMP_SPINCOUNT"] = OMP_SPIN_COUNT
    try:
        return importlib.import_module("llama_cpp")
    except ImportError as error:
        raise ConfigError(INSTALL_HINT) from error
