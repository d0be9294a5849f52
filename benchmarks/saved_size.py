"""What one explorer adds to a saved notebook: the display bundle of ``%%reactant_jit --bench`` as
the .ipynb stores it (its JSON), for an in-place NumPy heat stencil (200x200, 20 steps), rolled
(``loops="auto"``, the default) and unrolled (``loops="unroll"``), with a per-key breakdown (the
explorer payload, the script-free HTML fallback, the text summary) and the payload's largest
parts. Target: the default explorer <= 300 KB.

Run: .venv/bin/python benchmarks/saved_size.py [--size 200] [--steps 20] [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import reactant_lab as rl
from reactant_lab.notebook.display import explorer_bundle

TARGET_BYTES = 300_000
"""The default (rolled) stencil explorer's saved size target."""


def heat(u: np.ndarray, steps: int) -> None:
    for _ in range(steps):
        u[1:-1, 1:-1] = u[1:-1, 1:-1] + 0.1 * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:]
                                                + u[1:-1, :-2] - 4 * u[1:-1, 1:-1])


def saved_bytes(value: Any) -> int:
    """Bytes of ``value`` as nbformat writes it (JSON, non-ASCII kept, no indentation inside
    the data: nbformat indents, which adds little beside the strings)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def stencil_bundle(loops: str, size: int, steps: int, repeats: int | None) -> dict[str, Any]:
    """The bundle ``%%reactant_jit --bench`` displays for the heat stencil."""
    u = np.random.default_rng(0).random((size, size))
    ex = rl.explore(heat, u.copy(), steps, loops=loops)
    b = rl.bench(heat, u.copy(), steps, presets=("none", "all"), repeats=repeats,
                 progress=False)
    return explorer_bundle(ex, bench=b)


def breakdown(bundle: dict[str, Any]) -> list[tuple[str, int]]:
    """(what, bytes): each key of the bundle, then the payload's keys (largest first)."""
    rows = [(k, saved_bytes(v)) for k, v in bundle.items()]
    payload = next(v for k, v in bundle.items() if k.endswith("+json"))
    rows += sorted(((f"  payload.{k}", saved_bytes(v)) for k, v in payload.items()),
                   key=lambda r: -r[1])
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=200)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=None,
                        help="benchmark samples (default: automatic)")
    opts = parser.parse_args()
    print(f"versions: {rl.versions()}")
    print(f"in-place heat stencil {opts.size}x{opts.size}, {opts.steps} steps, with --bench data")
    default_total = 0
    for loops in ("auto", "unroll"):
        bundle = stencil_bundle(loops, opts.size, opts.steps, opts.repeats)
        total = saved_bytes(bundle)
        if loops == "auto":
            default_total = total
        print(f"\nloops={loops!r}{' (default)' if loops == 'auto' else ''}: saved size "
              f"{total / 1000:,.1f} KB")
        for what, n in breakdown(bundle):
            print(f"  {what:<52} {n / 1000:>9,.1f} KB")
    ok = default_total <= TARGET_BYTES
    print(f"\ntarget: the default stencil explorer <= {TARGET_BYTES / 1000:.0f} KB saved: "
          f"{default_total / 1000:,.1f} KB, {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
