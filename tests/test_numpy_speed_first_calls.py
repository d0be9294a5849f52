"""benchmarks/numpy_speed.py's fresh-process first calls: which kernels are measured again, in
how many processes, in which order (the processes are faked: nothing here times the machine)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import numpy_speed
from numpy_speed import FIRST_CALL_LIMIT, Result, remeasure_first_calls


def _fake_processes(monkeypatch: pytest.MonkeyPatch, ratio: float) -> list[list[str]]:
    """Fresh processes that each report rl.jit at ``ratio`` times a 0.04 s port; the argv of
    each one started is appended to the list returned."""
    started: list[list[str]] = []

    def run(argv: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        started.append(argv)
        first = {"rl.jit": 0.04 * ratio, "jax.jit": 0.04}
        line = json.dumps({"first": first, "parts": [0.01, 0.01, 0.01], "notes": {}})
        return subprocess.CompletedProcess(argv, 0, stdout=f"{line}\n", stderr="")

    monkeypatch.setattr(numpy_speed.subprocess, "run", run)
    return started


@pytest.mark.parametrize(("ratio", "processes"), [
    (2.1, 5),  # measured again (2x the port's or more), far below the limit: five decide
    (FIRST_CALL_LIMIT * 0.85, 10),  # near it, below: as many again
    (FIRST_CALL_LIMIT * 1.15, 10),  # near it, above
    (FIRST_CALL_LIMIT * 1.5, 5),  # far above
])
def test_a_first_call_near_the_limit_gets_twice_the_fresh_processes(ratio, processes,
                                                                     monkeypatch):
    started = _fake_processes(monkeypatch, ratio)
    row = Result("doitgen", "100x128x128", first={"rl.jit": 0.04 * ratio, "jax.jit": 0.04})
    remeasure_first_calls([row], 5, ["--seed", "0"])
    assert len(started) == processes and row.first_samples == processes
    assert row.first["rl.jit"] / row.first["jax.jit"] == pytest.approx(ratio)
    assert all(argv[argv.index("--first-call") + 1] == "doitgen" for argv in started)


def test_fresh_processes_alternate_which_side_goes_first(monkeypatch):
    started = _fake_processes(monkeypatch, FIRST_CALL_LIMIT)
    remeasure_first_calls([Result("trmm", "100x80", first={"rl.jit": 0.12, "jax.jit": 0.04})],
                          5, [])
    port_first = ["--port-first" in argv for argv in started]
    assert port_first == [False, True] * 5


def test_a_first_call_well_under_the_port_is_not_measured_again(monkeypatch):
    started = _fake_processes(monkeypatch, 1.0)
    row = Result("gemm", "500^3", first={"rl.jit": 0.05, "jax.jit": 0.04})
    remeasure_first_calls([row], 5, [])
    assert not started and row.first_samples == 1
