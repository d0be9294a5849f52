"""Rolled loops whose iterations are independent run batched (trace/control_flow/batched.py):
each touches only its own slot (row, column, plane) of the arrays it updates. Their results equal
NumPy eager's on fresh inputs, the module has no stablehlo.while for them, and a loop note says
so; loops whose iterations may depend on each other stay rolled, and give NumPy's results too."""

from __future__ import annotations

import copy
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab import backend
from tests.conftest import assert_close
from tests.numpy_kernels import gramschmidt
from tests.test_numpy_kernels import assert_same
from tests.test_numpy_mode import _while_bodies


def _run(fn, *args, loops="auto", tol=1e-10):
    """fn through rl.jit against NumPy eager (results and arguments after); its trace."""
    want_args = copy.deepcopy(args)
    want = fn(*want_args)
    jf = rl.jit(fn, loops=loops)
    got = jf(*args)
    assert_same(got, want, tol, "result")
    assert_same(args, want_args, tol, "arguments after the call")
    return jf.last.traced


def _batched(traced) -> list[str]:
    return [n for n in traced.loop_notes if " batched (" in n]


def _whiles(traced) -> int:
    return traced.ir.count("stablehlo.while")


def row_products(A, C):
    for r in range(A.shape[0]):
        A[r] = A[r] @ C


def test_a_loop_over_rows_runs_as_one_batched_product(rng):
    A, C = rng.standard_normal((int(rng.integers(9, 30)), 6, 5)), rng.standard_normal((5, 5))
    traced = _run(row_products, A, C)
    assert _whiles(traced) == 0
    (note,) = _batched(traced)
    assert f"for r in range(A.shape[0])` batched ({A.shape[0]} iterations)" in note
    assert "dot_general" in traced.ir


def test_loops_roll_keeps_the_while(rng):
    A, C = rng.standard_normal((12, 4, 3)), rng.standard_normal((3, 3))
    traced = _run(row_products, A, C, loops="roll")
    assert _whiles(traced) == 1 and traced.loop_notes == ()


def upper_product(A, B):
    for i in range(B.shape[0]):
        for j in range(B.shape[1]):
            B[i, j] += np.dot(A[i + 1:, i], B[i + 1:, j])


def test_an_inner_loop_over_columns_is_batched_inside_the_rolled_outer_one(rng):
    n, m = int(rng.integers(9, 20)), int(rng.integers(9, 20))
    traced = _run(upper_product, rng.random((n, n)), rng.random((n, m)))
    assert _whiles(traced) == 1  # the outer loop reads rows the previous iterations wrote
    (note,) = _batched(traced)
    assert "for j in range(B.shape[1])" in note


def _writes(traced) -> list[tuple[str, str]]:
    """(update type, array type) of each dynamic_update_slice in the module."""
    found = re.findall(r"stablehlo\.dynamic_update_slice [^:]*: \((tensor<[^>]*>), "
                       r"(tensor<[^>]*>)", traced.ir)
    return [(update, array) for array, update in found]


def every_other_column(A, B):
    for i in range(B.shape[0]):
        for j in range(0, B.shape[1], 2):
            B[i, j] += np.dot(A[i + 1:, i], B[i + 1:, j])


def row_twice(A, B):
    for i in range(1, B.shape[0]):
        for j in range(B.shape[1]):
            B[i, j] *= 0.5
            B[i, j] += A[i, j] * B[i - 1, j]  # the row before: the outer loop stays rolled


def two_rows(A, B):
    for i in range(1, B.shape[0]):
        for j in range(B.shape[1]):
            B[i, j] = B[i, j] * 0.5 + A[i, j]
            B[0, j] += B[i, j]  # row 0 too: no one window


def test_an_inner_loop_writing_one_row_of_its_columns_puts_back_that_row_only(rng):
    """An inner loop over columns that writes only row i of each (trmm's `B[i, j] += ...` in
    the loop over i) puts back a 1 x m window per run, not all of B (a copy of the array per
    outer iteration); with a stride the window's columns are scattered. Writes at two rows keep
    the whole columns. NumPy's results in every case."""
    n, m = int(rng.integers(9, 20)), int(rng.integers(9, 20))
    wide = int(rng.integers(24, 40))  # a short loop is unrolled: a stride needs more columns
    for kernel, cols in ((upper_product, m), (row_twice, m), (every_other_column, wide)):
        traced = _run(kernel, rng.random((n, max(n, cols))), rng.random((n, cols)))
        assert _whiles(traced) == 1 and len(_batched(traced)) == 1, traced.loop_notes
        assert f"tensor<{n}x{cols}xf64>" not in [u for u, _ in _writes(traced)], _writes(traced)
        if kernel is every_other_column:
            assert "stablehlo.scatter" in traced.ir  # each slot's element of row i
        else:
            assert (f"tensor<1x{m}xf64>", f"tensor<{n}x{m}xf64>") in _writes(traced)
    traced = _run(two_rows, rng.random((n, m)), rng.random((n, m)))
    assert (f"tensor<{n}x{m}xf64>", f"tensor<{n}x{m}xf64>") in _writes(traced)


def test_a_loop_with_a_traced_start_is_batched_over_the_values_it_can_take(rng):
    # gramschmidt's `for j in range(k + 1, n)`: each j updates column j; the iterations outside
    # the range run too, and their slots keep the values they had. The values j can take,
    # 1 .. n - 1, fall one column short of the axis: the loop runs over all n columns, so that
    # no slab is a copy of all columns but the first
    m = int(rng.integers(20, 40))
    traced = _run(gramschmidt, rng.standard_normal((m, 12)), tol=1e-9)
    (note,) = _batched(traced)
    assert "range(k + 1, A.shape[1])` batched (up to 11 iterations)" in note
    assert _whiles(traced) == 1
    # R[k, j] is all the loop writes of R: row k of its columns is put back, not all of R
    assert ("tensor<1x12xf64>", "tensor<12x12xf64>") in _writes(traced), _writes(traced)
    assert "x11xf64>" not in traced.ir  # no slab of 11 columns
    assert "stablehlo.gather" not in traced.ir and "stablehlo.scatter" not in traced.ir
    # the slots outside the range keep their values by a select of whole blocks, after the
    # batched body: XLA writes R's row in place, with no copy of R in each iteration
    bodies = _while_bodies(rl.explore(gramschmidt, rng.standard_normal((m, 12))).compiled
                           .hlo_text())
    assert bodies and not [b for b in bodies if re.search(r"f64\[12,12\]\S* copy\(", b)]


def reversed_tail(A, v):
    n = A.shape[1]
    for k in range(n):
        for j in range(k):  # column n - 1 - j: the last k columns, right to left
            A[:, n - 1 - j] = A[:, n - 1 - j] * v[k] + v[j]


def late_columns(A, v):
    n = A.shape[1]
    for k in range(n):
        for j in range(k + 4, n):  # columns 4 .. n - 1: 4 left out, over a quarter of n - 4
            A[:, j] = A[:, j] * v[k] + v[j]


def test_a_traced_range_near_its_whole_axis_runs_over_it_and_keeps_the_rest(rng):
    """A traced range whose values fall at most a quarter short of its slots' axis runs batched
    over the whole axis (here columns at a negative step, one short), the iterations outside
    the range keeping their columns; one further short runs over its own span, cut from the
    array. NumPy's results in both."""
    m, n = int(rng.integers(5, 11)), int(rng.integers(12, 20))  # m < n - 1: shapes tell apart
    traced = _run(reversed_tail, rng.random((m, n)), rng.random(n))
    assert len(_batched(traced)) == 1 and _whiles(traced) == 1, traced.loop_notes
    assert f"x{n - 1}xf64>" not in traced.ir  # no slab of n - 1 columns
    traced = _run(late_columns, rng.random((m, n)), rng.random(n))
    assert len(_batched(traced)) == 1 and _whiles(traced) == 1, traced.loop_notes
    assert f"tensor<{m}x{n - 4}xf64>" in traced.ir  # the columns the range can reach


def shifted_reads(T):
    for i in range(T.shape[0] - 2, -1, -1):
        for j in range(i + 1):  # row i - 3 wraps to the end of T for i < 3, as in NumPy
            T[i, j] += 0.5 * T[i - 3, j + 1] + T[i + 1, j]


def test_elements_read_before_the_write_come_from_the_array_not_slabs(rng):
    """A triangle's row update (`T[i, j] += larger(T[i + 1, j], T[i + 1, j + 1])` over j, inside
    a loop over i) reads single elements of its column slots before it writes row i of them: the
    batched loop reads those elements where they lie, each read one window of a row cut before
    the loop (no gather of index pairs, which cost triangle_max_path a third of its time), cuts
    no column slabs out of T (no slice of whole columns, no transpose of them), and still puts
    back row i only. NumPy's results, T updated in place, also where a read's row is negative
    (NumPy's wrap); a read after the write keeps the slabs."""
    from tests.loop_kernels import triangle_max_path

    n = int(rng.integers(12, 24))
    traced = _run(triangle_max_path, np.tril(rng.standard_normal((n, n))), tol=1e-12)
    assert len(_batched(traced)) == 1 and _whiles(traced) == 1, traced.loop_notes
    assert _moved_elements(traced) <= n, _moved_elements(traced)  # the row it writes, at most
    assert f"tensor<{n}x{n - 1}xf64>" not in traced.ir  # no slab of whole columns
    assert "stablehlo.gather" not in traced.ir
    assert (f"tensor<1x{n - 1}xf64>", f"tensor<{n}x{n}xf64>") in _writes(traced)
    traced = _run(shifted_reads, rng.standard_normal((n, n)), tol=1e-12)
    assert len(_batched(traced)) == 1 and "stablehlo.gather" not in traced.ir
    traced = _run(read_after_write, rng.random((n, n)))
    assert len(_batched(traced)) == 1, traced.loop_notes
    assert _moved_elements(traced) >= n * (n - 1)  # its column slabs, moved to the front


def _moved_elements(traced) -> int:
    """The most elements one stablehlo.transpose of the module moves."""
    shapes = re.findall(r"stablehlo\.transpose [^:]*: \(tensor<([0-9x]+)x\w+>\)", traced.ir)
    return max((int(np.prod([int(d) for d in s.split("x")])) for s in shapes), default=0)


def scaled_rows(x, w, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * w[i, 0] + x[x.shape[0] - 1 - i]  # x and w read at (and off) the slot


def test_inputs_read_at_the_slot_are_read_from_slabs_not_gathered(rng):
    """Arrays a batched body reads but does not update, read at the slot (recursive_filter's
    `x[i, j]` in its loop over j, batched over the rows i; `w[i, 0]`), are cut into slabs as
    the updated ones are and read there: no gather of index vectors, which XLA:CPU's cost
    analysis counted as all of x per step (the filter's loop then no longer ran as one native
    loop). A read off the slot (`x[n - 1 - i]`) still works. NumPy's results."""
    from tests.loop_kernels import recursive_filter

    rows, cols = int(rng.integers(9, 20)), int(rng.integers(10, 30))
    traced = _run(recursive_filter, rng.standard_normal((rows, cols)),
                  rng.standard_normal((rows, cols)), 0.9, tol=1e-12)
    assert len(_batched(traced)) == 1, traced.loop_notes
    assert "stablehlo.gather" not in traced.ir
    traced = _run(scaled_rows, rng.standard_normal((rows, 5)), rng.standard_normal((rows, 3)),
                  np.zeros((rows, 5)))
    assert len(_batched(traced)) == 1, traced.loop_notes
    assert "stablehlo.gather" not in traced.ir  # x[n - 1 - i]: the rows reversed


def read_after_write(T):
    for i in range(T.shape[0] - 2, -1, -1):
        for j in range(i + 1):
            T[i, j] = 0.5 * T[i, j]
            T[i, j] += T[i + 1, j]  # row i + 1 read after the write of row i
    return T[0, 0]


def strided_slots(x, out, back):
    n = x.shape[0]
    for i in range(n - 1, -1, -1):
        back[i] = x[i] * 2.0 + x[n - 1 - i]
    for i in range(0, n - 1, 2):
        out[i] = x[i] + x[i + 1]
    for i in range(n - 1):
        out[i + 1] += x[i] * 3.0
    return back.sum()


def test_slots_at_a_negative_step_a_stride_and_an_offset(rng):
    """Slots a step of -1 or 2 apart are cut as reversed or strided slices, not gathered."""
    n = int(rng.integers(20, 40))
    traced = _run(strided_slots, rng.standard_normal(n), np.zeros(n), rng.standard_normal(n))
    assert len(_batched(traced)) == 3 and _whiles(traced) == 0
    assert "stablehlo.gather" not in traced.ir
    assert "stablehlo.reverse" in traced.ir


def centre_columns(M):
    for j in range(M.shape[1]):
        M[:, j] -= M[:, j].mean()
        M[:, j] *= 2.0


def test_a_column_slot_read_and_written_twice(rng):
    traced = _run(centre_columns, rng.standard_normal((7, int(rng.integers(9, 20)))))
    assert len(_batched(traced)) == 1 and _whiles(traced) == 0


def rows_and_columns(A, B, x):
    for i in range(x.shape[0]):
        A[i] = A[i] * x[i]
        B[:, i] = A[i, :3] + B[:, i]  # reads the row just written, in the same iteration


def test_two_arrays_each_with_its_own_slot_axis(rng):
    n = int(rng.integers(9, 20))
    traced = _run(rows_and_columns, rng.standard_normal((n, 5)), rng.standard_normal((3, n)),
                  rng.standard_normal(n))
    assert len(_batched(traced)) == 1 and _whiles(traced) == 0


def diagonal(M):
    for i in range(M.shape[0]):
        M[i, i] = M[i, i - 1] * 2.0  # row i only: at i = 0, its last element


def test_a_slot_read_and_written_anywhere_along_its_other_axes(rng):
    traced = _run(diagonal, rng.standard_normal((int(rng.integers(9, 20)),) * 2))
    assert len(_batched(traced)) == 1 and _whiles(traced) == 0


def recurrence(x):
    for i in range(1, x.shape[0]):
        x[i] = x[i - 1] * 0.5 + x[i]


def weighted_total(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * i
    return s


def forward_recurrence(x):
    for i in range(x.shape[0] - 1):
        x[i + 1] = x[i] * 0.5 + x[i + 1]


def mirror(x):
    for i in range(x.shape[0]):
        x[i] = x[x.shape[0] - 1 - i] + 1.0  # the second half reads the first half's results


def shift_left(x):
    for i in range(x.shape[0] - 1):
        x[i] = x[i + 1]


def row_and_column(M):
    for i in range(M.shape[0]):
        M[i, i:] = M[i:, i] = M[i, i] + 1.0


def whole_array(x, y):
    for i in range(x.shape[0]):
        y += x[i]


def reads_the_whole(out):
    for i in range(out.shape[0]):
        out[i] = out.sum() * 0.5


def test_loops_whose_iterations_depend_on_each_other_stay_rolled(rng):
    n = int(rng.integers(12, 30))
    cases = [(recurrence, (rng.standard_normal(n),)),
             (row_and_column, (rng.standard_normal((n, n)),)),
             (reads_the_whole, (rng.standard_normal(n),)),
             (forward_recurrence, (rng.standard_normal(n),)),
             (mirror, (rng.standard_normal(n),))]
    for fn, args in cases:
        traced = _run(fn, *args)
        assert _batched(traced) == [] and _whiles(traced) >= 1, fn.__name__
    # a scalar accumulator is not batched either, but only accumulates: summed, no loop left
    # (tests/test_summed_loops.py)
    for fn, args in [(weighted_total, (rng.standard_normal(n),)),
                     (whole_array, (rng.standard_normal((n, 3)), np.zeros(3)))]:
        traced = _run(fn, *args)
        assert _batched(traced) == [] and _whiles(traced) == 0, fn.__name__
        assert any(" summed (" in note for note in traced.loop_notes), fn.__name__


def twice_ahead(A, out):
    for j in range(A.shape[1] - 2):
        A[:, j] = A[:, j + 2] - A[:, j]
        out[j] = A[:, j].sum()


def down_the_axis(x):
    for i in range(x.shape[0] - 1, 0, -1):
        x[i] = x[i - 1] + x[i]  # going down, i - 1 is written later


def read_then_written(x, y):
    for i in range(x.shape[0] - 1):
        ahead = x[i + 1]
        x[i] = ahead + 1.0
        y[i] = x[i + 1] * x[i]  # x[i + 1] read again after this iteration's write


def nested_ahead(A, w):
    for i in range(A.shape[0] - 1):
        for k in range(w.shape[0]):  # a loop in the body, on row i, reading row i + 1
            A[i] += A[i + 1] * w[k]


def sweeps_from_k(A):
    for k in range(A.shape[1] - 2):
        for j in range(k, A.shape[1] - 1):
            A[:, j] -= 0.25 * A[:, j + 1]


def both_ways(x):
    for i in range(1, x.shape[0] - 1):
        x[i] = x[i + 1] - x[i - 1]  # x[i - 1] was written by the previous iteration


def test_reads_of_slots_that_later_iterations_write_run_batched(rng):
    """x[i] = x[i + 1] ... going up (x[i - 1] going down) reads a slot no earlier iteration
    wrote: it still holds what it held before the loop, so the loop runs batched, reading it
    from there, with NumPy's results; a read of an earlier iteration's slot keeps the loop."""
    n = int(rng.integers(12, 30))
    cases = [(shift_left, (rng.standard_normal(n),)),
             (twice_ahead, (rng.standard_normal((4, n)), np.zeros(n))),
             (down_the_axis, (rng.standard_normal(n),)),
             (read_then_written, (rng.standard_normal(n), np.zeros(n))),
             (nested_ahead, (rng.standard_normal((n, 12)), rng.standard_normal(12) * 0.3))]
    for fn, args in cases:
        traced = _run(fn, *args)
        # nested_ahead's inner loop runs on the slabs, all rows at once, one while
        assert _whiles(traced) == (fn is nested_ahead), (fn.__name__, traced.loop_notes)
        assert "reads no slot an earlier one wrote" in _batched(traced)[-1], fn.__name__
    traced = _run(both_ways, rng.standard_normal(n))
    assert _batched(traced) == [] and _whiles(traced) == 1
    # a range with a traced start: batched over the values it can take, the outer loop rolled
    traced = _run(sweeps_from_k, rng.standard_normal((4, n)))
    (note,) = _batched(traced)
    assert "range(k, A.shape[1] - 1)` batched" in note and _whiles(traced) == 1


def test_a_loop_over_columns_reshapes_its_columns_in_place(rng):
    """The upwind sweep's loop over columns reads column j + 1 (a later slot) and each column
    as ``u[:, j]``, a reshape of the (n, 1) window: batched along the columns where they lie,
    such a reshape keeps the batch axis in place (backend.batch_axis_kept_by_unit_reshapes)
    rather than moving it to the front with a transpose, and JAX's own rule is back after."""
    from tests.numpy_kernels import upwind_sweep

    traced = _run(upwind_sweep, rng.random((int(rng.integers(9, 20)), int(rng.integers(12, 30)))),
                  0.4, 3)
    assert len(_batched(traced)) == 1

    def columns():  # a new function each time: JAX caches what it traced
        return jax.vmap(lambda c: c.reshape(-1) * 2.0, in_axes=1, out_axes=1)

    x = rng.random((5, 4, 1))
    with backend.batch_axis_kept_by_unit_reshapes():
        kept = jax.make_jaxpr(columns())(x)
        assert_close(columns()(x), x[:, :, 0] * 2.0, rtol=1e-6)
    assert "transpose" not in str(kept)
    assert "transpose" in str(jax.make_jaxpr(columns())(x))  # JAX's rule again


def test_a_column_loop_inside_a_row_loop_keeps_plain_windows(rng):
    """trmm: the loop over j (batched) inside the loop over i reads and writes B[i, j] at the
    enclosing loop's index, and contracts A[i + 1:, i] with B[i + 1:, j]. The batched body
    keeps plain windows of its column slabs (no gather or scatter built of index vectors),
    its frame A[i + 1:] is one comparison with an iota (it runs to the end of the axis), the
    write at a loop index known inside B has no bounds check, and the masked column slab no
    transposes: the traced module's only comparisons are the loop's condition and the frame.
    Results equal NumPy's, B updated in place."""
    from tests.numpy_kernels import trmm

    n, m = int(rng.integers(10, 20)), int(rng.integers(8, 16))
    traced = _run(trmm, 1.5, rng.standard_normal((n, n)), rng.standard_normal((n, m)))
    assert len(_batched(traced)) == 1 and _whiles(traced) == 1
    ops = re.findall(r"stablehlo\.(\w+)", traced.ir)
    assert "gather" not in ops and "scatter" not in ops, sorted(set(ops))
    assert ops.count("compare") == 2, ops.count("compare")
    assert ops.count("select") <= 2 and ops.count("transpose") <= 1, sorted(ops)


def test_window_and_select_rules_keep_the_batch_axis_in_place(rng):
    """backend.batch_rules_in_place: a dynamic_slice / dynamic_update_slice of a batched
    operand at unbatched starts stays that op over the whole batch axis (JAX's own rules make
    a gather / scatter), and a select of an operand batched on axis 1 with an unbatched mask
    broadcasts the mask there (JAX's moves both to the front); the values are JAX's, clamped
    starts included, and JAX's rules are back after."""
    x, mask = rng.standard_normal((6, 5, 3)), rng.random(6) > 0.5
    fill, rows = rng.standard_normal((1, 2)), rng.standard_normal((5, 2, 3))

    def fresh():  # a new function each time: JAX caches what it traced
        def one(c, r, i):  # c: (6, 3), a column slab of x; r batched on another axis; i a start
            win = jax.lax.dynamic_slice(c, (i, 0), (2, 3))
            upd = jax.lax.dynamic_update_slice(c, fill @ np.ones((2, 3)), (i, 1))
            moved = jax.lax.dynamic_update_slice(c, r, (i, 0))
            return win, upd, moved, jax.lax.select(np.broadcast_to(mask[:, None], (6, 3)), c,
                                                   np.zeros((6, 3)))
        return jax.vmap(one, in_axes=(1, 0, None), out_axes=1)

    for i in (2, 5, -1):  # 5 and -1: past the end, before the start: clamped
        want = fresh()(x, rows, i)
        with backend.batch_rules_in_place():
            kept = str(jax.make_jaxpr(fresh())(x, rows, i))
            got = fresh()(x, rows, i)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
        assert "gather" not in kept and "scatter" not in kept, kept
        assert kept.count("transpose") == 1, kept  # r's batch axis moved to c's, once
    default = str(jax.make_jaxpr(fresh())(x, rows, 2))
    assert "gather" in default and "scatter" in default and "transpose" in default


def big_temporaries(A, x, out):
    for i in range(out.shape[0]):
        out[i] = (A * x[i]).sum()


def products(A, X, out):
    for i in range(out.shape[0]):
        out[i] = A @ X[i]


def test_a_loop_that_reduces_much_more_than_it_writes_stays_rolled(rng):
    # batched, each iteration's temporary would be held at once: 1,000 of 600x600 float64 is
    # 2.9 GB; and even small ones are many times the one element each iteration writes, a loop
    # XLA fuses without holding them
    traced = rl.trace(big_temporaries, rng.random((600, 600)), rng.random(1000),
                      np.zeros(1000), loops="auto")
    assert _batched(traced) == [] and _whiles(traced) == 1
    small = _run(big_temporaries, rng.random((6, 6)), rng.random(20), np.zeros(20))
    assert _batched(small) == [] and _whiles(small) == 1
    n = int(rng.integers(9, 30))
    rows = _run(products, rng.random((5, 7)), rng.random((n, 7)), np.zeros((n, 5)))
    assert len(_batched(rows)) == 1 and _whiles(rows) == 0


def offsets(x, out, a, b, s):
    for i in range(2, x.shape[0] - 2, s):
        out[i + a] = out[i + b] * 0.5 + x[i]


def column_offsets(x, out, a, b, s):
    for i in range(2, x.shape[0] - 2, s):
        out[:, i + a] = out[:, i + b] * 0.5 + x[i]


def test_random_read_and_write_offsets_give_numpys_result(rng):
    # batched exactly when the read is of the written slot (a == b) or of a slot only a later
    # iteration writes (b - a of the sign of the step); any other offset may read what an
    # earlier iteration wrote, and the loop stays rolled
    for _ in range(12):
        a, b = (int(v) for v in rng.integers(-2, 3, 2))
        s = int(rng.choice([1, 1, 2, -1]))
        n = int(rng.integers(24, 40))
        fn = column_offsets if rng.random() < 0.5 else offsets
        out = rng.standard_normal((3, n) if fn is column_offsets else n)
        if s == -1:
            fn = _reversed(fn)
        traced = _run(fn, rng.standard_normal(n), out, a, b, abs(s))
        assert bool(_batched(traced)) == (a == b or (b - a) * s > 0), (fn.__name__, a, b, s)


def _reversed(fn):
    return {offsets: offsets_back, column_offsets: column_offsets_back}[fn]


def offsets_back(x, out, a, b, s):
    for i in range(x.shape[0] - 3, 1, -s):
        out[i + a] = out[i + b] * 0.5 + x[i]


def column_offsets_back(x, out, a, b, s):
    for i in range(x.shape[0] - 3, 1, -s):
        out[:, i + a] = out[:, i + b] * 0.5 + x[i]


@pytest.mark.parametrize("preset", list(rl.PRESETS))
def test_batched_loops_give_numpys_results_under_every_preset_and_memory_layout(preset, rng):
    # the updated arrays column-major, or strided views of larger ones: the slabs are read and
    # put back through the caller's own layout
    n = int(rng.integers(9, 20))
    base = rng.standard_normal((n, 2 * n + 3))
    A = np.asfortranarray(rng.standard_normal((n, 6, 5)))
    B = base[:, ::2]  # a strided view: the kernel updates it in place
    between = base[:, 1::2].copy()
    C, x = rng.standard_normal((5, 5)), rng.standard_normal(n)
    wide = rng.standard_normal((n, 2 * n))
    between_wide = wide[:, 1::2].copy()
    cases = ((row_products, (A, C)), (centre_columns, (B,)),
             (rows_and_columns, (rng.standard_normal((n, 5)),
                                 np.asfortranarray(rng.standard_normal((3, n))), x)),
             # a loop nested in the batched one, and masked row writes (syrk's form)
             (prefix_rows, (wide[:, ::2], n)),
             (syrk_like, (1.5, 1.2, np.asfortranarray(rng.random((n, n))),
                          rng.random((n, 16))[:, ::2])))
    for fn, args in cases:
        want_args = tuple(a.copy(order="K") if isinstance(a, np.ndarray) else a for a in args)
        fn(*want_args)
        jf = rl.jit(fn, optimize=preset)
        jf(*args)
        for got, want in zip(args, want_args, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
        assert _batched(jf.last.traced), fn.__name__
    np.testing.assert_array_equal(base[:, 1::2], between)  # untouched between the strides
    np.testing.assert_array_equal(wide[:, 1::2], between_wide)


def prefix_rows(a, n):
    for i in range(n):
        for j in range(1, n):
            a[i, j] += a[i, j - 1] * 0.5


def prefix_columns(a, n):
    for i in range(1, n):
        for j in range(n):
            a[i, j] += a[i - 1, j] * 0.5  # reads the row before: the rows depend on each other


def syrk_like(alpha, beta, C, A):
    for i in range(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]


def test_a_loop_whose_body_runs_a_loop_on_its_own_row_runs_batched(rng):
    """An inner loop that carries the array but touches only the outer loop's row (a running
    prefix along each row; syrk's masked row prefix C[i, :i + 1] updated over k) runs once
    over all rows at once: one while left, the inner one, and NumPy's results. An outer loop
    whose iterations read the row before stays rolled (its inner loop over columns batches).
    syrk's inner loop only accumulates: it is summed, and its outer loop batched."""
    n = int(rng.integers(9, 16))
    traced = _run(prefix_rows, rng.random((n, n)), n)
    assert _whiles(traced) == 1 and len(_batched(traced)) == 1, traced.loop_notes
    traced = _run(prefix_columns, rng.random((n, n)), n)  # its columns batch, not its rows
    (note,) = _batched(traced)
    assert _whiles(traced) == 1 and "`for j in range(n)`" in note, traced.loop_notes
    m = int(rng.integers(8, 12))
    # syrk's inner loop only accumulates: summed (tests/test_summed_loops.py), no loop left
    traced = _run(syrk_like, 1.5, 1.2, rng.random((n, n)), rng.random((n, m)))
    assert _whiles(traced) == 0 and len(_batched(traced)) == 1, traced.loop_notes
    assert "scatter" not in traced.ir  # the masked row written back as a window
    traced = _run(syrk_like, 1.5, 1.2, rng.random((n, n)), rng.random((n, m)), loops="roll")
    assert _whiles(traced) == 2 and not _batched(traced), traced.loop_notes


def slot_and_total(x, y, out):
    # a slot write beside an accumulator that reads none of it: two loops, batched and summed
    total = 0.0
    for i in range(x.shape[0]):
        out[i] = x[i] * y[i] if x[i] > y[i] else -x[i]
        total += x[i] * y[x.shape[0] - 1 - i]
    return total


def slot_and_total_ints(seq1, seq2):
    # the kernel: a helper with an `if`, stored and summed, a negative index
    M = np.zeros(seq1.shape[0], dtype=np.int64)
    total = 0
    for i in range(seq1.shape[0]):
        M[i] = 1 if seq1[i] + seq2[i] == 3 else 0
        total += 1 if seq1[i] + seq2[-1 - i] == 3 else 0
    return M, np.asarray(total)


def total_read_by_the_slot(x, out):
    # the slot write reads the running total: one group, the loop stays rolled
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i]
        out[i] = total * 0.5
    return total


def running_sums(x, y):
    total, count, peak = 0.0, 0, np.float32(-1.0)
    for i in range(x.shape[0]):
        total += x[i]  # float32 x: NumPy keeps the sum float32, not the Python float's float64
        count += y[i] > 0.5  # a Python int plus a bool: int64
        peak = max(peak, x[i])
    return total, count, peak


def test_python_numbers_the_body_makes_traced_keep_numpys_types(rng):
    n = int(rng.integers(12, 40))
    x, y = rng.standard_normal(n).astype(np.float32), rng.random(n)
    want = running_sums(x, y)
    got = rl.jit(running_sums)(x, y)
    assert [np.asarray(g).dtype for g in got] == [np.asarray(w).dtype for w in want]
    assert_close(got[0], want[0], rtol=1e-5)  # running sums pass near zero
    assert got[1] == want[1] and got[2] == want[2]


def accumulate(x):
    total = 0
    for i in range(x.shape[0]):
        total = total * 2 + x[i]
    return total


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_a_python_number_the_body_makes_traced_keeps_jaxs_types(dtype, x64, rng):
    # JAX mode carries no number early: `total = 0` carried as int64 (64-bit types on) made
    # int32 steps int64, where JAX keeps int32; its first iteration runs apart
    with jax.enable_x64(x64):
        x = jnp.asarray(rng.integers(-5, 5, int(rng.integers(9, 20))), dtype=dtype)
        want, got = accumulate(x), rl.jit(accumulate)(x)
        assert got.dtype == want.dtype and got == want


def test_a_slot_write_beside_an_accumulator_splits_into_two_loops(rng):
    n = int(rng.integers(12, 40))
    x, y = rng.standard_normal(n), rng.standard_normal(n)
    traced = _run(slot_and_total, x, y, rng.standard_normal(n))
    assert _whiles(traced) == 0
    (note,) = traced.loop_notes
    # `total`, a Python float the body makes traced, is carried from the first iteration on
    # (that iteration used to run ahead of the loop, peeled: its own kernels in the module)
    assert f"`for i in range(x.shape[0])` split ({n} iterations)" in note
    traced = _run(slot_and_total_ints, *(rng.integers(0, 4, n) for _ in range(2)))
    assert _whiles(traced) == 0 and " split (" in traced.loop_notes[0]
    traced = _run(total_read_by_the_slot, x, rng.standard_normal(n))
    assert _whiles(traced) == 1 and not any(" split (" in t for t in traced.loop_notes)


@pytest.mark.parametrize("preset", ["none", "all"])
def test_split_loops_give_numpys_results_under_presets(preset, rng):
    n = int(rng.integers(12, 40))
    x, y = rng.standard_normal(n), rng.standard_normal(n)
    want_out, got_out = np.zeros(n), np.zeros(n)
    want = slot_and_total(x, y, want_out)
    got = rl.jit(slot_and_total, optimize=preset)(x, y, got_out)
    assert_close(got_out, want_out, rtol=1e-12)
    assert_close(np.asarray(got), np.asarray(want), rtol=1e-12)


def test_an_outer_loop_around_a_batched_loop_that_views_a_whole_input_runs_batched(rng):
    """ndarray_fill's loop over j reads x[i, j] for every j: batched, it reads a view of the
    whole of x (a broadcast of x, the same in every iteration of the loop over i). The loop over
    i then holds that view once, not once per iteration: it runs batched too, no while left
    (it stayed a while, counted as 60 copies of x past the limit on what a body may hold), and
    reads its row of the view as it reads an input's."""
    from tests.numpy_kernels import ndarray_fill

    x = rng.standard_normal((int(rng.integers(40, 61)), int(rng.integers(40, 61)), 20))
    traced = _run(ndarray_fill, x)
    assert len(_batched(traced)) == 2, traced.loop_notes
    assert _whiles(traced) == 0
    # x[i] read from that view: cut from it once, before the loop, as from an input (read at
    # the batched index it was a gather of every row: a copy of x)
    assert "stablehlo.gather" not in traced.ir
