"""A catalog of bad, hostile and unusual input across the public API: each case must fail
clearly, name what the user got wrong, leave every caller array exactly as it was, and leave the
jit object or executable it hit working.

The rule for the error class:

- an error reactant_lab diagnoses is a ``ReactantLabError`` subclass (named per case);
- where the same code run eagerly by NumPy (or Python) raises, reactant_lab raises that class
  too (``IndexError``, ``ValueError``, ``TypeError``, ``AxisError``, or the user's own exception),
  and each such case checks that NumPy really does raise it;
- never an error class of JAX's (``ConcretizationTypeError``, ``TracerBoolConversionError``,
  ``UnexpectedTracerError``, ...), nor one whose message is JAX's alone.

Cases that may crash the process (MLIR's parser on deep nesting) and the command line run in a
subprocess, which must exit normally.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import re
import resource
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab import enzyme as rle
from reactant_lab.errors import AnalysisError
from tests.cli_batch import Run, run_commands
from tests.conftest import (
    assert_close,
    assert_values_equal,
    child_env,
    earlier_overruns_ended,
    steps_over_in_seconds,
    target_platform,
    unattached_platform,
)

HERE = __file__
ROOT = Path(__file__).resolve().parent.parent

JAX_ERROR_NAMES = ("UnexpectedTracerError", "ConcretizationTypeError",
                   "TracerBoolConversionError", "TracerIntegerConversionError",
                   "TracerArrayConversionError", "NonConcreteBooleanIndexError",
                   "XlaRuntimeError", "JaxRuntimeError", "incompatible function arguments",
                   "dtype_to_ir_type", "is not a valid JAX type")
"""Class names and phrases that mean an error came out of JAX or a binding unexplained."""


def line_of(fn: Callable[..., Any], needle: str) -> str:
    """``FILE:LINE`` of the first line of ``fn`` holding ``needle``, as messages cite it."""
    lines, start = inspect.getsourcelines(fn)
    return f"{HERE}:{start + next(i for i, line in enumerate(lines) if needle in line)}"


@dataclass
class Bad:
    """One bad call, what it must leave alone, and a good call that must work afterwards."""

    call: Callable[[], Any]
    """The bad call."""
    arrays: tuple[np.ndarray, ...] = ()
    """The caller's arrays: bit-identical afterwards (object, dtype, strides, flags, bytes)."""
    says: tuple[str, ...] = ()
    """Substrings the message must hold (the user's line, an argument path, the bad value)."""
    then: Callable[[], Any] | None = None
    """A good call on the same jit object / executable, which must work after the failure."""
    eager: Callable[[], Any] | None = None
    """The same code run by NumPy, where the rule is NumPy's own error: it must raise it too."""
    jax: Callable[[], Any] | None = None
    """The same mistake made with JAX's own transformation (jax.grad, jax.vjp, jax.jvp,
    jax.vmap): JAX must refuse it too, and ours must be an instance of the class JAX raises."""


@dataclass(frozen=True)
class Spec:
    build: Callable[[np.random.Generator], Bad]
    expect: type[BaseException]


CATALOG: dict[str, Spec] = {}


def case(expect: type[BaseException]):
    """Register a builder of a ``Bad`` call that must raise ``expect``."""
    def register(build: Callable[[np.random.Generator], Bad]) -> Callable:
        CATALOG[build.__name__] = Spec(build, expect)
        return build
    return register


def frame(a: np.ndarray) -> tuple:
    """Everything a caller could notice about an array."""
    flags = a.flags
    return (id(a), a.dtype.str, a.shape, a.strides, flags.c_contiguous, flags.f_contiguous,
            flags.writeable, flags.owndata, flags.aligned, a.tobytes())


def check_clear(err: BaseException, expect: type[BaseException], says: tuple[str, ...]) -> None:
    text = f"{type(err).__module__}.{type(err).__qualname__}: {err}"
    assert isinstance(err, expect), f"expected {expect.__name__}, got {text}"
    assert not type(err).__module__.startswith(("jax", "jaxlib")), text
    for name in JAX_ERROR_NAMES:
        assert name not in text, f"JAX's error leaks: {text}"
    assert str(err).strip(), f"empty message: {text}"
    for part in says:
        assert part in str(err), f"the message does not say {part!r}: {text}"


# ---------------------------------------------------------------------------------- helpers

def add_one(a):
    return a + 1


def scale_in_place(a, b):
    a *= 2
    return b.sum()


def _jit(fn, **options):
    return rl.jit(fn, optimize="none", **options)


def _copies(*arrays):
    return [a.copy() for a in arrays]


# ---------------------------------------------------------------------------------- arguments

@case(rl.UnsupportedArgumentError)
def unhashable_static_set(rng):
    x = rng.random(4)
    jf = _jit(lambda a, s: a + len(s))
    return Bad(lambda: jf(x, {1, 2}), (x,), ("args[1]", "set"),
               then=lambda: assert_close(jf(x, frozenset({1, 2})), x + 2))


@case(rl.UnsupportedArgumentError)
def unhashable_static_deep_in_a_pytree(rng):
    x = rng.random(3)
    return Bad(lambda: rl.trace(lambda p: p["w"] * 2, {"w": x, "opts": [1, bytearray(b"x")]}),
               (x,), ("args[0]['opts'][1]", "bytearray"))


@case(rl.UnsupportedArgumentError)
def object_dtype_array(rng):
    x = rng.random(3)
    bad = np.array([1, "a", None], dtype=object)
    jf = _jit(lambda a, b: a * 2)
    return Bad(lambda: jf(x, bad), (x, bad), ("args[1]", "object"),
               then=lambda: assert_close(jf(x, x), 2 * x))


@case(rl.UnsupportedArgumentError)
def string_dtype_array_as_a_keyword(rng):
    x = rng.random(2)
    names = np.array(["a", "b"])
    return Bad(lambda: rl.trace(lambda a, names: a, x, names=names), (x, names),
               ("kwargs['names']", "<U1"))


@case(rl.UnsupportedArgumentError)
def structured_dtype_array(rng):
    rec = np.zeros(3, dtype=[("a", "f4"), ("b", "i4")])
    return Bad(lambda: _jit(lambda r: r)(rec), (rec,), ("args[0]",))


@case(rl.UnsupportedArgumentError)
def datetime_array(rng):
    days = np.array(["2020-01-01", "2021-06-30"], dtype="datetime64[D]")
    return Bad(lambda: _jit(lambda d: d)(days), (days,), ("args[0]", "datetime64"))


@case(rl.UnsupportedArgumentError)
def longdouble_array(rng):
    wide = rng.random(3).astype(np.longdouble)
    return Bad(lambda: _jit(add_one)(wide), (wide,), ("args[0]",))


@case(rl.UnsupportedArgumentError)
def masked_array(rng):
    masked = np.ma.array(rng.random(3), mask=[0, 1, 0])
    return Bad(lambda: _jit(add_one)(masked), (masked.data, masked.mask), ("args[0]",))


@case(rl.UnsupportedArgumentError)
def jax_tracer_passed_in_from_jax_jit(rng):
    x = jnp.asarray(rng.random(3), jnp.float32)
    jf = _jit(add_one)
    return Bad(lambda: jax.jit(jf)(x), (), ("args[0]", "tracer"),
               then=lambda: assert_close(jf(x), x + 1))


@case(rl.UnsupportedArgumentError)
def jax_tracer_passed_in_from_grad(rng):
    x = jnp.asarray(rng.random(3), jnp.float32)
    jf = _jit(lambda b: (b * b).sum())
    return Bad(lambda: jax.grad(jf)(x), (), ("args[0]", "tracer"),
               then=lambda: assert_close(jf(x), (x * x).sum(), rtol=1e-6))


@case(rl.UnsupportedArgumentError)
def numpy_generator_argument(rng):
    x = rng.random(3)
    return Bad(lambda: rl.trace(lambda a, g: a + g.random(), x, rng), (x,), ("args[1]",))


# ---------------------------------------------------------------------------------- the function

@case(rl.TraceError)
def generator_function(rng):
    def produce(a):
        yield a * 2

    x = rng.random(3)
    return Bad(lambda: _jit(produce)(x), (x,), ("produce", "generator"))


@case(rl.TraceError)
def async_function(rng):
    async def fetch(a):
        return a * 2

    x = rng.random(3)
    return Bad(lambda: rl.trace(fetch, x), (x,), ("fetch", "async"))


@case(rl.TraceError)
def async_generator_function_through_partial(rng):
    async def stream(a, k):
        yield a * k

    x = rng.random(3)
    return Bad(lambda: rl.explore(functools.partial(stream, k=2), x), (x,), ("stream",))


@case(rl.TraceError)
def result_of_calling_the_function(rng):
    x = rng.random(3)
    return Bad(lambda: rl.trace(add_one(x), x), (x,), ("rl.trace(f, x)",))


@case(rl.TraceError)
def compiled_function_to_code_hlo(rng):
    x = rng.random(3)
    return Bad(lambda: rl.code_hlo(_jit(add_one), x), (x,), ("add_one",))


@case(rl.TraceError)
def unknown_trace_mode(rng):
    x = rng.random(3)
    return Bad(lambda: _jit(add_one, mode="torch")(x), (x,), ("'torch'",))


# ---------------------------------------------------------------------------------- presets, passes

@case(rl.UnknownPresetError)
def unknown_preset_in_jit(rng):
    return Bad(lambda: rl.jit(add_one, optimize="O3"), (), ("'O3'", "Valid presets"))


@case(rl.UnknownPresetError)
def unknown_preset_in_stages(rng):
    x = rng.random(3)
    traced = rl.trace(add_one, x)
    return Bad(lambda: traced.stages("fastest"), (x,), ("'fastest'",),
               then=lambda: traced.stages("none"))


@case(rl.UnknownPresetError)
def unknown_preset_in_bench(rng):
    x = rng.random(3)
    return Bad(lambda: rl.bench(add_one, x, presets=("none", "ludicrous")), (x,),
               ("'ludicrous'",))


@case(rl.ReactantLabError)
def unknown_baseline_in_bench(rng):
    x = rng.random(3)
    return Bad(lambda: rl.bench(add_one, x, baselines=("torch",)), (x,), ("torch",))


@case(rl.UnknownPassError)
def unknown_pass(rng):
    text = rl.trace(add_one, rng.random(3)).as_text()
    return Bad(lambda: rl.run_pipeline(text, "canonicalize,no-such-pass"), (),
               ("no-such-pass",))


@case(rl.UnknownPassError)
def unknown_pass_option(rng):
    x = rng.random(3)
    traced = rl.trace(add_one, x)
    return Bad(lambda: traced.stages(pipeline="canonicalize{no-such-opt=1}"), (x,),
               ("no-such-opt",), then=lambda: traced.stages(pipeline="canonicalize"))


@case(rl.PipelineError)
def pipeline_with_an_empty_pass(rng):
    traced = rl.trace(add_one, rng.random(3))
    return Bad(lambda: traced.stages(pipeline="canonicalize,,cse"), (), ("position 1",))


@case(rl.PipelineError)
def pipeline_with_an_unclosed_brace(rng):
    return Bad(lambda: rl.jit(add_one, pipeline="inline{default-pipeline=canonicalize")(
        np.ones(2)), (), ("inline{",))


@case(rl.PipelineError)
def pipeline_that_is_not_a_string(rng):
    traced = rl.trace(add_one, rng.random(3))
    return Bad(lambda: traced.stages(pipeline=42), (), ("42",))


@case(rl.PipelineError)
def run_pipeline_with_pipeline_none(rng):
    text = rl.trace(add_one, rng.random(3)).as_text()
    return Bad(lambda: rl.run_pipeline(text, None), (), ("None",))


@case(rl.PipelineError)
def unknown_granularity(rng):
    traced = rl.trace(add_one, rng.random(3))
    return Bad(lambda: traced.stages("none", granularity="line"), (), ("'line'",))


@case(rl.ReactantLabError)
def unknown_device(rng):
    x = rng.random(3)
    missing = unattached_platform()
    return Bad(lambda: rl.jit(add_one, device=missing)(x), (x,), (missing,))


@case(rl.ReactantLabError)
def run_pipeline_on_none(rng):
    return Bad(lambda: rl.run_pipeline(None, "canonicalize"), (), ("None",))


@case(rl.ReactantLabError)
def run_pipeline_on_text_that_is_not_mlir(rng):
    return Bad(lambda: rl.run_pipeline("module {", "canonicalize"), (), ())


# ---------------------------------------------------------------------------------- stages

@case(rl.ReactantLabError)
def stage_index_out_of_range(rng):
    x = rng.random(3)
    stages = rl.trace(add_one, x).stages("canonicalize")
    return Bad(lambda: stages.compile(99), (x,), ("99",),
               then=lambda: assert_close(stages.compile(1)(x), x + 1))


@case(rl.ReactantLabError)
def stage_name_unknown(rng):
    stages = rl.trace(add_one, rng.random(3)).stages("none")
    return Bad(lambda: stages["optimize"], (), ("optimize", "traced"))


@case(rl.ReactantLabError)
def graph_of_a_stage_out_of_range(rng):
    ex = rl.explore(add_one, rng.random(3), optimize="none")
    return Bad(lambda: rl.graph_dot(ex, stage=7), (), ("7",), then=lambda: rl.graph_dot(ex, stage=0))


@case(AnalysisError)
def graph_of_an_unknown_result(rng):
    ex = rl.explore(add_one, rng.random(3), optimize="none")
    return Bad(lambda: rl.graph_dot(ex, result="result[3]"), (), ("result[3]",))


# ---------------------------------------------------------------------------------- options of our
# own functions (render, analysis, bench, verify): wrong types and values named, never an
# AttributeError from deep inside


def _explored(rng):
    return rl.explore(add_one, rng.random(3), optimize="canonicalize")


@case(rl.ArgumentTypeError)
def exploration_html_of_a_string(rng):
    return Bad(lambda: rl.exploration_html("str"), (), ("Exploration", "rl.explore", "str"))


@case(rl.ArgumentTypeError)
def graph_svg_of_a_jit_function(rng):
    x = rng.random(3)
    jf = _jit(add_one)
    jf(x)
    return Bad(lambda: rl.graph_svg(jf), (x,), ("Exploration", ".last"),
               then=lambda: rl.graph_dot(jf.last))


@case(rl.ArgumentTypeError)
def save_html_to_no_path(rng):
    ex = _explored(rng)
    return Bad(lambda: rl.save_html(ex, None), (), ("path", "None"))


@case(TypeError)
def exploration_payload_with_run_not_a_dict(rng):
    ex = _explored(rng)
    return Bad(lambda: rl.exploration_payload(ex, run=[("median_seconds", 1e-3)]), (),
               ("run", "dict", "list"))


@case(rl.ArgumentValueError)
def diff_html_with_negative_counts(rng):
    stages = _explored(rng).stages
    d = rl.diff(stages[0], stages[1])
    return Bad(lambda: rl.diff_html(d, max_rows=-5, context=3), (), ("max_rows", "-5"),
               then=lambda: rl.diff_html(d, max_rows=5, context=0))


@case(rl.ArgumentValueError)
def diff_html_with_a_negative_context(rng):
    stages = _explored(rng).stages
    d = rl.diff(stages[0], stages[1])
    return Bad(lambda: rl.diff_html(d, context=-1), (), ("context", "-1"))


@case(rl.ArgumentValueError)
def diff_html_with_no_rows(rng):
    stages = _explored(rng).stages
    d = rl.diff(stages[0], stages[1])
    return Bad(lambda: rl.diff_html(d, max_rows=0), (), ("max_rows", "None"))


@case(rl.ArgumentTypeError)
def diff_html_with_a_bool_context(rng):
    stages = _explored(rng).stages
    d = rl.diff(stages[0], stages[1])
    return Bad(lambda: rl.diff_html(d, context=True), (), ("context", "bool"))


@case(rl.ArgumentTypeError)
def diff_html_of_a_stage(rng):
    stages = _explored(rng).stages
    return Bad(lambda: rl.diff_html(stages[1]), (), ("Diff", "rl.diff", "Stage"))


@case(rl.ArgumentTypeError)
def diff_text_with_a_float_context(rng):
    stages = _explored(rng).stages
    d = rl.diff(stages[0], stages[1])
    return Bad(lambda: d.text(context=2.5), (), ("context", "2.5"))


@case(rl.ArgumentTypeError)
def diff_with_structural_a_string(rng):
    stages = _explored(rng).stages
    return Bad(lambda: rl.diff(stages[0], stages[1], structural="no"), (), ("structural", "'no'"))


@case(rl.ArgumentValueError)
def graph_dot_with_no_ops(rng):
    ex = _explored(rng)
    return Bad(lambda: rl.graph_dot(ex, max_ops=0), (), ("max_ops", "0"),
               then=lambda: rl.graph_dot(ex, max_ops=1))


@case(rl.ReactantLabError)
def graph_of_stage_true(rng):
    ex = _explored(rng)
    return Bad(lambda: rl.graph_dot(ex, stage=True), (), ("True", "bool"))


@case(rl.ArgumentValueError)
def payload_options_with_a_negative_count(rng):
    from reactant_lab.render.payload import PayloadOptions

    return Bad(lambda: PayloadOptions(max_graphs=-1), (), ("max_graphs", "-1"))


@case(rl.ArgumentTypeError)
def op_table_html_of_a_stage_trace(rng):
    stages = _explored(rng).stages
    return Bad(lambda: rl.op_table_html(stages), (), ("OpTable", "op_table", "StageTrace"))


@case(rl.ArgumentTypeError)
def stage_table_of_a_dict(rng):
    stages = _explored(rng).stages
    return Bad(lambda: stages.table({"checks": []}), (), ("Verification", "dict"))


@case(rl.ArgumentTypeError)
def ops_for_line_of_a_string(rng):
    ex = _explored(rng)
    return Bad(lambda: ex.ops_for_line("12"), (), ("line", "'12'"))


@case(rl.ArgumentTypeError)
def restaged_with_a_misspelt_option(rng):
    ex = _explored(rng)
    return Bad(lambda: ex.restaged(optimise="none"), (), ("optimise", "optimize"),
               then=lambda: ex.restaged(optimize="none"))


@case(rl.ArgumentValueError)
def verify_with_no_repeats(rng):
    x = rng.random(3)
    stages = rl.trace(add_one, x).stages("none")
    return Bad(lambda: stages.verify(x, repeat=0), (x,), ("repeat", "0"))


@case(rl.ArgumentValueError)
def bench_with_no_repeats(rng):
    x = rng.random(3)
    return Bad(lambda: rl.bench(add_one, x, presets=("none",), repeats=0), (x,),
               ("repeats", "0"))


@case(rl.ArgumentTypeError)
def bench_with_a_fractional_warmup(rng):
    x = rng.random(3)
    return Bad(lambda: rl.bench(add_one, x, presets=("none",), warmup=1.5), (x,),
               ("warmup", "1.5"))


@case(rl.ArgumentTypeError)
def bench_with_presets_a_string(rng):
    x = rng.random(3)
    return Bad(lambda: rl.bench(add_one, x, presets="none"), (x,),
               ("presets", "presets=('none',)"))


@case(rl.ArgumentTypeError)
def explore_with_a_string_for_a_flag(rng):
    x = rng.random(3)
    return Bad(lambda: rl.explore(add_one, x, optimize="none", run="no"), (x,), ("run", "'no'"))


@case(rl.ArgumentTypeError)
def verify_with_a_progress_that_is_not_a_function(rng):
    x = rng.random(3)
    stages = rl.trace(add_one, x).stages("none")
    return Bad(lambda: stages.verify(x, progress=True), (x,), ("progress", "function"),
               then=lambda: stages.verify(x, progress=print))


@case(rl.ShardingError)
def in_shardings_not_a_mapping(rng):
    x = rng.random(4)
    return Bad(lambda: rl.jit(add_one, in_shardings=["args[0]"])(x), (x,),
               ("in_shardings", "list"))


@case(rl.ArgumentTypeError)
def aligned_arrays_switched_with_a_string(rng):
    return Bad(lambda: rl.use_aligned_arrays("off"), (), ("on", "'off'"))


@case(rl.TraceError)
def jit_of_something_not_callable(rng):
    x = rng.random(3)
    return Bad(lambda: rl.jit(add_one(x)), (x,), ("jit expects a function", "rl.jit(f)"))


@case(rl.ArgumentTypeError)
def is_aligned_of_a_list(rng):
    return Bad(lambda: rl.is_aligned([1.0, 2.0]), (), ("NumPy array", "list"))


# ---------------------------------------------------------------------------------- Compiled calls

def _compiled(fn, *args):
    return rl.trace(fn, *args).stages("none").compile()


@case(rl.SignatureMismatchError)
def compiled_called_with_another_dtype(rng):
    x = rng.random(4)
    compiled = _compiled(add_one, x)
    x32 = x.astype(np.float32)
    return Bad(lambda: compiled(x32), (x, x32), ("args[0]", "float32"),
               then=lambda: assert_close(compiled(x), x + 1))


@case(rl.SignatureMismatchError)
def compiled_called_with_another_shape(rng):
    x = rng.random(4)
    compiled = _compiled(add_one, x)
    longer = rng.random(5)
    return Bad(lambda: compiled(longer), (x, longer), ("args[0]", "[5]"))


@case(rl.SignatureMismatchError)
def compiled_called_with_an_extra_keyword(rng):
    x = rng.random(4)
    compiled = _compiled(add_one, x)
    return Bad(lambda: compiled(x, scale=2), (x,), ("scale",))


@case(rl.SignatureMismatchError)
def compiled_called_with_another_static_value(rng):
    x = rng.random(4)
    compiled = _compiled(lambda a, n: a * n, x, 2)
    return Bad(lambda: compiled(x, 3), (x,), ("static", "args[1]"),
               then=lambda: assert_close(compiled(x, 2), 2 * x))


@case(rl.UnsupportedArgumentError)
def compiled_update_target_read_only(rng):
    a, b = rng.random(4), rng.random(4)
    compiled = _compiled(scale_in_place, a, b)
    frozen = a.copy()
    frozen.flags.writeable = False
    return Bad(lambda: compiled(frozen, b), (frozen, a, b), ("args[0]", "writable"),
               then=lambda: compiled(a, b))


@case(rl.UnsupportedArgumentError)
def compiled_update_target_a_jax_array(rng):
    a, b = rng.random(4), rng.random(4)
    compiled = _compiled(scale_in_place, a, b)
    return Bad(lambda: compiled(jnp.asarray(a), b), (a, b), ("args[0]", "NumPy array"))


@case(rl.UnsupportedArgumentError)
def updated_argument_is_also_the_other_argument(rng):
    a = rng.random(4)
    jf = _jit(scale_in_place)
    return Bad(lambda: jf(a, a), (a,), ("args[0]", "args[1]"),
               then=lambda: jf(a, a.copy()))


@case(rl.DonatedArgumentError)
def donated_jax_array_used_again(rng):
    jf = _jit(lambda a: a * 2, donate=True)
    x = jnp.asarray(rng.random(4), jnp.float32)
    jf(x)
    return Bad(lambda: jf(x), (), ("args[0]", "donate"),
               then=lambda: jf(jnp.ones(4, jnp.float32)))


def count_to(a, b, n):
    while a[0] < n:
        a[0] += 1.0
        b += 1.0
    return a.sum()


@case(rl.CallTimeoutError)
def call_past_its_time_limit(rng):
    # A loop that ends far past the limit, over in seconds.
    earlier_overruns_ended()
    a, b = rng.random(3), rng.random(3)
    jf = _jit(count_to, timeout=0.05)
    c, d = rng.random(3), rng.random(3)
    want_c, want_d = c.copy(), d.copy()
    count_to(want_c, want_d, 3.0)

    def then():
        if target_platform() != "cpu":  # the device runs the stopped loop until it ends: this
            earlier_overruns_ended()  # call and later cases' would wait for it (refused)
        jf(c, d, 3.0)  # the same jit object: a short run ends in time
        assert_values_equal(c, want_c)  # float64 sums: a TPU's emulated float64 differs a bit
        assert_values_equal(d, want_d)

    return Bad(lambda: jf(a, b, steps_over_in_seconds()), (a, b),
               ("count_to ran past its time limit of 0.05 s", "`while a[0] < n`", "timeout="),
               then=then)


@case(rl.ExecutionError)
def timeout_that_is_not_a_positive_number(rng):
    x = rng.random(3)
    return Bad(lambda: rl.explore(add_one, x, timeout=-1), (x,), ("timeout", "-1"))


# ---------------------------------------------------------------------------------- NumPy kernels

@case(rl.UnsupportedNumpyFunctionError)
def numpy_function_without_a_traced_equivalent(rng):
    def kernel(a, distinct):
        a[0] = -1.0
        return np.unique(a) if distinct else np.sort(a)

    a = rng.random(5)
    jf = _jit(kernel)
    return Bad(lambda: jf(a, True), (a,), ("np.unique", line_of(kernel, "np.unique")),
               then=lambda: jf(a.copy(), False))


@case(rl.UnsupportedNumpyFunctionError)
def numpy_random_inside_the_kernel(rng):
    def kernel(a):
        a += np.random.rand(*a.shape)

    a = rng.random(3)
    return Bad(lambda: _jit(kernel)(a), (a,), (line_of(kernel, "np.random"),))


@case(rl.ControlFlowError)
def python_if_on_a_traced_numpy_value(rng):
    def kernel(a, b, check):
        b[:] = 0.0
        for _ in range(2):
            if check and a.sum() > 1:
                return a * 2  # a return out of a loop, from an `if` on a traced value
            a = a + 1
        return a

    a, b = rng.random(3), rng.random(3)
    jf = _jit(kernel)
    return Bad(lambda: jf(a, b, True), (a, b), (line_of(kernel, "if check and a.sum()"),),
               then=lambda: jf(a.copy(), b.copy(), False))


@case(rl.ControlFlowError)
def python_if_on_a_traced_jax_value(rng):
    def f(a):
        for _ in range(2):
            if a.sum() > 0:  # a return out of a loop, from an `if` on a traced value
                return jnp.sin(a)
            a = a * 2
        return jnp.cos(a)

    x = jnp.asarray(rng.random(3), jnp.float32)
    jf = _jit(f)
    return Bad(lambda: jf(x), (), (line_of(f, "if a.sum()"),),
               then=lambda: rl.jit(lambda a: jnp.where(a.sum() > 0, jnp.sin(a), jnp.cos(a)),
                                   optimize="none")(x))


@case(rl.ControlFlowError)
def int_of_a_traced_jax_value(rng):
    def f(a):
        return jnp.tanh(a) * int(a[0])

    x = jnp.asarray(rng.random(3), jnp.float32)
    return Bad(lambda: _jit(f)(x), (), (line_of(f, "int(a[0])"),))


@case(rl.ControlFlowError)
def recursion_that_ends_on_a_traced_value(rng):
    def halve(a):
        return a if a[0] < 1 else halve(a * 0.5)  # both branches trace: no end

    def kernel(a, depth):
        a[1:] = halve(a[1:]) if depth is None else a[1:] * 0.5 ** depth

    a = rng.uniform(4, 8, 4)
    jf = _jit(kernel)
    return Bad(lambda: jf(a, None), (a,), ("halve() calls itself without end", "static"),
               then=lambda: jf(a.copy(), 3))


@case(rl.UnassignedVariableError)
def index_of_a_loop_over_a_traced_range_read_after_it(rng):
    def kernel(a, n):
        for i in range(n):
            a[i] *= 2.0
        return i

    a = rng.random(4)
    jf = _jit(kernel)
    return Bad(lambda: jf(a, np.int64(2)), (a,), (line_of(kernel, "return i"), "`i = -1`"),
               then=lambda: jf(a.copy(), 2))


@case(UnboundLocalError)
def loop_index_read_after_an_empty_static_loop(rng):
    def kernel(a, n):
        for i in range(n):
            a[i] *= 2.0
        a[0] = i

    a = rng.random(4)
    return Bad(lambda: _jit(kernel)(a, 0), (a,), ("'i'",), eager=lambda: kernel(a.copy(), 0))


@case(rl.DynamicShapeError)
def value_dependent_shape_in_numpy_mode(rng):
    def kernel(a, select):
        a[0] = 1.0
        return a[a > 0.5] if select else np.where(a > 0.5, a, 0.0)

    a = rng.random(4)
    jf = _jit(kernel)
    return Bad(lambda: jf(a, True), (a,), ("a[mask]",), then=lambda: jf(a.copy(), False))


@case(rl.TraceError)
def value_dependent_shape_in_jax_mode(rng):
    def f(a):
        return jnp.nonzero(jnp.sin(a) > 0.5)

    x = jnp.asarray(rng.random(4), jnp.float32)
    return Bad(lambda: _jit(f)(x), (), (line_of(f, "jnp.nonzero"),))


@case(rl.TraceError)
def tracer_leaked_from_an_earlier_trace(rng):
    leaked = []

    def keep(a):
        leaked.append(a)
        return jnp.sin(a)

    x = jnp.asarray(rng.random(3), jnp.float32)
    _jit(keep)(x)
    return Bad(lambda: _jit(lambda a: jnp.cos(a) + leaked[0])(x), (), ())


@case(rl.TraceError)
def jax_array_updated_in_numpy_mode(rng):
    def kernel(a):
        a[0] = 1.0
        return a

    return Bad(lambda: rl.trace(kernel, jnp.ones(3), mode="numpy"), (), ("args[0]", "JAX array"))


@case(rl.TraceError)
def numpy_scalar_argument_written_through(rng):
    def kernel(a, s):
        s[...] = 2.0
        return a * s

    a = rng.random(3)
    return Bad(lambda: _jit(kernel)(a, np.float64(1.5)), (a,), ("NumPy scalar",))


@case(IndexError)
def constant_index_out_of_bounds_written(rng):
    def kernel(a, i):
        a[1] = 5.0
        a[i] = 1.0

    a = rng.random(4)
    jf = _jit(kernel)
    return Bad(lambda: jf(a, 10), (a,), ("10",), eager=lambda: kernel(a.copy(), 10),
               then=lambda: jf(a.copy(), 3))


@case(IndexError)
def constant_index_out_of_bounds_read(rng):
    def kernel(a, i):
        a[0] = 2.0
        return a[i]

    a = rng.random(4)
    jf = _jit(kernel)
    return Bad(lambda: jf(a, 10), (a,), ("10",), eager=lambda: kernel(a.copy(), 10),
               then=lambda: jf(a.copy(), -4))


@case(IndexError)
def integer_array_index_out_of_bounds(rng):
    def kernel(a):
        return a[np.array([0, 7])] * 2

    a = rng.random(4)
    return Bad(lambda: _jit(kernel)(a), (a,), ("7",), eager=lambda: kernel(a.copy()))


@case(ValueError)
def assignment_that_does_not_broadcast(rng):
    def kernel(a, b):
        a[:2] = b

    a, b = rng.random(4), rng.random(3)
    jf = _jit(kernel)
    return Bad(lambda: jf(a, b), (a, b), ("broadcast",), eager=lambda: kernel(*_copies(a, b)),
               then=lambda: jf(a, b[:2]))


@case(TypeError)
def mask_assignment_of_a_two_dimensional_value(rng):
    def kernel(a, b):
        a[a > 0.5] = b[None, :]

    a, b = rng.random(3) + 0.6, rng.random(3)
    return Bad(lambda: _jit(kernel)(a, b), (a, b), ("boolean",),
               eager=lambda: kernel(*_copies(a, b)))


@case(ValueError)
def reshape_to_the_wrong_size(rng):
    def kernel(a):
        a *= 3
        return a.reshape(3, 3)

    a = rng.random(4)
    return Bad(lambda: _jit(kernel)(a), (a,), ("reshape",), eager=lambda: kernel(a.copy()))


@case(np.exceptions.AxisError)
def reduction_over_a_missing_axis(rng):
    def kernel(a):
        return a.sum(axis=2)

    a = rng.random((2, 3))
    return Bad(lambda: _jit(kernel)(a), (a,), ("axis 2",), eager=lambda: kernel(a.copy()))


@case(TypeError)
def float_added_in_place_to_an_int_array(rng):
    def kernel(a):
        a += 0.5

    a = rng.integers(0, 9, 4)
    return Bad(lambda: _jit(kernel)(a), (a,), ("add",), eager=lambda: kernel(a.copy()))


@case(ValueError)
def integer_array_to_a_negative_power(rng):
    def kernel(a, b):
        b[:] = 0
        return a ** -1

    a, b = rng.integers(1, 9, 4), rng.integers(1, 9, 4)
    jf = _jit(kernel)
    return Bad(lambda: jf(a, b), (a, b), ("negative integer powers", line_of(kernel, "a ** -1")),
               eager=lambda: kernel(*_copies(a, b)),
               then=lambda: assert_values_equal(jf(a.astype(float), b), 1 / a))


@case(ValueError)
def np_power_of_integers_with_a_negative_exponent(rng):
    def kernel(a):
        a += 1
        a **= 2
        return np.power(a, np.int64(-2))

    a = rng.integers(1, 9, 4)
    return Bad(lambda: _jit(kernel)(a), (a,), ("-2", line_of(kernel, "np.power")),
               eager=lambda: kernel(a.copy()))


@case(ValueError)
def integer_array_updated_to_a_negative_power(rng):
    def kernel(a):
        a **= np.array([1, -1, 2, 3])

    a = rng.integers(1, 9, 4)
    return Bad(lambda: _jit(kernel)(a), (a,), ("-1", line_of(kernel, "a **=")),
               eager=lambda: kernel(a.copy()))


TERA = (2**20, 2**20)
"""A shape of 2**40 elements: 4 or 8 TiB as a dense array, more than any device here has."""


@case(MemoryError)
def broadcast_of_a_tebibyte_returned(rng):
    def kernel(a, whole):
        b = np.broadcast_to(a, TERA) * 2
        return b if whole else b.sum()

    a = rng.random(1)
    jf = _jit(kernel)
    return Bad(lambda: jf(a, True), (a,), ("8.0 TiB", line_of(kernel, "broadcast_to"),
                                           "before compiling", "result"),
               eager=lambda: kernel(a.copy(), True),
               then=lambda: assert_close(jf(a, False), 2.0**41 * a[0], rtol=1e-9))


@case(MemoryError)
def broadcast_of_a_long_vector_to_a_tebibyte(rng):
    def kernel(a):
        a += 1
        return np.broadcast_to(a, TERA) - a

    a = rng.random(2**20)
    return Bad(lambda: _jit(kernel)(a), (a,), ("8.0 TiB", line_of(kernel, "broadcast_to")),
               eager=lambda: kernel(a.copy()))


@case(rl.DeviceMemoryError)
def jax_broadcast_of_a_tebibyte_returned(rng):
    def f(x):
        return jnp.broadcast_to(x, TERA) + 1

    x = jnp.asarray(rng.random(1), jnp.float32)
    return Bad(lambda: _jit(f)(x), (), ("4.0 TiB", line_of(f, "broadcast_to")))


@case(ValueError)
def read_only_argument_updated_in_place(rng):
    def kernel(a):
        a[0] = 1.0

    a = rng.random(3)
    a.flags.writeable = False
    jf = _jit(kernel)
    return Bad(lambda: jf(a), (a,), ("read-only",), eager=lambda: kernel(a),
               then=lambda: jf(a.copy()))


@case(RuntimeError)
def kernel_raises_after_updating_an_argument(rng):
    def kernel(a, fail):
        a[:] = 0.0
        a += 1
        if fail:
            raise RuntimeError("the user's own error")
        return a.sum()

    a = rng.random(5)
    jf = _jit(kernel)

    def good():
        b = a.copy()
        assert jf(b, False) == 5.0 and (b == 1.0).all()

    return Bad(lambda: jf(a, True), (a,), ("the user's own error",),
               eager=lambda: kernel(a.copy(), True), then=good)


@case(TypeError)
def kernel_called_with_too_few_arguments(rng):
    a, b = rng.random(3), rng.random(3)
    jf = _jit(scale_in_place)
    return Bad(lambda: jf(a), (a,), ("b",), eager=lambda: scale_in_place(a.copy()),
               then=lambda: jf(a, b))


@case(rl.ControlFlowError)
def explore_leaves_arrays_alone_when_tracing_fails(rng):
    def kernel(a, b):
        a[...] = b
        while a.max() > 0.5:
            a *= 0.5
            if a.min() < 0.01:
                return  # a return out of a `while` on a traced value

    a, b = rng.random(3), rng.random(3)
    return Bad(lambda: rl.explore(kernel, a, b, optimize="none"), (a, b),
               (line_of(kernel, "while a.max()"),))


@case(rl.TraceError)
def argument_rebound_to_a_jax_result_by_an_in_place_operator(rng):
    def kernel(u):
        u -= 0.1 * jax.grad(lambda v: jnp.sum(v ** 2))(u)

    def descend(u):
        u[...] -= 0.1 * jax.grad(lambda v: jnp.sum(v ** 2))(u)

    u = rng.random(4) + 0.5
    jf = _jit(kernel)

    def good() -> None:
        b = u.copy()
        _jit(descend)(b)
        assert_close(b, 0.8 * u, rtol=1e-12)

    return Bad(lambda: jf(u), (u,), ("args[0] would not be updated in place",
                                     line_of(kernel, "u -= 0.1"), "u[...] -="), then=good)


@case(rl.TraceError)
def argument_updated_by_name_after_jax_fails_on_it(rng):
    def kernel(u):
        step = jax.tree.map(lambda v: v * v.aval.ndim, u)
        u -= step

    u = rng.random(4)
    return Bad(lambda: _jit(kernel)(u), (u,), ("u may be updated at", line_of(kernel, "u -= step"),
                                               line_of(kernel, "v.aval.ndim")))


# ---------------------------------------------------------------------------------- names
# outside the function: rebinding one is refused before the function runs, the name kept

STATE = np.ones(3)
"""A module global the cases below rebind (or try to)."""


def _rebinds_state(a):
    global STATE  # noqa: PLW0603 - the case under test
    STATE = a * 2
    return a


def _sets_state(v):
    global STATE  # noqa: PLW0603 - the case under test
    STATE = v


def _calls_sets_state(a):
    _sets_state(a + 1)
    return a.sum()


def _state_kept(kept: np.ndarray) -> Callable[[], None]:
    """A check that STATE is still the array ``kept`` (not a traced object)."""
    def check() -> None:
        assert STATE is kept and isinstance(STATE, np.ndarray)
    return check


@case(rl.TraceError)
def kernel_rebinds_a_global(rng):
    global STATE  # noqa: PLW0603 - the case sets its global afresh
    STATE = rng.random(3)
    a = rng.random(3)
    return Bad(lambda: _jit(_rebinds_state)(a), (a, STATE),
               ("the global 'STATE'", line_of(_rebinds_state, "STATE = a * 2")),
               then=_state_kept(STATE))


@case(rl.TraceError)
def kernel_rebinds_a_global_in_jax_mode(rng):
    global STATE  # noqa: PLW0603 - the case sets its global afresh
    STATE = rng.random(3)
    x = jnp.asarray(rng.random(3))
    return Bad(lambda: _jit(_rebinds_state)(x), (STATE,),
               ("the global 'STATE'", line_of(_rebinds_state, "STATE = a * 2")),
               then=_state_kept(STATE))


@case(rl.TraceError)
def kernel_calls_a_function_run_as_python_that_rebinds_a_global(rng):
    global STATE  # noqa: PLW0603 - the case sets its global afresh
    STATE = rng.random(3)
    a = rng.random(3)
    return Bad(lambda: _jit(_calls_sets_state, loops="unroll")(a), (a, STATE),
               ("the global 'STATE'",), then=_state_kept(STATE))


@case(rl.TraceError)
def kernel_rebinds_a_nonlocal(rng):
    w = rng.random(3)

    def kernel(a):
        nonlocal w
        w = w + a
        a += w

    a, kept = rng.random(3), w

    def good() -> None:
        assert w is kept

    return Bad(lambda: _jit(kernel)(a), (a, w), (line_of(kernel, "w = w + a"), "nonlocal w"),
               then=good)


# ---------------------------------------------------------------------------------- magics


@functools.cache
def _ipython():
    """IPython's shell with the magics registered (without %load_ext's allocator switch)."""
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    from reactant_lab.notebook.magics import ReactantMagics

    shell = start_ipython() or get_ipython()
    shell.register_magics(ReactantMagics)
    return shell


def _usage_error() -> type[BaseException]:
    from IPython.core.error import UsageError

    return UsageError


@case(_usage_error())
def magic_with_a_misspelt_option_and_a_bad_value(rng):
    shell = _ipython()
    return Bad(lambda: shell.run_cell_magic("reactant_jit", "--granularity pas --optimise none",
                                            "x = 1"), (),
               ("'--optimise' (did you mean '--optimize'?)", "--granularity 'pas'"))


@case(_usage_error())
def bench_magic_with_zero_repeats_and_an_unknown_preset(rng):
    shell = _ipython()
    shell.push({"_catalog_x": rng.random(3)})
    return Bad(lambda: shell.run_line_magic("reactant_bench",
                                            "--presets al --repeats 0 np.sin(_catalog_x)"), (),
               ("--repeats '0'", "(did you mean 'all'?)"))


# ---------------------------------------------------------------------------------- reactant_lab.enzyme

def _x32(rng, *shape):
    return rng.normal(size=shape).astype(np.float32)


@case(rl.EnzymeArgumentError)
def gradient_of_a_tuple_without_has_aux(rng):
    def loss_and_prediction(w):
        return jnp.sum(jnp.tanh(w) ** 2), jnp.tanh(w)

    w = _x32(rng, 4)
    return Bad(lambda: rle.gradient(loss_and_prediction)(w), (w,),
               ("loss_and_prediction", line_of(loss_and_prediction, "def loss"), "tuple",
                "has_aux=True"),
               then=lambda: np.testing.assert_allclose(
                   rle.gradient(loss_and_prediction, has_aux=True)(w)[0],
                   jax.grad(loss_and_prediction, has_aux=True)(w)[0], rtol=1e-5, atol=1e-6),
               jax=lambda: jax.grad(loss_and_prediction)(w))


@case(rl.EnzymeArgumentError)
def gradient_of_a_vector_inside_jit(rng):
    def activations(w):
        return jnp.tanh(w)

    w = _x32(rng, 4)
    return Bad(lambda: rl.jit(rle.gradient(activations))(w), (w,),
               (line_of(activations, "def activations"), "float32[4]", "jnp.sum"),
               jax=lambda: jax.grad(activations)(w))


@case(rl.EnzymeArgumentError)
def gradient_with_respect_to_an_integer_input(rng):
    def weighted(k, w):
        return jnp.sum(k * w)  # an integer output too: the input is to blame, not the output

    k, w = rng.integers(1, 9, 4).astype(np.int32), _x32(rng, 4)
    grad = rle.gradient(weighted, argnums=(0, 1))
    return Bad(lambda: grad(k, w), (k, w), ("args[0]", "int32[4]", "allow_int=True"),
               then=lambda: assert_close(rle.gradient(weighted, argnums=1)(k, w),
                                                       k.astype(np.float32)),
               jax=lambda: jax.grad(weighted, argnums=(0, 1))(k, w))


@case(rl.EnzymeArgumentError)
def gradient_with_respect_to_an_integer_leaf_inside_jit(rng):
    def energy(state):
        return jnp.sum(jnp.sin(state["x"]) * state["n"])

    x, n = _x32(rng, 4), np.int32(3)
    return Bad(lambda: rl.jit(lambda x, n: rle.gradient(energy)({"x": x, "n": n}))(x, n),
               (x,), ("args[0]['n']", "int32[]", "allow_int"),
               jax=lambda: jax.grad(energy)({"x": x, "n": n}))


@case(rl.EnzymeArgumentError)
def gradient_argnums_past_the_arguments(rng):
    w = _x32(rng, 3)
    return Bad(lambda: rle.gradient(jnp.sum, argnums=2)(w), (w,), ("argnums=2", "1 positional"),
               jax=lambda: jax.grad(jnp.sum, argnums=2)(w))


@case(rl.EnzymeArgumentError)
def gradient_of_a_complex_output_without_holomorphic(rng):
    def square_sum(z):
        return jnp.sum(z * z)

    z = (rng.normal(size=3) + 1j * rng.normal(size=3)).astype(np.complex64)
    return Bad(lambda: rle.gradient(square_sum)(z), (z,), ("complex64[]", "holomorphic=True"),
               jax=lambda: jax.grad(square_sum)(z))


@case(rl.EnzymeArgumentError)
def holomorphic_gradient_of_a_real_input(rng):
    x = _x32(rng, 3)
    return Bad(lambda: rle.gradient(jnp.sum, holomorphic=True)(x), (x,),
               ("args[0]", "float32[3]", "complex"),
               jax=lambda: jax.grad(jnp.sum, holomorphic=True)(x))


@case(rl.EnzymeArgumentError)
def vjp_cotangent_of_the_wrong_shape(rng):
    x, ct = _x32(rng, 3), _x32(rng, 4)
    _, pull = rle.vjp(jnp.sin, x)
    return Bad(lambda: pull(ct), (x, ct), ("ct", "float32[4]", "float32[3]"),
               then=lambda: np.testing.assert_allclose(pull(ct[:3])[0], np.cos(x) * ct[:3],
                                                       rtol=1e-5, atol=1e-6),
               jax=lambda: jax.vjp(jnp.sin, x)[1](ct))


@case(rl.EnzymeArgumentError)
def vjp_cotangent_of_the_wrong_dtype(rng):
    x, ct = _x32(rng, 3), rng.integers(1, 5, 3).astype(np.int32)
    _, pull = rle.vjp(jnp.sin, x)
    return Bad(lambda: pull(ct), (x, ct), ("ct", "int32[3]", "float32[3]"),
               then=lambda: np.testing.assert_allclose(pull(ct.astype(np.float32))[0],
                                                       np.cos(x) * ct, rtol=1e-5, atol=1e-6),
               jax=lambda: jax.vjp(jnp.sin, x)[1](ct))


@case(rl.EnzymeArgumentError)
def vjp_cotangent_of_another_structure(rng):
    def pair(x):
        return jnp.sin(x), jnp.cos(x)

    x = _x32(rng, 3)
    _, pull = rle.vjp(pair, x)
    return Bad(lambda: pull(x), (x,), ("cotangent", "tuple"),
               then=lambda: pull((x, x)), jax=lambda: jax.vjp(pair, x)[1](x))


@case(rl.EnzymeArgumentError)
def vjp_cotangent_of_the_wrong_shape_inside_jit(rng):
    def pulled(x, ct):
        return rle.vjp(jnp.tanh, x)[1](ct)

    x, ct = _x32(rng, 2, 3), _x32(rng, 3, 2)
    return Bad(lambda: rl.jit(pulled)(x, ct), (x, ct), ("ct", "float32[3, 2]", "float32[2, 3]"),
               jax=lambda: jax.vjp(jnp.tanh, x)[1](ct))


@case(rl.EnzymeArgumentError)
def jvp_tangent_of_the_wrong_shape(rng):
    x, t = _x32(rng, 3), _x32(rng, 4)
    return Bad(lambda: rle.jvp(jnp.sin, (x,), (t,)), (x, t), ("tangents[0]", "float32[4]",
                                                              "float32[3]"),
               jax=lambda: jax.jvp(jnp.sin, (x,), (t,)))


@case(rl.EnzymeArgumentError)
def jvp_tangent_of_the_wrong_shape_inside_jit(rng):
    # It reached the 'enzyme (AD)' stage, whose pass failed on the mismatched types.
    x, t = _x32(rng, 3), _x32(rng, 4)
    jf = rl.jit(lambda x, t: rle.jvp(jnp.sin, (x,), (t,)))
    return Bad(lambda: jf(x, t), (x, t), ("tangents[0]", "float32[4]", "float32[3]"),
               then=lambda: np.testing.assert_allclose(jf(x, t[:3])[1], np.cos(x) * t[:3],
                                                       rtol=1e-5, atol=1e-6),
               jax=lambda: jax.jvp(jnp.sin, (x,), (t,)))


@case(rl.EnzymeArgumentError)
def jvp_integer_tangent_of_a_float_primal(rng):
    x, t = _x32(rng, 3), rng.integers(1, 5, 3).astype(np.int32)
    return Bad(lambda: rle.jvp(jnp.sin, (x,), (t,)), (x, t), ("tangents[0]", "int32[3]"),
               jax=lambda: jax.jvp(jnp.sin, (x,), (t,)))


@case(rl.EnzymeArgumentError)
def jvp_complex_tangent_of_a_float_primal(rng):
    x = _x32(rng, 3)
    t = x.astype(np.complex64) * 1j
    return Bad(lambda: rle.jvp(jnp.sin, (x,), (t,)), (x, t), ("tangents[0]", "complex64[3]"),
               jax=lambda: jax.jvp(jnp.sin, (x,), (t,)))


@case(rl.EnzymeArgumentError)
def jvp_integer_tangent_of_an_integer_primal(rng):
    def scaled(x, k):
        return x * k

    x, k = _x32(rng, 3), np.int32(2)
    float0 = np.zeros((), jax.dtypes.float0)
    return Bad(lambda: rle.jvp(scaled, (x, k), (x, np.int32(1))), (x,),
               ("tangents[1]", "float0"),
               then=lambda: assert_close(rle.jvp(scaled, (x, k), (x, float0))[1],
                                                       2 * x, rtol=1e-6),
               jax=lambda: jax.jvp(scaled, (x, k), (x, np.int32(1))))


@case(rl.EnzymeArgumentError)
def jvp_given_bare_arrays(rng):
    x, t = _x32(rng, 3), _x32(rng, 3)
    return Bad(lambda: rle.jvp(jnp.sin, x, t), (x, t), ("tuples", "(x,), (t,)", "ndarray"),
               jax=lambda: jax.jvp(jnp.sin, x, t))


@case(rl.EnzymeArgumentError)
def batch_out_axes_out_of_range(rng):
    xs = _x32(rng, 2, 3)
    return Bad(lambda: rle.batch(jnp.sin, out_axes=3)(xs), (xs,), ("out_axes", "result",
                                                                   "[-2, 1]"),
               then=lambda: np.testing.assert_allclose(rle.batch(jnp.sin, out_axes=1)(xs),
                                                       np.sin(xs).T, rtol=1e-5, atol=1e-6),
               jax=lambda: jax.vmap(jnp.sin, out_axes=3)(xs))


@case(rl.EnzymeArgumentError)
def batch_out_axes_none_for_a_batched_result(rng):
    def both(x):
        return jnp.sum(x) * 0 + 1.0, jnp.sin(x)

    xs = _x32(rng, 2, 3)
    return Bad(lambda: rle.batch(both, out_axes=(None, None))(xs), (xs,), ("result[0]",
                                                                            "out_axes"),
               jax=lambda: jax.vmap(both, out_axes=(None, None))(xs))


# The catalog's test (after every case has registered)

@contextlib.contextmanager
def _address_space_capped(headroom: int = 4 << 30) -> Iterator[None]:
    """This process's address space capped ``headroom`` bytes above what it maps now, so that
    NumPy's allocation of a case's huge reference array fails at once with NumPy's MemoryError
    whatever the operating system grants. Where every allocation is granted (Linux's
    vm.overcommit_memory = 1, as on the TPU machine, which may not show /proc/sys), NumPy's
    8 TiB array was granted, and filling it filled the machine."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    mapped = int(Path("/proc/self/statm").read_text().split()[0]) * resource.getpagesize()
    cap = mapped + headroom if hard == resource.RLIM_INFINITY else min(mapped + headroom, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_bad_input(name, rng):
    spec = CATALOG[name]
    bad = spec.build(rng)
    if bad.eager is not None:
        # the rule is NumPy's own error: NumPy must raise it
        with pytest.raises(spec.expect), (_address_space_capped() if issubclass(
                spec.expect, MemoryError) else contextlib.nullcontext()):
            bad.eager()
    before = [frame(a) for a in bad.arrays]
    with pytest.raises(Exception) as info:
        bad.call()
    check_clear(info.value, spec.expect, bad.says)
    if bad.jax is not None:  # at least as strict as JAX, and catchable as JAX's error is
        with pytest.raises(Exception) as theirs:
            bad.jax()
        assert isinstance(info.value, type(theirs.value)), (type(theirs.value), info.value)
    after = [frame(a) for a in bad.arrays]
    for k, (b, a) in enumerate(zip(before, after, strict=True)):
        assert a == b, f"caller array {k} changed: {b[:9]} -> {a[:9]}" + (
            "" if a[-1] == b[-1] else " (and its bytes)")
    if bad.then is not None:
        bad.then()


# ---------------------------------------------------------------------------------- cases that
# accept one of two behaviours: NumPy's answer, or a clear refusal


def _same_as_numpy_or_refused(fn, make_args, path: str) -> None:
    args, eager_args = make_args(), make_args()
    want = fn(*eager_args)
    try:
        got = _jit(fn)(*args)
    except rl.UnsupportedArgumentError as exc:
        check_clear(exc, rl.UnsupportedArgumentError, (path,))
        return
    assert type(got) is type(want) or isinstance(want, np.ndarray) == isinstance(got,
                                                                                  np.ndarray)
    assert_close(np.asarray(got), np.asarray(want), rtol=1e-12)
    for g, w in zip(args, eager_args, strict=True):
        assert g.dtype == w.dtype and g.tobytes() == w.tobytes()


def test_big_endian_array_gives_numpys_answer_or_a_clear_refusal(rng):
    data = rng.random((3, 4))

    def kernel(a):
        a += 1
        return a.sum(axis=0)

    _same_as_numpy_or_refused(kernel, lambda: (data.astype(">f8"),), "args[0]")


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_np_matrix_gives_numpys_answer_or_a_clear_refusal(rng):
    data = rng.random((3, 3))
    # np.matrix's `*` is a matrix product: computing it elementwise would be silently wrong.
    _same_as_numpy_or_refused(lambda m: m * m, lambda: (np.matrix(data),), "args[0]")


def test_run_pipeline_on_bytes_decodes_them_or_refuses_clearly(rng):
    text = rl.trace(add_one, rng.random(3)).as_text()
    try:
        out = rl.run_pipeline(text.encode(), "canonicalize")
    except rl.ReactantLabError as exc:
        check_clear(exc, rl.ReactantLabError, ("bytes",))
        return
    assert out == rl.run_pipeline(text, "canonicalize")


# ---------------------------------------------------------------------------------- subprocesses

_SCRIPT = """
import numpy as np
import reactant_lab as rl
from reactant_lab import enzyme as rle
try:
{body}
except rl.ReactantLabError as exc:
    print("CAUGHT", " ".join(c.__name__ for c in type(exc).__mro__))
else:
    print("RETURNED")
"""

CRASH_PRONE = {
    # MLIR's parser recurses per nesting level and overflows its stack at ~4,000 levels.
    "deeply_nested_module": ('rl.run_pipeline("module {" * 5000 + "}" * 5000, "canonicalize")',
                             "PipelineError"),
    "deeply_nested_regions_of_a_valid_op": (
        'rl.run_pipeline("func.func @f() {" + "scf.execute_region {" * 4500 + "}" * 4500 + '
        '"}", "canonicalize")', "PipelineError"),
    "deeply_nested_attribute": (
        'rl.run_pipeline("module attributes {x = " + "[" * 100000 + "]" * 100000 + "} {}", '
        '"canonicalize")', "PipelineError"),
    "deeply_nested_type": (
        'rl.run_pipeline("module { func.func private @f() -> " + "tuple<" * 20000 + '
        '">" * 20000 + " }", "canonicalize")', "PipelineError"),
    # The pass-pipeline parser recurses too; any clear error will do.
    "pipeline_nested_in_itself": (
        'rl.run_pipeline("module {}", "builtin.module(" * 100000 + "canonicalize" + '
        '")" * 100000)', "ReactantLabError"),
}


def _run(args: list[str], timeout: int = 300, cwd: Path | None = None):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                          cwd=cwd or ROOT, env=child_env())


@pytest.mark.parametrize("name", sorted(CRASH_PRONE))
def test_crash_prone_input_fails_cleanly_in_a_subprocess(name):
    body, expect = CRASH_PRONE[name]
    proc = _run([sys.executable, "-c", _SCRIPT.format(body=textwrap.indent(body, "    "))])
    assert proc.returncode == 0, (f"exit {proc.returncode} (a negative code is a signal)\n"
                                  f"{proc.stderr[-2000:]}")
    assert proc.stdout.strip().splitlines()[-1].startswith("CAUGHT"), proc.stdout
    assert expect in proc.stdout, proc.stdout


USER_FILE = '''
import numpy as np

def double(a):
    return a * 2

def boom(a):
    raise RuntimeError("user boom")

def make():
    return (np.ones(3),)

def make_fails():
    raise ValueError("make boom")

def make_object():
    return (np.array([1, "a"], dtype=object),)
'''

CLI = {
    "missing_file": (["report", "nope.py:double", "--args", "nope.py:make"], "nope.py"),
    "missing_function": (["report", "user.py:triple", "--args", "user.py:make"], "triple"),
    "syntax_error_in_the_file": (["report", "broken.py:f", "--args", "broken.py:g"],
                                 "SyntaxError"),
    "function_raises": (["report", "user.py:boom", "--args", "user.py:make", "-o", "r.html"],
                        "user boom"),
    "args_function_raises": (["report", "user.py:double", "--args", "user.py:make_fails",
                              "-o", "r.html"], "make boom"),
    "object_dtype_args": (["report", "user.py:double", "--args", "user.py:make_object",
                           "-o", "r.html"], "args[0]"),
    "unknown_preset": (["bench", "user.py:double", "--args", "user.py:make", "--presets",
                        "O3"], "O3"),
    "unwritable_output": (["report", "user.py:double", "--args", "user.py:make", "-o",
                           "no/such/dir/r.html"], "no/such/dir"),
    "no_command": ([], "command"),
    "file_without_a_function_name": (["report", "user.py", "--args", "user.py:make"],
                                     "say which one, e.g. user.py:"),
    "function_name_without_a_file": (["report", "double", "--args", "make"],
                                     "write FILE.py:double"),
    "args_file_without_a_function_name": (["report", "user.py:double", "--args", "user.py"],
                                          "boom, make, make_fails, make_object"),
    "zero_repeats": (["bench", "user.py:double", "--args", "user.py:make", "--repeats", "0"],
                     "--repeats: must be 1 or more"),
    "negative_min_time": (["bench", "user.py:double", "--args", "user.py:make", "--min-time",
                           "-1"], "--min-time"),
    "unknown_example": (["demo", "--example", "nope", "--no-report"], "nope"),
}


@pytest.fixture(scope="module")
def cli_runs(tmp_path_factory) -> dict[str, Run]:
    """Every command line of CLI, each in a folder of its own holding user.py and broken.py,
    run in one process (tests/cli_batch.py)."""
    cases = {}
    for name, (argv, _) in CLI.items():
        where = tmp_path_factory.mktemp(name)
        (where / "user.py").write_text(USER_FILE)
        (where / "broken.py").write_text("def f(:\n")
        cases[name] = (argv, where)
    return run_commands(cases)


@pytest.mark.parametrize("name", sorted(CLI))
def test_command_line_errors_are_one_clear_line(name, cli_runs):
    says = CLI[name][1]
    proc = cli_runs[name]
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert re.search(r"(^|\n)(error:|usage:)", proc.stderr), proc.stderr
    assert says in proc.stderr, proc.stderr
