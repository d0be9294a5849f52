"""Shared fixtures: reproducible random generators, Hypothesis profiles, and the differential
check against jax.jit.

One seed drives a run's randomness: ``REACTANT_LAB_SEED`` when set, else drawn fresh and shown in
the header. Each test's ``rng`` is derived from (seed, test id), so one test replays alone;
Hypothesis runs with the same seed. A failing test prints the command that replays it.
``REACTANT_LAB_FUZZ=long`` selects the long fuzzing profile, ``=shrink`` minimizes a ci failure
(docs/testing.md).
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import signal
import tempfile
import time

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, is_hypothesis_test, settings
from hypothesis import seed as hypothesis_seed

DEVICE_VAR = "REACTANT_LAB_DEVICE"
"""Environment variable naming the platform the suite targets ('cpu', 'tpu', 'gpu'); --device
sets it. Unset: JAX's default device (docs/accelerator.md)."""
SEED_VAR = "REACTANT_LAB_SEED"
"""Environment variable holding the run's seed."""
FUZZ_VAR = "REACTANT_LAB_FUZZ"
"""Environment variable naming the Hypothesis profile: 'ci' (default), 'shrink' or 'long'."""
XLA_OPT_VAR = "REACTANT_LAB_TEST_XLA_OPT"
"""Environment variable: 'default' compiles with XLA's own LLVM optimization level, as users
get it; unset, the suite compiles on the CPU with LLVM's optimizations off (``_quick_codegen``)."""
QUICK_CODEGEN = "--xla_backend_optimization_level=0"

_SEED = pytest.StashKey[int]()
_REPRO = pytest.StashKey[str]()
_SEEDED: set[object] = set()  # Hypothesis tests whose seed this file sets (not the test's own)

# "ci": a fixed budget per fuzz test (the differential fuzzer stays within ~2-3 minutes on two
# cores); the fuzzer skips shrinking under it, which recompiles each candidate and can take
# minutes per failure, so a failure prints the program as drawn. "shrink": the same examples,
# minimized on failure (replay a ci failure with it). "long": thousands of programs. All draw
# fresh examples each run (derandomize=False) from the run's seed; print_blob adds a
# @reproduce_failure line to each falsifying example.
PROFILES = {"ci": 8, "shrink": 8, "long": 200}
"""Hypothesis profile -> examples per fuzz test (tests without their own max_examples)."""
for _name, _examples in PROFILES.items():
    settings.register_profile(_name, max_examples=_examples, deadline=None, derandomize=False,
                              print_blob=True, suppress_health_check=[HealthCheck.too_slow])
if os.environ.get(FUZZ_VAR, "ci") not in PROFILES:
    raise ValueError(f"{FUZZ_VAR}={os.environ[FUZZ_VAR]!r}: use one of {', '.join(PROFILES)}")
settings.load_profile(os.environ.get(FUZZ_VAR, "ci"))


def _run_seed() -> int:
    text = os.environ.get(SEED_VAR)
    if text is None:
        return secrets.randbits(32)
    try:
        return int(text)
    except ValueError:
        raise pytest.UsageError(f"{SEED_VAR}={text!r} is not an integer; set it to the seed "
                                "a failing run printed, or unset it") from None


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--device", default=None, metavar="PLATFORM",
                     help=f"run the suite on this platform's first device: cpu, tpu, gpu "
                          f"(sets {DEVICE_VAR}; default: that variable, else JAX's default)")
    parser.addoption("--seeds", type=int, default=1, metavar="N",
                     help="run each test that draws from the seed under N seeds: the run's seed, "
                          "then N-1 drawn from it (a failure names the seed that replays it); "
                          "hunts seed-dependent failures")
    parser.addoption("--quick", action="store_true",
                     help="leave out the browser tests, the notebooks and the tests marked slow "
                          "(a few minutes, for development; CI runs everything)")


def _target_device(config: pytest.Config):
    """Point reactant_lab's default device (REACTANT_LAB_DEVICE) and JAX's (the references
    tests compare with) at the platform asked for; the device the suite targets."""
    chosen = _device_asked(config)
    kind = _platform_kind(chosen)
    if not kind:
        return jax.devices()[0]
    if kind == "cpu":
        # JAX opens every platform it finds at once: on a TPU machine, asking for the CPU would
        # open the TPU too (and fail while another process holds it). The CPU alone, as in
        # child_env.
        os.environ["JAX_PLATFORMS"] = "cpu"
        jax.config.update("jax_platforms", "cpu")
    try:
        device = jax.devices(kind)[0]
    except RuntimeError:
        have = ", ".join(sorted({d.platform for d in jax.devices()}))
        raise pytest.UsageError(f"--device / {DEVICE_VAR}={chosen!r}: no such device is "
                                f"attached (available: {have})") from None
    os.environ[DEVICE_VAR] = kind
    jax.config.update("jax_default_device", device)
    return device


def target_platform() -> str:
    """The platform the suite runs on: 'cpu', 'tpu', 'gpu'. (Read from the environment, which
    pytest_configure set: test modules import this file again as ``tests.conftest``.)"""
    return _platform_kind(os.environ.get(DEVICE_VAR, "")) or jax.devices()[0].platform


def _device_asked(config: pytest.Config) -> str:
    """The device the run asks for: --device, else REACTANT_LAB_DEVICE ('' for neither)."""
    return (config.getoption("--device") or os.environ.get(DEVICE_VAR, "")).strip()


def _platform_kind(chosen: str) -> str:
    """The platform a --device / REACTANT_LAB_DEVICE value names ('cpu', 'tpu', 'gpu'; CUDA and
    ROCm are 'gpu'), or '' when it names none."""
    kind = chosen.strip().lower()
    return {"cuda": "gpu", "rocm": "gpu"}.get(kind, kind)


_TARGET: list = []


def steps_over_in_seconds() -> float:
    """Steps of a counting loop (``while a[0] < n: a[0] += 1``) far past a 0.05 s time limit
    that are over in seconds: 2 s on this CPU for 1e9; a TPU v5e took over 4 s for 1e6 (its
    while loop costs microseconds a step). While a stopped loop still runs on a device, every
    later computation there waits for it, so calls there are refused (``LeftRunningError``)."""
    return 1e9 if target_platform() == "cpu" else 1e5


def earlier_overruns_ended(within: float = 120.0) -> None:
    """Wait for the computations earlier tests left running past their time limit to end
    (loops that end, seconds on): at most four may run at once in a process, so a test that
    overruns, repeated under ``--seeds``, or one that makes a guarded call after such tests,
    would be refused (LeftRunningError)."""
    from reactant_lab import _backend_run

    deadline = time.monotonic() + within
    while _backend_run.left_running() and time.monotonic() < deadline:
        time.sleep(0.05)


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a Python process a test starts (a script, the command line, a notebook
    kernel, JupyterLab): this process's, with ``extra`` set. When the suite targets an
    accelerator, the child runs on the CPU (JAX_PLATFORMS=cpu, REACTANT_LAB_DEVICE=cpu): this
    process holds the device and a second process cannot open it (on a TPU: "Unable to
    initialize backend 'tpu': ABORTED: Internal error when accessing libtpu multi-process
    lockfile"), and each process that opened the TPU held about 15 GB of host memory (two runs
    ran out of the TPU machine's 40 GB)."""
    env = dict(os.environ)
    if target_platform() != "cpu":
        env.update(JAX_PLATFORMS="cpu", REACTANT_LAB_DEVICE="cpu")
    # JAX's start-up on a TPU machine warns that the machine's transparent hugepages are off, in
    # every process (the CPU-only ones too), naming its own file: not output of ours, which
    # these tests read (a saved notebook's streams, the command line's stderr)
    env["PYTHONWARNINGS"] = ",".join(w for w in (env.get("PYTHONWARNINGS"), _HUGEPAGES) if w)
    env.update(extra)
    return env


_HUGEPAGES = "ignore:Transparent hugepages:UserWarning"


def unattached_platform() -> str:
    """A platform with no device attached here ('tpu', else 'gpu'): for tests of the error
    naming a missing device."""
    have = {d.platform for d in jax.devices()}
    return "tpu" if "tpu" not in have else "gpu"


def _quick_codegen(config: pytest.Config) -> None:
    """Compile with LLVM's optimizations off (XLA_FLAGS, before any backend starts; the kernels,
    workers and command-line children the tests start inherit it). Half of a test worker's time
    is XLA compiling small modules, which each run a few times; without LLVM's optimizations an
    XLA:CPU compile takes about half the CPU, and the whole suite about a tenth less
    (docs/testing.md). What the tests check does not change: XLA's HLO passes, fusions and
    layouts are the same, and the references (jax.jit at the same level, NumPy) run beside the
    result. Left alone where XLA_FLAGS sets the level, where the suite targets an accelerator,
    and with REACTANT_LAB_TEST_XLA_OPT=default."""
    flags = os.environ.get("XLA_FLAGS", "")
    kind = _platform_kind(_device_asked(config))
    if (os.environ.get(XLA_OPT_VAR, "").strip().lower() == "default"
            or "xla_backend_optimization_level" in flags or kind not in ("", "cpu")):
        return
    os.environ["XLA_FLAGS"] = f"{flags} {QUICK_CODEGEN}".strip()


def pytest_configure(config: pytest.Config) -> None:
    _quick_codegen(config)
    _TARGET[:] = [_target_device(config)]
    # Under pytest-xdist every worker runs with the controller's seed (pytest_configure_node).
    worker_input = getattr(config, "workerinput", None)
    config.stash[_SEED] = worker_input[SEED_VAR] if worker_input else _run_seed()
    # A pattern set that never reaches a fixed point fails its test in two minutes (with the
    # stage and a reproducer) instead of holding the run until CI's deadline.
    os.environ.setdefault("REACTANT_LAB_PASS_TIMEOUT", "120")
    # Reproducers of the passes tests make fail go to a folder of this run, removed at its end,
    # not to the user's temp dir (tests that read them set their own).
    if not os.environ.get("REACTANT_LAB_REPRO_DIR"):
        os.environ["REACTANT_LAB_REPRO_DIR"] = tempfile.mkdtemp(prefix="reactant_lab_tests_")
        config.stash[_REPRO] = os.environ["REACTANT_LAB_REPRO_DIR"]
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        # A run started in the background by a non-interactive shell (`cmd &`) inherits Ctrl-C
        # ignored, and so would every process it starts: the interrupt tests need it as a
        # user has it.
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """pytest-xdist ``--dist loadfile``: each test file on one worker (its module fixtures built
    once), and the browser tests, all of them, on one worker in turn: one JupyterLab server and
    one Chromium at a time, while the other workers run the rest."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FilesAndBrowser(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "tests/browser" if nodeid.startswith("tests/browser/") else \
                super()._split_scope(nodeid)

    return FilesAndBrowser(config, log)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """pytest-xdist: hand the run's seed to each worker, so one seed replays the whole run."""
    node.workerinput[SEED_VAR] = node.config.stash[_SEED]


def pytest_unconfigure(config: pytest.Config) -> None:
    repro = config.stash.get(_REPRO, None)
    if repro is not None:
        shutil.rmtree(repro, ignore_errors=True)
        os.environ.pop("REACTANT_LAB_REPRO_DIR", None)


def pytest_report_header(config: pytest.Config) -> str:
    seeds = config.getoption("--seeds")
    each = f" (each test that draws from it under {seeds} seeds: --seeds)" if seeds > 1 else ""
    return (f"reactant_lab: {SEED_VAR}={config.stash[_SEED]}{each}, "
            f"hypothesis profile {settings.get_current_profile_name()!r} ({FUZZ_VAR}), "
            f"device {_TARGET[0] if _TARGET else jax.devices()[0]}, "
            f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r} ({XLA_OPT_VAR})")


def pytest_runtest_setup(item: pytest.Item) -> None:
    # cpu_only(reason): what only holds on the CPU (a miscompile XLA:CPU makes, a worker
    # process compiling beside this one) is skipped elsewhere, saying why.
    marker = item.get_closest_marker("cpu_only")
    if marker is not None and target_platform() != "cpu":
        reason = marker.args[0] if marker.args else marker.kwargs.get("reason", "")
        pytest.skip(f"CPU only ({target_platform()} targeted): {reason}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A browser test that times out waiting on JupyterLab runs once more, on a fresh page. On a
    # loaded machine JupyterLab can find no kernel spec yet, ask which kernel to start and, once
    # answered, interrupt the cells already running (a few runs in a hundred). The summary lists
    # each rerun (-raR); a failure of the product fails both attempts.
    for item in items:
        if "tests/browser/" in item.nodeid:
            item.add_marker(pytest.mark.flaky(reruns=1, only_rerun=["TimeoutError"]))
    if not config.getoption("--quick"):
        return
    slow = [item for item in items
            if item.get_closest_marker("slow") or "tests/browser/" in item.nodeid
            or item.nodeid.startswith("tests/test_notebooks.py")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if item not in set(slow)]


def draws_from_seed(item: pytest.Item) -> bool:
    """Whether the run's seed can change what ``item`` sees: it uses ``rng`` (itself or through a
    fixture) or is a Hypothesis test."""
    return ("rng" in getattr(item, "fixturenames", ())
            or is_hypothesis_test(getattr(item, "obj", None)))


def seeds_of_run(seed: int, count: int) -> list[int]:
    """The seeds ``--seeds count`` runs each test under: the run's, then ones drawn from it."""
    return [seed] + [derived_seed(seed, f"--seeds {k}") % 2**32 for k in range(1, count)]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """``--seeds N``: a test that draws from the seed (``rng``, directly or through a fixture, or
    Hypothesis) runs N times, each time as under another run seed (its failure report names that
    seed); a test that draws nothing runs once."""
    count = item.config.getoption("--seeds")
    if count <= 1 or not draws_from_seed(item):
        return None
    from _pytest.runner import runtestprotocol

    base = item.config.stash[_SEED]
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    try:
        for seed in seeds_of_run(base, count):
            item.config.stash[_SEED] = seed
            runtestprotocol(item, nextitem=nextitem)
    finally:
        item.config.stash[_SEED] = base
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        report.sections.append((
            "reactant_lab seed",
            f"replay with {SEED_VAR}={item.config.stash[_SEED]} pytest '{item.nodeid}'"))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    # Each Hypothesis test draws from (run seed, test id), as ``rng`` does: parametrized copies
    # of one test see different examples, and one test replays alone. An explicit @seed or
    # --hypothesis-seed wins.
    fn = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
    if not is_hypothesis_test(fn) or item.config.getoption("hypothesis_seed", None) is not None:
        return
    if getattr(fn, "_hypothesis_internal_use_seed", None) is None or fn in _SEEDED:
        hypothesis_seed(derived_seed(item.config.stash[_SEED], item.nodeid))(fn)
        _SEEDED.add(fn)


def derived_seed(seed: int, nodeid: str) -> int:
    """The seed of one test: the run's seed mixed with the test id (stable across processes)."""
    digest = hashlib.sha256(f"{seed}:{nodeid}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A generator seeded from (run seed, test id): fresh each run, replayable per test."""
    return np.random.default_rng(derived_seed(request.config.stash[_SEED], request.node.nodeid))


def assert_trees_close(got, want, tol: float) -> None:
    """Same structure, same dtypes, values within ``tol`` (exact when tol == 0)."""
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert got_tree == want_tree, f"structure {got_tree} != {want_tree}"
    for g, w in zip(got_leaves, want_leaves, strict=True):
        if not isinstance(g, np.ndarray | np.generic | jax.Array):
            # A static (Python) result comes back as itself; jax.jit makes an array of it.
            assert g == w, f"static result {g!r} != {w!r}"
            continue
        ga, wa = np.asarray(g), np.asarray(w)
        assert ga.dtype == wa.dtype, f"dtype {ga.dtype} != {wa.dtype}"
        assert ga.shape == wa.shape, f"shape {ga.shape} != {wa.shape}"
        if tol == 0:
            np.testing.assert_array_equal(ga, wa)
        else:
            np.testing.assert_allclose(ga, wa, rtol=tol, atol=tol)


EMULATED_FLOAT64_RTOL = 2.0 ** -44
"""The relative tolerance of float64 / complex128 arithmetic where they are emulated (a TPU),
against the CPU's or NumPy's IEEE float64. Measured on a TPU v5e: an array only passed through
came back up to 1.5e-15 off, ``x * x * x`` 3.4e-15, ``1 / (x * x)`` 6.3e-15 (about 49
significant bits, as from a pair of float32s, not 53); 2**-44 (5.7e-14) leaves room for a few
more operations."""
TPU_MATMUL_RTOL = 2e-2
"""The relative tolerance of a float32 result that went through a matrix product on a TPU,
whose float32 dots run at bf16-pass precision by default (as JAX's own do there): measured on a
TPU v5e, small layers and their gradients came out up to 0.3% off (0.017 relative, 0.003 absolute,
at one element near zero)."""


def matmul_rtol(cpu: float) -> float:
    """The tolerance of a float32 result of a matrix product that the CPU computes within
    ``cpu``: ``cpu`` there, at least ``TPU_MATMUL_RTOL`` on a TPU."""
    return cpu if target_platform() != "tpu" else max(cpu, TPU_MATMUL_RTOL)


EMULATED_FLOAT64_FUNCTION_RTOL = 1e-6
"""The same for elementary functions of emulated float64 (sin, sqrt, ...): a TPU v5e's float64
``sin`` of a value near 7.7 was 2e-8 off NumPy's (those near 1.3 within 1e-12)."""
OTHER_DEVICE_ULPS = 4
"""Units in the last place float64 results of another accelerator (a GPU: native float64, other
math libraries and fused multiply-adds) may differ from the CPU's by (not measured here)."""


def float_rtol(dtype, cpu: float = 0.0, *, functions: bool = False) -> float:
    """The relative tolerance of a value of ``dtype`` that the CPU computes within ``cpu`` (0:
    exactly): ``cpu`` on the CPU and for types no device emulates; where float64 / complex128 are
    emulated (a TPU) at least ``EMULATED_FLOAT64_RTOL`` (``EMULATED_FLOAT64_FUNCTION_RTOL`` with
    ``functions``: the value went through an elementary function); on another accelerator at
    least a few ulps."""
    dt = np.dtype(dtype)
    platform = target_platform()
    if platform == "cpu" or dt.kind not in "fc" or np.finfo(dt).bits != 64:
        return cpu
    if platform == "tpu":
        return max(cpu, EMULATED_FLOAT64_FUNCTION_RTOL if functions else EMULATED_FLOAT64_RTOL)
    return max(cpu, OTHER_DEVICE_ULPS * float(np.finfo(dt).eps))


def assert_values_equal(got, want, err_msg: str = "") -> None:
    """Equal on the CPU; on a device that computes float64 another way (a TPU emulates it),
    float64 and complex128 values within ``float_rtol`` of each other, relative to the value's
    scale (NaN and infinities where they are)."""
    g, w = np.asarray(got), np.asarray(want)
    rtol = float_rtol(w.dtype)
    if rtol == 0.0:
        np.testing.assert_array_equal(g, w, err_msg=err_msg)
        return
    assert g.shape == w.shape and g.dtype == w.dtype, f"{g.dtype}{g.shape} != {w.dtype}{w.shape}"
    finite = np.isfinite(w)
    scale = float(np.max(np.abs(w[finite]), initial=0.0)) or 1.0
    np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale, err_msg=err_msg)


def assert_close_to_scale(got, want, tol: float, where: str = "") -> None:
    """Same structure, dtypes and shapes; each leaf within ``tol`` relative to its own scale
    (its largest magnitude, at least 1), so values near zero need no tighter bound."""
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert got_tree == want_tree, f"{where}: structure {got_tree} != {want_tree}"
    for k, (got_leaf, want_leaf) in enumerate(zip(got_leaves, want_leaves, strict=True)):
        g, w = np.asarray(got_leaf), np.asarray(want_leaf)
        assert g.shape == w.shape and g.dtype == w.dtype, f"{where}[{k}]: {g.dtype}{g.shape} " \
                                                          f"!= {w.dtype}{w.shape}"
        scale = max(1.0, float(np.max(np.abs(w)))) if w.size else 1.0
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * scale, err_msg=f"{where}[{k}]")


def assert_close(actual, desired, rtol: float = 1e-7, **kwargs) -> None:
    """``np.testing.assert_allclose`` with the bound relative to the expected value's scale:
    ``|actual - desired| <= rtol * (|desired| + max|desired|)``. An element near zero in a result
    whose other elements are large gets the same absolute slack as they do (a plain relative
    tolerance fails on it by chance, depending on the random inputs); a result that is all near
    zero still gets a relative bound. NaN and infinities must match where they are."""
    want = np.asarray(desired)
    finite = np.abs(want[np.isfinite(want)]) if want.dtype.kind in "fc" else np.abs(want)
    scale = float(np.max(finite)) if finite.size else 0.0
    np.testing.assert_allclose(actual, desired, rtol=rtol, atol=rtol * scale, **kwargs)
