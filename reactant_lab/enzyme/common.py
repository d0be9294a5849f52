"""What reverse mode, forward mode and batch share: crossing between NumPy mode and traced values,
activities per argument leaf, and the compiled call used outside any trace."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from reactant_lab import backend
from reactant_lab.errors import EnzymeArgumentError, EnzymeUnavailableWarning
from reactant_lab.explore import JitFunction
from reactant_lab.trace.numpy_mode import ProxyArray, new_array, new_scalar

ACTIVITY_NAMES = {"active": "enzyme_active", "enzyme_active": "enzyme_active",
                  "const": "enzyme_const", "enzyme_const": "enzyme_const"}
"""The names ``activity=`` takes, as Enzyme's activity annotations."""

ACTIVE, CONST, STATIC = "enzyme_active", "enzyme_const", "static"


def is_array(x: Any) -> bool:
    return isinstance(x, jax.Array | np.ndarray | np.generic) or backend.is_tracer(x)


def inexact(x: Any) -> bool:
    return bool(jnp.issubdtype(jnp.result_type(x), jnp.inexact))


def traced(tree: Any) -> bool:
    """Whether ``tree`` holds values of a trace: JAX tracers, or NumPy mode's proxy arrays."""
    return any(backend.is_tracer(x) or isinstance(x, ProxyArray)
               for x in jax.tree_util.tree_leaves(tree))


def _proxied(tree: Any) -> bool:
    return any(isinstance(x, ProxyArray) for x in jax.tree_util.tree_leaves(tree))


def from_numpy(tree: Any) -> Any:
    """NumPy mode's proxy arrays in ``tree`` replaced by their traced values."""
    return jax.tree_util.tree_map(lambda x: x.value if isinstance(x, ProxyArray) else x, tree)


def _to_numpy(tree: Any) -> Any:
    """Traced values in ``tree`` as NumPy mode's arrays (0-d ones as NumPy scalars)."""
    return jax.tree_util.tree_map(
        lambda x: (new_scalar(x) if jnp.ndim(x) == 0 else new_array(x))
        if backend.is_tracer(x) else x, tree)


def _numpy_kernel(f: Callable[..., Any]) -> Callable[..., Any]:
    """``f`` (a NumPy kernel) as a function of traced values: it gets fresh NumPy-mode arrays
    of its own, so its in-place updates stay inside the differentiated (or batched) function,
    as Enzyme differentiates mutating code; its results cross back as traced values."""

    @functools.wraps(f)
    def on_values(*args: Any, **kwargs: Any) -> Any:
        return from_numpy(f(*_to_numpy(args), **_to_numpy(kwargs)))

    return on_values


def in_mode(body: Callable[..., Any], f: Callable[..., Any], *trees: Any) -> Any:
    """``body(f, *trees)`` on traced values. In NumPy mode the proxies in ``trees`` cross as
    their traced values, ``f`` runs on proxies of its own, and the results come back as
    proxies; in JAX mode everything passes as it is."""
    if not _proxied(trees):
        return body(f, *trees)
    return _to_numpy(body(_numpy_kernel(f), *from_numpy(trees)))


def fallback(what: str) -> bool:
    """True (after warning once per call site) when enzyme-ad is unavailable: the call then
    runs JAX's own transformation, traced like the Enzyme op would be."""
    if backend.enzyme_available():
        return False
    warnings.warn(
        f"reactant_lab.enzyme.{what} runs JAX's own transformation: the Enzyme stages are "
        f"unavailable here ({backend.enzyme_unavailable_reason()}), so the module has no Enzyme "
        "op and the 'enzyme (AD)' and 'batch' stages have nothing to transform.",
        EnzymeUnavailableWarning, stacklevel=3)
    return True


def leaf_activities(args: tuple[Any, ...], argnums: tuple[int, ...],
                    activity: Sequence[Any] | None) -> list[list[str]]:
    """Per positional argument, the activity of each of its leaves (before the dtype check)."""
    if activity is None:
        return [[ACTIVE if i in argnums else CONST] * len(jax.tree_util.tree_leaves(a))
                for i, a in enumerate(args)]
    if len(activity) != len(args):
        raise EnzymeArgumentError(
            f"activity has {len(activity)} entries for {len(args)} positional arguments: give "
            "one per argument ('active' or 'const', or a pytree of these matching the "
            "argument)", "activity")
    out = []
    for i, (spec, arg) in enumerate(zip(activity, args, strict=True)):
        n = len(jax.tree_util.tree_leaves(arg))
        specs = [spec] * n if isinstance(spec, str) else jax.tree_util.tree_leaves(spec)
        if len(specs) != n:
            raise EnzymeArgumentError(f"activity[{i}] has {len(specs)} leaves; args[{i}] has "
                                      f"{n}", f"activity[{i}]")
        bad = [s for s in specs if s not in ACTIVITY_NAMES]
        if bad:
            raise EnzymeArgumentError(
                f"activity {bad[0]!r} of args[{i}]: reverse mode takes 'active' or 'const' "
                "(Duplicated shadows are for mutable buffers, which JAX arrays are not)",
                f"activity[{i}]")
        out.append([ACTIVITY_NAMES[s] for s in specs])
    return out


def plan(args: tuple[Any, ...], acts: list[list[str]]) -> tuple[
        list[list[Any]], list[Any], list[list[str]]]:
    """Leaves per argument (Python numbers of active arguments made arrays), the tree
    definitions, and per leaf its final activity: active only for floating-point arrays,
    static for non-arrays."""
    leaves, treedefs, final = [], [], []
    for arg, arg_acts in zip(args, acts, strict=True):
        ls, td = jax.tree_util.tree_flatten(arg)
        new_ls, new_acts = [], []
        for given, act in zip(ls, arg_acts, strict=True):
            number = isinstance(given, int | float) and not isinstance(given, bool)
            leaf = jnp.asarray(given) if act == ACTIVE and number else given
            if not is_array(leaf):  # (an argument checked as differentiable is an array)
                new_acts.append(STATIC)
            else:
                new_acts.append(ACTIVE if act == ACTIVE and inexact(leaf) else CONST)
            new_ls.append(leaf)
        leaves.append(new_ls)
        treedefs.append(td)
        final.append(new_acts)
    return leaves, treedefs, final


def dynamic(leaves: list[list[Any]], acts: list[list[str]]) -> tuple[list[Any], list[str]]:
    """The non-static leaves, flat, and their activities."""
    flat = [(x, a) for ls, as_ in zip(leaves, acts, strict=True)
            for x, a in zip(ls, as_, strict=True) if a != STATIC]
    return [x for x, _ in flat], [a for _, a in flat]


def rebuild(leaves: list[list[Any]], acts: list[list[str]], treedefs: list[Any],
            dyn: Sequence[Any]) -> tuple[Any, ...]:
    """The positional arguments again, their non-static leaves taken from ``dyn``."""
    it = iter(dyn)
    return tuple(jax.tree_util.tree_unflatten(
        td, [next(it) if a != STATIC else x for x, a in zip(ls, as_, strict=True)])
        for ls, as_, td in zip(leaves, acts, treedefs, strict=True))


def eager(name: str, call: Callable[..., Any]) -> JitFunction:
    """``call`` compiled through the pipeline (preset 'all') for calls outside any trace: in
    NumPy mode for NumPy arrays (a NumPy kernel then runs as it does inside ``rl.jit``), in JAX
    mode for JAX code."""
    call.__name__ = name
    call.__qualname__ = name
    return JitFunction(call, mode="auto")
