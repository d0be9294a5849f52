"""NumPy ufuncs on proxy arrays: NumPy resolves the loop dtypes (so results have NumPy's types),
jax.numpy computes; calls, ``reduce``, ``accumulate``, ``outer`` and ``at``, with ``out=`` and
``where=``."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from reactant_lab.trace.numpy_mode import affine, context, errors, indexing, masks, matvec, ranged
from reactant_lab.trace.numpy_mode.layouts import like_operands, like_reduction
from reactant_lab.trace.numpy_mode.proxy import (
    ProxyArray,
    concrete_array,
    concrete_of,
    new_array,
    new_result,
    unwrap,
)
from reactant_lab.trace.numpy_mode.storage import (
    FACTORED_MIN,
    IMMUTABLE,
    Root,
    indexed_shape,
    to_jax,
)

# Every NumPy ufunc with a jax.numpy function of the same name (all but np.isnat).
UFUNCS: dict[np.ufunc, Any] = {
    u: getattr(jnp, u.__name__) for u in vars(np).values()
    if isinstance(u, np.ufunc) and hasattr(jnp, u.__name__)}
_CALL_OPTIONS = {"dtype", "signature", "casting", "order", "subok"}
_INT_DIVISION = {np.floor_divide, np.remainder, np.fmod, np.divmod}


def apply(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``ufunc.<method>(*inputs, **kwargs)`` where some input or output is a proxy array."""
    if ranged.involved(inputs, kwargs.get("out")):
        return ranged.apply_ufunc(ufunc, method, inputs, kwargs)
    impl = _METHODS.get(method)
    if ufunc not in UFUNCS or impl is None:
        name = errors.numpy_name(ufunc) + ("" if method == "__call__" else f".{method}")
        raise errors.unsupported(name)
    if _all_concrete(inputs, kwargs):
        return _eager(ufunc if method == "__call__" else getattr(ufunc, method), inputs, kwargs)
    return impl(ufunc, inputs, dict(kwargs))


def _call(ufunc: np.ufunc, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    outs = _outs(kwargs.pop("out", None), ufunc.nout)
    where = kwargs.pop("where", True)
    extra = set(kwargs) - _CALL_OPTIONS
    if extra:
        raise errors.unsupported(ufunc, f" (with {', '.join(sorted(extra))}=)")
    sel, inputs = masks.align(inputs, outs)
    python = _python_numbers(inputs, outs, where, kwargs)
    in_dtypes, out_dtypes = resolve(ufunc, inputs, outs, kwargs, python)
    if not python:  # Python's own ints: i ** -1 is a float there
        _check_integer_power(ufunc, inputs, in_dtypes)
    key = _mask_key(ufunc, inputs, outs, where, sel, out_dtypes)
    if key is not None and key in context.memo():
        return _deliver([context.memo()[key][0]], outs, where, sel, inputs)
    values = [cast(x, dt) for x, dt in zip(inputs, in_dtypes, strict=True)]
    exponent = _small_exponent(ufunc, inputs, in_dtypes)
    half = _half_exponent(ufunc, inputs, in_dtypes)
    if exponent is not None:  # x**2 is x*x, as NumPy's own fast path computes it
        result: Any = lax.integer_pow(jnp.asarray(values[0]), exponent)
    elif half is not None:
        result = _sqrt_power(jnp.asarray(values[0]), half)
    else:
        result = _lax_arithmetic(ufunc, values, in_dtypes)
        if result is None and ufunc is np.matmul:
            result = matvec.product(*inputs, *values)
        if result is None:
            result = UFUNCS[ufunc](*values)
    results: Sequence[Any] = result if ufunc.nout > 1 else (result,)
    if ufunc in _INT_DIVISION and in_dtypes[1].kind in "iub":
        # NumPy gives 0 for an integer division by zero; XLA does not.
        results = [jnp.where(values[1] == 0, jnp.zeros_like(r), r) for r in results]
    results = [jnp.asarray(r).astype(dt) for r, dt in zip(results, out_dtypes, strict=True)]
    if python:  # Python numbers in, Python numbers out (a loop index: i + 1, i < n)
        made = [ProxyArray(Root(r, frozen=IMMUTABLE[2], weak=True)) for r in results]
        _track_index(ufunc, inputs, made[0].value)
        return made[0] if len(made) == 1 else tuple(made)
    if key is not None:
        # The input values stay referenced, so their ids cannot be reused within the trace.
        context.memo()[key] = (results[0], [unwrap(x) for x in inputs])
    return _deliver(results, outs, where, sel, inputs)


_LAX_ARITHMETIC: dict[np.ufunc, Callable[[Any, Any], Any]] = {
    np.add: lax.add, np.subtract: lax.sub, np.multiply: lax.mul, np.true_divide: lax.div}


def _lax_arithmetic(ufunc: np.ufunc, values: list[Any],
                    in_dtypes: tuple[np.dtype, ...]) -> Any | None:
    """``ufunc(*values)`` as lax's primitive, broadcast as NumPy does, for +, -, * and a float
    division of numbers of one dtype (NumPy resolved it, and ``values`` are cast to it);
    None otherwise. jax.numpy's functions are jitted ones (their promotion, then this
    primitive): each a costly call while tracing, and a rolled loop's body makes many."""
    op = _LAX_ARITHMETIC.get(ufunc)
    if op is None or in_dtypes[0] != in_dtypes[1] or in_dtypes[0].kind not in (
            "fc" if ufunc is np.true_divide else "iufc"):
        return None
    shape = np.broadcast_shapes(*(np.shape(v) for v in values))
    return op(*(v if np.shape(v) == shape else lax.broadcast_in_dim(
        v, shape, tuple(range(len(shape) - np.ndim(v), len(shape)))) for v in values))


def _small_exponent(ufunc: np.ufunc, inputs: tuple[Any, ...],
                    in_dtypes: tuple[np.dtype, ...]) -> int | None:
    """The exponent of ``x ** n`` for a static integral ``n`` in [-4, 4] (not negative for
    integers), else None."""
    n = _static_exponent(ufunc, inputs, in_dtypes, "iufc")
    if n is None or not n.is_integer() or not -4 <= n <= 4 or (
            in_dtypes[0].kind in "iu" and n < 0):
        return None
    return int(n)


def _check_integer_power(ufunc: np.ufunc, inputs: tuple[Any, ...],
                         in_dtypes: tuple[np.dtype, ...]) -> None:
    """NumPy's ValueError for an integer power with a negative exponent known while tracing.
    A traced exponent is not checked (NumPy checks each element as it runs; the compiled code
    cannot raise): a negative element gives an unspecified integer, as in JAX."""
    if ufunc is not np.power or not all(dt.kind in "iu" for dt in in_dtypes):
        return
    exponent = concrete_of(inputs[1]) if isinstance(inputs[1], ProxyArray) else inputs[1]
    if isinstance(exponent, np.ndarray | np.generic | int) and np.any(np.asarray(exponent) < 0):
        shown = exponent if np.ndim(exponent) == 0 else np.asarray(exponent).min()
        raise errors.negative_integer_power(shown.item() if isinstance(shown, np.generic)
                                            else shown)


def _static_exponent(ufunc: np.ufunc, inputs: tuple[Any, ...], in_dtypes: tuple[np.dtype, ...],
                     kinds: str) -> float | None:
    """The exponent of ``x ** e`` for ``x`` of a dtype kind in ``kinds`` and a static real
    ``e`` (a Python or NumPy number, not a bool), as a float; else None."""
    if ufunc is not np.power or in_dtypes[0].kind not in kinds:
        return None
    e = inputs[1]
    if not isinstance(e, int | float | np.integer | np.floating) or isinstance(e, bool):
        return None
    return float(e)


_HALVES = (-1.5, -0.5, 0.5, 1.5)


def _half_exponent(ufunc: np.ufunc, inputs: tuple[Any, ...],
                   in_dtypes: tuple[np.dtype, ...]) -> float | None:
    """The exponent of ``x ** e`` for a real floating ``x`` and a static ``e`` in _HALVES, else
    None."""
    e = _static_exponent(ufunc, inputs, in_dtypes, "f")
    return e if e in _HALVES else None


def _sqrt_power(x: Any, e: float) -> Any:
    """``x ** e`` for ``e`` in _HALVES through one square root: ``x ** 0.5`` is ``sqrt(x)``, as
    NumPy itself computes it; the others (``x * sqrt(x)``, ``1 / sqrt(x)``, ``1 / (x *
    sqrt(x))``) stand for pow, which XLA:CPU runs several times slower than a square root (and
    a division as slow as the square root: nbody's ``r ** -1.5`` over 800x800 took 4.0 ms as
    ``(1 / sqrt(r)) / r``, 1.8-2.2 ms so). Within 2 ulp of pow, they overflow and underflow
    where it does (no intermediate leaves the range first: ``_inverse_three_halves``), and keep
    its special cases: -0 counts as +0 and -inf as +inf (``(-0.0) ** -0.5`` is +inf,
    ``(-inf) ** 1.5`` is inf), a finite negative gives nan."""
    if e == 0.5:
        return jnp.sqrt(x)
    t = jnp.where((x == 0) | (x == -jnp.inf), jnp.abs(x), x)
    if e == -1.5:
        return _inverse_three_halves(t)
    s = jnp.sqrt(t)
    return t * s if e == 1.5 else 1 / s


def _inverse_three_halves(t: Any) -> Any:
    """``t ** -1.5`` for ``t`` that is not -0 or -inf, as ``1 / (t * sqrt(t))``: one division.
    ``t * sqrt(t)`` would leave the range where the result does not (past ``2 ** (2/3 of the
    largest exponent)`` it overflows where the result is a subnormal, and below the inverse it
    loses bits as a subnormal), so there ``t`` is scaled by an even power of two first and the
    result back by its -1.5th power, both exact. float16 and bfloat16 are computed in float32,
    as NumPy computes their powers."""
    dtype = t.dtype
    if np.dtype(dtype).itemsize < 4:
        return _inverse_three_halves(t.astype(np.float32)).astype(dtype)
    k = (int(np.finfo(np.dtype(dtype)).maxexp) // 3) & ~1  # t * sqrt(t) in range below 2 ** k
    big, small = t > 2.0 ** k, t < 2.0 ** -k
    scale = jnp.where(big, 2.0 ** -k, jnp.where(small, 2.0 ** k, 1.0)).astype(dtype)
    back = jnp.where(big, 2.0 ** (-3 * k // 2), jnp.where(small, 2.0 ** (3 * k // 2), 1.0))
    u = t * scale
    return 1 / (u * jnp.sqrt(u)) * back.astype(dtype)


def _mask_key(ufunc: np.ufunc, inputs: tuple[Any, ...], outs: tuple[ProxyArray | None, ...],
              where: Any, sel: masks.Selection | None,
              out_dtypes: tuple[np.dtype, ...]) -> tuple[object, ...] | None:
    """A key under which a boolean result is remembered for the rest of the trace, so that
    ``a[a > 0] = f(a[a > 0])`` selects with one mask, not two equal ones lined up at run time."""
    if (ufunc.nout != 1 or out_dtypes[0] != np.bool_ or where is not True or sel is not None
            or outs[0] is not None):
        return None
    parts: list[tuple[object, object]] = []
    for x in inputs:
        if isinstance(x, ProxyArray):
            parts.append(("traced", id(x.value)))
        elif isinstance(x, bool | int | float | complex | np.generic):
            parts.append((type(x), x))
        else:
            return None
    return (ufunc, *parts)


def _track_index(ufunc: np.ufunc, inputs: tuple[Any, ...], result: Any) -> None:
    """``i + c`` / ``c + i`` / ``i - c`` of a loop index ``i`` and a Python int: remembered
    (see affine)."""
    if ufunc not in (np.add, np.subtract) or len(inputs) != 2:
        return
    a, b = inputs
    if isinstance(a, ProxyArray) and type(b) is int:
        affine.derived(result, a.value, b if ufunc is np.add else -b)
    elif isinstance(b, ProxyArray) and type(a) is int and ufunc is np.add:
        affine.derived(result, b.value, a)


_PYTHON_DTYPES = {bool: np.dtype(bool), int: np.dtype(np.int64), float: np.dtype(np.float64),
                  complex: np.dtype(np.complex128)}


def _python_numbers(inputs: tuple[Any, ...], outs: tuple[ProxyArray | None, ...], where: Any,
                    kwargs: dict[str, Any]) -> bool:
    """Whether a traced Python number (a rolled loop's index, a carried Python float) meets only
    Python numbers: the result is a Python number too, as in Python (NumPy would give a NumPy
    scalar, or an object loop for two Python ints)."""
    if any(o is not None for o in outs) or where is not True or kwargs.get("dtype") is not None \
            or kwargs.get("signature") is not None:
        return False
    weak_bool = [isinstance(x, ProxyArray) and x.root.weak and x.dtype.kind == "b"
                 for x in inputs]
    keys = [bool if wb else dtype_key(x) for x, wb in zip(inputs, weak_bool, strict=True)]
    return all(k in _PYTHON_DTYPES for k in keys) and any(
        isinstance(x, ProxyArray) and x.root.weak and not x._ops for x in inputs)


def resolve(ufunc: np.ufunc, inputs: tuple[Any, ...], outs: tuple[ProxyArray | None, ...],
            kwargs: dict[str, Any], python: bool = False
            ) -> tuple[tuple[np.dtype, ...], tuple[np.dtype, ...]]:
    """NumPy's loop dtypes (inputs, outputs) for these operands; NumPy's own error when none.
    With ``python`` (only Python numbers), each as its default NumPy dtype."""
    keys = tuple(_PYTHON_DTYPES.get(dtype_key(x), np.dtype(bool)) if python else dtype_key(x)
                 for x in inputs) + tuple(o.dtype if o is not None else None for o in outs)
    signature = kwargs.get("signature")
    if kwargs.get("dtype") is not None:
        signature = (None,) * ufunc.nin + (np.dtype(kwargs["dtype"]),) * ufunc.nout
    options = {"casting": kwargs.get("casting", "same_kind")}
    if signature is not None:
        options["signature"] = signature
    resolved = ufunc.resolve_dtypes(keys, **options)
    return resolved[:ufunc.nin], resolved[ufunc.nin:]


def dtype_key(x: Any) -> Any:
    """What ``resolve_dtypes`` wants for an operand: a dtype, or a Python type for a weak scalar."""
    if isinstance(x, ProxyArray):
        if x.root.weak and not x._ops:
            return {"b": np.dtype(bool), "i": int, "u": int, "f": float, "c": complex}[x.dtype.kind]
        return x.dtype
    if isinstance(x, np.generic):
        return x.dtype
    if type(x) is bool:
        return np.dtype(bool)
    if isinstance(x, int | float | complex):
        return type(x)
    if hasattr(x, "dtype"):
        return np.dtype(x.dtype)
    return np.asarray(x).dtype


def cast(x: Any, dtype: np.dtype) -> Any:
    """``x`` as ``dtype`` (a Python int out of range raises OverflowError, as in NumPy)."""
    if isinstance(x, bool | int | float | complex) and not isinstance(x, np.generic):
        return dtype.type(x)
    value = unwrap(x) if isinstance(x, ProxyArray) else x
    if not hasattr(value, "dtype") or isinstance(value, np.ndarray):
        value = np.array(value)  # a copy: the constant must not follow later NumPy updates
        if value.size >= FACTORED_MIN:  # a large static operand: uniform or a factored mask?
            if value.dtype == np.bool_:  # cast in the module (exact): the mask stays a mask
                return lax.convert_element_type(to_jax(value), dtype)
            return to_jax(value if value.dtype == dtype else value.astype(dtype))
    return value if np.dtype(value.dtype) == dtype else value.astype(dtype)


def _deliver(results: Sequence[Any], outs: tuple[ProxyArray | None, ...], where: Any,
             sel: masks.Selection | None, inputs: tuple[Any, ...]) -> Any:
    """Each result written into its ``out=`` array, or as a new one: a NumPy scalar when 0-d,
    else an array laid out like the inputs, as NumPy's ufuncs return them."""
    delivered = []
    for result, out in zip(results, outs, strict=True):
        value = result
        if out is None:
            if where is not True:  # NumPy leaves those elements uninitialized
                value = jnp.where(unwrap(where), value, jnp.zeros_like(value))
            delivered.append(ProxyArray(Root(value), mask=sel) if sel else
                             like_operands(new_result(value), inputs))
            continue
        if where is not True:
            value = jnp.where(unwrap(where), value, out.value)
        out.write(value)
        delivered.append(out)
    return delivered[0] if len(delivered) == 1 else tuple(delivered)


def _outs(out: Any, nout: int) -> tuple[ProxyArray | None, ...]:
    given: tuple[Any, ...] = ((None,) * nout if out is None else out if isinstance(out, tuple)
                              else (out,))
    for o in given:
        if o is not None and not isinstance(o, ProxyArray):
            raise errors.array_conversion("a traced result written into a NumPy array with out=")
        if o is not None:
            o.check_writable()
    return given


def _dummy(x: Any) -> Any:
    """A one-element stand-in with ``x``'s dtype and ndim (for asking NumPy about dtypes)."""
    if isinstance(x, ProxyArray | np.ndarray | jax.Array):
        return np.ones((1,) * np.ndim(x) if not isinstance(x, ProxyArray) else (1,) * len(
            x._shape), x.dtype)
    return x


def _numpy_dtype(method: Any, a: Any, kwargs: dict[str, Any]) -> np.dtype:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(method(_dummy(a), **kwargs)).dtype


def _reduce_like(ufunc: np.ufunc, inputs: tuple[Any, ...], kwargs: dict[str, Any],
                 method: str) -> Any:
    (a,) = inputs
    out = kwargs.pop("out", None)
    out = out[0] if isinstance(out, tuple) else out
    where = kwargs.pop("where", True)
    if isinstance(a, ProxyArray) and a.mask is not None:
        raise errors.dynamic_shape(f"np.{ufunc.__name__}.{method} of a[mask]")
    ask = {k: v for k, v in kwargs.items() if k in ("axis", "dtype", "keepdims", "initial")}
    dtype = _numpy_dtype(getattr(ufunc, method), a, ask)
    value = jnp.asarray(unwrap(a))
    if np.can_cast(value.dtype, dtype, "safe"):
        value = value.astype(dtype)
    ask.pop("dtype", None)
    if where is not True:
        ask["where"] = unwrap(where)
    result = getattr(_jnp_ufunc(ufunc), method)(value, **ask).astype(dtype)
    if out is not None:
        out.check_writable()
        out.write(result)
        return out
    if method == "accumulate":
        return like_operands(new_array(result), (a,))
    return like_reduction(new_result(result), a, ask.get("axis", 0), ask.get("keepdims", False))


def _reduce(ufunc: np.ufunc, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return _reduce_like(ufunc, inputs, kwargs, "reduce")


def _accumulate(ufunc: np.ufunc, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return _reduce_like(ufunc, inputs, kwargs, "accumulate")


def _outer(ufunc: np.ufunc, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    a, b = inputs
    a = a if isinstance(a, ProxyArray) else concrete_array(np.asarray(a))
    expanded = indexing.getitem(a, (Ellipsis,) + (None,) * np.ndim(unwrap(b)))
    return _call(ufunc, (expanded, b), kwargs)


def _at(ufunc: np.ufunc, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    a, key, *rest = inputs
    if not isinstance(a, ProxyArray):
        raise errors.array_conversion("a traced value written into a NumPy array with ufunc.at")
    a.check_writable()
    key = indexing.normalize_key(key)
    indexed_shape(a.shape, key)  # NumPy's IndexError for a static index out of range
    key = key[0] if len(key) == 1 else key
    values: list[Any] = []
    if rest:
        in_dtypes, _ = resolve(ufunc, (a, rest[0]), (a,), {"casting": "unsafe"})
        _check_integer_power(ufunc, (a, rest[0]), in_dtypes)
        values = [cast(rest[0], in_dtypes[1])]
    result = _jnp_ufunc(ufunc).at(a.value, key, *values, inplace=False)
    a.write(result)


@functools.cache
def _jnp_ufunc(ufunc: np.ufunc) -> Any:
    """jax.numpy's ufunc object (with reduce / accumulate / outer / at) for a NumPy ufunc."""
    fn = UFUNCS[ufunc]
    if isinstance(fn, jnp.ufunc):
        return fn
    return jnp.frompyfunc(fn, ufunc.nin, ufunc.nout, identity=ufunc.identity)


def _all_concrete(inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    leaves = [*inputs, *(kwargs.get("out") or ()), kwargs.get("where")]
    return all(concrete_of(x) is not None for x in leaves if isinstance(x, ProxyArray))


def _eager(method: Any, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run NumPy itself: every proxy operand holds concrete data (written in place for out=)."""
    outs = kwargs.get("out")
    outs = outs if isinstance(outs, tuple) else (outs,) if outs is not None else ()
    pairs = [(o, concrete_of(o) if isinstance(o, ProxyArray) else o) for o in outs]
    concrete_kwargs = {**kwargs, "out": tuple(d for _, d in pairs)} if outs else dict(kwargs)
    if isinstance(kwargs.get("where"), ProxyArray):
        concrete_kwargs["where"] = concrete_of(kwargs["where"])
    for proxy, _ in pairs:
        if isinstance(proxy, ProxyArray):
            proxy.root.will_touch()
    result = method(*[concrete_of(x) if isinstance(x, ProxyArray) else x for x in inputs],
                    **concrete_kwargs)
    for proxy, _ in pairs:
        if isinstance(proxy, ProxyArray):
            proxy.root.touched()
    return _wrap_eager(result, pairs)


def _wrap_eager(result: Any, pairs: list[tuple[Any, Any]]) -> Any:
    if isinstance(result, tuple):
        return tuple(_wrap_eager(r, pairs) for r in result)
    for proxy, data in pairs:
        if isinstance(proxy, ProxyArray) and result is data:
            return proxy
    return concrete_array(result) if isinstance(result, np.ndarray) else result


_METHODS: dict[str, Callable[[np.ufunc, tuple[Any, ...], dict[str, Any]], Any]] = {
    "__call__": _call, "reduce": _reduce, "accumulate": _accumulate, "outer": _outer, "at": _at}
