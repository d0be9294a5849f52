"""What a device platform brings to JAX's calls: an accelerator another process holds, said in
our terms; arguments a platform's copy to the device gets wrong, rewritten first.

Only backend and its private modules import this module.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from reactant_lab.errors import DeviceBusyError, ReactantLabError

_HELD = ("libtpu multi-process lockfile", "libtpu_lockfile", "Device or resource busy",
         "already in use")
"""What JAX's error says when another process holds the accelerator. Measured on a TPU v5e (jax
0.10.2), a second process got "Unable to initialize backend 'tpu': ABORTED: Internal error when
accessing libtpu multi-process lockfile"; older libtpu said the device file was busy."""
_BACKEND = re.compile(r"Unable to initialize backend '([^']+)'")


def held_device_error(exc: BaseException) -> DeviceBusyError | None:
    """The DeviceBusyError for JAX's error ``exc`` when it says that another process holds the
    accelerator JAX tried to open, else None."""
    text = str(exc)
    found = _BACKEND.search(text)
    if (not isinstance(exc, RuntimeError) or isinstance(exc, ReactantLabError)
            or found is None or not any(sign in text for sign in _HELD)):
        return None
    platform = found.group(1)
    name = platform.upper() if platform in ("tpu", "gpu") else platform
    message = (
        f"JAX could not open the {name}: another process holds it (one process at a time can "
        f"use it: a notebook kernel, a test run or a script that has used it).\n"
        f"What to do: stop that process (shut its notebook kernel down, or let the run end), "
        f"then restart this one; or run this one on the CPU: start it with JAX_PLATFORMS=cpu "
        f"and REACTANT_LAB_DEVICE=cpu set (in a notebook, jax.config.update('jax_platforms', "
        f"'cpu') before anything uses JAX) and pass device='cpu' where you named the {name}. "
        f"device='cpu' alone does not avoid it: JAX opens every platform it finds at once.\n"
        f"JAX said: {text}")
    return DeviceBusyError(message, platform=platform, cause=text)


@contextlib.contextmanager
def device_errors() -> Iterator[None]:
    """Within it, JAX's error for an accelerator another process holds is a DeviceBusyError."""
    try:
        yield
    except RuntimeError as exc:
        held = held_device_error(exc)
        if held is None:
            raise
        raise held from None


STRIDED_COMPLEX_PLATFORMS = frozenset({"tpu"})
"""Platforms whose copy of a complex NumPy array that is not C-contiguous onto the device gave
wrong values. Measured on a TPU v5e (jax 0.10.2): a Fortran-order complex128 argument arrived
as its memory read in C order (a 4x5 array's elements in the wrong places; float32, float64 and
int64 in Fortran order, and complex128 in C order, arrived right). Such arrays are copied into
C order first (the copy to the device reorders the elements anyway)."""


def strided_complex_params(platform: str, params: Sequence[Any]) -> tuple[int, ...]:
    """The indices of the complex parameters (``(shape, dtype, weak_type)`` each) whose NumPy
    arguments must be C-contiguous on ``platform``; () when none."""
    if platform not in STRIDED_COMPLEX_PLATFORMS:
        return ()
    return tuple(i for i, (_, dtype, _) in enumerate(params) if np.dtype(dtype).kind == "c")


def in_c_order(value: Any) -> Any:
    """``value``, a C-contiguous copy when it is a complex NumPy array that is not."""
    if (isinstance(value, np.ndarray) and value.dtype.kind == "c"
            and not value.flags.c_contiguous):
        return np.ascontiguousarray(value)
    return value


def transfer_ready(device: Any) -> Callable[[Any], Any]:
    """What a value is made into before it is copied onto ``device``: ``in_c_order`` on the
    platforms of STRIDED_COMPLEX_PLATFORMS, else the value itself."""
    return in_c_order if device.platform in STRIDED_COMPLEX_PLATFORMS else _same


def _same(value: Any) -> Any:
    return value
