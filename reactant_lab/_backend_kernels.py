"""Kernels that custom calls carry, decoded with jaxlib's MLIR bindings: a Pallas TPU kernel's
serialized Mosaic module back to MLIR text.

Only backend imports this module.
"""

from __future__ import annotations

import base64
import binascii
import functools
from collections.abc import Callable

from jaxlib.mlir import ir, passmanager

_BYTECODE_MAGIC = b"ML\xefR"


def _tpu_dialect() -> tuple[Callable[[ir.Context], None] | None, str | None]:
    """jaxlib's TPU dialect registration (its ``register_dialect``), or None and why not."""
    try:
        from jaxlib.mlir._mlir_libs import _tpu_ext
    except ImportError as exc:  # a jaxlib built without Mosaic TPU
        return None, f"this jaxlib has no Mosaic TPU dialect ({exc})"
    register: Callable[[ir.Context], None] = _tpu_ext.register_dialect
    return register, None


@functools.lru_cache(maxsize=64)
def mosaic_kernel_text(body: str) -> tuple[str | None, str | None]:
    """``(text, None)``: the MLIR of the Mosaic module serialized as ``body`` (base64 of MLIR
    bytecode, as ``jax._src.tpu_custom_call`` writes it), upgraded from Mosaic's stable form
    (``stable_mosaic.*`` op names) to the dialects' own, as Mosaic itself reads it back; or
    ``(None, why)`` when it cannot be decoded here."""
    try:
        data = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError) as exc:
        return None, f"the kernel body is not base64 ({exc})"
    if not data.startswith(_BYTECODE_MAGIC):
        return None, "the kernel body is not MLIR bytecode"
    register, why = _tpu_dialect()
    if register is None:
        return None, why
    from jax.interpreters import mlir as jax_mlir

    ctx = jax_mlir.make_ir_context()
    register(ctx)
    ctx.allow_unregistered_dialects = True
    try:
        with ctx, ir.Location.unknown():
            module = ir.Module.parse(data)
            passmanager.PassManager.parse(
                "builtin.module(mosaic-serde{serialize=false})").run(module.operation)
            text = str(module)  # without locations: the kernel's ops as written
    except Exception as exc:  # MLIR's errors carry no stable type
        return None, f"jaxlib could not read the kernel: {str(exc).strip() or type(exc).__name__}"
    return text, None
