"""The suite targets one platform's device (REACTANT_LAB_DEVICE / --device), and reactant_lab's
default device follows REACTANT_LAB_DEVICE."""

from __future__ import annotations

import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab import backend
from tests.conftest import DEVICE_VAR, assert_values_equal, float_rtol, target_platform


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


def test_exact_on_the_cpu_a_few_ulps_where_float64_is_emulated():
    if target_platform() == "cpu":
        assert float_rtol(np.float64) == 0.0
        with pytest.raises(AssertionError):
            assert_values_equal(np.array([1.0]), np.array([np.nextafter(1.0, 2.0)]))
    else:
        assert 0 < float_rtol(np.float64) < 1e-14
        assert_values_equal(np.array([1.0]), np.array([np.nextafter(1.0, 2.0)]))
    assert float_rtol(np.float32) == 0.0 and float_rtol(np.int64) == 0.0
