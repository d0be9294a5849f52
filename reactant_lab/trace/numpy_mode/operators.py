"""ndarray's operators (``a + b``, ``a += b``, ``a < b``, ``-a``, ``divmod(a, b)``) and its
methods that are a NumPy function with the array first (``a.sum()``), for ProxyArray: each calls
NumPy, whose protocols hand the call back to the proxy's dispatch."""

from __future__ import annotations

import dis
import functools
import itertools
import sys
import traceback
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from reactant_lab.errors import TraceError
from reactant_lab.trace.numpy_mode.storage import IMMUTABLE
from reactant_lab.trace.user_errors import describe, is_user_file

if TYPE_CHECKING:
    from reactant_lab.trace.numpy_mode.proxy import ProxyArray

_Operator = Callable[["ProxyArray", Any], Any]

_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.divide,
           "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power,
           "matmul": np.matmul, "and": np.bitwise_and, "or": np.bitwise_or,
           "xor": np.bitwise_xor, "lshift": np.left_shift, "rshift": np.right_shift}
_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
            "pow": "**", "matmul": "@", "and": "&", "or": "|", "xor": "^", "lshift": "<<",
            "rshift": ">>"}
_COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
            "gt": np.greater, "ge": np.greater_equal}
_UNARY = {"neg": np.negative, "pos": np.positive, "abs": np.absolute, "invert": np.invert}
# ndarray methods that are the NumPy function of the same meaning with the array first.
_ARRAY_FIRST = (
    "all", "any", "argmax", "argmin", "argpartition", "argsort", "choose", "clip", "compress",
    "conj", "conjugate", "cumprod", "cumsum", "diagonal", "dot", "max", "mean", "min",
    "nonzero", "partition", "prod", "ptp", "put", "ravel", "repeat", "round", "searchsorted",
    "squeeze", "std", "sum", "swapaxes", "take", "trace", "var")


def _forward(ufunc: np.ufunc) -> _Operator:
    def op(self: ProxyArray, other: Any) -> Any:
        return ufunc(self, other)

    return op


def _reflected(ufunc: np.ufunc) -> _Operator:
    def rop(self: ProxyArray, other: Any) -> Any:
        return ufunc(other, self)

    return rop


def _in_place(ufunc: np.ufunc, symbol: str) -> _Operator:
    def iop(self: ProxyArray, other: Any) -> Any:
        if self.root.frozen in IMMUTABLE:
            return NotImplemented  # NumPy scalars and JAX arrays: `x += 1` rebinds the name
        if isinstance(other, jax.Array) and self.mask is None:
            return _defer_to_jax(self, symbol)
        return ufunc(self, other, out=(self,))

    return iop


def _defer_to_jax(a: ProxyArray, symbol: str) -> Any:
    """``a op= v`` with ``v`` a JAX value: NumPy hands the operation to JAX's reflected
    operator (``v.__rsub__(a)``), which makes a new JAX value, so the name is rebound and the
    array left as it was, while ``a[...] op= v`` writes that value back into it. Done the same
    here (NotImplemented), but where the statement rebinds a name and the array is the caller's:
    the update the code reads as would silently not happen, so that is refused."""
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None or a.root.arg is None:
        return NotImplemented
    name = _name_stored_after(frame.f_code, frame.f_lasti)
    if name is None:
        return NotImplemented
    where = describe(traceback.FrameSummary(frame.f_code.co_filename, frame.f_lineno,
                                            frame.f_code.co_name))
    raise TraceError(
        f"{a.root.arg} would not be updated in place by `{name} {symbol}= <a JAX value>`, at "
        f"{where}\nNumPy hands `array {symbol}= JAX array` to JAX (JAX's reflected operator "
        f"wins over NumPy's in-place one), which binds {name} to a new JAX array and leaves "
        f"the caller's array as it was. To update it in place, write {name}[...] {symbol}= ... "
        f"(NumPy then writes the JAX result into it); to compute a new array, write {name} = "
        f"{name} {symbol} ... and return it.")


@functools.lru_cache(maxsize=4096)
def _name_stored_after(code: types.CodeType, offset: int) -> str | None:
    """The name the instruction after the one at ``offset`` stores to (``u -= v`` stores
    ``u``), None when it stores elsewhere (``u[...] -= v``: a subscript)."""
    for ins, after in itertools.pairwise(dis.get_instructions(code)):
        if ins.offset == offset:
            return after.argval if after.opname in _NAME_STORES else None
    return None


_NAME_STORES = frozenset({"STORE_FAST", "STORE_NAME", "STORE_DEREF", "STORE_GLOBAL"})


def _methods() -> dict[str, Any]:
    """Method name -> its implementation (a function, or a partialmethod of a NumPy one)."""
    methods: dict[str, Any] = {}
    for name, uf in _BINARY.items():
        methods[f"__{name}__"] = _forward(uf)
        methods[f"__r{name}__"] = _reflected(uf)
        methods[f"__i{name}__"] = _in_place(uf, _SYMBOLS[name])
    for name, uf in _COMPARE.items():
        methods[f"__{name}__"] = _forward(uf)
    methods["__divmod__"], methods["__rdivmod__"] = _forward(np.divmod), _reflected(np.divmod)
    for name, uf in _UNARY.items():
        methods[f"__{name}__"] = functools.partialmethod(uf)
    for name in _ARRAY_FIRST:
        methods[name] = functools.partialmethod(getattr(np, name))
    return methods


def install_operators(cls: type[ProxyArray]) -> None:
    """Give ``cls`` (ProxyArray) ndarray's operators and array-first methods."""
    for name, method in _methods().items():
        setattr(cls, name, method)
