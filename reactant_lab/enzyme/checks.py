"""The argument rules of jax.grad / jax.vjp / jax.jvp / jax.vmap, checked before anything is
traced (what the function returns: as soon as it has returned): each mistake is an
EnzymeArgumentError naming the argument, its shape and dtype, and what to do."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from reactant_lab.enzyme.common import ACTIVE, is_array
from reactant_lab.errors import EnzymeArgumentError
from reactant_lab.trace.jax_mode import fn_name

FLOAT0 = jax.dtypes.float0
"""The dtype JAX gives the tangent of an integer (a vector space of one point)."""

_KIND = {bool: "bool", int: "int", float: "float", complex: "complex"}


def number(x: Any) -> bool:
    """A Python number (weakly typed: its kind matters, not its width)."""
    return type(x) in _KIND


def _kind(x: Any) -> str:
    if number(x):
        return _KIND[type(x)]
    if not hasattr(x, "dtype"):
        return type(x).__name__
    dtype = np.dtype(x.dtype)
    for kind, of in (("complex", jnp.complexfloating), ("float", jnp.floating),
                     ("int", jnp.integer), ("bool", jnp.bool_)):
        if dtype != FLOAT0 and jnp.issubdtype(dtype, of):
            return kind
    return str(dtype)


def is_float0(x: Any) -> bool:
    return getattr(x, "dtype", None) == FLOAT0


def describe(x: Any) -> str:
    """``int32[3]`` for an array (``float32[]`` for a scalar), what it is for anything else."""
    if number(x):
        return f"the Python {type(x).__name__} {x!r}"
    if is_array(x):
        name = "float0" if is_float0(x) else np.dtype(x.dtype).name
        return f"{name}{list(np.shape(x))}"
    return f"a {type(x).__name__}"


def describe_tree(tree: Any) -> str:
    """One value as ``describe`` says, a container as its type and its first leaves."""
    leaves = jax.tree_util.tree_leaves(tree)
    if len(leaves) == 1 and leaves[0] is tree:
        return describe(tree)
    shown = ", ".join(describe(x) for x in leaves[:4]) + (", ..." if len(leaves) > 4 else "")
    return f"a {type(tree).__name__} of {len(leaves)} leaf{'s' * (len(leaves) != 1)} ({shown})"


def defined_at(f: Callable[..., Any]) -> str:
    """``f (defined at FILE:LINE)``, for messages about what ``f`` returned."""
    inner = inspect.unwrap(f)
    inner = inspect.unwrap(getattr(inner, "func", inner))
    code = getattr(inner, "__code__", None)
    return f"{fn_name(f)} (defined at {code.co_filename}:{code.co_firstlineno})" if code \
        else fn_name(f)


def with_paths(tree: Any, root: str) -> list[tuple[str, Any]]:
    """The leaves of ``tree`` and their paths, ``root`` first: ``args[0]['w']``."""
    flat, _ = jax.tree_util.tree_flatten_with_path(tree)
    return [(root + jax.tree_util.keystr(path), leaf) for path, leaf in flat]


def _fits(given: Any, want: Any) -> bool:
    """JAX's rule for a tangent or cotangent: the dtype of its primal once canonicalized
    (float64 is float32 without x64); a Python number by its kind alone."""
    if number(given) or number(want):
        return _kind(given) == _kind(want)
    if is_float0(given) or is_float0(want):
        return is_float0(given) and is_float0(want)
    return bool(jnp.result_type(given) == jnp.result_type(want))


def no_float0(tree: Any) -> Any:
    """``tree``'s float0 leaves (the tangents of integers) as bool zeros of their shape: a
    compiled call cannot take float0 arguments, and nothing reads those values."""
    return jax.tree_util.tree_map(lambda x: np.zeros(np.shape(x), np.bool_) if is_float0(x)
                                  else x, tree)


def _same_structure(a: Any, b: Any) -> bool:
    tree: Any = jax.tree_util.tree_structure(a)  # (its stub types PyTreeDef.__eq__ loosely)
    return bool(tree == jax.tree_util.tree_structure(b))


def _array_like(x: Any) -> bool:
    return is_array(x) or number(x)


# ---------------------------------------------------------------- gradient / value_and_gradient


def argnums(what: str, nums: Any) -> None:
    """``argnums`` is an int or a sequence of ints (checked when the gradient function is
    made)."""
    items = (nums,) if isinstance(nums, int) else nums
    if isinstance(nums, bool) or not isinstance(items, Sequence) or not items or any(
            not isinstance(k, int) or isinstance(k, bool) for k in items):
        raise EnzymeArgumentError(f"{what}: argnums must be an int or a non-empty sequence of "
                                  f"ints (positions of the arguments to differentiate), not "
                                  f"{nums!r}")


def call_argnums(what: str, f: Callable[..., Any], nums: int | Sequence[int],
                 n: int) -> tuple[int, ...]:
    """``argnums`` for a call with ``n`` positional arguments, made nonnegative."""
    given = (nums,) if isinstance(nums, int) else tuple(nums)
    for k in given:
        if not -n <= k < n:
            raise EnzymeArgumentError(
                f"{what}({fn_name(f)}): argnums={nums!r} asks for positional argument {k}, "
                f"but the call passed {n} positional argument{'s' * (n != 1)}; pass it "
                "positionally (keyword arguments are not differentiated)")
    return tuple(k % n for k in given)


def grad_inputs(what: str, f: Callable[..., Any], args: tuple[Any, ...],
                acts: list[list[str]], holomorphic: bool, allow_int: bool) -> None:
    """jax.grad's rules for the leaves to differentiate: arrays (or Python numbers) of a
    floating-point or complex dtype (complex ones with ``holomorphic``; integers with
    ``allow_int``)."""
    for i, (arg, arg_acts) in enumerate(zip(args, acts, strict=True)):
        for (path, leaf), act in zip(with_paths(arg, f"args[{i}]"), arg_acts, strict=True):
            if act == ACTIVE:
                _grad_input(f"{what}({fn_name(f)})", path, leaf, holomorphic, allow_int)


def _grad_input(head: str, path: str, leaf: Any, holomorphic: bool, allow_int: bool) -> None:
    leave_out = "leave its argument out of argnums (or mark it 'const' in activity=)"
    if not _array_like(leaf):
        raise EnzymeArgumentError(f"{head}: {path} is {describe(leaf)}, which cannot be "
                                  f"differentiated: {leave_out}", path)
    kind = _kind(leaf)
    if kind in ("int", "bool"):
        if not allow_int:
            raise EnzymeArgumentError(
                f"{head}: {path} is {describe(leaf)}; gradients need floating-point or complex "
                "inputs (as jax.grad). Convert it (x.astype(np.float32)), "
                f"{leave_out}, or pass allow_int=True for a zero gradient of its own dtype "
                "(where JAX gives float0)", path)
    elif kind not in ("float", "complex"):
        raise EnzymeArgumentError(f"{head}: {path} is {describe(leaf)}, not a number array: "
                                  f"{leave_out}", path)
    elif holomorphic and kind != "complex":
        raise EnzymeArgumentError(
            f"{head}: {path} is {describe(leaf)}; holomorphic=True needs complex inputs (as "
            "jax.grad): convert it (x.astype(np.complex64)) or drop holomorphic=True", path)


def aux_pair(what: str, f: Callable[..., Any], result: Any) -> tuple[Any, Any]:
    """``f``'s result split into (output, aux) under has_aux=True."""
    if not (isinstance(result, tuple | list) and len(result) == 2):
        raise EnzymeArgumentError(
            f"{what}({fn_name(f)}, has_aux=True): {defined_at(f)} returned "
            f"{describe_tree(result)}; with has_aux=True it must return a pair (output, aux)",
            "result")
    return result[0], result[1]


def scalar_output(what: str, f: Callable[..., Any], out: Any, has_aux: bool,
                  holomorphic: bool) -> None:
    """jax.grad's rules for what ``f`` returned: one real scalar (complex if holomorphic)."""
    head = f"{what}({fn_name(f)}): {defined_at(f)} returned"
    path = "result[0]" if has_aux else "result"
    if not _array_like(out):
        hint = "" if has_aux else (": with has_aux=False it must return one scalar. If the "
                                   "rest is auxiliary data, return (value, aux) and pass "
                                   "has_aux=True")
        raise EnzymeArgumentError(f"{head} {describe_tree(out)}; a gradient needs a scalar "
                                  f"output{hint}", path)
    if np.shape(out) != ():
        raise EnzymeArgumentError(
            f"{head} {describe(out)}; a gradient needs a scalar output (shape ()), as "
            "jax.grad: reduce it (jnp.sum) or use vjp / jvp for other outputs", path)
    kind = _kind(out)
    if holomorphic and kind != "complex":
        raise EnzymeArgumentError(f"{head} {describe(out)}; holomorphic=True needs a complex "
                                  "output (as jax.grad)", path)
    if not holomorphic and kind == "complex":
        raise EnzymeArgumentError(
            f"{head} {describe(out)}; a gradient needs a real output (as jax.grad). Pass "
            "holomorphic=True if it is holomorphic, else use vjp with the cotangent you "
            "want", path)
    if kind not in ("float", "complex"):
        raise EnzymeArgumentError(f"{head} {describe(out)}; a gradient needs a real "
                                  "floating-point output (as jax.grad): use vjp", path)


# ---------------------------------------------------------------- vjp / jvp


def primals(what: str, f: Callable[..., Any], values: tuple[Any, ...], root: str) -> None:
    """Every primal leaf is an array or a Python number (as jax.vjp / jax.jvp)."""
    for path, leaf in with_paths(values, root):
        if not _array_like(leaf):
            raise EnzymeArgumentError(
                f"{what}({fn_name(f)}): {path} is {describe(leaf)}, not an array: {what} "
                "differentiates with respect to every primal; bind other values into the "
                "function instead (functools.partial, or a closure)", path)


def cotangent(f: Callable[..., Any], ct: Any, out: Any) -> None:
    """jax.vjp's rules for ``vjp_fn(ct)``: the structure of ``f``'s output, and per leaf its
    shape and (for a floating-point or complex output) its dtype; any dtype, float0 included,
    for an integer output."""
    head = f"the vjp function of {fn_name(f)}"
    if not _same_structure(ct, out):
        raise EnzymeArgumentError(
            f"{head} got {describe_tree(ct)} as its cotangent, but {fn_name(f)} returned "
            f"{describe_tree(out)}: give one cotangent per output leaf, in the output's "
            "structure", "ct")
    for (path, want), given in zip(with_paths(out, "ct"), jax.tree_util.tree_leaves(ct),
                                   strict=True):
        differentiable = _kind(want) in ("float", "complex")
        if _array_like(given) and np.shape(given) == np.shape(want) and (
                not differentiable or _fits(given, want)):
            continue
        expect = "shape and dtype" if differentiable else "shape (any dtype: it is not read)"
        raise EnzymeArgumentError(
            f"{head}: {path} is {describe(given)}, but that output of {fn_name(f)} is "
            f"{describe(want)}; its cotangent must have the output's {expect}, as jax.vjp "
            "asks", path)


def jvp_args(f: Callable[..., Any], given_primals: Any, tangents: Any) -> None:
    """jax.jvp's rules: tuples (or lists) of as many primals as tangents, the same structure,
    each tangent its primal's shape and dtype (float0 for an integer primal)."""
    head = f"jvp({fn_name(f)})"
    if not (isinstance(given_primals, tuple | list) and isinstance(tangents, tuple | list)):
        raise EnzymeArgumentError(
            f"{head}: primals and tangents must be tuples (or lists) with one entry per "
            f"positional argument of {fn_name(f)}, as jax.jvp: rle.jvp(f, (x,), (t,)); got "
            f"{type(given_primals).__name__} and {type(tangents).__name__}", "primals")
    if len(given_primals) != len(tangents):
        raise EnzymeArgumentError(f"{head}: {len(given_primals)} primals and {len(tangents)} "
                                  "tangents; give one tangent per primal", "tangents")
    primals("jvp", f, tuple(given_primals), "primals")
    for i, (p, t) in enumerate(zip(given_primals, tangents, strict=True)):
        if not _same_structure(p, t):
            raise EnzymeArgumentError(
                f"{head}: tangents[{i}] is {describe_tree(t)}, but primals[{i}] is "
                f"{describe_tree(p)}: a tangent has its primal's structure", f"tangents[{i}]")
        for (path, want), given in zip(with_paths(p, f"[{i}]"), jax.tree_util.tree_leaves(t),
                                       strict=True):
            _tangent(head, path, want, given)


def _tangent(head: str, path: str, want: Any, given: Any) -> None:
    integer = _kind(want) in ("int", "bool")
    if not integer and _array_like(given) and _fits(given, want) and \
            np.shape(given) == np.shape(want):
        return
    if integer and is_float0(given) and np.shape(given) == np.shape(want):
        return
    expect = (f"be a float0 zero of its shape, np.zeros({np.shape(want)}, jax.dtypes.float0) "
              "(as jax.jvp: an integer has no tangent)" if integer else
              "have its primal's shape and dtype (as jax.jvp)")
    raise EnzymeArgumentError(f"{head}: tangents{path} is {describe(given)}, but "
                              f"primals{path} is {describe(want)}; its tangent must "
                              f"{expect}", f"tangents{path}")


# ---------------------------------------------------------------- batch


def axes_spec(what: str, spec: Any) -> None:
    """``in_axes`` / ``out_axes`` hold only ints and None (checked when ``batch`` is called)."""
    bad = [x for x in jax.tree_util.tree_leaves(spec, is_leaf=lambda x: x is None)
           if x is not None and (not isinstance(x, int) or isinstance(x, bool))]
    if bad:
        raise EnzymeArgumentError(f"batch: {what} must be an int, None, or a pytree of these "
                                  f"(as jax.vmap), not {spec!r} (it holds {bad[0]!r})")


def per_leaf(what: str, spec: Any, tree: Any) -> list[int | None]:
    """``spec``, a pytree prefix of ``tree`` with int or None leaves, as one axis per leaf of
    ``tree``."""
    def repeat(ax: int | None, sub: Any) -> list[int | None]:
        return [ax] * len(jax.tree_util.tree_leaves(sub))

    try:
        per = jax.tree_util.tree_map(repeat, spec, tree, is_leaf=lambda x: x is None)
    except ValueError as exc:
        first = str(exc).strip().splitlines()[0]
        raise EnzymeArgumentError(f"batch: {what} {spec!r} does not fit {describe_tree(tree)}: "
                                  f"give an int or None per leaf, or per subtree ({first})"
                                  ) from None
    return list(jax.tree_util.tree_leaves(per, is_leaf=lambda x: x is None))


def out_axis(f: Callable[..., Any], path: str, ax: int, shape: tuple[int, ...]) -> None:
    """An out_axes entry in range for its batched result (the batch axis counted in)."""
    rank = len(shape) + 1
    if not -rank <= ax < rank:
        raise EnzymeArgumentError(
            f"batch({fn_name(f)}): out_axes puts the batch axis of {path} at {ax}, but that "
            f"result has {rank} dimension{'s' * (rank != 1)} once batched (its shape per "
            f"example is {shape}): give an axis in [{-rank}, {rank - 1}], as jax.vmap", path)


def unbatched(f: Callable[..., Any], path: str) -> EnzymeArgumentError:
    """out_axes None for a result that depends on the batch."""
    return EnzymeArgumentError(
        f"batch({fn_name(f)}): out_axes is None for {path}, but {path} depends on the batched "
        "arguments: give it a batch axis (an int), as jax.vmap asks", path)
