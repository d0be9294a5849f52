"""Python's ``min`` / ``max`` on traced values, with Python's semantics: a left fold that keeps
the value it holds unless the next one compares greater (``max``) or less (``min``). A NaN is
then kept when it comes first and skipped after (``max(1.0, nan)`` is 1.0, ``max(nan, 1.0)``
NaN), and of equal values the first wins, where ``np.maximum`` / ``np.minimum`` propagate NaN."""

from __future__ import annotations

import builtins
from typing import Any

import jax.numpy as jnp
import numpy as np

from reactant_lab.trace.control_flow.session import current
from reactant_lab.trace.control_flow.slots import NUMBERS, is_traced, unwrap
from reactant_lab.trace.numpy_mode import ProxyArray, carry, context

_AMBIGUOUS = ("The truth value of an array with more than one element is ambiguous. Use a.any() "
              "or a.all()")


def minmax(fn: Any, *args: Any) -> Any:
    """``min(...)`` / ``max(...)`` (positional arguments only): Python's own for static values;
    with a traced one, Python's left fold traced (one select per argument; a traced 1-D array
    as one reduction)."""
    session = current()
    if (session is None or session.loops == "unroll" or fn not in (builtins.min, builtins.max)
            or not args):
        return fn(*args)
    if any(isinstance(a, ProxyArray) and a.mask is not None for a in args):
        return fn(*args)  # a slice of traced length: its own error (it has no len)
    items = list(args[0]) if len(args) == 1 and not _vector(args[0]) else list(args)
    if not any(is_traced(a) for a in items):
        return fn(*items) if len(args) > 1 else fn(items)
    if not items:
        return fn(items)  # Python's error for an empty sequence
    numpy = context.current() is not None
    biggest = fn is builtins.max
    if len(items) == 1 and _vector(items[0]):
        return _of_vector(items[0], biggest, numpy, fn.__name__)
    result = items[0]
    for item in items[1:]:
        result = _pick(result, item, biggest, numpy)
    return _as_python(result, items, numpy)


def _vector(x: Any) -> bool:
    """A traced array of one dimension: ``max(x)`` iterates its elements."""
    return is_traced(x) and np.ndim(unwrap(x)) == 1


def _pick(held: Any, item: Any, biggest: bool, numpy: bool) -> Any:
    """``item`` if it compares greater (less) than ``held``, else ``held``: one select."""
    xp: Any = np if numpy else jnp
    better = xp.greater(item, held) if biggest else xp.less(item, held)
    if np.size(unwrap(better)) != 1:
        raise ValueError(_AMBIGUOUS)  # Python's `>` then `bool()`, as NumPy eager
    return xp.where(xp.reshape(better, ()) if np.ndim(unwrap(better)) else better, item, held)


def _of_vector(x: Any, biggest: bool, numpy: bool, name: str) -> Any:
    """The left fold over a traced 1-D array's elements, as one reduction: the first element
    when it is NaN (nothing compares greater), else the first element equal to the extreme of
    those that are not NaN."""
    raw = jnp.asarray(unwrap(x))
    if raw.shape[0] == 0:
        raise ValueError(f"{name}() iterable argument is empty")
    if jnp.issubdtype(raw.dtype, jnp.inexact):
        fill = -jnp.inf if biggest else jnp.inf
        kept = jnp.where(jnp.isnan(raw), fill, raw)
        extreme = kept.max() if biggest else kept.min()
        found = raw[jnp.argmax(raw == extreme)]
        value = jnp.where(jnp.isnan(raw[0]), raw[0], found)
    else:
        value = raw.max() if biggest else raw.min()
    return carry.to_numpy_scalar(value) if numpy else value


def _as_python(result: Any, items: list[Any], numpy: bool) -> Any:
    """NumPy mode: the fold's value as the kind of object Python's ``max`` hands back (a Python
    number when every argument is one, a NumPy scalar, or an array of one element)."""
    if not numpy or not isinstance(result, ProxyArray):
        return result
    raw = result.value
    if np.ndim(raw):
        return result
    weak = all((isinstance(a, NUMBERS) and not isinstance(a, np.generic)) or (
        isinstance(a, ProxyArray) and a.root.weak) for a in items)
    return carry.python_scalar(raw) if weak else carry.to_numpy_scalar(raw)
