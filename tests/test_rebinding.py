"""A traced function that rebinds a global or an enclosing function's variable is refused
before it runs, in every form, and the name keeps its value (never a traced object)."""

from __future__ import annotations

import sys

import jax.numpy as jnp
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.trace import rebinding
from tests.conftest import assert_close

GL = np.ones(3)
COUNT = 0
# UNSET is never defined: a kernel defines it


def stores_global(a):
    global GL  # noqa: PLW0603 - the case under test
    GL = a * 2
    return a


def reads_then_stores_global(a):
    global GL  # noqa: PLW0603 - the case under test
    GL = GL + a


def defines_global(a):
    global UNSET  # noqa: PLW0603 - the case under test
    UNSET = a + 1
    return a


def counts_calls(a):
    global COUNT  # noqa: PLW0603 - the case under test
    COUNT += 1
    return a * 2


def deletes_global(a):
    global GL  # noqa: PLW0603 - the case under test
    del GL
    return a


def _helper_stores(a):
    global GL  # noqa: PLW0603 - the case under test
    GL = a


def calls_a_helper_that_stores(a):
    _helper_stores(a * 3)
    return a + 1


def stores_in_a_loop(a):
    global GL  # noqa: PLW0603 - the case under test
    for i in range(10):
        GL = a * i
    return a


def stores_in_a_lambda(a):
    def set_it(v):
        global GL  # noqa: PLW0603 - the case under test
        GL = v
    set_it(a)
    return a


def _snapshot(name):
    module = sys.modules[__name__]
    return getattr(module, name, "<unset>")


@pytest.mark.parametrize("mode", ["numpy", "jax"])
@pytest.mark.parametrize(("kernel", "line"), [
    (stores_global, "GL = a * 2"), (reads_then_stores_global, "GL = GL + a"),
    (defines_global, "UNSET = a + 1"), (counts_calls, "COUNT += 1"), (deletes_global, "del GL"),
    (stores_in_a_loop, "GL = a * i"), (stores_in_a_lambda, "GL = v"),
    (calls_a_helper_that_stores, "GL = a"),
])
def test_rebinding_a_global_is_refused_before_it_runs_and_the_global_kept(rng, kernel, line,
                                                                          mode):
    a = rng.random(3) + 0.5
    before = {name: _snapshot(name) for name in ("GL", "COUNT", "UNSET")}
    kept = GL.copy()
    x = a if mode == "numpy" else jnp.asarray(a)
    with pytest.raises(rl.TraceError, match="left as it was") as info:
        rl.jit(kernel, mode=mode)(x)
    assert line in str(info.value) and "[...] = new value" in str(info.value)
    assert {name: _snapshot(name) for name in before} == before  # the very same objects
    np.testing.assert_array_equal(GL, kept)


def test_a_helper_run_as_python_is_caught_after_the_trace_and_the_global_put_back(rng):
    # loops='unroll' converts no call, so the helper's rebinding is only seen by its effect
    a = rng.random(3)
    kept = GL
    with pytest.raises(rl.TraceError, match="rebound the global 'GL' to a traced value"):
        rl.jit(calls_a_helper_that_stores, loops="unroll")(a)
    assert GL is kept


def _outer():
    w = np.ones(3)

    def k3(a):
        nonlocal w
        w = w + a
        return w

    return k3, lambda: w


def test_rebinding_a_nonlocal_is_refused_and_the_closure_kept(rng):
    k3, getw = _outer()
    kept = getw()
    with pytest.raises(rl.TraceError, match=r"'w', a variable of the function around it "
                                            r"\(nonlocal w\).*\n.*w = w \+ a"):
        rl.jit(k3)(rng.random(3))
    assert getw() is kept
    np.testing.assert_array_equal(kept, np.ones(3))


def _outer_with_a_setter():
    w = np.ones(3)

    def set_w(v):
        nonlocal w
        w = v

    def kernel(a):
        set_w(a * 2)
        return a + 1

    return kernel, lambda: w


@pytest.mark.parametrize("loops", ["auto", "unroll"])
def test_a_called_function_rebinding_a_nonlocal_is_refused(rng, loops):
    kernel, getw = _outer_with_a_setter()
    kept = getw()
    with pytest.raises(rl.TraceError, match="'w'"):
        rl.jit(kernel, loops=loops)(rng.random(3))
    assert getw() is kept


def test_a_nonlocal_of_the_kernels_own_variable_is_no_rebinding_outside(rng):
    def kernel(a):
        acc = np.zeros_like(a)

        def add(v):
            nonlocal acc
            acc = acc + v

        for k in range(3):
            add(a * k)
        total = [acc := acc * 2 for _ in range(1)]  # a walrus binds the kernel's own name
        return acc + total[0]

    a = rng.random(4)
    assert_close(rl.jit(kernel)(a), kernel(a.copy()), rtol=1e-12)
    assert rebinding.rebindings(kernel.__code__) == ()


def test_rebindings_names_each_form():
    found = {(r.name, r.scope, r.deleted) for r in rebinding.rebindings(deletes_global.__code__)}
    assert found == {("GL", "global", True)}
    k3, _ = _outer()
    assert [(r.name, r.scope) for r in rebinding.rebindings(k3.__code__)] == [("w", "nonlocal")]
    assert rebinding.rebindings(stores_in_a_lambda.__code__)[0].where.line == "GL = v"
