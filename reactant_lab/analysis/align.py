"""Line alignment for large inputs: an exact longest common subsequence, computed bit-parallel.

``difflib.SequenceMatcher`` treats lines that repeat often as junk, and IR repeats lines a lot
(``%_ = stablehlo.add %_, %_ : tensor<...>``), so it either aligns badly or slows down
quadratically; patience diff anchors on lines unique to both sides, and a module has few, so one
stray anchor can misalign everything. Here a gap gets an exact LCS computed bit-parallel on Python
integers (a few big-integer operations per line of the other side); very large gaps are halved
Hirschberg-style first (still exact), unless unique lines are plentiful enough to anchor on.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Hashable, Sequence

MAX_LCS_CELLS = 100_000_000
"""Largest gap (lines x lines) whose LCS is traced back directly: its bit rows take cells / 8
bytes. Larger gaps are split first."""
DENSE_ANCHORS = 50
"""A large gap is split at unique lines only when at least one line in this many is one."""


def align(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[tuple[str, int, int, int, int]]:
    """``difflib``-style opcodes (tag, a0, a1, b0, b1) turning ``a`` into ``b``; tags are
    'equal', 'replace', 'delete' and 'insert'."""
    ids: dict[Hashable, int] = {}
    ia = [ids.setdefault(x, len(ids)) for x in a]
    ib = [ids.setdefault(x, len(ids)) for x in b]
    pairs: list[tuple[int, int]] = []
    todo = [(0, len(ia), 0, len(ib))]
    while todo:
        alo, ahi, blo, bhi = todo.pop()
        while alo < ahi and blo < bhi and ia[alo] == ib[blo]:
            pairs.append((alo, blo))
            alo, blo = alo + 1, blo + 1
        while alo < ahi and blo < bhi and ia[ahi - 1] == ib[bhi - 1]:
            ahi, bhi = ahi - 1, bhi - 1
            pairs.append((ahi, bhi))
        if alo == ahi or blo == bhi:
            continue
        if (ahi - alo) * (bhi - blo) <= MAX_LCS_CELLS or bhi - blo < 2:
            pairs.extend(_lcs(ia, alo, ahi, ib, blo, bhi))
            continue
        anchors = _unique_anchors(ia, alo, ahi, ib, blo, bhi)
        if len(anchors) * DENSE_ANCHORS < min(ahi - alo, bhi - blo):
            todo.extend(_split(ia, alo, ahi, ib, blo, bhi))
            continue
        prev_a, prev_b = alo, blo
        for i, j in anchors:
            pairs.append((i, j))
            todo.append((prev_a, i, prev_b, j))
            prev_a, prev_b = i + 1, j + 1
        todo.append((prev_a, ahi, prev_b, bhi))
    pairs.sort()
    return _opcodes(pairs, len(ia), len(ib))


def _unique_anchors(a: list[int], alo: int, ahi: int, b: list[int], blo: int,
                    bhi: int) -> list[tuple[int, int]]:
    """Lines occurring once on each side, longest increasing run of them (patience diff)."""
    count: dict[int, int] = {}
    where_a: dict[int, int] = {}
    for i in range(alo, ahi):
        x = a[i]
        count[x] = count.get(x, 0) + 1
        where_a[x] = i
    count_b: dict[int, int] = {}
    where_b: dict[int, int] = {}
    for j in range(blo, bhi):
        x = b[j]
        if count.get(x) == 1:
            count_b[x] = count_b.get(x, 0) + 1
            where_b[x] = j
    cands = sorted((where_a[x], j) for x, j in where_b.items() if count_b[x] == 1)
    return _longest_increasing(cands)


def _longest_increasing(cands: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Longest subsequence of (i, j) pairs sorted by i whose j also increases."""
    tails: list[int] = []
    tail_idx: list[int] = []
    back: list[int] = [-1] * len(cands)
    for k, (_, j) in enumerate(cands):
        pos = bisect.bisect_left(tails, j)
        if pos == len(tails):
            tails.append(j)
            tail_idx.append(k)
        else:
            tails[pos] = j
            tail_idx[pos] = k
        back[k] = tail_idx[pos - 1] if pos else -1
    out: list[tuple[int, int]] = []
    k = tail_idx[-1] if tail_idx else -1
    while k != -1:
        out.append(cands[k])
        k = back[k]
    return out[::-1]


def _lcs(a: list[int], alo: int, ahi: int, b: list[int], blo: int,
         bhi: int) -> list[tuple[int, int]]:
    """Matched pairs of a longest common subsequence (Hyyrö's bit-parallel rows, one Python int
    per line of ``b``; bit i of row j is 0 where LCS(a[:i+1], b[:j]) steps up)."""
    n = ahi - alo
    masks: dict[int, int] = {}
    for i in range(n):
        masks[a[alo + i]] = masks.get(a[alo + i], 0) | (1 << i)
    full = (1 << n) - 1
    v = full
    rows = [v]
    for j in range(blo, bhi):
        u = v & masks.get(b[j], 0)
        v = ((v + u) | (v - u)) & full
        rows.append(v)
    pairs: list[tuple[int, int]] = []
    i, j = n, bhi - blo
    while i > 0 and j > 0:
        if a[alo + i - 1] == b[blo + j - 1]:
            i, j = i - 1, j - 1
            pairs.append((alo + i, blo + j))
            continue
        low = (1 << i) - 1
        # LCS(a[:i], b[:j]) == LCS(a[:i], b[:j-1]): skipping b[j-1] keeps the length.
        if (rows[j] & low).bit_count() == (rows[j - 1] & low).bit_count():
            j -= 1
        else:
            i -= 1
    return pairs


def _lcs_lengths(a: Sequence[int], b: Sequence[int]) -> list[int]:
    """LCS(a[:i], b) for every i, from the last bit row alone (memory O(len(a)))."""
    n = len(a)
    masks: dict[int, int] = {}
    for i, x in enumerate(a):
        masks[x] = masks.get(x, 0) | (1 << i)
    full = (1 << n) - 1
    v = full
    for x in b:
        u = v & masks.get(x, 0)
        v = ((v + u) | (v - u)) & full
    zeros = bin(v)[2:].zfill(n)[::-1] if n else ""
    return [0, *itertools.accumulate(c == "0" for c in zeros)]


def _split(a: list[int], alo: int, ahi: int, b: list[int], blo: int,
           bhi: int) -> list[tuple[int, int, int, int]]:
    """Hirschberg's step: cut a gap too large for ``_lcs`` into two whose LCSs add up to its."""
    mid = (blo + bhi) // 2
    fwd = _lcs_lengths(a[alo:ahi], b[blo:mid])
    bwd = _lcs_lengths(a[alo:ahi][::-1], b[mid:bhi][::-1])
    n = ahi - alo
    cut = max(range(n + 1), key=lambda i: fwd[i] + bwd[n - i])
    return [(alo, alo + cut, blo, mid), (alo + cut, ahi, mid, bhi)]


def _opcodes(pairs: list[tuple[int, int]], n: int, m: int) -> list[tuple[str, int, int, int, int]]:
    """Sorted matched pairs -> opcodes covering both sequences."""
    ops: list[tuple[str, int, int, int, int]] = []
    i = j = 0
    k = 0
    while k <= len(pairs):
        pi, pj = pairs[k] if k < len(pairs) else (n, m)
        if i < pi or j < pj:
            tag = "replace" if i < pi and j < pj else ("delete" if i < pi else "insert")
            ops.append((tag, i, pi, j, pj))
        if k == len(pairs):
            break
        run = k
        while run + 1 < len(pairs) and pairs[run + 1] == (pairs[run][0] + 1, pairs[run][1] + 1):
            run += 1
        ops.append(("equal", pi, pairs[run][0] + 1, pj, pairs[run][1] + 1))
        i, j = pairs[run][0] + 1, pairs[run][1] + 1
        k = run + 1
    return ops
