"""The directory ``bisect`` leaves: the module before the culprit and after it, the culprit's
pipeline, the inputs, the figures, and ``rerun.py``, which calls ``rerun`` here."""

from __future__ import annotations

import json
import os
import pathlib
import time
from dataclasses import asdict
from typing import Any

import jax
import numpy as np

from reactant_lab import backend, device_support, timing
from reactant_lab.bisect.result import BisectResult
from reactant_lab.stages.reproducer import fresh_directory, prune
from reactant_lab.stages.runner import run_pipeline
from reactant_lab.trace import Traced, flatten_for
from reactant_lab.verify import Outcome, compare

_RERUN = '''"""Rerun what reactant_lab.bisect found: python rerun.py"""

import pathlib

from reactant_lab.bisect import rerun

rerun(pathlib.Path(__file__).resolve().parent)
'''


def write_reproducer(where: bool | str | os.PathLike[str], traced: Traced,
                      args: tuple[Any, ...], kwargs: dict[str, Any], result: BisectResult,
                      pipeline: str) -> pathlib.Path | None:
    """Write before.mlir, after.mlir, pipeline.txt, inputs.npz, result.json and rerun.py; a
    fresh directory (``where=True``, None when it cannot be written) or ``where``."""
    if where is True:
        try:
            directory = pathlib.Path(fresh_directory("bisect_"))
            _write_files(directory, traced, args, kwargs, result, pipeline)
        except OSError:
            return None
        prune(str(directory.parent), keep=str(directory))
        return directory
    directory = pathlib.Path(os.fspath(where))  # type: ignore[arg-type]  # True was handled
    directory.mkdir(parents=True, exist_ok=True)
    _write_files(directory, traced, args, kwargs, result, pipeline)
    return directory


def _write_files(directory: pathlib.Path, traced: Traced, args: tuple[Any, ...],
                 kwargs: dict[str, Any], result: BisectResult, pipeline: str) -> None:
    assert traced.fn is not None and result.before_ir is not None and result.after_ir is not None
    with backend.x64_scope(traced.layout.x64):
        flat = flatten_for(traced.fn, args, kwargs, trace_scalars=traced.layout.trace_scalars)
    np.savez(directory / "inputs.npz", *[np.asarray(v, dtype=aval[1]) for v, aval in zip(
        flat.linear_values, traced.layout.avals, strict=True)])
    results = sorted((r for r in traced.linear_results if r.index is not None),
                     key=lambda r: r.index or 0)
    unique = list({r.index: r for r in results}.values())
    info = {"function": result.fn_name, "metric": result.metric, "threshold": result.threshold,
            "reference": result.reference, "stage": result.stage, "pass": result.pass_name,
            "pass_index": result.pass_index, "patterns": list(result.patterns),
            "x64": traced.layout.x64,
            "avals": [[list(s), np.dtype(d).name, w] for s, d, w in traced.layout.avals],
            "out_avals": [[list(r.shape), np.dtype(r.dtype).name] for r in unique],
            "outputs": [r.path for r in unique],
            "good": asdict(result.good) if result.good else None,
            "bad": asdict(result.bad) if result.bad else None,
            "why": result.why, "log": list(result.log)}
    files = {"before.mlir": result.before_ir, "after.mlir": result.after_ir,
             "pipeline.txt": pipeline + "\n", "rerun.py": _RERUN,
             "result.json": json.dumps(info, indent=1) + "\n"}
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")


def rerun(directory: str | os.PathLike[str]) -> None:
    """Rerun a bisect reproducer: the culprit pipeline on before.mlir, then both modules compiled
    and run on inputs.npz; print the two timings (runtime, compile_time), or the two results and
    their difference (result)."""
    here = pathlib.Path(directory)
    info = json.loads((here / "result.json").read_text(encoding="utf-8"))
    before = (here / "before.mlir").read_text(encoding="utf-8")
    pipeline = (here / "pipeline.txt").read_text(encoding="utf-8").strip()
    after = run_pipeline(before, pipeline)
    with np.load(here / "inputs.npz") as npz:
        inputs = [npz[f"arr_{i}"] for i in range(len(npz.files))]
    metric = info["metric"]
    print(f"{info['function']}: metric={metric}, pass {info['pass_index']} {info['pass']!r}: "
          f"{pipeline if len(pipeline) < 300 else pipeline[:300] + '...'}")
    (c0, r0, v0), (c1, r1, v1) = (_run_module(text, info, inputs, timed=metric == "runtime")
                                  for text in (before, after))
    if metric == "result":
        names = tuple(info["outputs"])
        diff = compare(Outcome(names, tuple(v1)), Outcome(names, tuple(v0)))
        with np.printoptions(threshold=20, precision=7):
            for name, a, b in zip(names, v0, v1, strict=True):
                print(f"before: {name} = {a}\nafter:  {name} = {b}")
        print(f"difference: max abs {diff.max_abs:.3g}, max rel {diff.max_rel:.3g}"
              + (f"; first: {diff.first_bad}" if diff.first_bad else " (within tolerance)"))
        return
    fmt = timing.format_seconds
    for label, c, r in (("before", c0, r0), ("after", c1, r1)):
        print(f"{label}: compile {fmt(c, 'us')}" + (f", run {fmt(r, 'us')}" if r else ""))
    first, second = (r0, r1) if metric == "runtime" else (c0, c1)
    if first and second:
        print(f"after / before: {second / first:.2f}x the {metric.replace('_', ' ')}")


def _run_module(text: str, info: dict[str, Any], inputs: list[np.ndarray], *, timed: bool
                ) -> tuple[float, float | None, list[np.ndarray]]:
    """XLA compile seconds, median run seconds (``timed``) and outputs of module ``text``."""
    avals = [(tuple(s), np.dtype(d), bool(w)) for s, d, w in info["avals"]]
    out_avals = [(tuple(s), np.dtype(d), False) for s, d in info["out_avals"]]
    device, x64 = backend.resolve_device(None), bool(info["x64"])
    device_support.check_supported("bisect reproducer", text, device, "bisect")
    start = time.perf_counter()
    exe = backend.compile_module(text, avals=avals, out_avals=out_avals, device=device, x64=x64,
                                 donate=(False,) * len(avals), structure=None, stage="bisect")
    seconds = time.perf_counter() - start
    with backend.x64_scope(x64):
        ready = backend.transfer_ready(device)
        on_device = [jax.device_put(ready(v), device) for v in inputs]
        outs = [np.asarray(o) for o in exe.call_flat(on_device)]
        run = timing.median(timing.sample(lambda: exe.call_flat(on_device), min_time=0.3)) \
            if timed else None
    return seconds, run, outs
