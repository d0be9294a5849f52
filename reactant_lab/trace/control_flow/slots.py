"""What a converted loop or branch carries, variable by variable: a static Python value (the same
before and after, so baked in), a traced value (a NumPy-mode array or scalar made in the loop, a
JAX array, a Python number carried as a traced one), or an array that existed before the loop
(NumPy mode: its root is carried when the body writes it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from reactant_lab.trace.numpy_mode import ProxyArray, carry

NUMBERS = (bool, int, float, complex, np.generic)


class Undefined:
    """A variable that has no value (yet) where a converted statement starts, or after it.
    Converted code deletes a variable handed back so (transform's ``_unsets``): it never
    reaches user code."""

    __slots__ = ("name", "why")

    def __init__(self, name: str, why: str | None = None):
        self.name = name
        self.why = why
        """Why it may have no value, when that depends on values only known when the code runs
        (an ``if`` on a traced value, a loop with a traced trip count); None when Python
        itself leaves it unassigned here."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Undefined) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("undefined", self.name))

    def __repr__(self) -> str:
        return f"<{self.name}: not assigned>"

    def _undefined(self) -> NameError:
        return UnboundLocalError(f"cannot access local variable {self.name!r} where it is not "
                                 f"associated with a value{': ' + self.why if self.why else ''}")

    def __bool__(self) -> bool:
        raise self._undefined()

    def __getattr__(self, attr: str) -> Any:
        raise self._undefined()

    def _refuse(self, *args: Any) -> Any:
        raise self._undefined()

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _refuse
    __rtruediv__ = __pow__ = __rpow__ = __matmul__ = __rmatmul__ = __neg__ = _refuse
    __getitem__ = __len__ = __iter__ = __float__ = __int__ = __index__ = _refuse
    __lt__ = __le__ = __gt__ = __ge__ = __array__ = _refuse


class CannotRoll(Exception):  # a control signal, not an error shown as is
    """The loop or branch cannot be converted with the carry as it stands."""

    def __init__(self, reason: str, name: str | None = None, number: bool = False,
                 root: Any = None, swap: bool = False):
        super().__init__(reason)
        self.name = name
        """The variable at fault, if one is."""
        self.number = number
        """Whether forcing that variable would do: carrying a Python number as a traced value,
        or an existing array the body rebinds by value (when the body does not write it)."""
        self.root = root
        """The existing array the variable held (the body must not have written it)."""
        self.written: frozenset[Any] = frozenset()
        """The arrays the failed attempt wrote (set by ``carry.attempt``)."""
        self.swap = swap
        """The variable was rebound from one existing array to another (``u, v = v, u``)."""

    @property
    def forcible(self) -> bool:
        return self.name is not None and self.number and self.root not in self.written


@dataclass(frozen=True)
class Slot:
    """One carried variable."""

    name: str
    kind: str
    """'static', 'new' or 'ref' (NumPy-mode proxies, see numpy_mode.carry), 'array' (a JAX
    value) or 'number' (a Python / NumPy number carried as a traced scalar)."""
    key: Any
    """What must match before and after."""
    value: Any = None
    """The static value; the ``Held`` of a proxy."""
    shape: tuple[int, ...] = ()
    dtype: Any = None
    weak: bool = False
    """A carried Python number: promotes weakly."""
    exact: bool = False
    """A number carried from the first iteration on (``Forced.exact``): its type after an
    iteration must be the one it is carried in."""

    @property
    def carried(self) -> bool:
        return self.kind in ("new", "array", "number")


def is_traced(x: Any) -> bool:
    """A value only known when the compiled code runs."""
    if isinstance(x, ProxyArray):
        return x.mask is not None or x.concrete is None
    return isinstance(x, jax.core.Tracer)


class Forced(set[str]):
    """The variables a rolled loop carries as traced values whatever they hold before it."""

    def __init__(self, names: set[str]):
        super().__init__(names)
        self.exact: set[str] = set()
        """Those of them holding a Python number that the body makes traced (``total = 0``,
        then ``total += x[i]``), carried so from the first iteration rather than after one
        run ahead of the loop (a peeled iteration: the module computes it apart, its own
        kernels for XLA). Carried in the number's NumPy type (int64, float64, or a NumPy
        scalar's own), which must be what one iteration leaves: a Python float added to
        float32 values leaves float32 (NumPy's weak scalars), and such a loop is peeled."""


def number_slot(name: str, value: Any, numpy: bool, exact: bool = False) -> Slot:
    """A Python or NumPy number (or a traced scalar) carried as a traced scalar."""
    weak = not isinstance(value, np.generic | ProxyArray) or (
        isinstance(value, ProxyArray) and value.root.weak)
    if numpy:
        raw = value.dtype if isinstance(value, np.generic | ProxyArray) else np.result_type(
            type(value)) if not isinstance(value, bool) else np.dtype(bool)
        dtype = np.dtype(raw)
    else:
        dtype = jnp.asarray(unwrap(value)).dtype
    return Slot(name, "number", ("number", dtype), shape=(), dtype=dtype, weak=weak,
                exact=exact)


def describe(name: str, value: Any, numpy: bool, mark: int, force: bool = False,
             exact: bool = False) -> Slot:
    """The slot of variable ``name`` holding ``value``; raises CannotRoll when it cannot be
    carried."""
    if isinstance(value, ProxyArray):
        held = carry.describe_proxy(value, mark, by_value=force)
        if isinstance(held, str):
            raise CannotRoll(f"`{name}` cannot be carried: {held}", name)
        return Slot(name, held.kind, held.key, held, value.shape, value.dtype)
    if isinstance(value, jax.Array):
        if numpy:
            raise CannotRoll(f"`{name}` holds a JAX array inside a NumPy kernel", name)
        return Slot(name, "array", ("array", value.shape, value.dtype), shape=value.shape,
                    dtype=value.dtype)
    if force and isinstance(value, NUMBERS) and not isinstance(value, Undefined):
        return number_slot(name, value, numpy, exact)
    return Slot(name, "static", ("static",), value)


def same_static(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b))
    try:
        return bool(a == b)
    except Exception:  # a value that cannot compare is not the same
        return False


def unwrap(x: Any) -> Any:
    return x.value if isinstance(x, ProxyArray) else x


def carried_value(slot: Slot, value: Any) -> Any:
    """The traced value the loop carries for ``slot`` from the variable's ``value``."""
    raw = unwrap(value)
    if slot.kind == "number":
        return jnp.asarray(raw).astype(slot.dtype)
    if isinstance(raw, NUMBERS):  # a Python number merged with a traced value
        return jnp.broadcast_to(jnp.asarray(raw, slot.dtype), slot.shape)
    if slot.kind == "array":
        return lax.convert_element_type(raw, slot.dtype)
    return raw


def stand_in(slot: Slot, flat: Any, numpy: bool) -> Any:
    """The variable's value inside the body (or after the loop) for the carried ``flat``."""
    if slot.kind in ("new", "ref"):
        return slot.value.stand_in(flat, slot.shape, slot.dtype)
    if slot.kind == "number" and numpy:
        return carry.python_scalar(flat) if slot.weak else carry.to_numpy_scalar(flat)
    if slot.kind in ("number", "array"):
        return flat
    return slot.value


def _describe_value(value: Any) -> str:
    if isinstance(value, ProxyArray | jax.Array):
        return f"{np.dtype(value.dtype).name}{list(value.shape)}"
    text = repr(value)
    return text if len(text) < 40 else type(value).__name__


def check_out(slot: Slot, value: Any, numpy: bool, mark: int) -> Any:
    """The carried value of the variable after one iteration (``value``); raises CannotRoll
    when it does not match the slot it started in."""
    if slot.kind == "static":
        if isinstance(slot.value, Undefined) and not isinstance(value, Undefined):
            raise CannotRoll(f"`{slot.name}` is first assigned inside the loop", slot.name)
        if not same_static(slot.value, value):
            number = isinstance(slot.value, NUMBERS) and (
                isinstance(value, NUMBERS) or (is_traced(value) and np.ndim(unwrap(value)) == 0))
            raise CannotRoll(f"`{slot.name}` changes from {_describe_value(slot.value)} to "
                             f"{_describe_value(value)} (a Python value)", slot.name, number)
        return None
    if slot.kind == "number":
        raw = jnp.asarray(unwrap(value))
        if raw.shape != () or not np.can_cast(raw.dtype, slot.dtype, "same_kind") or (
                slot.exact and raw.dtype != slot.dtype):
            raise CannotRoll(f"`{slot.name}` changes from a {np.dtype(slot.dtype).name} number "
                             f"to {_describe_value(value)}", slot.name)
        return raw.astype(slot.dtype)
    after = describe(slot.name, value, numpy, mark) if not isinstance(value, NUMBERS) else None
    if after is None or after.key != slot.key:
        rebound = (slot.kind == "ref" and after is not None and after.kind == "new"
                   and after.shape == slot.shape and after.dtype == slot.dtype)
        swap = slot.kind == "ref" and after is not None and after.kind == "ref"
        change = ("is rebound from an existing array to a new one" if rebound else
                  "is rebound to another existing array" if swap else
                  f"changes from {np.dtype(slot.dtype).name}{list(slot.shape)} to "
                  f"{_describe_value(value)}")
        raise CannotRoll(f"`{slot.name}` {change}", slot.name, rebound,
                         slot.value.root if rebound else None, swap=swap)
    return carried_value(slot, value) if slot.carried else None
