"""The Python names of what a converted statement carries, written into the module: the
``lax.fori_loop`` / ``lax.while_loop`` / ``lax.cond`` call runs inside a ``jax.named_scope``
whose name says which statement it is and what each carried value is, e.g.
``for _ in range(steps) @ heat.py:12 [(counter):int; (index):int; u:f64[64,64]]``. The scope
ends up in the location of the ``stablehlo.while`` / ``stablehlo.case`` (``loc("jit(f)/<scope>/
while")``), which survives the stages' passes; the dataflow graph reads it back
(``analysis.graph``) to label the op's cluster and its carried values.

Format (``analysis.graph`` parses it): ``HEADER @ FILE:LINE [ENTRY; ENTRY; ...]``. Each entry
is ``LABEL:TYPE`` for one of the op's *last* operands (a while) or one of its results (a case),
in order; TYPE is ``ELEMENT[DIMS]`` with the element type as MLIR prints it (``f64[8,8]``,
``i1[]``), or ``int`` for an integer scalar of either width (a loop index or bound). A ``/`` in
the header or a label (JAX's name-stack separator) is written as ``∕`` (U+2215)."""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from reactant_lab.trace.control_flow.transform import PREFIX
from reactant_lab.trace.numpy_mode import ProxyArray

Site = tuple[str, int, str]
"""(file, line, header) of a converted statement (as ``loops.Site``)."""

SLASH = "\u2215"
"""What a ``/`` becomes: JAX splits scope names at ``/``."""

INT = "int"
"""The type of an entry that is an integer scalar of either width."""

_SITE: contextvars.ContextVar[Site | None] = contextvars.ContextVar("rl_region_site",
                                                                    default=None)

_ELEMENTS = {"bool": "i1", "bfloat16": "bf16", "complex64": "complex<f32>",
             "complex128": "complex<f64>"}


def _element(dtype: Any) -> str:
    """The MLIR element type of a NumPy / JAX dtype (``float64`` -> ``f64``)."""
    name: str = np.dtype(dtype).name
    if name in _ELEMENTS:
        return _ELEMENTS[name]
    for prefix, short in (("uint", "ui"), ("int", "i"), ("float", "f")):
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            return short + name[len(prefix):]
    return "?"


def type_of(value: Any) -> str:
    """The entry type of a traced value (``f64[8,8]``)."""
    return _type(np.shape(value), jnp.result_type(value))


_FLAGS = ((PREFIX + "flag_break", "(break flag)"), (PREFIX + "flag_continue", "(continue flag)"))


def _clean(text: str) -> str:
    for prefix, shown in _FLAGS:  # the flags a converted loop's break / continue set
        if text.startswith(prefix):
            return shown
    return text.replace("/", SLASH).replace(";", ",").replace("\n", " ")


def encode(site: Site, entries: Sequence[tuple[str, str]] | None) -> str:
    """The scope name of the statement at ``site`` whose last operands (or results) are
    ``entries`` (label, type); ``[?]`` when they are not known."""
    base = os.path.basename(site[0]).replace(" ", "_").replace("[", "(").replace("]", ")")
    body = "?" if entries is None else "; ".join(f"{_clean(label)}:{typ}"
                                                 for label, typ in entries)
    return f"{_clean(site[2])} @ {base or '?'}:{site[1]} [{body}]"


@contextlib.contextmanager
def at(site: Site) -> Iterator[None]:
    """The statement whose region ``region(..., site=None)`` opens inside this block."""
    token = _SITE.set(site)
    try:
        yield
    finally:
        _SITE.reset(token)


@contextlib.contextmanager
def region(site: Site | None, entries: Callable[..., Sequence[tuple[str, str]]],
           *args: Any) -> Iterator[None]:
    """Run the ``lax`` call that makes a converted statement's region op in here: its location
    then names the statement (``site``, else the one of the enclosing ``at``) and what
    ``entries(site, *args)`` returns. Labels only: nothing here may fail the trace."""
    site = site if site is not None else _SITE.get()
    with contextlib.ExitStack() as stack:
        if site is not None:
            try:
                found: Sequence[tuple[str, str]] | None = entries(site, *args)
            except Exception:  # what the op carries is not known: it is not named
                found = None
            with contextlib.suppress(Exception):  # a name JAX refuses: the op is unlabelled
                stack.enter_context(jax.named_scope(encode(site, found)))
        yield


def _root_names(site: Site | None, roots: Sequence[Any]) -> list[str]:
    """A name for each carried array written in place: a variable of the statement's function
    holding the whole array, else the argument path it stands for, else ''."""
    found: dict[int, str] = {}
    frame = sys._getframe(1)
    while frame is not None and site is not None and frame.f_code.co_filename != site[0]:
        frame = frame.f_back  # type: ignore[assignment]
    if frame is not None and site is not None:
        for name, value in list(frame.f_locals.items()):
            if (isinstance(value, ProxyArray) and not value._ops and not name.startswith("__")
                    and id(value.root) not in found):
                found[id(value.root)] = name
    return [found.get(id(r), getattr(r, "arg", None) or "") for r in roots]


def carried(site: Site, c: Any) -> list[tuple[str, str]]:
    """The entries of a ``carry.Carry``'s values (``c.init``): its carried variables, then the
    arrays it carries because the body writes them."""
    labels = [s.name for s in c.slots if s.carried] + _root_names(site, c.roots)
    return [(label, type_of(v)) for label, v in zip(labels, c.init, strict=True)]


def fori(site: Site, c: Any, target: str | None, scan: bool) -> list[tuple[str, str]]:
    """The entries of a ``lax.fori_loop``'s while op: with static bounds JAX runs it as a scan
    (operands: ..., the scan's counter, the index, the carry), else as a while loop (..., the
    index, the upper bound, the carry)."""
    index = f"{target} (index)" if target and target != "_" else "(index)"
    lead = [("(counter)", INT), (index, INT)] if scan else [(index, INT), ("(bound)", INT)]
    return lead + carried(site, c)


def _type(shape: Sequence[int], dtype: Any) -> str:
    element = _element(jax.dtypes.canonicalize_dtype(dtype))
    return f"{element}[{','.join(str(d) for d in shape)}]"


def counted(site: Site, c: Any, counters: int = 1) -> list[tuple[str, str]]:
    """The entries of a while op whose operands end with ``counters`` integer counters (a loop
    of its own over the iteration number, a ``fori_loop`` over groups of iterations), then the
    carry."""
    return [("(counter)", INT)] * counters + carried(site, c)


def branch(site: Site, slots: Sequence[Any], roots: Sequence[Any]) -> list[tuple[str, str]]:
    """The entries of a ``lax.cond``'s results: the carried variables (``slots``), then the
    arrays either branch writes (``roots``)."""
    out = [(s.name, _type(s.shape, s.dtype)) for s in slots if s.carried]
    return out + [(label, _type(r.shape, r.dtype))
                  for label, r in zip(_root_names(site, roots), roots, strict=True)]


__all__ = ["INT", "SLASH", "at", "branch", "carried", "counted", "encode", "fori", "region",
           "type_of"]
