"""ndarray's operators (``a + b``, ``a += b``, ``a < b``, ``-a``, ``divmod(a, b)``) and its
methods that are a NumPy function with the array first (``a.sum()``), for ProxyArray: each calls
NumPy, whose protocols hand the call back to the proxy's dispatch."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from reactant_lab.trace.numpy_mode.storage import IMMUTABLE

if TYPE_CHECKING:
    from reactant_lab.trace.numpy_mode.proxy import ProxyArray

_Operator = Callable[["ProxyArray", Any], Any]

_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.divide,
           "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power,
           "matmul": np.matmul, "and": np.bitwise_and, "or": np.bitwise_or,
           "xor": np.bitwise_xor, "lshift": np.left_shift, "rshift": np.right_shift}
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


def _in_place(ufunc: np.ufunc) -> _Operator:
    def iop(self: ProxyArray, other: Any) -> Any:
        if self.root.frozen in IMMUTABLE:
            return NotImplemented  # NumPy scalars and JAX arrays: `x += 1` rebinds the name
        return ufunc(self, other, out=(self,))

    return iop


def _methods() -> dict[str, Any]:
    """Method name -> its implementation (a function, or a partialmethod of a NumPy one)."""
    methods: dict[str, Any] = {}
    for name, uf in _BINARY.items():
        methods[f"__{name}__"] = _forward(uf)
        methods[f"__r{name}__"] = _reflected(uf)
        methods[f"__i{name}__"] = _in_place(uf)
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
