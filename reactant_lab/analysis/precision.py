"""The precision of each matrix product (``precision_config``) in module text, and what a
platform computes at ``DEFAULT``: a TPU runs a float32 dot at DEFAULT in one bfloat16 pass."""

from __future__ import annotations

import re
from dataclasses import dataclass

from reactant_lab.analysis.device_limits import operand_types
from reactant_lab.analysis.provenance import op_name

DOT_OPS = ("stablehlo.dot_general", "stablehlo.dot", "stablehlo.convolution")
"""The ops that carry a ``precision_config``."""


@dataclass(frozen=True)
class DefaultPrecision:
    """What a platform computes a dot of one element type in at ``DEFAULT`` precision."""

    platform: str
    """The platform."""
    element_type: str
    """The operands' element type, as MLIR prints it."""
    computes: str
    """What it computes, in words."""
    rtol: float
    """The relative tolerance such results are verified with."""


REDUCED_DEFAULTS: tuple[DefaultPrecision, ...] = (
    DefaultPrecision("tpu", "f32", "one bfloat16 pass (about 3 significant digits)", 1e-2),
    DefaultPrecision("tpu", "complex<f32>", "bfloat16 passes (about 3 significant digits)",
                     1e-2),
)
"""Platforms whose DEFAULT precision is below the operands' type (measured on a TPU v5e:
float32 dots at DEFAULT run at bfloat16-pass precision); HIGHEST is full precision."""


@dataclass(frozen=True)
class Dot:
    """One matrix product of a module and the precision it asks for."""

    op: str
    """The op, e.g. ``stablehlo.dot_general``."""
    line: int
    """Its 1-based line in the module text."""
    precision: tuple[str, ...]
    """Per operand: ``DEFAULT``, ``HIGH`` or ``HIGHEST``; () when none is written (DEFAULT)."""
    element_types: frozenset[str]
    """Its operands' element types."""

    @property
    def at_default(self) -> bool:
        """Whether an operand is taken at DEFAULT precision (written, or none written)."""
        return not self.precision or "DEFAULT" in self.precision


_PRETTY = re.compile(r"\bprecision\s*=\s*\[([A-Z_,\s]*)\]")
_GENERIC = re.compile(r"\bprecision_config\s*=\s*\[([^\]]*)\]")
_ONE = re.compile(r"#stablehlo<precision\s+([A-Z_]+)>")


def precision_of(line: str) -> tuple[str, ...]:
    """The precisions one op's line asks for: ``precision = [HIGHEST, DEFAULT]`` (pretty form)
    or ``precision_config = [#stablehlo<precision HIGHEST>, ...]`` (generic); () for none."""
    m = _PRETTY.search(line)
    if m:
        return tuple(p.strip() for p in m.group(1).split(",") if p.strip())
    m = _GENERIC.search(line)
    return tuple(_ONE.findall(m.group(1))) if m else ()


def dots(text: str) -> tuple[Dot, ...]:
    """Each dot_general / dot / convolution of module ``text``, in order."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        name = op_name(line)
        if name in DOT_OPS:
            found.append(Dot(name, number, precision_of(line), operand_types(line)))
    return tuple(found)


def reduced_default(dot: Dot, platform: str) -> DefaultPrecision | None:
    """What ``platform`` computes ``dot`` in when that is below its operands' type, else None."""
    if not dot.at_default:
        return None
    return next((d for d in REDUCED_DEFAULTS
                 if d.platform == platform and d.element_type in dot.element_types), None)


def precision_text(line: str, platform: str | None = None) -> str | None:
    """How the explorer shows a dot's precision (None for an op that is not a dot):
    ``HIGHEST, HIGHEST``, ``DEFAULT (none written)``, and on a platform whose DEFAULT is
    reduced, what it computes."""
    name = op_name(line)
    if name not in DOT_OPS:
        return None
    dot = Dot(name, 0, precision_of(line), operand_types(line))
    shown = ", ".join(dot.precision) if dot.precision else "DEFAULT (none written)"
    reduced = reduced_default(dot, platform) if platform else None
    return f"{shown}: on a {platform.upper()}, {reduced.computes}" if reduced and platform \
        else shown


def reduced_precision_dots(text: str, platform: str) -> tuple[tuple[Dot, DefaultPrecision], ...]:
    """The dots of module ``text`` that ``platform`` computes below their operands' type."""
    return tuple((d, r) for d in dots(text) if (r := reduced_default(d, platform)) is not None)
