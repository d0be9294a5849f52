"""check_traceable: generator and async functions are refused up front, naming the function and
saying what to do; every other kind of callable passes."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from reactant_lab.errors import TraceError
from reactant_lab.trace.user_fn import check_traceable


def gen(x):
    yield x * 2


async def coro(x):
    return x * 2


async def agen(x):
    yield x * 2


class Model:
    def step(self, x):
        yield x

    async def astep(self, x):
        return x

    @staticmethod
    def sgen(x):
        yield x

    @classmethod
    async def cstep(cls, x):
        return x


class GenCall:
    def __call__(self, x):
        yield x


class AsyncCall:
    async def __call__(self, x):
        return x


class InheritedAsyncCall(AsyncCall):
    pass


class PlainCall:
    def __call__(self, x):
        return x + 1


RETURN_ADVICE = "Return the arrays instead of yielding them"
SYNC_ADVICE = "Call the coroutine's body synchronously"

REFUSED = [
    pytest.param(gen, "gen is a generator function", RETURN_ADVICE, id="generator"),
    pytest.param(coro, "coro is an async function", SYNC_ADVICE, id="async"),
    pytest.param(agen, "agen is an async generator function", "returns the arrays instead of "
                 "yielding them", id="async-generator"),
    pytest.param(functools.partial(gen), "gen (wrapped in functools.partial) is a generator",
                 RETURN_ADVICE, id="partial"),
    pytest.param(functools.partial(functools.partial(coro)), "coro (wrapped in functools."
                 "partial) is an async function", SYNC_ADVICE, id="nested-partial"),
    pytest.param(Model().step, "Model.step is a generator function", RETURN_ADVICE,
                 id="bound-method"),
    pytest.param(Model().astep, "Model.astep is an async function", SYNC_ADVICE,
                 id="bound-async-method"),
    pytest.param(Model.sgen, "Model.sgen is a generator function", RETURN_ADVICE,
                 id="staticmethod"),
    pytest.param(Model.cstep, "Model.cstep is an async function", SYNC_ADVICE,
                 id="classmethod"),
    pytest.param(functools.partial(Model().astep, 1), "Model.astep (wrapped in functools."
                 "partial) is an async function", SYNC_ADVICE, id="partial-of-method"),
    pytest.param(GenCall(), "GenCall.__call__ (called through an instance of GenCall) is a "
                 "generator",
                 RETURN_ADVICE, id="callable-object"),
    pytest.param(AsyncCall(), "AsyncCall.__call__ (called through an instance of AsyncCall) is "
                 "an async function", SYNC_ADVICE, id="async-callable-object"),
    pytest.param(InheritedAsyncCall(), "AsyncCall.__call__ (called through an instance of "
                 "InheritedAsyncCall) is an async function", SYNC_ADVICE, id="inherited-__call__"),
]


@pytest.mark.parametrize(("fn", "names", "advice"), REFUSED)
def test_untraceable_functions_are_refused_with_a_clear_message(fn, names, advice):
    with pytest.raises(TraceError) as info:
        check_traceable(fn)
    message = str(info.value)
    assert names in message
    assert "which reactant_lab cannot trace" in message
    assert advice in message


def _plain(x):
    return np.sin(x)


ACCEPTED = [
    pytest.param(_plain, id="function"),
    pytest.param(lambda x: x + 1, id="lambda"),
    pytest.param(functools.partial(_plain), id="partial"),
    pytest.param(PlainCall(), id="callable-object"),
    pytest.param(PlainCall().__call__, id="bound-method"),
    pytest.param(np.add, id="ufunc"),
    pytest.param(np.sum, id="numpy-function"),
    pytest.param(jnp.sin, id="jax-function"),
    pytest.param(jax.jit(_plain), id="jax-jit"),
    pytest.param(len, id="builtin"),
    pytest.param(functools.partial(np.add, 1.0), id="partial-of-ufunc"),
]


@pytest.mark.parametrize("fn", ACCEPTED)
def test_ordinary_callables_pass(fn):
    assert check_traceable(fn) is None

