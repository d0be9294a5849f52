"""What a device platform's XLA compiler cannot take, or computes another way: tables, checked
against module text (pure: text in, findings out)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from reactant_lab.analysis.provenance import op_name


@dataclass(frozen=True)
class Limit:
    """An op on an element type that a platform's compiler is known not to take."""

    op: str
    """The op as printed, e.g. ``stablehlo.abs``."""
    element_type: str
    """The element type of an operand, as MLIR prints it: ``complex<f64>``, ``f64``."""
    platform: str
    """The platform (``backend.platform``): 'tpu', 'cuda', ..."""
    why: str
    """What goes wrong there."""
    todo: str
    """What to do instead."""
    result_type: str | None = None
    """The element type of its result that the limit needs too (a conversion's target), or
    None."""


_CONVERT_TO_COMPLEX128 = (
    "XLA's TPU compiler aborts the whole process on a conversion to complex128 (measured on a "
    "TPU v5e with jax 0.10.2, from complex64 and from int64; complex128 arithmetic itself "
    "compiled and ran)")
_CONVERT_TODO = (
    "keep the computation in complex64 (a complex64 array combined with an int64 or float64 "
    "one is complex128 under NumPy's promotion: cast the other operand, or the result, to "
    "complex64), or run this function on the CPU (device='cpu')")

LIMITS: tuple[Limit, ...] = (
    Limit("stablehlo.abs", "complex<f64>", "tpu",
          "XLA's TPU compiler aborts the whole process on it (a CHECK failure in its precision "
          "rewriter, measured on a TPU v5e with jax 0.10.2)",
          "compute the magnitude as sqrt(re**2 + im**2) (jnp.sqrt(z.real**2 + z.imag**2) or "
          "jnp.hypot(z.real, z.imag)), use complex64, or run this function on the CPU "
          "(device='cpu')"),
    # from complex64 and int64 measured; the other integer types are refused alike, unmeasured
    # (an abort ends the user's kernel), float64 and float32 sources are not (unmeasured either)
    *(Limit("stablehlo.convert", source, "tpu", _CONVERT_TO_COMPLEX128, _CONVERT_TODO,
            result_type="complex<f64>")
      for source in ("complex<f32>", "i64", "i32", "i16", "i8", "ui64", "ui32", "ui16", "ui8")),
)
"""Known aborts and unsupported combinations: (op, element type, platform, why, what to do)."""


@dataclass(frozen=True)
class Emulated:
    """An element type a platform computes in software."""

    element_type: str
    """The element type, as MLIR prints it."""
    platform: str
    """The platform."""
    note: str
    """What that means for the user."""


EMULATED: tuple[Emulated, ...] = (
    Emulated("f64", "tpu",
             "float64 is emulated on a TPU (it has no 64-bit floating-point unit): the module "
             "runs, slower than float32, with about 49 significant bits instead of 53 and "
             "float32's exponent range (measured on a TPU v5e: results up to 6e-15 off the "
             "CPU's, a sin 2e-8; magnitudes outside float32's range became 0, inf or nan; "
             "1 ** inf gave nan). For IEEE float64 run it on the CPU (device='cpu')"),
    Emulated("complex<f64>", "tpu",
             "complex128 is emulated on a TPU (as pairs of emulated float64, with their "
             "precision and range): the module runs, slower than complex64, and its results can "
             "differ from the CPU's (see float64)"),
)
"""Element types a platform runs, but in software: shown as compile notes."""


@dataclass(frozen=True)
class Finding:
    """One op of a module that hits a Limit."""

    limit: Limit
    """The limit it hits."""
    line: int
    """Its 1-based line in the module text."""
    text: str
    """That line, stripped."""


_ELEMENT = re.compile(r"tensor<(?:(?:\d+|\?)x)*(complex<\w+>|[A-Za-z]\w*)")
_LOC = re.compile(r"\s+loc\(.*$")


def operand_types(line: str) -> frozenset[str]:
    """The element types of one op's operands: of the types after its last `` : `` (those
    before ``->`` when the type is a function type)."""
    return frozenset(_ELEMENT.findall(_signature(line).split("->", 1)[0]))


def result_types(line: str) -> frozenset[str]:
    """The element types of one op's results: those after ``->`` in its function type, else
    (one type for operands and results) its operands'."""
    parts = _signature(line).split("->", 1)
    return frozenset(_ELEMENT.findall(parts[-1]))


def _signature(line: str) -> str:
    """The types after one op's last `` : ``."""
    line = _LOC.sub("", line)
    return line.rsplit(" : ", 1)[1] if " : " in line else ""


def unsupported_ops(text: str, platform: str) -> tuple[Finding, ...]:
    """Each op of module ``text`` that LIMITS says ``platform``'s compiler cannot take."""
    limits = [lim for lim in LIMITS if lim.platform == platform]
    if not limits:
        return ()
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        name = op_name(line)
        hits = [lim for lim in limits if lim.op == name]
        if not hits:
            continue
        operands, results = operand_types(line), result_types(line)
        found += [Finding(lim, number, _LOC.sub("", line).strip()) for lim in hits
                  if lim.element_type in operands
                  and (lim.result_type is None or lim.result_type in results)]
    return tuple(found)


def emulation_notes(text: str, platform: str) -> tuple[str, ...]:
    """The notes of EMULATED for the element types module ``text`` computes in on
    ``platform``, in table order."""
    rows = [e for e in EMULATED if e.platform == platform]
    if not rows:
        return ()
    seen = {t for line in text.splitlines() if not line.startswith("#")
            for t in _ELEMENT.findall(_LOC.sub("", line))}
    return tuple(e.note for e in rows if e.element_type in seen)
