"""A module's buffers against the device's memory: a call whose results (and, on an accelerator,
arguments) cannot fit is refused before XLA compiles it, one whose compiled plan cannot fit
before it runs, and XLA's RESOURCE_EXHAUSTED becomes an error naming the sizes and the stage.

Only buffers that must exist are counted: each result and argument is a whole buffer, and after
compiling, XLA's own plan says what its intermediate values take. A broadcast reduced right away
is fused into its reduction and never materializes, so an intermediate is never estimated from
the module's types (that would refuse what runs)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from reactant_lab import backend
from reactant_lab.analysis.mlir_func import parse_function
from reactant_lab.analysis.provenance import op_sources
from reactant_lab.errors import AnalysisError, DeviceMemoryError

_ALLOCATING = re.compile(r"allocat\w* (\d+) bytes")
"""XLA:CPU's size of the allocation that failed, in bytes."""
_ACCELERATOR_NEED = re.compile(r"(?:Attempting to allocate|Used) (\d+(?:\.\d+)?)([KMGTP]?)\b")
"""An accelerator's size, as XLA prints one: at run time "Attempting to allocate 8.00G. That
was not possible" (a buffer), at compile time "Ran out of memory in memory space hbm. Used
21.95G of 15.48G hbm" (what the program needs)."""
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50}


def _needed_bytes(text: str) -> int | None:
    """The bytes XLA's out-of-memory message ``text`` says were needed, or None."""
    found = _ALLOCATING.search(text)
    if found:
        return int(found.group(1))
    found = _ACCELERATOR_NEED.search(text)
    if found:  # printed to 3 significant digits or so: as near as XLA says
        return round(float(found.group(1)) * _UNITS[found.group(2)])
    return None


def size(nbytes: int) -> str:
    """``8.0 TiB (8,796,093,022,208 bytes)``."""
    value, unit = float(nbytes), "bytes"
    for name in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024:
            break
        value, unit = value / 1024, name
    short = f"{value:.1f} {unit}" if unit != "bytes" else f"{nbytes} bytes"
    return short if unit == "bytes" else f"{short} ({nbytes:,} bytes)"


def nbytes(shape: Sequence[int], dtype: Any) -> int:
    """Bytes of a dense buffer of ``shape`` and ``dtype``."""
    return int(math.prod(shape)) * int(np.dtype(dtype).itemsize)


def _device_words(device: Any, available: int) -> str:
    what = " (the machine's physical memory)" if device.platform == "cpu" else ""
    return f"the {size(available)} of memory of {device}{what}"


def check_results(fn_name: str, ir: str, results: Sequence[tuple[str, Any, Any]],
                  args: Sequence[tuple[Any, Any]], device: Any, stage: str) -> None:
    """Refuse, before compiling, a call whose results ``(path, shape, dtype)`` (and, off the
    CPU, arguments ``(shape, dtype)``, which are copied to the device) cannot fit together in
    the device's memory; the message names the largest result and the line that made it."""
    available = backend.memory_bytes(device)
    if available is None:
        return
    sizes = [nbytes(shape, dtype) for _, shape, dtype in results]
    on_device = 0 if device.platform == "cpu" else sum(nbytes(s, d) for s, d in args)
    needed = sum(sizes) + on_device
    if needed <= available:
        return
    k = int(np.argmax(sizes)) if sizes else -1
    if k < 0:
        biggest = "its arguments"
    else:
        path, shape, dtype = results[k]
        where = _made_at(ir, k)
        biggest = (f"{path} ({np.dtype(dtype).name}{list(shape)}"
                   f"{f', computed at {where}' if where else ''}) needs {size(sizes[k])}")
    together = ("" if needed == (sizes[k] if k >= 0 else 0) else
                f"; with its other results{' and arguments' if on_device else ''} the call "
                f"needs {size(needed)}")
    raise DeviceMemoryError(
        f"{fn_name}: {biggest}{together}, more than {_device_words(device, available)}. "
        f"Refused before compiling stage {stage!r}: every result (and argument) is a whole "
        "buffer. Return a reduction of it (e.g. .sum(axis=...)) or a smaller slice, or work on "
        "smaller pieces.", stage=stage, when="before compiling", needed=needed,
        available=available)


def _made_at(ir: str, k: int) -> str | None:
    """``file:line`` of the user's code that computed ``@main``'s result ``k``, if known."""
    try:
        func = parse_function(ir)
    except AnalysisError:
        return None
    source = func.results[k].source if k < len(func.results) else None
    op = next((o for o in func.ops if o.id == source), None)
    found = op_sources(ir).get(op.line) if op is not None else None
    return f"{found.file}:{found.line}" if found is not None else None


def check_plan(fn_name: str, memory: dict[str, int], device: Any, stage: str) -> None:
    """Refuse, before it runs, an executable whose buffers in XLA's own plan (intermediate
    values, results and, off the CPU, arguments, less what results share with arguments) cannot
    fit in the device's memory."""
    available = backend.memory_bytes(device)
    if available is None or not memory:
        return
    temp, out = memory.get("temp_size_in_bytes", 0), memory.get("output_size_in_bytes", 0)
    args = 0 if device.platform == "cpu" else memory.get("argument_size_in_bytes", 0)
    needed = temp + out + args - memory.get("alias_size_in_bytes", 0)
    if needed <= available:
        return
    raise DeviceMemoryError(
        f"{fn_name}: XLA's plan for stage {stage!r} needs {size(needed)} ({size(temp)} of "
        f"intermediate values, {size(out)} of results{f', {size(args)} of arguments' if args else ''}"
        f"), more than {_device_words(device, available)}. Refused before running it: compute "
        "on smaller pieces (a loop over blocks) or keep fewer large values alive at once.",
        stage=stage, when="before running", needed=needed, available=available)


def explained(exc: BaseException, fn_name: str, device: Any, stage: str,
              when: str) -> DeviceMemoryError | None:
    """XLA's RESOURCE_EXHAUSTED (``exc``, while ``when`` = 'compiling' / 'running') as a
    DeviceMemoryError naming the allocation, the device's memory and the stage; None for any
    other error."""
    if not backend.out_of_memory(exc):
        return None
    needed = _needed_bytes(str(exc))
    available = backend.memory_bytes(device)
    what = f"could not allocate {size(needed)}" if needed is not None else "ran out of memory"
    has = f"; {_device_words(device, available)[4:]}" if available is not None else ""
    return DeviceMemoryError(
        f"{fn_name}: XLA {what} {when} stage {stage!r} on {device}{has}. "
        "Compute on smaller pieces, or return reductions instead of whole large arrays.",
        stage=stage, when=when, needed=needed, available=available)
