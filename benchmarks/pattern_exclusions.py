"""The enzyme-hlo pattern exclusion table, measured: preset 'all' as reactant_lab runs it by default
(Reactant's pattern list less the patterns the table leaves out on this target) beside 'all' with
exact=True (Reactant's list untouched), preset 'none', jax.jit and NumPy eager, on the NumPy
kernels of benchmarks/numpy_kernels.py, as ratios measured side by side in one run.

Then each entry of the table (reactant_lab/stages/pattern_exclusions.json) is re-measured from its
evidence: a 'wrong' entry must still give the wrong value with the pattern, a 'slow' entry must
still be more than 2x slower with it. An entry that no longer holds is printed as STALE: drop it
when enzyme-ad fixes the pattern. So is each addition (reactant_lab/stages/pattern_additions.json):
the default list must still be faster than its faster_than with it than without it.

    .venv/bin/python benchmarks/pattern_exclusions.py [--min-time S] [--only NAME ...]
                                                       [--no-kernels] [--no-recheck] [--bisect]

--bisect runs rl.bisect(metric="runtime", exact=True) on every kernel where 'all' with exact=True
is more than 2x slower than the default, to find the pattern behind it (a candidate entry).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax
import jax.numpy as jnp
from jax import lax
from numpy_kernels import CASES, _fresh, _jax_variant

import reactant_lab as rl
from reactant_lab import backend, timing
from reactant_lab import enzyme as rle
from reactant_lab.bench.measure import Variant, plan_rounds, round_robin, warm_up
from reactant_lab.stages import patterns

VARIANTS = ("none", "all", "all+exact")


def _jit(kernel: Any, variant: str, args: tuple) -> tuple[Any, float]:
    preset, _, exact = variant.partition("+")
    jf = rl.jit(kernel, optimize=preset, exact=bool(exact))
    start = time.perf_counter()
    jf(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    return jf, time.perf_counter() - start


def measure_kernel(name: str, min_time: float) -> dict[str, Any]:
    case = CASES[name]
    args = case.make(np.random.default_rng())
    variants = [Variant("numpy", case.kernel, [], _fresh((args, {}), np.array))]
    first_call = {}
    for v in VARIANTS:
        jf, first_call[v] = _jit(case.kernel, v, args)
        variants.append(Variant(v, jf, [], _fresh((args, {}), np.array)))
    if case.jax_fn is not None:
        variants.append(_jax_variant(case, args))
    per_sample = [warm_up(v, 3) for v in variants]
    samples = round_robin(variants, plan_rounds(per_sample, min_time, None))
    medians = {v.name: timing.median(s) for v, s in zip(variants, samples, strict=True)}
    return {"medians": medians, "first_call": first_call}


def kernels_table(names: list[str], min_time: float) -> list[str]:
    """Print run-time ratios to NumPy eager (and first-call seconds); return the kernels where
    'all+exact' is more than 2x slower than 'all'."""
    print(f"{'kernel':<15} {'numpy us':>9} | ratio to NumPy eager (lower is faster): "
          f"{'none':>6} {'all':>6} {'all+exact':>9} {'jax.jit':>7} | {'exact/all':>9} | "
          "first call s (trace+passes+XLA): none / all / all+exact")
    slow = []
    logs: dict[str, list[float]] = {v: [] for v in ("none", "all", "all+exact", "jax.jit")}
    for name in names:
        m = measure_kernel(name, min_time)
        t, fc = m["medians"], m["first_call"]
        ratio = {k: t[k] / t["numpy"] for k in t}
        for k, log in logs.items():
            if k in ratio:
                log.append(math.log(ratio[k]))
        exact_vs_all = t["all+exact"] / t["all"]
        if exact_vs_all > 2:
            slow.append(name)
        jx = f"{ratio['jax.jit']:.2f}" if "jax.jit" in ratio else "-"
        print(f"{name:<15} {t['numpy'] * 1e6:>9.0f} | {'':>40}{ratio['none']:>6.2f} "
              f"{ratio['all']:>6.2f} {ratio['all+exact']:>9.2f} {jx:>7} | "
              f"{exact_vs_all:>8.2f}x | {fc['none']:.2f} / {fc['all']:.2f} / "
              f"{fc['all+exact']:.2f}", flush=True)
    geo = {k: math.exp(sum(v) / len(v)) for k, v in logs.items() if v}
    print("geometric mean of the ratios to NumPy eager: " + ", ".join(
        f"{k} {g:.2f}" + (f" ({len(logs[k])} kernels)" if k == "jax.jit" else "")
        for k, g in geo.items()))
    return slow


# -- re-measuring the table's entries -----------------------------------------------------------

def _evidence_fn(entry: dict[str, Any]) -> tuple[Any, tuple]:
    """The function and inputs an entry's evidence names (a lambda over lax/jnp/np, a kernel
    of benchmarks/numpy_kernels.py by name, or a case of benchmarks/enzyme_grad.py (its
    gradient) or benchmarks/numpy_speed.py)."""
    ev = entry["evidence"]
    if "benchmark" in ev:  # 'enzyme_grad:stencil_2d': the gradient of a case of that benchmark
        module, case_name = ev["benchmark"].split(":")
        bench = importlib.import_module(module)
        case = bench.CASES[case_name]
        if module == "numpy_speed":  # 'numpy_speed:durbin': the NumPy kernel at its size there
            return bench.KERNELS[case_name].fn, case.make(np.random.default_rng(0))
        args = tuple(jnp.asarray(a) for a in case.make(np.random.default_rng(0)))
        return rle.gradient(case.loss), args
    if "kernel" in ev:
        case = CASES[ev["kernel"]]
        return case.kernel, case.make(np.random.default_rng(0))
    scope = {"lax": lax, "jnp": jnp, "np": np, "jax": jax}
    source = ev["function"]
    if source.startswith("def "):  # a whole (one-line) function: define it, take it
        exec(source, scope)  # the table is the project's own data
        fn = scope[source[4:source.index("(")]]
    else:
        fn = eval(source, scope)
    names, _, expr = ev["input"].partition("=")
    value = eval(expr, scope)
    return fn, (tuple(value) if "," in names else (value,))


def _copies(args: tuple) -> list[Any]:
    """Fresh copies of the NumPy arrays among ``args`` (kernels update theirs in place)."""
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _still_fails(entry: dict[str, Any], fn: Any, args: tuple, error: type) -> bool:
    """Whether Reactant's exact list still fails with ``error`` on the evidence; the call is
    also run without the entry, which must compile and run."""
    try:
        rl.jit(fn, exact=True)(*_copies(args))
        holds = False
    except error:
        holds = True
    rl.jit(fn, exact=True, exclude_patterns=entry["pattern"])(*_copies(args))
    return holds


@contextlib.contextmanager
def _pass_time_limit(seconds: float):
    old = os.environ.get(backend.PASS_TIME_LIMIT_VAR)
    os.environ[backend.PASS_TIME_LIMIT_VAR] = str(seconds)
    try:
        yield
    finally:
        if old is None:
            del os.environ[backend.PASS_TIME_LIMIT_VAR]
        else:
            os.environ[backend.PASS_TIME_LIMIT_VAR] = old


def recheck(min_time: float) -> int:
    stale = 0
    groups_done: set[Any] = set()
    target = rl.backend.platform(rl.backend.resolve_device(None))
    for entry in patterns.exclusions():
        if "*" not in entry["targets"] and target not in entry["targets"]:
            print(f"{entry['pattern']}: not for target {target}, not re-measured")
            continue
        fn, args = _evidence_fn(entry)
        if entry["kind"] == "crash":
            holds = _still_fails(entry, fn, args, rl.PassCrashedError)
            print(f"{entry['pattern']} (crash): with it "
                  f"{'the pattern pass crashes' if holds else 'STALE: no crash'}; without it the "
                  "call compiles and runs")
        elif entry["kind"] == "hang":
            with _pass_time_limit(10):
                holds = _still_fails(entry, fn, args, rl.PassTimeoutError)
            print(f"{entry['pattern']} (hang): with it "
                  f"{'the pattern pass runs past 10 s' if holds else 'STALE: it finishes'}; "
                  "without it the call compiles and runs")
        elif entry["kind"] == "wrong":
            with_p = np.asarray(rl.jit(fn, exact=True)(*_copies(args)))
            without = np.asarray(rl.jit(fn, exact=True, exclude_patterns=entry["pattern"])(
                *_copies(args)))
            holds = not np.allclose(with_p, without)
            print(f"{entry['pattern']} (wrong): with it {with_p.tolist()}, without "
                  f"{without.tolist()}: {'still wrong' if holds else 'STALE: now right'}")
        else:  # the default list with this entry (and its group) put back, against the default
            if entry.get("group") and entry["group"] in groups_done:
                continue
            group = {e["pattern"] for e in patterns.exclusions()
                     if entry.get("group") and e.get("group") == entry["group"]} or {
                entry["pattern"]}
            if entry.get("group"):
                groups_done.add(entry["group"])
            bar = float(entry.get("slower_than", 2.0))
            listed = patterns.pattern_list(no_nan=False, target=target)
            back = [p for p in patterns.reactant_patterns(no_nan=False) if p not in
                    listed.missing and (p not in listed.excluded or p in group)] + list(
                listed.added)
            w, wo = _side_by_side(fn, args, {"patterns": back}, {}, min_time)
            holds = w > bar * wo
            print(f"{' + '.join(sorted(group))} (slow on {', '.join(entry['targets'])}): with "
                  f"{'them' if len(group) > 1 else 'it'} {w * 1e3:.2f} ms, without "
                  f"{wo * 1e3:.2f} ms ({w / wo:.2f}x): "
                  f"{'still slow' if holds else f'STALE: no longer {bar:g}x slower'}")
        stale += not holds
    for entry in patterns.additions():  # the default list against it without the addition
        if "*" not in entry["targets"] and target not in entry["targets"]:
            print(f"{entry['pattern']} (added): not for target {target}, not re-measured")
            continue
        fn, args = _evidence_fn(entry)
        w, wo = _side_by_side(fn, args, {}, {"exclude_patterns": entry["pattern"]}, min_time)
        bar = float(entry["faster_than"])
        holds = wo > bar * w
        print(f"{entry['pattern']} (added on {', '.join(entry['targets'])}): with it "
              f"{w * 1e3:.2f} ms, without {wo * 1e3:.2f} ms ({wo / w:.2f}x): "
              f"{'still faster' if holds else f'STALE: no longer {bar:g}x faster'}")
        stale += not holds
    return stale


def _side_by_side(fn: Any, args: tuple, with_kw: dict[str, Any], without_kw: dict[str, Any],
                  min_time: float) -> tuple[float, float]:
    """Median seconds of rl.jit(fn, **with_kw) and rl.jit(fn, **without_kw), sampled in turn."""
    vs = [Variant(n, rl.jit(fn, **kw), [], _fresh((tuple(args), {}), np.array))
          for n, kw in (("with", with_kw), ("without", without_kw))]
    for v in vs:
        v.call(*v.inputs(0)[0])
    per = [warm_up(v, 3) for v in vs]
    samples = round_robin(vs, plan_rounds(per, min_time, None))
    w, wo = (timing.median(s) for s in samples)
    return w, wo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-time", type=float, default=0.3)
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--no-kernels", action="store_true")
    parser.add_argument("--no-recheck", action="store_true")
    parser.add_argument("--bisect", action="store_true")
    opts = parser.parse_args()
    versions = ", ".join(f"{k} {v}" for k, v in rl.versions().items())
    print(f"pattern exclusions ({versions}; device {jax.devices()[0]}); table: "
          f"{len(patterns.exclusions())} entries: "
          + ", ".join(e["pattern"] for e in patterns.exclusions()))
    slow: list[str] = []
    if not opts.no_kernels:
        names = [n for n in CASES if not opts.only or n in opts.only]
        slow = kernels_table(names, opts.min_time)
        print(f"kernels where exact=True is more than 2x slower than the default: "
              f"{', '.join(slow) or 'none'}")
    if opts.bisect:
        for name in slow:
            case = CASES[name]
            args = case.make(np.random.default_rng(0))
            result = rl.bisect(case.kernel, *args, metric="runtime", exact=True)
            print(f"bisect {name}: {result.summary()}")
    if not opts.no_recheck:
        stale = recheck(opts.min_time)
        print(json.dumps({"stale_entries": stale}))


if __name__ == "__main__":
    main()
