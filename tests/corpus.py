"""A corpus of JAX functions with makers of fresh random arguments, for differential tests."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from reactant_lab.examples import heat_loop, mlp, standardize


@dataclass(frozen=True)
class Case:
    """A function, a maker of (args, kwargs) from a generator, and what jax.jit needs as static."""

    name: str
    fn: Callable[..., Any]
    make: Callable[[np.random.Generator], tuple[tuple, dict]]
    static_argnums: tuple[int, ...] = ()
    static_argnames: tuple[str, ...] = ()
    x64: bool = False
    tol: float = 1e-5
    preserved: dict[str, str] = field(default_factory=dict)


def f32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


class Layer(NamedTuple):
    w: Any
    b: Any


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Model:
    layers: list
    scale: Any


def elementwise(x, y):
    return jnp.sin(x) * jnp.cos(y) + x**2 - jnp.exp(-jnp.abs(y))


def matmul(a, b):
    return a @ b


def reductions(x):
    return x.sum(axis=0), x.max(axis=1), x.mean(), jnp.prod(x[:2, :3], axis=None)


def cond(x, y):
    return jax.lax.cond(x.sum() > 0, lambda a, b: a * 2 + b, lambda a, b: a - b, x, y)


def while_loop(x):
    def body(c):
        i, v = c
        return i + 1, v * 0.9 + jnp.tanh(v)

    return jax.lax.while_loop(lambda c: c[0] < 7, body, (0, x))[1]


def scan(xs, h0):
    def step(h, x):
        h = jnp.tanh(h * 0.5 + x)
        return h, h.sum()

    return jax.lax.scan(step, h0, xs)


def gather(x, idx):
    return x[idx], jnp.take(x, idx[:3], axis=0).sum(axis=1)


def scatter(x, idx, v):
    return x.at[idx].add(v), x.at[idx[:2]].set(0.0)


def indexing(x):
    return x[1:3, ::2], x[..., -1], x[None, 0, :]


def reshape_transpose(x):
    y = x.reshape(4, 6).T
    return jnp.broadcast_to(y[:, :1], (6, 5)) + y.sum(), jnp.transpose(x, (2, 0, 1))


def concatenate(a, b):
    return jnp.concatenate([a, b, a * 2], axis=0), jnp.stack([a, b], axis=-1)


def float64_ops(x, y):
    return jnp.log1p(jnp.abs(x)) * y + 1e-300


def int32_ops(a, b):
    return (a * b + (a >> 1)) ^ b, a // (jnp.abs(b) + 1), a % 7


def int64_ops(a):
    return a * 3_000_000_000 + 1


def bool_ops(x, m):
    return jnp.where(m & (x > 0), x, -x), jnp.logical_or(m, x < -1).sum()


def complex_ops(z, w):
    return z * jnp.conj(w) + 1j, jnp.abs(z), jnp.angle(w)


def nested_pytree(params, batch):
    h = batch["x"] @ params["layers"][0]["w"] + params["layers"][0]["b"]
    h = jnp.tanh(h) @ params["layers"][1][0] + params["layers"][1][1]
    return {"out": h, "aux": [h.sum(), (h.max(), h.min())]}


def named_tuple(layer, x):
    return Layer(w=layer.w * 2, b=layer.b + x.sum())


def dataclass_model(model, x):
    for layer in model.layers:
        x = jnp.tanh(x @ layer.w + layer.b)
    return x * model.scale


def keyword_args(x, *, bias, gain):
    return x * gain + bias


def static_args(x, n, mode):
    y = jnp.tile(x, n)
    return y * 2 if mode == "double" else y


def softmax_logsumexp(x):
    return jax.nn.softmax(x, axis=-1), jax.scipy.special.logsumexp(x, axis=0)


def sort_argmax(x):
    return jnp.sort(x, axis=1), jnp.argmax(x, axis=0), jnp.cumsum(x, axis=1)


def none_leaves(x, maybe, y):
    return {"a": x + y, "nothing": None, "static": 3}


def preserved_args(x, y, w):
    return x, {"y": y, "z": (w @ y.T).sum()}


def _pair(rng):
    return (f32(rng, 8, 16), f32(rng, 8, 16)), {}


CASES: tuple[Case, ...] = (
    Case("elementwise", elementwise, _pair),
    Case("matmul", matmul, lambda r: ((f32(r, 32, 48), f32(r, 48, 16)), {})),
    Case("mlp", mlp, lambda r: ((
        {"w1": f32(r, 64, 32), "b1": f32(r, 32), "w2": f32(r, 32, 32), "b2": f32(r, 32),
         "w3": f32(r, 32, 10), "b3": f32(r, 10)}, f32(r, 16, 64)), {}), tol=1e-4),
    Case("reductions", reductions, lambda r: ((f32(r, 6, 7),), {}), tol=1e-4),
    Case("cond", cond, _pair),
    Case("while_loop", while_loop, lambda r: ((f32(r, 5, 3),), {})),
    Case("fori_loop", heat_loop, lambda r: ((r.random((24, 24)).astype(np.float32),), {})),
    Case("scan", scan, lambda r: ((f32(r, 9, 4), f32(r, 4)), {}), tol=1e-4),
    Case("gather", gather, lambda r: ((f32(r, 10, 3),
                                      r.integers(0, 10, 6).astype(np.int32)), {})),
    Case("scatter", scatter, lambda r: ((f32(r, 10), r.integers(0, 10, 4).astype(np.int32),
                                        f32(r, 4)), {})),
    Case("indexing", indexing, lambda r: ((f32(r, 4, 5, 6),), {})),
    Case("reshape_transpose", reshape_transpose, lambda r: ((f32(r, 2, 3, 4),), {})),
    Case("concatenate", concatenate, lambda r: ((f32(r, 3, 5), f32(r, 3, 5)), {})),
    Case("float64", float64_ops, lambda r: ((r.standard_normal(7), r.standard_normal(7)), {}),
         x64=True, tol=1e-12),
    Case("int32", int32_ops, lambda r: ((r.integers(-50, 50, 9).astype(np.int32),
                                        r.integers(-50, 50, 9).astype(np.int32)), {}), tol=0),
    Case("int64", int64_ops, lambda r: ((r.integers(-9, 9, 5).astype(np.int64),), {}),
         x64=True, tol=0),
    Case("bool", bool_ops, lambda r: ((f32(r, 12), r.random(12) > 0.5), {})),
    Case("complex64", complex_ops, lambda r: (((f32(r, 6) + 1j * f32(r, 6)).astype(np.complex64),
                                              (f32(r, 6) + 1j * f32(r, 6)).astype(
                                                  np.complex64)), {})),
    Case("nested_pytree", nested_pytree, lambda r: ((
        {"layers": [{"w": f32(r, 5, 4), "b": f32(r, 4)}, (f32(r, 4, 3), f32(r, 3))]},
        {"x": f32(r, 2, 5)}), {}), tol=1e-4),
    Case("named_tuple", named_tuple, lambda r: ((Layer(f32(r, 3, 3), f32(r, 3)), f32(r, 4)), {})),
    Case("dataclass", dataclass_model, lambda r: ((
        Model([Layer(f32(r, 4, 4), f32(r, 4)), Layer(f32(r, 4, 2), f32(r, 2))], f32(r, 2)),
        f32(r, 3, 4)), {}), tol=1e-4),
    Case("kwargs", keyword_args, lambda r: ((f32(r, 4, 4),), {"bias": f32(r, 4),
                                                               "gain": f32(r, 4, 1)})),
    Case("static_args", static_args, lambda r: ((f32(r, 3), 3, "double"), {}),
         static_argnums=(1, 2)),
    Case("softmax", softmax_logsumexp, lambda r: ((f32(r, 5, 9),), {}), tol=1e-5),
    Case("sort_argmax", sort_argmax, lambda r: ((f32(r, 6, 8),), {}), tol=1e-5),
    Case("none_leaves", none_leaves, lambda r: ((f32(r, 3), None, f32(r, 3)), {})),
    Case("standardize", standardize, lambda r: ((f32(r, 64, 4), np.float32(1e-6)), {}),
         tol=1e-4, preserved={"result[0]": "args[0]"}),
    Case("preserved", preserved_args, lambda r: ((f32(r, 3, 2), f32(r, 4, 2), f32(r, 5, 2)), {}),
         tol=1e-4, preserved={"result[0]": "args[0]", "result[1]['y']": "args[1]"}),
)
