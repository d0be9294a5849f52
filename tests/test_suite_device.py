"""The suite targets one platform's device (REACTANT_LAB_DEVICE / --device), and reactant_lab's
default device follows REACTANT_LAB_DEVICE."""

from __future__ import annotations

import os

import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab import backend
from tests.conftest import (
    DEVICE_VAR,
    assert_values_equal,
    child_env,
    float_rtol,
    target_platform,
)


def test_the_default_device_is_the_targeted_platforms():
    assert backend.resolve_device(None).platform == target_platform()


def test_the_variable_names_the_default_device(monkeypatch):
    monkeypatch.setenv(DEVICE_VAR, "cpu")
    assert backend.resolve_device(None).platform == "cpu"
    monkeypatch.setenv(DEVICE_VAR, "no-such-platform")
    with pytest.raises(rl.PipelineError, match=f"{DEVICE_VAR}='no-such-platform'.*available"):
        backend.resolve_device(None)


@pytest.mark.cpu_only("checks the marker itself")
def test_cpu_only_runs_on_the_cpu():
    assert target_platform() == "cpu"


def test_exact_on_the_cpu_within_the_emulations_precision_on_a_tpu():
    if target_platform() == "cpu":
        assert float_rtol(np.float64) == 0.0 and float_rtol(np.float64, 1e-15) == 1e-15
        with pytest.raises(AssertionError):
            assert_values_equal(np.array([1.0]), np.array([np.nextafter(1.0, 2.0)]))
    else:
        assert 0 < float_rtol(np.float64) < 1e-12
        assert float_rtol(np.float64) <= float_rtol(np.complex128, functions=True) < 1e-5
        assert_values_equal(np.array([1.0]), np.array([np.nextafter(1.0, 2.0)]))
    assert float_rtol(np.float32) == 0.0 and float_rtol(np.int64) == 0.0
    assert float_rtol(np.float32, 1e-6) == 1e-6


def test_children_run_on_the_cpu_when_the_suite_targets_an_accelerator():
    env = child_env(EXTRA="1")
    assert env["EXTRA"] == "1" and env["PATH"] == os.environ["PATH"]
    if target_platform() == "cpu":
        assert env.get("JAX_PLATFORMS") == os.environ.get("JAX_PLATFORMS")
    else:
        assert env["JAX_PLATFORMS"] == "cpu" and env[DEVICE_VAR] == "cpu"
