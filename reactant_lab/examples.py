"""Built-in examples used by the demo, the benchmarks and the tests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt


def mlp(params: dict[str, Any], x: Any) -> Any:
    """Three-layer MLP; ``params`` is a dict of weights and biases."""
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    h = jax.nn.relu(h @ params["w2"].T.T + params["b2"])
    return jnp.tanh(h @ params["w3"] + params["b3"])


def heat_loop(u: Any, steps: int = 25) -> Any:
    """Explicit heat-equation stencil on a 2-D grid, ``steps`` sweeps in a ``lax.fori_loop``."""

    def sweep(_: Any, v: Any) -> Any:
        inner = 0.25 * (v[:-2, 1:-1] + v[2:, 1:-1] + v[1:-1, :-2] + v[1:-1, 2:])
        return v.at[1:-1, 1:-1].set(inner)

    return jax.lax.fori_loop(0, steps, sweep, u)


def standardize(x: Any, eps: Any) -> tuple[Any, Any]:
    """Returns its input unchanged beside its standardized copy: a preserved (aliased) result."""
    z = (x - x.mean(axis=0)) / (x.std(axis=0) + eps)
    return x, z


@dataclass(frozen=True)
class Example:
    """A named function with a maker of fresh random arguments."""

    name: str
    """Short name."""
    fn: Callable[..., Any]
    """The function."""
    make_args: Callable[[np.random.Generator], tuple[Any, ...]]
    """Fresh random positional arguments from a generator."""
    what: str
    """One line on what the example shows."""


def _mlp_args(rng: np.random.Generator, batch: int = 128, width: int = 256) -> tuple[Any, ...]:
    def w(*shape: int) -> npt.NDArray[np.float32]:
        scaled: npt.NDArray[np.float64] = rng.standard_normal(shape) / np.sqrt(shape[0])
        return scaled.astype(np.float32)

    params = {"w1": w(64, width), "b1": w(width), "w2": w(width, width), "b2": w(width),
              "w3": w(width, 10), "b3": w(10)}
    return params, rng.standard_normal((batch, 64)).astype(np.float32)


def _heat_args(rng: np.random.Generator) -> tuple[Any, ...]:
    return (rng.random((96, 96)).astype(np.float32),)


def _standardize_args(rng: np.random.Generator) -> tuple[Any, ...]:
    return rng.standard_normal((256, 16)).astype(np.float32), np.float32(1e-6)


EXAMPLES: tuple[Example, ...] = (
    Example("mlp", mlp, _mlp_args, "MLP with a dict of parameters; the transposes fold away"),
    Example("heat_loop", heat_loop, _heat_args, "a lax.fori_loop stencil updating a slice"),
    Example("standardize", standardize, _standardize_args,
            "returns an argument unchanged: a preserved result, not computed"),
)
