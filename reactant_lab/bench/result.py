"""``BenchResult``: per-variant timing rows with ratios and roofline, as text, JSON, CSV, HTML."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reactant_lab import timing
from reactant_lab.bench.roofline import Roofline, flops_rate
from reactant_lab.bench.transfers import Transfers

NOISY_IQR_OVER_MEDIAN = 0.10
"""A row is noisy past this interquartile range over median: its median is not to be trusted to
better than 10%, so a 1.05x difference from it means nothing."""
NOISY_NOTE = ("noisy: the interquartile range of the samples is over 10% of the median, so the "
              "median is not reliable to better than that")
ROOFLINE_OVER_NOTE = (
    "over 100%: faster than that least time, so the estimate is low here: the peak bandwidth is "
    "measured on a copy far larger than the caches while these inputs stay in cache, and XLA "
    "counts the bytes of each op as if nothing stayed in registers or cache between ops")


def versus(ratio: float | None, name: str, reference: str | None) -> str:
    """How a row compares with the reference baseline, in words: ``1.78× faster than numpy``,
    ``baseline`` for the reference itself, ``-`` without one."""
    if reference is None or ratio is None or not ratio > 0:
        return "-"
    if name == reference:
        return "baseline"
    if abs(ratio - 1) < 0.01:
        return f"same as {reference}"
    times = 1 / ratio if ratio < 1 else ratio
    x = f"{times:.3g}" if times < 10 else f"{times:.0f}"
    return f"{x}× {'faster' if ratio < 1 else 'slower'} than {reference}"


def roofline_note(roofline: Roofline, dtype: str = "float32") -> str:
    """One line on what the roofline column means, with the machine's peaks (each marked
    measured or given) and the compute peak that applies to work in ``dtype``."""
    applies = roofline.flops_peak(dtype)
    return (f"roofline: the least time this work can take on this machine (XLA's count of its "
            f"flops and bytes at the device's peaks: {roofline.describe()}; {dtype} work, so "
            f"{flops_rate(applies)}) over the median; 100% is running at the machine's limit")


TRANSFERS_NOTE = (
    "to device / from device: the copies a call of NumPy arrays makes around its run, timed apart "
    "(host to device: the arrays it takes; device to host: its results and updated arrays); the "
    "median of such a row is the run alone, its inputs already on the device")


def format_bytes(nbytes: int) -> str:
    """``512 B``, ``1.0 KiB``, ``3.5 MiB``, ``2.0 GiB`` (as the explorer's front end writes them)."""
    if nbytes < 1024:
        return f"{nbytes} B"
    unit, scale = (("KiB", 1024) if nbytes < 1024**2 else ("MiB", 1024**2) if nbytes < 1024**3
                   else ("GiB", 1024**3))
    return f"{nbytes / scale:.1f} {unit}"


def transfer_cell(nbytes: int | None, seconds: float | None, micro: str = "µs") -> str:
    """``1.0 MiB, 85.2 µs``: bytes copied one way and the time it took; ``-`` without."""
    if nbytes is None or seconds is None:
        return "-"
    return f"{format_bytes(nbytes)}, {timing.format_seconds(seconds, micro=micro)}"


@dataclass(frozen=True)
class BenchRow:
    """Timing of one variant: a preset compiled through our pipeline, or a baseline."""

    name: str
    """Preset name (``all``, ``none``, ...) or baseline (``numpy``, ``jax``)."""
    kind: str
    """'preset' or 'baseline'."""
    samples_s: tuple[float, ...] = field(repr=False)
    """Seconds per call, one value per sample."""
    median_s: float
    """Median of the samples."""
    iqr_s: float
    """Interquartile range of the samples."""
    min_s: float
    """Fastest sample."""
    compile_s: float | None
    """Pass pipeline + XLA compile (presets) or jax.jit lower + compile; None for NumPy."""
    ratio: float | None
    """Median over the reference baseline's median (None without a baseline)."""
    flops: float | None
    """Floating-point operations per call, from XLA's cost analysis."""
    bytes_accessed: float | None
    """Bytes read and written per call, from XLA's cost analysis."""
    roofline_fraction: float | None
    """The machine's time floor for this work over the median (1.0 = at the roofline)."""
    calls_per_sample: int = 1
    """Calls timed back to back per sample."""
    h2d_bytes: int | None = None
    """Bytes a call of NumPy arrays copies host to device first (None: inputs already there)."""
    h2d_s: float | None = None
    """Seconds those copies take, timed apart from the samples."""
    d2h_bytes: int | None = None
    """Bytes of results and updated arrays a call of NumPy arrays copies back to the host."""
    d2h_s: float | None = None
    """Seconds those copies take, timed apart from the samples."""

    @property
    def noisy(self) -> bool:
        """IQR over median above 10%: the number is not to be trusted to that precision."""
        return self.median_s > 0 and self.iqr_s / self.median_s > NOISY_IQR_OVER_MEDIAN

    @property
    def with_transfers_s(self) -> float | None:
        """The median plus both copies: what a call of NumPy arrays takes end to end, less its
        checks (None for a row without copies)."""
        if self.h2d_s is None or self.d2h_s is None:
            return None
        return self.median_s + self.h2d_s + self.d2h_s

    @property
    def gflops_per_s(self) -> float | None:
        """Achieved GFLOP/s."""
        return None if not self.flops else self.flops / self.median_s / 1e9

    @property
    def gb_per_s(self) -> float | None:
        """Achieved GB/s of memory traffic."""
        return None if not self.bytes_accessed else self.bytes_accessed / self.median_s / 1e9

    def as_dict(self) -> dict[str, Any]:
        """Plain dict with the derived fields too (for JSON / CSV)."""
        out = dataclasses.asdict(self)
        out.update(noisy=self.noisy, gflops_per_s=self.gflops_per_s, gb_per_s=self.gb_per_s,
                   with_transfers_s=self.with_transfers_s)
        return out


def make_row(name: str, kind: str, samples: Sequence[float], *, compile_s: float | None,
             flops: float | None, bytes_accessed: float | None, roofline: Roofline | None,
             calls_per_sample: int, transfers: Transfers | None = None,
             dtype: str | None = None) -> BenchRow:
    """A row from raw samples (ratio filled in later, once the reference is known); ``dtype``
    picks the roofline's compute peak (``Roofline.flops_peak``)."""
    med = timing.median(samples)
    t = transfers
    return BenchRow(name, kind, tuple(samples), med, timing.iqr(samples), min(samples),
                    compile_s, None, flops, bytes_accessed,
                    roofline.fraction(flops, bytes_accessed, med, dtype) if roofline else None,
                    calls_per_sample, *((t.h2d_bytes, t.h2d_s, t.d2h_bytes, t.d2h_s)
                                        if t is not None else ()))


BLAS_SPIN_MIN_S = 1e-3
"""NumPy's samples from this long up may run OpenBLAS on several threads (see
``blas_spin_caveat``)."""


def blas_spin_caveat(blas: str | None, environ: Mapping[str, str], numpy_median_s: float | None,
                     compiled: bool) -> str | None:
    """The caveat for a run that timed compiled code beside NumPy eager on OpenBLAS: its threads
    keep spinning for about 0.1 s after each of NumPy's calls and share the cores with the
    compiled call sampled next (a compiled MLP layer pair measured 23-25 ms right after NumPy's
    call, 15-16 ms alone), unless OPENBLAS_THREAD_TIMEOUT (or GOTO_THREAD_TIMEOUT) was set
    before NumPy loaded it; None when that cannot be the case. ``blas``: the name NumPy's build
    gives its BLAS; ``numpy_median_s``: the NumPy baseline's median, None without one."""
    if (not compiled or numpy_median_s is None or numpy_median_s < BLAS_SPIN_MIN_S
            or "openblas" not in (blas or "").lower()
            or environ.get("OPENBLAS_THREAD_TIMEOUT") or environ.get("GOTO_THREAD_TIMEOUT")):
        return None
    return ("NumPy's OpenBLAS threads keep spinning for about 0.1 s after each of its calls, and "
            "a compiled sample taken right after NumPy's shares the cores with them (matrix "
            "products measured up to 1.6x slower so): for compiled times as they run alone, "
            "set OPENBLAS_THREAD_TIMEOUT=4 in the environment before Python starts (NumPy's "
            "own times do not change)")


def _fmt_time(seconds: float | None) -> str:
    return timing.format_seconds(seconds, micro="us")


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


@dataclass(frozen=True)
class BenchResult:
    """Every variant of one call measured side by side in one run."""

    fn_name: str
    """The benchmarked function."""
    mode: str
    """'jax' or 'numpy': how the function was traced."""
    device: str
    """Where it ran."""
    rows: tuple[BenchRow, ...]
    """One row per measured variant, in the order requested."""
    skipped: Mapping[str, str]
    """Variant -> why it was not measured."""
    reference: str | None
    """The baseline ratios are taken against (the first baseline measured)."""
    roofline: Roofline | None
    """The device's measured peak compute and bandwidth."""
    caveats: tuple[str, ...] = ()
    """What may have skewed this run's samples, and what to do about it (``blas_spin_caveat``)."""
    compute_dtype: str = "float32"
    """The element type whose matmul peak bounds the roofline's compute: ``bfloat16`` for a
    call of 16-bit floats, else ``float32``."""

    @property
    def has_transfers(self) -> bool:
        """Whether a row has copies to and from the device timed apart (NumPy-mode calls)."""
        return any(r.h2d_s is not None for r in self.rows)

    def row(self, name: str) -> BenchRow:
        """The row of one variant."""
        for r in self.rows:
            if r.name == name:
                return r
        raise KeyError(f"no row {name!r}; rows: {[r.name for r in self.rows]}, skipped: "
                       f"{dict(self.skipped)}")

    def table(self) -> str:
        """Plain-text table of the rows, then what the columns mean and the skipped variants."""
        copies = self.has_transfers
        head = ("variant", "median", "IQR", "min", "compile", f"vs {self.reference or 'baseline'}",
                "GFLOP/s", "GB/s", "roofline",
                *(("to device", "from device") if copies else ()), "")
        lines = [head]
        for r in self.rows:
            over = r.roofline_fraction is not None and r.roofline_fraction > 1
            lines.append((r.name, _fmt_time(r.median_s), _fmt_time(r.iqr_s), _fmt_time(r.min_s),
                          _fmt_time(r.compile_s), versus(r.ratio, r.name, self.reference),
                          _fmt(r.gflops_per_s, ".3g"), _fmt(r.gb_per_s, ".3g"),
                          _fmt(r.roofline_fraction, ".1%") + (" *" if over else ""),
                          *((transfer_cell(r.h2d_bytes, r.h2d_s, "us"),
                             transfer_cell(r.d2h_bytes, r.d2h_s, "us")) if copies else ()),
                          "noisy" if r.noisy else ""))
        widths = [max(len(str(row[i])) for row in lines) for i in range(len(head))]
        text = ["  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                          for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip()
                for row in lines]
        text.insert(0, f"{self.fn_name} ({self.mode} mode) on {self.device}")
        return "\n".join(text + self.notes())

    def notes(self) -> list[str]:
        """What the columns mean where it needs saying, and each skipped variant's reason whole."""
        out = []
        if self.roofline:
            out.append(roofline_note(self.roofline, self.compute_dtype))
        if any(r.roofline_fraction is not None and r.roofline_fraction > 1 for r in self.rows):
            out.append(f"* {ROOFLINE_OVER_NOTE}")
        if any(r.noisy for r in self.rows):
            out.append(NOISY_NOTE)
        if self.has_transfers:
            out.append(TRANSFERS_NOTE)
        out.extend(self.caveats)
        return out + [f"skipped {name}: {why}" for name, why in self.skipped.items()]

    def __str__(self) -> str:
        return self.table()

    def to_dict(self) -> dict[str, Any]:
        """Everything, as plain data (the explorer's payload: render/explorer.schema.json)."""
        return {"fn_name": self.fn_name, "mode": self.mode, "device": self.device,
                "reference": self.reference, "skipped": dict(self.skipped),
                "roofline": dataclasses.asdict(self.roofline) if self.roofline else None,
                "rows": [r.as_dict() for r in self.rows], "caveats": list(self.caveats),
                "compute_dtype": self.compute_dtype}

    def to_json(self, indent: int | None = 2) -> str:
        """JSON text of ``to_dict()``."""
        return json.dumps(self.to_dict(), indent=indent)

    def to_csv(self) -> str:
        """One CSV line per row (samples left out)."""
        buf = io.StringIO()
        dicts = [r.as_dict() for r in self.rows]
        names = [k for k in (dicts[0] if dicts else {}) if k != "samples_s"]
        writer = csv.DictWriter(buf, fieldnames=names, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(dicts)
        return buf.getvalue()

    def plot(self) -> Any:
        """A matplotlib figure: sample distribution per variant, log time axis."""
        try:
            import matplotlib.pyplot as plt
        except ImportError as exc:
            from reactant_lab.errors import ReactantLabError

            raise ReactantLabError("BenchResult.plot() needs matplotlib: pip install matplotlib "
                                   "(the HTML view needs nothing)") from exc
        fig, ax = plt.subplots(figsize=(7, 0.6 + 0.5 * max(1, len(self.rows))))
        data, labels = [list(r.samples_s) for r in self.rows], [r.name for r in self.rows]
        try:
            ax.boxplot(data, orientation="horizontal", tick_labels=labels)
        except TypeError:  # matplotlib before 3.10
            # its stubs are those of the installed matplotlib, which no longer takes labels=
            ax.boxplot(data, vert=False, labels=labels)  # type: ignore[call-arg]  # see above
        ax.set_xscale("log")
        ax.set_xlabel("seconds per call")
        ax.set_title(f"{self.fn_name} on {self.device}")
        fig.tight_layout()
        return fig
