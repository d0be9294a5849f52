"""What the device supports: a module its XLA compiler is known to abort on is refused before XLA
compiles it (UnsupportedOnDeviceError, with a reproducer), and what the device computes another
way (float64 emulated on a TPU) becomes a compile note. The tables are
analysis/device_limits.py's; this module applies them to a device."""

from __future__ import annotations

from typing import Any

from reactant_lab import backend
from reactant_lab.analysis.device_limits import Finding, emulation_notes, unsupported_ops
from reactant_lab.analysis.normalize import strip_locations
from reactant_lab.analysis.provenance import op_sources
from reactant_lab.errors import UnsupportedOnDeviceError
from reactant_lab.stages.reproducer import write_files

_RERUN = '''"""Compile input.mlir for the {platform} as reactant_lab would have: python rerun.py

reactant_lab refused to: {why}. Expect this script to end the process the same way.
"""

import pathlib

import jax
from jax.extend import backend as jex_backend
from jaxlib import xla_client

here = pathlib.Path(__file__).resolve().parent
device = jax.devices({platform!r})[0]
options = jex_backend.get_compile_options(num_replicas=1, num_partitions=1)
device.client.compile_and_load((here / "input.mlir").read_text(),
                               xla_client.DeviceList((device,)), options)
print("XLA compiled input.mlir for", device)
'''

_DTYPES = {"complex<f64>": "complex128", "complex<f32>": "complex64", "f64": "float64",
           "f32": "float32", "f16": "float16", "bf16": "bfloat16",
           **{f"{u}i{n}": f"{u}int{n}" for u in ("", "u") for n in (8, 16, 32, 64)}}
"""MLIR element type -> the NumPy name a user knows it by."""


def platform_of(device: Any) -> str:
    """The platform the tables are read for ('cpu', 'tpu', 'cuda', ...)."""
    return backend.platform(device)


def check_supported(fn_name: str, ir: str, device: Any, stage: str) -> None:
    """Raise UnsupportedOnDeviceError, with a reproducer, when module ``ir`` holds an op that
    ``device``'s XLA compiler is known not to take (``device_limits.LIMITS``)."""
    platform = platform_of(device)
    if platform == "cpu":
        return
    shown = strip_locations(ir)
    found = unsupported_ops(shown, platform)
    if not found:
        return
    first = found[0]
    lim = first.limit
    dtype = _DTYPES.get(lim.element_type, lim.element_type)
    to = (f" to {_DTYPES.get(lim.result_type, lim.result_type)}" if lim.result_type is not None
          else "")
    where = _write_reproducer(ir, platform, found)
    source = op_sources(ir).get(first.line)
    at = f" (from {source.file}:{source.line})" if source is not None else ""
    more = f" and {len(found) - 1} more such op(s)" if len(found) > 1 else ""
    message = (
        f"{fn_name}: stage {stage!r} has {lim.op} on {dtype} ({lim.element_type}){to}{at}{more}, "
        f"which {device} ({platform}) cannot compile: {lim.why}. It was not handed to XLA; "
        f"this process is unharmed.\n  line {first.line}: {first.text}\n"
        f"What to do: {lim.todo}.\n"
        + (f"Reproducer: {where} (python {where}/rerun.py compiles it there)" if where
           else "No reproducer could be written."))
    raise UnsupportedOnDeviceError(message, op=lim.op, dtype=dtype, device=str(device),
                                   stage=stage, todo=lim.todo, reproducer=where)


def compile_notes(ir: str, device: Any) -> tuple[str, ...]:
    """What ``device`` computes module ``ir`` differently from the CPU, one note each."""
    platform = platform_of(device)
    return () if platform == "cpu" else emulation_notes(ir, platform)


def _write_reproducer(ir: str, platform: str, found: tuple[Finding, ...]) -> str | None:
    """input.mlir, why.txt and rerun.py in a fresh reproducer directory (pruned with the
    others); None when nothing could be written."""
    why = found[0].limit.why
    lines = "\n".join(f"line {f.line}: {f.text}" for f in found)
    return write_files({"input.mlir": ir, "why.txt": f"{why}\n{lines}\n",
                        "rerun.py": _RERUN.format(platform=platform, why=why)}, "unsupported_")
