"""Elementwise kernels with masks and clipping (np.clip, np.where chains, boolean-mask
assignment) against NumPy under every preset: small arrays, and arrays large enough that the
updated ones are computed into result buffers kept between calls; masks mixed, all False and
all True; the caller's arrays checked after each call."""

from __future__ import annotations

import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.compile import KEPT_RESULT_MIN_BYTES
from tests import numpy_kernels as nk
from tests.conftest import assert_close, float_rtol, target_platform
from tests.test_fuzz_differential import assert_same_as_numpy

FAMILY = ("clip_inplace", "clip_assign", "where_chain", "where_scalars", "mask_zero",
          "mask_copy", "mask_increment")
KERNELS = {k.name: k for k in nk.KERNELS if k.name in FAMILY}
BIG = (1024, 640)
"""5 MiB of float64: an updated array of this shape is kept."""


def _seeded(rng, make):
    seed = int(rng.integers(2**32))
    return lambda: make(np.random.default_rng(seed))


def _masked(name, shape, p):
    """The kernel's arguments at ``shape``, its mask (if it takes one) True with probability
    ``p``."""
    if name == "mask_copy":
        return lambda r: nk._mk_masked(r, shape, 2, p)
    if name == "mask_increment":
        return lambda r: nk._mk_masked(r, shape, 1, p)
    return {"clip_assign": lambda r: (r.standard_normal(shape), -0.5, 0.5),
            "where_chain": lambda r: (r.standard_normal(shape), 0.5, -0.5)}.get(
        name, lambda r: (r.standard_normal(shape),))


def test_the_family_is_in_the_suite():
    assert set(KERNELS) == set(FAMILY)


@pytest.mark.parametrize("preset", list(rl.PRESETS))
def test_masks_and_clipping_under_every_preset(preset, rng):
    for name, kernel in KERNELS.items():
        for p in (0.5, 0.0, 1.0):
            assert_same_as_numpy(kernel.fn, _seeded(rng, _masked(name, (7, 9), p)), preset,
                                 rtol=0)


@pytest.mark.parametrize("preset", ["none", "all"])
def test_large_arrays_updated_through_kept_buffers(preset, rng):
    assert np.prod(BIG) * 8 >= KEPT_RESULT_MIN_BYTES
    for name, kernel in KERNELS.items():
        jf = rl.jit(kernel.fn, optimize=preset)
        for p in (0.5, 0.0, 0.9):  # one executable, fresh values and masks on every call
            args = _masked(name, BIG, p)(rng)
            ref = [np.array(x) if isinstance(x, np.ndarray) else x for x in args]
            got, want = jf(*args), kernel.fn(*ref)
            # exact on the CPU; on a TPU within its emulated float64 (the elements a kernel
            # leaves alone come back from the device rounded to it too)
            if want is not None:
                assert_close(got, want, float_rtol(want.dtype), err_msg=name)
            for k, (x, y) in enumerate(zip(args, ref, strict=True)):
                assert_close(x, y, float_rtol(np.asarray(y).dtype),
                             err_msg=f"{name}: argument {k}")
        assert jf.cache_size == 1
        # result buffers are kept on the CPU only (an accelerator's allocator keeps its memory)
        kept = kernel.mutates and target_platform() == "cpu"
        assert jf.last.compiled.kept == (("args[0]",) if kept else ()), name
