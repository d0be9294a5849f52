"""Memory and copies of an in-place update through rl.jit on the host (issue 13, zero-copy).

A NumPy kernel updates a 100 MB float64 array in place (``a *= 1.5; a += 1``). Each variant runs
in its own process (so peaks do not mix) and reports the peak resident memory the call adds on
top of the array, and the call's median time:

- ``donate=False``: JAX copies the caller's array into its own buffer (NumPy allocates with
  16-byte alignment; XLA:CPU takes host memory without a copy only at 64 bytes), XLA writes the
  result into a second buffer, and the result is copied back into the caller's array;
- ``donate='updated'``: JAX's copy is donated, so XLA computes the result in it; one buffer, and
  the one copy back;
- ``donate='auto'`` (rl.jit's default): as 'updated', but an array of 4 MiB or more that XLA
  can read in place (64-byte aligned) is not donated;
- each with the caller's array made by NumPy's own allocator, and by reactant_lab's aligned one
  (``aligned``: ``rl.use_aligned_arrays()``, on in notebooks after ``%load_ext reactant_lab``):
  JAX then reads the caller's memory in place, unless the array is donated (JAX does not donate
  memory it does not own, so it copies it first).

"bytes copied" counts the host copies per call from where the data moves: the input copy (unless
read in place) and the write-back copy (always one: the result cannot be computed in the
caller's memory without donating it).

A second table does the same for a kernel that returns a new 100 MB array (``a * 1.5 + 1``):
rl.jit hands the caller a writable NumPy array over XLA's output buffer (no copy out), against
the same executable's result copied into a new NumPy array (``np.array``, what rl.jit did
before: one more copy, and the peak holds the result twice).

Run: .venv/bin/python benchmarks/host_copies.py [--mb 100] [--calls 5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
import numpy as np
sys.path.insert(0, ROOT)
import reactant_lab as rl

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
    raise KeyError(key)

def kernel(a):
    a *= 1.5
    a += 1.0

def fresh(a):
    return a * 1.5 + 1.0

n, donate, aligned, calls, result = N, DONATE, ALIGNED, CALLS, RESULT
if aligned:
    rl.use_aligned_arrays()
a = np.empty(n)
assert rl.is_aligned(a) or not aligned
a[:] = np.random.default_rng().random(n)
if result is None:
    jf = rl.jit(kernel, donate=donate)
elif result == "view":
    jf = rl.jit(fresh)
else:  # the same call, its result copied into a new array
    rl_fresh = rl.jit(fresh)
    jf = lambda a: np.array(rl_fresh(a))
jf(a.copy())  # compile
peaks, times = [], []
for _ in range(calls):
    spare = a.copy()  # touched and freed: the allocator's cached pages count as free, not new
    del spare
    base = status("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # the peak (VmHWM) starts again from the current size
    t = time.perf_counter()
    jf(a)
    times.append(time.perf_counter() - t)
    peaks.append(status("VmHWM") - base)
a[:] = np.random.default_rng().random(n)
want = a * 1.5 + 1.0
got = jf(a)
np.testing.assert_allclose(a if result is None else got, want, rtol=1e-15)
donated = result is None and jf.last.compiled.donated_args[0]
print(json.dumps({"peak": sorted(peaks)[len(peaks) // 2], "time": sorted(times)[len(times) // 2],
                  "zero_copy_in": bool(aligned) and not donated}))
"""


def run(n: int, donate: object, aligned: bool, calls: int,
        result: str | None = None) -> dict[str, float]:
    code = (CHILD.replace("ROOT", repr(str(ROOT))).replace("N,", f"{n},", 1)
            .replace("DONATE", repr(donate)).replace("ALIGNED", repr(aligned))
            .replace("CALLS", str(calls)).replace("RESULT", repr(result)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False)
    if out.returncode:
        raise SystemExit(f"the variant donate={donate!r}, aligned={aligned} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=100.0)
    parser.add_argument("--calls", type=int, default=5)
    opts = parser.parse_args()
    n = int(opts.mb * 1e6) // 8
    size = n * 8
    print(f"In-place update of a {size / 1e6:.0f} MB float64 array through rl.jit (NumPy mode), "
          f"{opts.calls} calls per variant, medians")
    header = f"{'variant':<28} {'peak extra':>11} {'x array':>8} {'bytes copied':>13} {'time':>9}"
    print(header)
    print("-" * len(header))
    rows = {}
    for aligned in (False, True):
        for donate in (False, "updated", "auto"):
            start = time.perf_counter()
            r = run(n, donate, aligned, opts.calls)
            copied = size * (1 + (not r["zero_copy_in"]))
            name = f"donate={donate!r}{', aligned' if aligned else ''}"
            rows[name] = r
            print(f"{name:<28} {r['peak'] / 1e6:>8.0f} MB {r['peak'] / size:>7.2f}x "
                  f"{copied / 1e6:>10.0f} MB {r['time'] * 1e3:>6.1f} ms"
                  f"   ({time.perf_counter() - start:.0f} s)")
    base, donated = rows["donate=False"], rows["donate='updated'"]
    ours, before = rows["donate='auto', aligned"], rows["donate='auto'"]
    print("-" * len(header))
    print(f"donating (donate='updated') against donate=False, NumPy's allocator: peak "
          f"{donated['peak'] / base['peak']:.2f}x, time {donated['time'] / base['time']:.2f}x")
    print(f"rl.jit's default on an aligned array against on NumPy's: peak "
          f"{ours['peak'] / before['peak']:.2f}x, time {ours['time'] / before['time']:.2f}x")
    print(f"\nA new {size / 1e6:.0f} MB result (a * 1.5 + 1) of an unaligned array, medians")
    print(header)
    print("-" * len(header))
    rows = {}
    for result, name, copies_out in (("copied", "result copied out", 1),
                                     ("view", "rl.jit (view, no copy)", 0)):
        start = time.perf_counter()
        r = rows[result] = run(n, False, False, opts.calls, result)
        copied = size * (1 + copies_out)
        print(f"{name:<28} {r['peak'] / 1e6:>8.0f} MB {r['peak'] / size:>7.2f}x "
              f"{copied / 1e6:>10.0f} MB {r['time'] * 1e3:>6.1f} ms"
              f"   ({time.perf_counter() - start:.0f} s)")
    print("-" * len(header))
    view, copied_out = rows["view"], rows["copied"]
    print(f"rl.jit's result against the same result copied out: peak "
          f"{view['peak'] / copied_out['peak']:.2f}x, time "
          f"{view['time'] / copied_out['time']:.2f}x")


if __name__ == "__main__":
    main()
