"""Benchmarking: statistics, what is (not) timed, skipped baselines, roofline, outputs."""

from __future__ import annotations

import base64
import importlib
import json
import re
import time

import jax.numpy as jnp
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.bench import BenchResult, Roofline, bench, default_baselines, measure
from reactant_lab.bench.measure import copies
from reactant_lab.bench.result import make_row
from reactant_lab.examples import EXAMPLES, mlp
from reactant_lab.render.bench_chart import result_html
from reactant_lab.timing import format_seconds

ROOF = Roofline("test", peak_flops=1e9, peak_bytes_per_s=2e9, seconds=0.0)


def test_row_statistics_on_known_samples():
    samples = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 100.0]
    row = make_row("x", "preset", samples, compile_s=0.5, flops=4e9, bytes_accessed=2e9,
                   roofline=ROOF, calls_per_sample=1)
    assert row.median_s == 5.0 and row.min_s == 1.0
    assert row.iqr_s == pytest.approx(7.0 - 3.0)
    assert row.noisy
    assert row.gflops_per_s == pytest.approx(4e9 / 5.0 / 1e9)
    assert row.gb_per_s == pytest.approx(2e9 / 5.0 / 1e9)
    # floor = max(4e9 / 1e9, 2e9 / 2e9) = 4 s; median 5 s -> 80% of the roofline
    assert row.roofline_fraction == pytest.approx(0.8)


def test_quiet_samples_are_not_noisy():
    row = make_row("x", "preset", [1.0, 1.01, 0.99, 1.02, 0.98, 1.0], compile_s=None,
                   flops=None, bytes_accessed=None, roofline=ROOF, calls_per_sample=1)
    assert not row.noisy and row.roofline_fraction is None and row.gflops_per_s is None


def test_roofline_arithmetic():
    assert ROOF.floor_s(2e9, 1e9) == pytest.approx(2.0)  # compute bound
    assert ROOF.floor_s(1e6, 8e9) == pytest.approx(4.0)  # memory bound
    assert ROOF.fraction(2e9, 0, 4.0) == pytest.approx(0.5)
    assert ROOF.floor_s(None, None) is None
    assert ROOF.ridge_flops_per_byte == pytest.approx(0.5)


def test_small_inputs_rotate_among_copies_large_ones_do_not():
    small = copies(((np.ones(16, np.float32),), {}), np.array)
    large = copies(((np.ones(4 * 1024 * 1024, np.float32),), {}), np.array)
    assert len(small) > 1 and len(large) == 1
    assert small[0][0][0] is not small[1][0][0]


@pytest.fixture(scope="module")
def mlp_result() -> BenchResult:
    args = EXAMPLES[0].make_args(np.random.default_rng())
    return bench(mlp, *args, min_time=0.05)


def test_bench_mlp_rows(mlp_result):
    assert [r.name for r in mlp_result.rows] == ["none", "all", "jax"]
    assert mlp_result.reference == "jax" and mlp_result.row("jax").ratio == 1.0
    for r in mlp_result.rows:
        assert r.median_s > 0 and r.iqr_s >= 0 and r.min_s <= r.median_s
        assert len(r.samples_s) >= 10
        assert r.ratio == pytest.approx(r.median_s / mlp_result.row("jax").median_s)
        assert r.flops >= 2 * 128 * (64 * 256 + 256 * 256 + 256 * 10)
        assert r.roofline_fraction > 0
        assert r.compile_s > 0
    assert "JAX code" in mlp_result.skipped["numpy"]
    assert "numba" not in default_baselines() or "NumPy code only" in mlp_result.skipped["numba"]
    table = mlp_result.table()
    for word in ("none", "all", "jax", "skipped numpy", "roofline"):
        assert word in table


def test_bench_outputs(mlp_result):
    data = json.loads(mlp_result.to_json())
    assert [r["name"] for r in data["rows"]] == ["none", "all", "jax"]
    assert data["roofline"]["peak_flops"] > 0 and "numpy" in data["skipped"]
    csv_text = mlp_result.to_csv().splitlines()
    assert csv_text[0].startswith("name,kind,median_s") and len(csv_text) == 4
    page = result_html(mlp_result)
    assert "<svg" not in page
    uri = re.search(r'src="data:image/svg\+xml;base64,([^"]+)"', page)
    svg = base64.b64decode(uri.group(1)).decode()
    assert svg.startswith("<svg") and svg.count("<circle") == sum(
        len(r.samples_s) for r in mlp_result.rows)


def test_warmup_and_compile_are_not_timed(rng):
    traces = []

    def slow_first_trace(x):
        if not traces:
            time.sleep(0.3)  # Python runs only while tracing: on the first trace only
        traces.append(1)
        return jnp.sin(x) * 2

    result = bench(slow_first_trace, rng.standard_normal(64).astype(np.float32),
                   min_time=0.02, roofline=False)
    assert traces  # it did trace
    for r in result.rows:
        assert r.median_s < 0.05 and max(r.samples_s) < 0.3


def test_repeats_fix_the_number_of_samples(rng):
    result = bench(lambda x: x + 1, rng.standard_normal(8).astype(np.float32),
                   presets=("all",), baselines=("jax",), repeats=7, roofline=False)
    assert [len(r.samples_s) for r in result.rows] == [7, 7]
    assert all(r.calls_per_sample >= 1 for r in result.rows)


class _Clock:
    """A clock that each call of the variant moves on by its next duration."""

    def __init__(self, durations):
        self.now, self.durations = 0.0, list(durations)

    def perf_counter(self):
        return self.now

    def call(self):
        self.now += self.durations.pop(0)


@pytest.mark.parametrize("durations, calls", [
    ([1e-5] * 5, 100),  # microsecond calls: batched to fill a millisecond
    ([0.3] + [1e-5] * 4, 100),  # a slow first warm-up call (a compile) does not count
    ([1e-5, 1e-5, 5e-3, 1e-5, 1e-5], 100),  # the median warm-up call decides, not one outlier
    ([2e-3] * 5, 1),  # calls of milliseconds: one to a sample
    ([3e-4] * 5, 1),  # a quarter millisecond or more: one to a sample
    ([2e-4] * 5, 5),
])
def test_calls_per_sample_follow_the_typical_warm_up_call(monkeypatch, durations, calls):
    # the rule, on a fake clock: timing the machine itself made this flaky on a loaded CI host
    clock = _Clock(durations)
    monkeypatch.setattr(measure, "time", clock)
    variant = measure.Variant("v", clock.call, pool=[((), {})])
    expected_sample_s = measure.warm_up(variant, warmup=5)
    assert variant.calls_per_sample == calls and not clock.durations
    typical = sorted(durations[1:])[len(durations[1:]) // 2]
    assert expected_sample_s == pytest.approx(typical * calls)


def test_bad_names_are_rejected(rng):
    x = rng.standard_normal(4).astype(np.float32)
    with pytest.raises(rl.ReactantLabError, match=r"unknown optimize preset 'fastest'"):
        bench(lambda v: v, x, presets=("fastest",))
    with pytest.raises(rl.ReactantLabError, match="unknown baseline"):
        bench(lambda v: v, x, baselines=("torch",))


def test_hostile_function_name_is_escaped(rng):
    def f(x):
        return x * 2

    f.__name__ = "<script>alert(1)</script>"
    result = bench(f, rng.standard_normal(4).astype(np.float32), presets=("none",),
                   baselines=(), repeats=3, roofline=False)
    page = result_html(result)
    svg = base64.b64decode(re.search(r"base64,([^\"]+)", page).group(1)).decode()
    assert "<script>" not in page and "<script>" not in svg


def test_mutating_calls_get_fresh_inputs_and_copies_are_not_timed():
    from reactant_lab.bench.measure import Variant, copy_inputs, take_sample

    pristine = ((np.arange(6, dtype=np.float64),), {})
    seen = []

    def kernel(a):
        seen.append(a.copy())
        a += 1  # updates its argument

    variant = Variant("k", kernel, [pristine],
                      fresh=lambda: copy_inputs(pristine, np.array), calls_per_sample=4)
    for _ in range(3):
        take_sample(variant)
    assert len(seen) == 12
    for a in seen:
        np.testing.assert_array_equal(a, pristine[0][0])  # every call saw the original values
    np.testing.assert_array_equal(pristine[0][0], np.arange(6))


def smooth(u, steps):
    for _ in range(steps):
        u[1:-1] = 0.5 * (u[:-2] + u[2:])
    return u.sum()


def test_numpy_kernel_benchmarks_against_numpy_and_skips_jax(rng):
    u = rng.random(2000)
    before = u.copy()
    result = bench(smooth, u, 8, min_time=0.02, roofline=False)
    assert result.mode == "numpy"
    numba = ["numba"] if "numba" in default_baselines() else []  # where it is installed
    assert [r.name for r in result.rows] == ["none", "all", "numpy", *numba]
    assert result.reference == "numpy" and result.row("numpy").ratio == 1.0
    assert "jax.jit cannot trace" in result.skipped["jax"]
    assert "immutable" in result.skipped["jax"] or "in-place" in result.skipped["jax"]
    np.testing.assert_array_equal(u, before)  # the caller's array is never the one timed
    assert result.row("numpy").flops == result.row("none").flops  # same work, NumPy's time
    for name in numba:
        assert result.row(name).flops == result.row("none").flops and result.row(name).compile_s


def test_plot_returns_a_matplotlib_figure(mlp_result):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    fig = mlp_result.plot()
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["none", "all", "jax"]
    assert ax.get_xscale() == "log"


def test_progress_bar_over_long_runs(rng, capsys):
    result = bench(lambda x: x * 2, rng.standard_normal(8).astype(np.float32),
                   presets=("none",), baselines=(), repeats=5, roofline=False, progress=True)
    assert len(result.rows[0].samples_s) == 5
    assert "bench" in capsys.readouterr().err  # tqdm draws on stderr


def _result(rows, skipped=None, reference="numpy"):
    return BenchResult("f", "numpy", "cpu", tuple(rows), skipped or {}, reference, ROOF)


def _row(name, kind, samples, flops=None):
    return make_row(name, kind, samples, compile_s=None, flops=flops, bytes_accessed=None,
                    roofline=ROOF, calls_per_sample=1)


def test_ratios_read_as_faster_or_slower_than_the_named_baseline():
    from dataclasses import replace

    from reactant_lab.bench.result import versus

    assert versus(0.5, "all", "numpy") == "2× faster than numpy"
    assert versus(0.563, "all", "numpy") == "1.78× faster than numpy"
    assert versus(2.5, "none", "numpy") == "2.5× slower than numpy"
    assert versus(25.4, "none", "jax") == "25× slower than jax"
    assert versus(1.004, "all", "jax") == "same as jax"
    assert versus(1.0, "numpy", "numpy") == "baseline"
    assert versus(None, "all", None) == "-"
    quiet = [1.0, 1.01, 0.99, 1.0]
    rows = [replace(_row("all", "preset", quiet), ratio=0.563),
            replace(_row("numpy", "baseline", [2.0, 2.0, 2.01, 1.99]), ratio=1.0)]
    result = _result(rows)
    text = result.table()
    assert "vs numpy" in text and "1.78× faster than numpy" in text and "baseline" in text
    assert "ratio" not in text and "noisy" not in text
    assert "1.78× faster than numpy" in result_html(result)


def test_roofline_is_explained_and_a_share_over_100_percent_says_why():
    # 4 GFLOP at 1 GFLOP/s is a 4 s floor; a 2 s median is 200% of it.
    result = _result([_row("all", "preset", [2.0, 2.0, 2.0], flops=4e9)], reference=None)
    text = result.table()
    assert "200.0% *" in text
    assert "roofline: the least time this work can take" in text and "1 GFLOP/s" in text
    assert "over 100%" in text and "estimate is low" in text and "cache" in text
    page = result_html(result)
    assert "over 100%" in page and "estimate is low" in page
    fine = _result([_row("all", "preset", [8.0, 8.0, 8.0], flops=4e9)], reference=None).table()
    assert "50.0%" in fine and "over 100%" not in fine


def test_noise_is_flagged_past_ten_percent_only_and_skipped_reasons_stay_whole():
    why = ("jax.jit cannot trace the function: TracerBoolConversionError: Attempted boolean "
           "conversion of traced array with shape bool[]. The error occurred while tracing the "
           "function f at a file, line 3, for jit. This concrete value was not available.")
    nine = _row("all", "preset", [0.955, 1.0, 1.0, 1.0, 1.045])  # IQR/median under 10%
    twenty = _row("none", "preset", [0.8, 0.9, 1.0, 1.1, 1.2])  # 20%
    assert not nine.noisy and twenty.noisy
    result = _result([nine, twenty], skipped={"jax": why}, reference=None)
    text = result.table()
    assert text.count("noisy") == 2  # the flag on one row, and the note saying what it means
    assert "over 10% of the median" in text
    assert f"skipped jax: {why}" in text
    page = result_html(result)
    assert "(noisy)" in page and page.count("(noisy)") == 1
    assert html_escape(why) in page


def html_escape(text: str) -> str:
    import html

    return html.escape(text)


def test_the_openblas_spin_caveat_names_the_setting_only_where_it_applies(rng, monkeypatch):
    """OpenBLAS's threads spin ~0.1 s after each of NumPy's calls and slow the compiled sample
    taken next: a run that timed compiled code beside NumPy calls long enough for BLAS threads,
    on OpenBLAS, with no OPENBLAS_THREAD_TIMEOUT, says so and names the setting; others do not."""
    from reactant_lab.bench import result as bench_result
    from reactant_lab.bench.result import blas_spin_caveat

    says = blas_spin_caveat("scipy-openblas", {}, 5e-3, True)
    assert says is not None and "OPENBLAS_THREAD_TIMEOUT=4" in says
    for blas, env, median, compiled in [("scipy-openblas", {"OPENBLAS_THREAD_TIMEOUT": "4"}, 5e-3,
                                         True),
                                        ("scipy-openblas", {"GOTO_THREAD_TIMEOUT": "4"}, 5e-3, True),
                                        ("accelerate", {}, 5e-3, True), (None, {}, 5e-3, True),
                                        ("scipy-openblas", {}, 1e-5, True),
                                        ("scipy-openblas", {}, None, True),
                                        ("scipy-openblas", {}, 5e-3, False)]:
        assert blas_spin_caveat(blas, env, median, compiled) is None, (blas, env, median)

    u = rng.random(2000)
    monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT", raising=False)
    monkeypatch.delenv("GOTO_THREAD_TIMEOUT", raising=False)
    monkeypatch.setattr(bench_result, "BLAS_SPIN_MIN_S", 0.0)  # any NumPy time counts here
    monkeypatch.setattr(importlib.import_module("reactant_lab.bench"), "_numpy_blas",
                        lambda: "scipy-openblas")
    result = bench(smooth, u, 8, baselines=("numpy",), repeats=3, roofline=False)
    assert result.caveats and result.caveats[0] in result.table()
    assert "set OPENBLAS_THREAD_TIMEOUT=4 in the environment" in result_html(result)
    assert result.to_dict()["caveats"] == list(result.caveats)  # the explorer's bench panel
    monkeypatch.setenv("OPENBLAS_THREAD_TIMEOUT", "4")
    assert bench(smooth, u, 8, baselines=("numpy",), repeats=3, roofline=False).caveats == ()


def relax(u, v):
    """Updates ``v`` in place (its edges kept, so it is read too) and returns a float32 scalar."""
    v[1:-1] = 0.5 * (u[:-2] + u[2:])
    return (u * 2).sum()


def test_numpy_kernel_runs_on_device_and_its_copies_are_measured_apart(rng):
    u = rng.standard_normal(3000).astype(np.float32)
    v = rng.standard_normal(3000).astype(np.float32)
    before = v.copy()
    result = bench(relax, u, v, presets=("all",), baselines=("numpy",), repeats=3, warmup=1,
                   roofline=False, progress=False)
    np.testing.assert_array_equal(v, before)  # the caller's arrays are not the ones timed
    ours, numpy = result.row("all"), result.row("numpy")
    assert ours.h2d_bytes == u.nbytes + v.nbytes  # both arrays go to the device
    assert ours.d2h_bytes == v.nbytes + np.dtype(np.float32).itemsize  # updated v, the scalar
    for seconds in (ours.h2d_s, ours.d2h_s):
        assert seconds > 0 and np.isfinite(seconds)
    assert ours.with_transfers_s == pytest.approx(ours.median_s + ours.h2d_s + ours.d2h_s)
    assert numpy.h2d_bytes is None and numpy.with_transfers_s is None  # NumPy runs on the host
    text = result.table()
    cell = f"23.4 KiB, {format_seconds(ours.h2d_s, micro='us')}"
    assert "to device" in text and "from device" in text and cell in text
    assert "the copies a call of NumPy arrays makes" in text
    page = result_html(result)
    assert "to device" in page and f"23.4 KiB, {format_seconds(ours.h2d_s)}" in page
    row = json.loads(result.to_json())["rows"][0]
    assert (row["h2d_bytes"], row["d2h_bytes"]) == (ours.h2d_bytes, ours.d2h_bytes)
    assert "h2d_bytes" in result.to_csv().splitlines()[0]


def test_jax_jit_of_numpy_code_makes_the_same_copies(rng):
    a = rng.standard_normal((40, 30))
    b = rng.standard_normal((40, 30))
    result = bench(lambda x, y: x * y + 1.0, a, b, presets=("none",), baselines=("jax",),
                   repeats=3, warmup=1, roofline=False, progress=False)
    assert result.mode == "numpy"
    for row in result.rows:
        assert row.h2d_bytes == a.nbytes + b.nbytes and row.d2h_bytes == a.nbytes
        assert row.h2d_s > 0 and row.d2h_s > 0


def test_jax_code_has_its_inputs_on_the_device_and_no_copies(mlp_result):
    assert all(r.h2d_bytes is None and r.d2h_s is None for r in mlp_result.rows)
    assert "to device" not in mlp_result.table() and "to device" not in result_html(mlp_result)


def test_peaks_are_measured_once_per_device_and_shown(mlp_result):
    roof = mlp_result.roofline
    assert roof.measured == ("peak_flops", "peak_flops_bf16", "peak_bytes_per_s")
    for peak in (roof.peak_flops, roof.peak_flops_bf16, roof.peak_bytes_per_s):
        assert peak > 0 and np.isfinite(peak)
    assert rl.calibrate() == roof  # cached: the same measurement, not a new one
    text = mlp_result.table()
    for what in ("float32 matmul (measured)", "bfloat16 matmul (measured)", "copy (measured)",
                 "float32 work"):
        assert what in text and what in result_html(mlp_result)
    assert json.loads(mlp_result.to_json())["roofline"]["measured"] == list(roof.measured)


def test_peaks_can_be_given_and_bfloat16_work_is_held_to_its_own_peak(rng):
    given = rl.calibrate(peak_flops=1e9, peak_flops_bf16=4e9, peak_bytes_per_s=1e12)
    assert given.measured == () and given.seconds == 0.0
    assert "1 GFLOP/s float32 matmul (given)" in given.describe()
    mixed = rl.calibrate(peak_flops=2e12)
    assert mixed.peak_flops == 2e12 and "peak_flops" not in mixed.measured
    assert "2 TFLOP/s float32 matmul (given)" in mixed.describe()
    row = make_row("x", "preset", [1.0], compile_s=None, flops=4e9, bytes_accessed=0.0,
                   roofline=given, calls_per_sample=1, dtype="bfloat16")
    assert row.roofline_fraction == pytest.approx(1.0)  # 4 GFLOP at 4 GFLOP/s in 1 s
    w = jnp.asarray(rng.standard_normal((16, 16)), jnp.bfloat16)
    result = bench(lambda a: a @ a, w, presets=("none",), baselines=(), repeats=3, warmup=1,
                   roofline=given, progress=False)
    assert result.roofline is given and result.compute_dtype == "bfloat16"
    assert "bfloat16 work, so 4 GFLOP/s" in result.table()
    for bad in (0, -1.0, float("nan"), "fast", True):
        with pytest.raises(rl.ReactantLabError, match="peak_bytes_per_s must be a positive"):
            rl.calibrate(peak_bytes_per_s=bad)
    with pytest.raises(rl.ArgumentTypeError, match="roofline"):
        bench(lambda a: a, w, roofline="yes")


def jax_smooth(u, steps):
    for _ in range(steps):
        u = u.at[1:-1].set(0.5 * (u[:-2] + u[2:]))
    return u.sum()


def test_jax_fn_gives_jax_jit_a_jax_version_of_numpy_code(rng):
    u = rng.random(500)
    result = bench(smooth, u, 4, presets=("none",), baselines=("jax",), jax_fn=jax_smooth,
                   repeats=3, warmup=1, roofline=False, progress=False)
    assert [r.name for r in result.rows] == ["none", "jax"] and not result.skipped
    theirs = result.row("jax")
    assert theirs.h2d_bytes == u.nbytes and theirs.d2h_bytes == 8  # a float64 sum comes back
    skipped = bench(smooth, u, 4, presets=(), baselines=("jax",), repeats=3, warmup=1,
                    roofline=False, progress=False).skipped["jax"]
    assert "jax.jit cannot trace" in skipped and "jax_fn=" in skipped
