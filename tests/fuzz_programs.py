"""The differential fuzzer's grammar: Hypothesis strategies that write small NumPy kernels and JAX
functions as Python source text, and the inputs (values and memory layouts) to run them on.

Each statement is checked as it is drawn by running it on a probe (NumPy arrays of the program's
shapes and dtypes for NumPy kernels, ``jax.eval_shape`` for JAX functions); one NumPy or JAX
rejects is drawn again, so every program is valid and most draws are kept.
"""

from __future__ import annotations

import itertools
import linecache
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st
from jax import lax

DTYPES = ("float32", "float64", "int32", "int64")
"""Argument dtypes of the NumPy kernels."""

FLOW_DTYPES = ("float16", "bfloat16", "float32", "float64")
"""Argument dtypes of the control-flow kernels: NumPy's own 16-bit float, ml_dtypes' bfloat16
(what JAX brings; NumPy computes each operation on it in float32 and rounds the result)."""

LAYOUTS = ("C", "F", "strided", "negstride")
"""How an argument sits in memory: C order, Fortran order, ``base[::2, 1::3]`` of a larger C
array, and ``base[::-1]`` of a C array."""

MAX_SIZE = 64
"""Largest intermediate array (elements); keeps compiles fast."""

_TRIES = 12
_counter = itertools.count()


@dataclass(frozen=True)
class Arg:
    """One array argument of a generated program."""

    name: str
    """Parameter name in the source."""
    shape: tuple[int, ...]
    """Shape of the array the function receives."""
    dtype: str
    """NumPy dtype name."""
    role: str = "data"
    """'data'; in JAX programs also 'index' (an int32 vector of indices) or 'start' (an int32
    scalar used as a dynamic start); for a captured array 'global' (a module global of the
    kernel) or 'closure' (a variable of the function around it)."""
    nan: bool = False
    """One element of the input is NaN (where the program is drawn to meet one)."""


@dataclass(frozen=True)
class Program:
    """A generated function as source text, with the arguments it takes."""

    source: str
    """The complete ``def kernel(...)`` source."""
    args: tuple[Arg, ...]
    """Its array arguments, in order."""
    low_precision: bool
    """True when float32 values take part anywhere (results then get float32 tolerances, even
    float64 ones that were computed from float32 values)."""
    captured: tuple[Arg, ...] = ()
    """Arrays the kernel reads from outside: module globals and closure variables (the
    source then defines ``make(<closure variables>)``, which returns the kernel)."""
    rebinds: str | None = None
    """The captured name the kernel rebinds (``global G0; G0 = ...``), if any: reactant_lab
    refuses it before it runs."""
    exact: bool = False
    """Results must equal NumPy's bit for bit (16-bit floats, rounded at every step as NumPy
    does, in programs drawn without the rewrites XLA may make on floats: no fused
    multiply-add of an inexact product, no two constants added in a row, no division)."""

    def function(self, captured: dict[str, np.ndarray] | None = None) -> Callable[..., Any]:
        """A fresh function object compiled from ``source`` (its lines show in tracebacks),
        reading the arrays ``captured`` (name -> array) as its globals and closure variables."""
        filename = f"<fuzz-program-{next(_counter)}>"
        linecache.cache[filename] = (len(self.source), None, self.source.splitlines(True),
                                     filename)
        given = captured or {}
        namespace: dict[str, Any] = {"np": np, "jnp": jnp, "lax": lax, **{
            a.name: given[a.name] for a in self.captured if a.role == "global"}}
        exec(compile(self.source, filename, "exec"), namespace)
        if not self.captured:
            return namespace["kernel"]
        return namespace["make"](*[given[a.name] for a in self.captured
                                   if a.role == "closure"])

    def __str__(self) -> str:
        sig = ", ".join(f"{a.name}: {a.dtype}{list(a.shape)}"
                        for a in (*self.args, *self.captured))
        return f"{self.source}# args: {sig}"


# ---------------------------------------------------------------------------------- inputs

def values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Fresh values, never all zeros: non-integral floats in [-4, 4), integers in [-9, 9]."""
    if np.dtype(dtype).kind == "f" or dtype == "bfloat16":
        out = rng.uniform(-4.0, 4.0, shape).astype(dtype)
    else:
        out = rng.integers(-9, 10, shape).astype(dtype)
    if out.size and not out.any():
        out.flat[0] = 3
    return out


def argument(rng: np.random.Generator, arg: Arg) -> np.ndarray:
    """Fresh values for ``arg`` (``values``), one of them NaN where it asks for one."""
    out = values(rng, arg.shape, arg.dtype)
    if arg.nan and out.size:
        out.flat[rng.integers(out.size)] = np.nan
    return out


def laid_out(data: np.ndarray, layout: str, rng: np.random.Generator) -> tuple[np.ndarray,
                                                                                tuple]:
    """``(base, key)``: an array owning its memory and the index (``()`` for the whole array)
    whose view holds ``data`` in ``layout``; the rest of ``base`` is random too."""
    if layout == "C":
        return np.ascontiguousarray(data), ()
    if layout == "F":
        return np.asfortranarray(data), ()
    if layout == "strided":  # every other row, every third column from the second
        key = (slice(None, None, 2), slice(1, None, 3))[-data.ndim:]
        big = (*(2 * d for d in data.shape[:-1]), 3 * data.shape[-1] + 1)
    elif layout == "negstride":
        key, big = (slice(None, None, -1),), data.shape
    else:
        raise ValueError(f"unknown layout {layout!r}")
    base = values(rng, big, data.dtype.name)
    base[key] = data
    return base, key


def view(base: np.ndarray, key: tuple) -> np.ndarray:
    """The argument array a ``(base, key)`` pair stands for."""
    return base[key] if key else base


def layout_of(a: np.ndarray) -> str:
    """A short description of an array's memory layout (for failure messages)."""
    return f"strides={a.strides} C={a.flags.c_contiguous} F={a.flags.f_contiguous} " \
           f"owns={a.flags.owndata}"


# ---------------------------------------------------------------------------------- NumPy kernels

def _basic_index(draw, shape: tuple[int, ...], allow_int: bool = True) -> str:
    """A basic index for ``shape``: ints, slices with steps (negative too), ``...``."""
    parts = []
    for n in shape[:draw(st.integers(1, max(1, len(shape))))]:
        kind = draw(st.sampled_from(["slice", "slice", "full", "int"] if allow_int else
                                    ["slice", "slice", "full"]))
        if kind == "int" and n:
            parts.append(str(draw(st.integers(-n, n - 1))))
        elif kind in ("full", "int"):
            parts.append(":")
        else:
            parts.append(_nonempty_slice(draw, n) if n else "1:")
    if draw(st.integers(0, 5)) == 0:
        parts.append("...")
    return ", ".join(parts)


def _int_index(draw, n: int, unique: bool) -> list[int]:
    """Indices into an axis of length ``n`` (negative ones too); ``unique``: no element twice
    (NumPy's last-write-wins on repeated indices is unspecified in JAX's scatter)."""
    if unique:
        picked = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
        return [i - n if draw(st.booleans()) else i for i in picked]
    return draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=5))


def _adv_index(draw, shape: tuple[int, ...], unique: bool) -> str:
    """Advanced indexing: an integer list or array on one axis, a pair of arrays, or a mix."""
    kind = draw(st.sampled_from(["list", "array", "pair", "mixed"] if len(shape) > 1 else
                                ["list", "array"]))
    if kind == "list":
        return str(_int_index(draw, shape[0], unique))
    if kind == "array":
        return f"np.array({_int_index(draw, shape[0], unique)})"
    if kind == "pair":
        rows = _int_index(draw, shape[0], False)
        cols = draw(st.lists(st.integers(-shape[1], shape[1] - 1), min_size=len(rows),
                             max_size=len(rows)))
        if unique:
            seen = {}
            for r, c in zip(rows, cols, strict=True):
                seen.setdefault((r % shape[0], c % shape[1]), (r, c))
            rows, cols = [p[0] for p in seen.values()], [p[1] for p in seen.values()]
        return f"{rows}, {cols}"
    return f"{draw(st.sampled_from([':', '1:', '::-1', '::2']))}, " \
           f"{_int_index(draw, shape[1], unique)}"


def _nonempty_slice(draw, n: int) -> str:
    """``start:stop[:step]`` selecting at least one of ``n`` elements, in any spelling
    (negative bounds, omitted bounds, steps of 2 and -1); now and then any slice at all."""
    if draw(st.integers(0, 9)) == 0:
        start, stop = draw(st.integers(-n, n)), draw(st.integers(-n - 1, n + 1))
        return f"{start}:{stop}:{draw(st.sampled_from([1, 2, -1]))}"
    lo = draw(st.integers(0, n - 1))
    hi = draw(st.integers(lo + 1, n))
    step = draw(st.sampled_from([1, 1, 2, 3, -1, -2]))
    if step < 0:
        return f"{hi - 1}:{lo - 1 if lo else ''}:{step}"
    start = str(lo - n if draw(st.booleans()) else lo) if lo or draw(st.booleans()) else ""
    stop = str(hi - n if hi < n and draw(st.booleans()) else hi) if hi < n or \
        draw(st.booleans()) else ""
    return f"{start}:{stop}" + (f":{step}" if step != 1 else "")


def _scalar(draw, kind: str | None = None) -> str:
    """A Python (sometimes NumPy) scalar literal."""
    choice = draw(st.sampled_from(["int", "float", "float", "np"] if kind is None else [kind]))
    if choice == "int":
        return str(draw(st.integers(-3, 4)))
    if choice == "float":
        return draw(st.sampled_from(["0.5", "1.5", "-2.25", "3.0", "0.125"]))
    return draw(st.sampled_from(["np.float32(1.5)", "np.float64(0.75)", "np.int32(2)",
                                 "np.int64(-1)"]))


class _NumpyGen:
    """Draws statements of a NumPy kernel, keeping a probe of every variable's value."""

    def __init__(self, draw, args: tuple[Arg, ...], rng: np.random.Generator,
                 captured: frozenset[str] = frozenset()):
        self.draw = draw
        self.captured = captured
        """Names read from outside the kernel: updated in place only through a subscript or
        ``out=`` (``G0 += v`` would make the name local)."""
        self.env: dict[str, Any] = {a.name: values(rng, a.shape, a.dtype) for a in args}
        self.arrays = [a.name for a in args]  # variables holding arrays
        self.masks: list[str] = []
        self.lines: list[str] = []
        self.locals = itertools.count()
        # Float values stay bit-exact between NumPy and XLA until the first float arithmetic
        # (reductions and patterns may reorder it); masks of floats and float -> int casts are
        # drawn only while that holds, so a rounding difference never flips a branch.
        self.floats_exact = True

    # -- probe
    def probe(self, expr: str) -> Any:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return eval(expr, {"np": np}, dict(self.env))

    def run(self, line: str) -> bool:
        """Run ``line`` on the probe; keep it when NumPy accepts it."""
        env = dict(self.env)
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exec(line, {"np": np}, env)
        except Exception:
            return False
        for name, value in env.items():
            if name not in self.env and (not isinstance(value, np.ndarray | np.generic)
                                         or value.size > MAX_SIZE):
                return False
        for name in env.keys() - self.env.keys():
            (self.masks if name.startswith("m") else self.arrays).append(name)
        self.env = env
        self.lines.append(line)
        return True

    def _array_var(self, min_ndim: int = 0) -> str:
        """A variable of at least ``min_ndim`` dimensions (none of them empty when >= 1)."""
        names = [n for n in self.arrays if np.ndim(self.env[n]) >= min_ndim
                 and (min_ndim == 0 or np.size(self.env[n]))]
        return self.draw(st.sampled_from(names or self.arrays[:1]))

    def _is_float(self, expr: str) -> bool:
        return np.asarray(self.probe(expr)).dtype.kind == "f"

    # -- expressions
    def operand(self) -> str:
        """A variable, or a view or gather of one."""
        name = self._array_var()
        shape = np.shape(self.env[name])
        kinds = ["var", "var"]
        if shape:
            kinds += ["basic", "basic", "adv", "T", "ravel", "reshape1", "reshape", "mask"]
        kind = self.draw(st.sampled_from(kinds))
        if kind in ("reshape", "mask", "adv") and not all(shape):
            kind = "reshape1"  # an empty array: nothing to pick
        if kind == "basic":
            return f"{name}[{_basic_index(self.draw, shape)}]"
        if kind == "adv":
            return f"{name}[{_adv_index(self.draw, shape, unique=False)}]"
        if kind == "T":
            return f"{name}.T"
        if kind == "ravel":
            return f"{name}.ravel()"
        if kind == "reshape1":
            return f"{name}.reshape(-1)"
        if kind == "reshape":
            size = int(np.prod(shape))
            dims = [d for d in range(1, size + 1) if size % d == 0]
            d = self.draw(st.sampled_from(dims))
            return f"{name}.reshape({d}, -1)" if self.draw(st.booleans()) else \
                f"{name}.reshape(({size // d}, {d}))"
        if kind == "mask":  # a static (NumPy) boolean mask along the first axis
            flags = self.draw(st.lists(st.booleans(), min_size=shape[0], max_size=shape[0]))
            return f"{name}[np.array({flags})]"
        return name

    def expr(self, depth: int = 0) -> str:
        """An array (or scalar) expression; a draw NumPy rejects is drawn again."""
        for _ in range(_TRIES):
            text = self._expr(depth)
            try:
                value = self.probe(text)
            except Exception:
                continue
            if np.size(value) <= MAX_SIZE and np.ndim(value) <= 3 and (
                    self.floats_exact or not self._casts_float_to_int(text)):
                return text
        return self._array_var()

    @staticmethod
    def _casts_float_to_int(text: str) -> bool:
        return "astype(np.int" in text

    def _expr(self, depth: int) -> str:
        kinds = ["operand", "operand", "binop", "scalar_op", "reduce", "astype", "unary"]
        kind = self.draw(st.sampled_from(kinds if depth < 2 else ["operand"]))
        if kind == "binop":
            op = self.draw(st.sampled_from(["+", "-", "*", "max"]))
            left, right = self.expr(depth + 1), self.expr(depth + 1)
            return f"np.maximum({left}, {right})" if op == "max" else f"({left} {op} {right})"
        if kind == "scalar_op":
            op = self.draw(st.sampled_from(["+", "-", "*"]))
            left, right = self.expr(depth + 1), _scalar(self.draw)
            return f"({right} {op} {left})" if self.draw(st.booleans()) else \
                f"({left} {op} {right})"
        if kind == "reduce":
            sub = self.operand() if depth else self.expr(depth + 1)
            ndim = np.ndim(self.probe(sub)) if self._probes(sub) else 0
            axis = self.draw(st.sampled_from([None, *range(-ndim, ndim)]))
            how = self.draw(st.sampled_from(["sum", "max", "mean"]))
            axis_arg = "" if axis is None else f"axis={axis}"
            if how == "max":
                return f"np.max({sub}{', ' + axis_arg if axis_arg else ''})"
            return f"{sub}.{how}({axis_arg})"
        if kind == "astype":
            dtype = self.draw(st.sampled_from(DTYPES))
            return f"{self.operand()}.astype(np.{dtype})"
        if kind == "unary":
            return self.draw(st.sampled_from(["(-{})", "np.abs({})"])).format(
                self.expr(depth + 1))
        return self.operand()

    def _probes(self, text: str) -> bool:
        try:
            self.probe(text)
        except Exception:
            return False
        return True

    # -- statements
    def statement(self) -> None:
        kinds = ["local", "view", "setitem", "setitem", "iop", "iop", "adv_set", "out",
                 "view_write", "mask_def", "mask_use", "mask_use"]
        if self.floats_exact:
            kinds.append("cast_int")
        for _ in range(_TRIES):
            kind = self.draw(st.sampled_from(kinds))
            line = getattr(self, f"_{kind}")()
            if line is not None and self.run(line):
                if kind not in ("mask_def", "view", "cast_int") and any(
                        np.asarray(v).dtype.kind == "f" for v in self.env.values()):
                    self.floats_exact = False
                return

    def _new_local(self, prefix: str = "t") -> str:
        return f"{prefix}{next(self.locals)}"

    def _local(self) -> str:
        return f"{self._new_local()} = {self.expr()}"

    def _view(self) -> str:
        name = self._new_local("v")
        base = self._array_var(min_ndim=1)
        shape = np.shape(self.env[base])
        how = self.draw(st.sampled_from(["basic", "T", "ravel", "reshape1", "chain"]))
        text = {"basic": f"{base}[{_basic_index(self.draw, shape, allow_int=False)}]",
                "T": f"{base}.T", "ravel": f"{base}.ravel()", "reshape1": f"{base}.reshape(-1)",
                "chain": f"{base}.T[{_basic_index(self.draw, shape[::-1], allow_int=False)}]"
                         f".reshape(-1)"}[how]
        return f"{name} = {text}"

    def _value_for(self, target: str) -> str:
        """A value that broadcasts to ``target`` (a scalar half the time)."""
        if self.draw(st.booleans()):
            return _scalar(self.draw, "int" if not self._is_float(target) else None)
        for _ in range(_TRIES):
            value = self.expr(1)
            try:
                shape = np.shape(self.probe(value))
                np.broadcast_shapes(shape, np.shape(self.probe(target)))
            except Exception:
                continue
            if self._is_float(target) or not self._is_float(value) or self.floats_exact:
                return value
        return _scalar(self.draw, "int")

    def _target(self) -> str:
        name = self._array_var(min_ndim=1)
        shape = np.shape(self.env[name])
        how = self.draw(st.sampled_from(["basic", "basic", "whole", "T", "ravel", "reshape1"]))
        if how == "basic":
            return f"{name}[{_basic_index(self.draw, shape)}]"
        if how == "whole":
            return f"{name}[...]"
        return {"T": f"{name}.T[{_basic_index(self.draw, shape[::-1])}]",
                "ravel": f"{name}.ravel()[{_basic_index(self.draw, (int(np.prod(shape)),))}]",
                "reshape1": f"{name}.reshape(-1)[{_basic_index(self.draw, (int(np.prod(shape)),))}]"
                }[how]

    def _setitem(self) -> str:
        target = self._target()
        return f"{target} = {self._value_for(target)}"

    def _iop(self) -> str | None:
        op = self.draw(st.sampled_from(["+=", "-=", "*="]))
        target = self.draw(st.sampled_from([self._array_var(min_ndim=0), self._target()]))
        if target in self.captured:
            return None
        return f"{target} {op} {self._value_for(target)}"

    def _adv_set(self) -> str:
        name = self._array_var(min_ndim=1)
        target = f"{name}[{_adv_index(self.draw, np.shape(self.env[name]), unique=True)}]"
        op = self.draw(st.sampled_from(["=", "+=", "*="]))
        return f"{target} {op} {self._value_for(target)}"

    def _out(self) -> str:
        target = self.draw(st.sampled_from([self._array_var(min_ndim=1), self._target()]))
        ufunc = self.draw(st.sampled_from(["add", "multiply", "subtract", "maximum"]))
        left = self.draw(st.sampled_from([target, self.expr(1)]))
        return f"np.{ufunc}({left}, {self._value_for(target)}, out={target})"

    def _view_write(self) -> str | None:
        views = [n for n in self.arrays if n.startswith("v") and np.ndim(self.env[n])]
        if not views:
            return None
        name = self.draw(st.sampled_from(views))
        target = f"{name}[{_basic_index(self.draw, np.shape(self.env[name]))}]"
        if self.draw(st.booleans()):
            return f"{target} = {self._value_for(target)}"
        return f"{name} += {self._value_for(name)}"

    def _mask_def(self) -> str | None:
        candidates = [n for n in self.arrays if np.ndim(self.env[n]) and (
            self.floats_exact or np.asarray(self.env[n]).dtype.kind in "iu")]
        if not candidates:
            return None
        name = self.draw(st.sampled_from(candidates))
        mask = self._new_local("m")
        op = self.draw(st.sampled_from([">", "<", "!=", ">="]))
        return f"{mask} = {name} {op} {self.draw(st.sampled_from(['0', '1', '-0.5', '2']))}"

    def _mask_use(self) -> str | None:
        if not self.masks:
            return None
        mask = self.draw(st.sampled_from(self.masks))
        shape = np.shape(self.env[mask])
        same = [n for n in self.arrays if np.shape(self.env[n]) == shape]
        if not same:
            return None
        name = self.draw(st.sampled_from(same))
        how = self.draw(st.sampled_from(["set", "iadd", "imul", "copy", "sum"]))
        if how == "sum":
            return f"{self._new_local()} = {name}[{mask}].sum()"
        if how == "copy":
            other = self.draw(st.sampled_from(same))
            if self._is_float(other) and not self._is_float(name) and not self.floats_exact:
                return None
            return f"{name}[{mask}] = {other}[{mask}]"
        value = _scalar(self.draw, None if self._is_float(name) else "int")
        op = {"set": "=", "iadd": "+=", "imul": "*="}[how]
        return f"{name}[{mask}] {op} {value}"

    def _cast_int(self) -> str | None:
        ints = [n for n in self.arrays if np.asarray(self.env[n]).dtype.kind in "iu"
                and np.ndim(self.env[n])]
        floats = [n for n in self.arrays if np.asarray(self.env[n]).dtype.kind == "f"]
        if not ints or not floats:
            return None
        name, other = self.draw(st.sampled_from(ints)), self.draw(st.sampled_from(floats))
        return f"{name}[...] = {other}"

    def returns(self) -> str:
        count = self.draw(st.integers(0, 3))
        if count == 0:
            return "    return None"
        items = []
        for _ in range(count):
            if self.draw(st.booleans()):
                items.append(self.draw(st.sampled_from(self.arrays)))
            else:
                items.append(self.expr())
        return f"    return ({', '.join(items)},)"


@st.composite
def numpy_programs(draw) -> Program:
    """A NumPy kernel of 1-6 statements over 1-3 array arguments (at most 6x6)."""
    m, n = draw(st.integers(2, 6)), draw(st.integers(2, 6))
    args = tuple(Arg(name, draw(st.sampled_from([(m, n), (m, n), (n,), (m,), (n, m)])),
                     draw(st.sampled_from(DTYPES)))
                 for name in "abc"[:draw(st.integers(1, 3))])
    gen = _NumpyGen(draw, args, np.random.default_rng(draw(st.integers(0, 2**32 - 1))))
    for _ in range(draw(st.integers(1, 6))):
        gen.statement()
    body = [f"    {line}" for line in gen.lines]
    source = "def kernel({}):\n{}\n{}\n".format(
        ", ".join(a.name for a in args), "\n".join(body) if body else "    pass", gen.returns())
    low = any(a.dtype == "float32" for a in args) or "float32" in source
    return Program(source, args, low)


@st.composite
def captured_programs(draw) -> Program:
    """A NumPy kernel over 1-2 array arguments that reads 1-2 arrays from outside (module
    globals ``G0``, closure variables ``W0``): it updates each in place (a subscript or
    ``out=``) and uses it in its other statements; now and then it also rebinds one
    (``global G0; G0 = ...`` / ``nonlocal W0; W0 = ...``)."""
    m, n = draw(st.integers(2, 6)), draw(st.integers(2, 6))
    shapes = st.sampled_from([(m, n), (m, n), (n,), (m,), (n, m)])
    args = tuple(Arg(name, draw(shapes), draw(st.sampled_from(DTYPES)))
                 for name in "ab"[:draw(st.integers(1, 2))])
    roles = draw(st.lists(st.sampled_from(["global", "closure"]), min_size=1, max_size=2))
    captured = tuple(Arg(f"{'G' if role == 'global' else 'W'}{k}", draw(shapes),
                         draw(st.sampled_from(DTYPES)), role) for k, role in enumerate(roles))
    gen = _NumpyGen(draw, args + captured, np.random.default_rng(draw(st.integers(0, 2**32 - 1))),
                    frozenset(a.name for a in captured))
    for a in captured:  # each captured array is updated in place at least once
        for _ in range(_TRIES):
            how = draw(st.sampled_from(["[...] +=", "[...] *=", "out"]))
            value = gen._value_for(a.name)
            line = (f"np.add({a.name}, {value}, out={a.name})" if how == "out" else
                    f"{a.name}{how} {value}")
            if gen.run(line):
                gen.floats_exact = False
                break
    for _ in range(draw(st.integers(0, 4))):
        gen.statement()
    lines = list(gen.lines)
    rebinds = (draw(st.sampled_from([a.name for a in captured]))
               if draw(st.integers(0, 5)) == 5 else None)  # one in six, the simplest draw none
    if rebinds is not None:
        role = next(a.role for a in captured if a.name == rebinds)
        lines = [f"{'global' if role == 'global' else 'nonlocal'} {rebinds}", *lines,
                 f"{rebinds} = {rebinds} * 2"]
    body = "\n".join(f"        {line}" for line in lines) or "        pass"
    closures = ", ".join(a.name for a in captured if a.role == "closure")
    source = (f"def make({closures}):\n    def kernel({', '.join(a.name for a in args)}):\n"
              f"{body}\n    {gen.returns()}\n    return kernel\n")
    low = any(a.dtype == "float32" for a in args + captured) or "float32" in source
    return Program(source, args, low, captured, rebinds)


# ---------------------------------------------------------------------------------- control flow

class _FlowGen:
    """Draws the parts of a NumPy kernel over a vector ``a`` whose converted control flow meets
    Python's rules: builtins in rolled loops, 16-bit accumulation, static recursion."""

    def __init__(self, draw, n: int, dtype: str):
        self.draw, self.n, self.dtype = draw, n, dtype
        self.wide = dtype not in ("float16", "bfloat16")
        """float32 / float64: XLA's float rewrites (fused multiply-adds, constants folded
        together) stay within the tolerance; 16-bit programs are compared bit for bit."""
        self.helpers: list[str] = []
        self.lines: list[str] = []
        self.results: list[str] = []
        self.rounds = False
        """A round() to an int: NumPy raises on a NaN input there, so no NaN is drawn."""
        self.count = itertools.count()

    def _loop(self, head: str, body: str, start: int = 1) -> list[str]:
        """A loop of at least ROLL_THRESHOLD iterations (it rolls) over ``a``'s elements."""
        return [head, f"for i in range({start}, {self.n}):", f"    {body}"]

    def fold(self) -> None:
        """``m = max(m, a[i])`` and its kin in a rolled loop: Python's left fold (NaN kept
        when it comes first, passed over after)."""
        k, fn = next(self.count), self.draw(st.sampled_from(["max", "min"]))
        args = self.draw(st.sampled_from([f"m{k}, a[i]", f"a[i], m{k}",
                                          f"m{k}, a[i], a[{self.n - 1} - i]"]))
        self.lines += self._loop(f"m{k} = a[0]", f"m{k} = {fn}({args})")
        self.results.append(f"m{k}")
        extra = self.draw(st.sampled_from(["none", "vector", "list", "abs", "sum"]))
        lo = self.draw(st.integers(0, self.n - 2))
        line = {"none": None, "vector": f"w{k} = {fn}(a[{lo}:])",
                "list": f"w{k} = {fn}([a[{lo}], a[{lo + 1}], m{k}])",
                "abs": f"w{k} = abs(a[{lo}] - m{k})",
                "sum": f"w{k} = sum(a[{lo}:{lo + 2}], m{k})"}[extra]
        if line is not None:
            self.lines.append(line)
            self.results.append(f"w{k}")

    def accumulate(self) -> None:
        """A long accumulation (16-bit: rounded at every step, NumPy's result stops growing
        where a sum in another order would not), into a scalar or an array element."""
        k, steps = next(self.count), self.draw(st.integers(20, 400))
        width = self.draw(st.integers(1, 3))
        term = self.draw(st.sampled_from([
            f"abs(a[i % {self.n}])", f"a[(i * 3) % {self.n}] * 2",
            f"abs(a[i % {self.n}] - a[0])", f"max(a[i % {self.n}], a[1])"]))
        if self.draw(st.booleans()):
            self.lines += [f"s{k} = a.dtype.type(0)", f"for i in range({steps}):",
                           f"    s{k} = s{k} + {term}"]
        else:
            self.lines += [f"s{k} = np.zeros({width}, a.dtype)", f"for i in range({steps}):",
                           f"    s{k}[i % {width}] += {term}"]
        self.results.append(f"s{k}")
        if self.dtype != "bfloat16" and self.draw(st.booleans()):  # bfloat16 has no round()
            self.rounds = True
            digits = self.draw(st.sampled_from(["", ", 1", ", 0"]))
            self.lines.append(f"r{k} = round(a[{self.draw(st.integers(0, self.n - 1))}]"
                              f"{digits}) + s{k}")
            self.results.append(f"r{k}")

    def widen(self) -> None:
        """A 16-bit (or wider) product or difference cast to a wider float: NumPy rounds it to
        its dtype first (XLA's excess precision would not)."""
        k, m = next(self.count), self.draw(st.integers(1, self.n - 1))
        op = self.draw(st.sampled_from(["*", "-", "+"]))
        wide = self.draw(st.sampled_from(["float32", "float64"]))
        self.lines.append(f"c{k} = (a[:{m}] {op} a[-{m}:]).astype(np.{wide})")
        self.results.append(f"c{k}")

    def recurse(self) -> None:
        """A recursive helper (or two calling each other) of a static depth, called from the
        kernel, from a rolled loop, or to write ``a`` in place."""
        k = next(self.count)
        steps = ["x + y", "np.maximum(x, y)", "abs(x) - y", "x * 2", "y - x"]
        first, second = (self.draw(st.sampled_from(steps)) for _ in range(2))
        other = f"rec{k}b" if self.draw(st.booleans()) else f"rec{k}"
        self.helpers.append(f"def rec{k}(x, y, d):\n    if d == 0:\n        return x\n"
                            f"    return {other}({first}, y, d - 1)\n")
        if other != f"rec{k}":
            self.helpers.append(f"def rec{k}b(x, y, d):\n"
                                f"    return x if d == 0 else rec{k}({second}, y, d - 1)\n")
        depth, j = self.draw(st.integers(0, 4)), self.draw(st.integers(0, self.n - 1))
        lo = self.draw(st.integers(0, self.n - 2))
        how = self.draw(st.sampled_from(["value", "in_place", "loop"]))
        if how == "value":
            self.lines.append(f"v{k} = rec{k}(a[{lo}:], a[{j}], {depth})")
            self.results.append(f"v{k}")
        elif how == "in_place":
            self.lines.append(f"a[{lo}:] = rec{k}(a[{lo}:], a[{j}], {depth})")
        else:
            self.lines += self._loop("", f"a[i] = rec{k}(a[i], a[i - 1], {depth})")[1:]


@st.composite
def control_flow_programs(draw) -> Program:
    """A NumPy kernel over a vector of 9-12 floats (float16, bfloat16, float32 or float64) made
    of 1-3 parts: builtins (max, min, abs, sum, round) in rolled loops, long accumulations,
    statically deep recursive helpers, and products or differences cast to a wider float; NaN in
    the input when it meets max / min."""
    n, dtype = draw(st.integers(9, 12)), draw(st.sampled_from(FLOW_DTYPES))
    gen = _FlowGen(draw, n, dtype)
    parts = draw(st.lists(st.sampled_from(["fold", "accumulate", "recurse", "widen"]),
                          min_size=1, max_size=3, unique=True))
    for part in parts:
        getattr(gen, part)()
    nan = "fold" in parts and not gen.rounds and draw(st.booleans())
    body = "\n".join(f"    {line}" for line in gen.lines if line)
    source = "".join(f"{h}\n\n" for h in gen.helpers) + (
        f"def kernel(a):\n{body}\n    return ({''.join(f'{r}, ' for r in gen.results)}a)\n")
    return Program(source, (Arg("a", (n,), dtype, nan=nan),), dtype != "float64",
                   exact=not gen.wide)


# ---------------------------------------------------------------------------------- JAX functions

class _JaxGen:
    """Draws statements of a JAX function (scatter, gather, slices, dot, reductions), checking
    each with ``jax.eval_shape``."""

    def __init__(self, draw, args: tuple[Arg, ...]):
        self.draw = draw
        self.env = {a.name: jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args}
        self.data = [a.name for a in args if a.role == "data"]
        self.index = [a.name for a in args if a.role == "index"]
        self.starts = [a.name for a in args if a.role == "start"]
        self.lines: list[str] = []
        self.locals = itertools.count()

    def run(self, name: str, expr: str) -> bool:
        try:
            struct = jax.eval_shape(
                lambda env: eval(expr, {"jnp": jnp, "lax": lax, "np": np}, dict(env)),
                self.env)
        except Exception:
            return False
        if not isinstance(struct, jax.ShapeDtypeStruct) or struct.size > MAX_SIZE:
            return False
        self.env[name] = struct
        if struct.dtype.kind == "f" and struct.ndim and struct.size:
            self.data.append(name)  # an operand for later statements
        self.lines.append(f"{name} = {expr}")
        return True

    def _var(self, min_ndim: int = 1) -> str:
        """A float variable, an argument half the time."""
        names = [n for n in self.data if self.env[n].ndim >= min_ndim]
        args = [n for n in names if not n.startswith("t")]
        return self.draw(st.sampled_from(args if args and self.draw(st.booleans()) else
                                         names or self.data))

    def _index(self, shape: tuple[int, ...], unique: bool) -> str:
        kinds = ["int", "slice", "slice", "list", "traced", "rows_cols", "int_slice"]
        kind = self.draw(st.sampled_from(kinds if len(shape) > 1 else kinds[:5]))
        n = shape[0]
        if kind == "int":
            return str(self.draw(st.integers(-n, n - 1)))
        if kind == "slice":
            return _nonempty_slice(self.draw, n)
        if kind == "list":
            return f"np.array({_int_index(self.draw, n, unique)})"
        if kind == "traced" and self.index:
            return self.draw(st.sampled_from(self.index))
        if kind == "rows_cols":
            return f"{self.draw(st.integers(0, n - 1))}:, " \
                   f"{self.draw(st.integers(0, shape[1] - 1))}::{self.draw(st.integers(1, 2))}"
        if kind == "int_slice":
            return f"{self.draw(st.integers(-n, n - 1))}, {self.draw(st.integers(0, shape[1]))}:"
        return ":"

    def statement(self) -> None:
        kinds = ["scatter", "scatter", "scatter", "gather", "slice", "dynamic_slice",
                 "dynamic_update_slice", "dot", "reduce", "elementwise"]
        for _ in range(_TRIES):
            kind = self.draw(st.sampled_from(kinds))
            expr = getattr(self, f"_{kind}")()
            if expr is not None and self.run(f"t{next(self.locals)}", expr):
                return

    def _scatter(self) -> str:
        x = self._var()
        how = self.draw(st.sampled_from(["add", "set", "mul", "min", "max"]))
        idx = self._index(self.env[x].shape, unique=how == "set")
        if how == "set" and idx in self.index:
            idx = ":"  # index arguments may repeat an index (unspecified for .set)
        value = self.draw(st.sampled_from(["scalar", "scalar", "array"]))
        if value == "array":
            return f"{x}.at[{idx}].{how}({x}[{idx}] * {_scalar(self.draw, 'float')} + 1.0)"
        return f"{x}.at[{idx}].{how}({_scalar(self.draw, 'float')})"

    def _gather(self) -> str:
        x = self._var()
        return f"{x}[{self._index(self.env[x].shape, unique=False)}]"

    def _slice(self) -> str:
        x = self._var()
        starts, limits, strides = [], [], []
        for n in self.env[x].shape:
            a = self.draw(st.integers(0, n - 1))
            starts.append(a)
            limits.append(self.draw(st.integers(a + 1, n)))
            strides.append(self.draw(st.integers(1, 3)))
        return f"lax.slice({x}, {tuple(starts)}, {tuple(limits)}, {tuple(strides)})"

    def _start(self, n: int) -> str:
        if self.starts and self.draw(st.booleans()):
            return self.draw(st.sampled_from(self.starts))
        return str(self.draw(st.integers(-2, n + 1)))  # out of range: XLA clamps

    def _dynamic_slice(self) -> str:
        x = self._var()
        shape = self.env[x].shape
        sizes = tuple(self.draw(st.integers(1, n)) for n in shape)
        starts = ", ".join(self._start(n) for n in shape)
        return f"lax.dynamic_slice({x}, ({starts},), {sizes})"

    def _dynamic_update_slice(self) -> str:
        x = self._var()
        shape = self.env[x].shape
        sizes = tuple(self.draw(st.integers(1, n)) for n in shape)
        fitting = [n for n in self.data if self.env[n].shape == sizes]
        update = self.draw(st.sampled_from(fitting)) if fitting and self.draw(st.booleans()) \
            else f"jnp.full({sizes}, {_scalar(self.draw, 'float')}, {x}.dtype)"
        starts = ", ".join(self._start(n) for n in shape)
        return f"lax.dynamic_update_slice({x}, {update}, ({starts},))"

    def _dot(self) -> str:
        x = self._var()
        shape = self.env[x].shape
        partners = [n for n in self.data if self.env[n].ndim and self.env[n].shape[0] ==
                    shape[-1]]
        if partners and self.draw(st.booleans()):
            return f"jnp.dot({x}, {self.draw(st.sampled_from(partners))})"
        return f"({x} @ {x}.T)" if len(shape) == 2 else f"jnp.dot({x}, {x})"

    def _reduce(self) -> str:
        x = self._var()
        how = self.draw(st.sampled_from(["sum", "max", "mean", "min"]))
        axis = self.draw(st.sampled_from([None, *range(self.env[x].ndim)]))
        return f"jnp.{how}({x}{'' if axis is None else f', axis={axis}'})"

    def _elementwise(self) -> str:
        x = self._var(min_ndim=0)
        same = [n for n in self.data if self.env[n].shape == self.env[x].shape]
        y = self.draw(st.sampled_from(same))
        op = self.draw(st.sampled_from(["{} + {}", "{} * {}", "jnp.maximum({}, {})",
                                        "{} - 2.0 * {}"]))
        return op.format(x, y)


@st.composite
def jax_programs(draw) -> Program:
    """A JAX function of 1-6 statements over a float32 matrix, a vector or matrix, a vector, an
    int32 index vector and an int32 start scalar."""
    m, n = draw(st.integers(2, 6)), draw(st.integers(2, 6))
    args = (Arg("x", (m, n), "float32"), Arg("y", draw(st.sampled_from([(n,), (n, m)])),
                                             "float32"),
            Arg("z", (draw(st.integers(2, 8)),), "float32"),
            Arg("idx", (draw(st.integers(1, 4)),), "int32", "index"),
            Arg("i", (), "int32", "start"))
    gen = _JaxGen(draw, args)
    for _ in range(draw(st.integers(1, 6))):
        gen.statement()
    # Every value made: statements nothing returns would be dead code to the passes.
    results = [n for n in gen.env if n.startswith("t")] or ["x"]
    body = "\n".join(f"    {line}" for line in gen.lines) or "    pass"
    source = f"def kernel(x, y, z, idx, i):\n{body}\n    return ({', '.join(results)},)\n"
    return Program(source, args, True)


def jax_inputs(program: Program, rng: np.random.Generator) -> list[np.ndarray]:
    """Inputs of a JAX program: float32 data; index vectors in range (negative ones too) or one
    past the end; start scalars in [-2, n+1] (XLA clamps them)."""
    m = program.args[0].shape[0]
    out = []
    for arg in program.args:
        if arg.role == "index":
            out.append(rng.integers(-m, m + 1, arg.shape).astype(np.int32))
        elif arg.role == "start":
            out.append(np.asarray(rng.integers(-2, m + 2), np.int32))
        else:
            out.append(values(rng, arg.shape, arg.dtype))
    return out
