"""Collectives in XLA's per-device (partitioned) HLO text: which ones, on what shapes, between
which devices, how many bytes; and the executable's memory per device.

A pure function on the text ``Compiled.hlo_text()`` gives (XLA's optimized HLO, after the SPMD
partitioner): every ``all-reduce``, ``all-gather``, ``reduce-scatter``, ``collective-permute``,
``all-to-all`` (and ``collective-broadcast``), synchronous or split into ``-start`` / ``-done``
(the ``-start`` op is counted, the ``-done`` is not). An op in a loop body is listed once, as it
is written, not once per iteration.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all",
               "collective-broadcast")
"""The collective ops XLA's partitioner writes, in the order reports list them."""

_BITS = {"pred": 8, "s2": 2, "u2": 2, "s4": 4, "u4": 4, "s8": 8, "u8": 8, "s16": 16, "u16": 16,
         "f16": 16, "bf16": 16, "s32": 32, "u32": 32, "f32": 32, "s64": 64, "u64": 64,
         "f64": 64, "c64": 64, "c128": 128, "token": 0}
_INSTRUCTION = re.compile(
    r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=\s*(?P<shape>.+?)\s+"
    r"(?P<op>" + "|".join(COLLECTIVES) + r")(?P<start>-start)?\(")
_ARRAY = re.compile(r"\b(?P<dtype>[a-z]+\d*(?:e\d+m\d+\w*)?)\[(?P<dims>[\d,\s]*)\]")
_COMPUTATION = re.compile(r"^\s*(?:ENTRY\s+)?%?(?P<name>[\w.\-]+)\s.*\{\s*$")
_HEADER_INT = r"\b{}=(\d+)"


@dataclass(frozen=True)
class Collective:
    """One collective op of the partitioned HLO."""

    op: str
    """'all-reduce', 'all-gather', 'reduce-scatter', 'collective-permute', 'all-to-all' or
    'collective-broadcast' (an async ``-start`` op under its synchronous name)."""
    name: str
    """The instruction's name in the HLO (``%all-reduce.3``, without the ``%``)."""
    shape: str
    """Its result shape as XLA prints it (per device), layouts dropped."""
    bytes: int
    """Bytes of its result on one device (for a ``-start`` op, of the value it produces)."""
    replica_groups: tuple[tuple[int, ...], ...] = ()
    """The groups of devices it runs over (XLA's iota form ``[2,4]<=[8]`` and mesh-axes form
    ``mesh['axis_0'=2,'axis_1'=4] {'axis_1'}`` expanded); empty for a collective-permute, or
    when the HLO gives none (all devices as one group) or a form not read here (see
    ``groups_text``)."""
    groups_text: str = ""
    """``replica_groups=`` as the HLO writes it (empty when it has none)."""
    source_target_pairs: tuple[tuple[int, int], ...] = ()
    """For a collective-permute: (source, target) device pairs."""
    dimensions: tuple[int, ...] = ()
    """The gathered / scattered / exchanged dimensions, where the op has them."""
    asynchronous: bool = False
    """Whether XLA split it into ``-start`` / ``-done``."""
    computation: str = ""
    """The HLO computation it is in (the entry, or a loop body...)."""
    op_name: str = ""
    """The traced op XLA inserted it for, as its metadata names it (``jit(f)/dot_general``);
    empty when the HLO does not say."""
    frames: tuple[tuple[str, int, int], ...] = ()
    """That op's Python source as (file, line, column) frames, innermost first, from the
    metadata's ``stack_frame_id`` (resolved through the module's stack-frame tables) or its
    ``source_file`` / ``source_line``; empty when the HLO does not say."""
    line: str = field(default="", repr=False)
    """The HLO line, metadata dropped."""

    @property
    def devices(self) -> str:
        """Who takes part: ``groups {0,1}{2,3}``, ``pairs 0->1 1->2`` or ``all devices``."""
        return (f"pairs {_pairs(self.source_target_pairs)}" if self.source_target_pairs else
                f"groups {_groups(self.replica_groups)}" if self.replica_groups else
                "all devices")

    def describe(self) -> str:
        """One line: op, shape, bytes and the devices."""
        dims = f" dims {list(self.dimensions)}" if self.dimensions else ""
        return f"{self.op} {self.shape}{dims} ({_size(self.bytes)}), {self.devices}"


@dataclass(frozen=True)
class CollectiveReport:
    """The collectives of one partitioned executable and its memory per device."""

    collectives: tuple[Collective, ...]
    """Every collective op, in HLO order."""
    partitions: int
    """Devices the program is partitioned over (the HLO module's ``num_partitions``)."""
    replicas: int
    """Replicas (the HLO module's ``num_replicas``)."""
    memory_per_device: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    """XLA's memory analysis of the per-device program: argument, output, alias, temp and code
    bytes on each device."""

    @property
    def counts(self) -> dict[str, int]:
        """Op -> how many, for the ops present, in COLLECTIVES order."""
        found = {op: sum(c.op == op for c in self.collectives) for op in COLLECTIVES}
        return {op: n for op, n in found.items() if n}

    @property
    def bytes(self) -> int:
        """Sum of the collectives' result bytes on one device (each op once)."""
        return sum(c.bytes for c in self.collectives)

    def of(self, op: str) -> tuple[Collective, ...]:
        """The collectives of one kind (``'all-reduce'``...)."""
        return tuple(c for c in self.collectives if c.op == op)

    def table(self) -> str:
        """Plain text: the counts, one line per collective, the memory per device."""
        counts = ", ".join(f"{n} {op}" for op, n in self.counts.items()) or "no collectives"
        lines = [f"{self.partitions} partition(s) x {self.replicas} replica(s): {counts}"]
        lines += [f"  {c.describe()}" for c in self.collectives]
        if self.memory_per_device:
            lines.append("memory per device: " + ", ".join(
                f"{k.removesuffix('_size_in_bytes')} {_size(v)}"
                for k, v in self.memory_per_device.items()))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def collective_report(hlo: str, memory: Mapping[str, int] | None = None) -> CollectiveReport:
    """The collectives of XLA's HLO text ``hlo`` (``Compiled.hlo_text()``), with ``memory``
    (``Compiled.memory_analysis()``) as the memory per device."""
    header = next((line for line in hlo.splitlines() if line.startswith("HloModule")), "")
    return CollectiveReport(
        collectives=collectives(hlo), partitions=_header_int(header, "num_partitions"),
        replicas=_header_int(header, "num_replicas"),
        memory_per_device=MappingProxyType(dict(memory or {})))


def collectives(hlo: str) -> tuple[Collective, ...]:
    """Every collective op of HLO text, in order."""
    found: list[Collective] = []
    computation = ""
    stack = _stack_frames(hlo)
    for raw in hlo.splitlines():
        line = _without_metadata(raw)
        match = _INSTRUCTION.match(line)
        if match is None:
            head = _COMPUTATION.match(line)
            if head is not None and "=" not in line.split("{", 1)[0]:
                computation = head["name"]
            continue
        op, start = match["op"], bool(match["start"])
        shapes = _arrays(match["shape"])
        if start and op != "all-reduce" and len(shapes) >= 2:
            shapes = shapes[1:2]  # (operand, result, ...): the value it produces
        attrs, meta = line[match.end():], _metadata(raw)
        found.append(Collective(
            op=op, name=match["name"], shape=_shape_text(match["shape"]),
            bytes=sum(_bytes(d, dims) for d, dims in shapes),
            replica_groups=_replica_groups(attrs), groups_text=_groups_text(attrs),
            source_target_pairs=_pairs_of(attrs),
            dimensions=_dimensions(attrs), asynchronous=start, computation=computation,
            op_name=meta.get("op_name", ""), frames=_op_frames(meta, stack),
            line=line.strip()))
    return tuple(found)


_TABLE_ROW = re.compile(r"^(\d+)\s+(.*)$")


def _stack_frames(hlo: str) -> dict[int, tuple[tuple[str, int, int], ...]]:
    """Stack frame id -> its (file, line, column) chain, innermost first, from the HLO module's
    ``FileNames`` / ``FileLocations`` / ``StackFrames`` tables (printed between the header and
    the first computation)."""
    tables: dict[str, dict[int, str]] = {}
    current: dict[int, str] | None = None
    for line in hlo.splitlines():
        if line in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            current = tables.setdefault(line, {})
        elif current is not None and (row := _TABLE_ROW.match(line)) is not None:
            current[int(row.group(1))] = row.group(2)
        elif line.strip() or current is not None:
            current = None
            if line.startswith(("%", "ENTRY")):
                break
    files = {k: v.strip().strip('"') for k, v in tables.get("FileNames", {}).items()}
    places: dict[int, tuple[str, int, int]] = {}
    for k, v in tables.get("FileLocations", {}).items():
        fields = dict(re.findall(r"(\w+)=(\d+)", v))
        places[k] = (files.get(int(fields.get("file_name_id", 0)), ""),
                     int(fields.get("line", 0)), int(fields.get("column", 0)))
    parents: dict[int, tuple[int, int]] = {}
    for k, v in tables.get("StackFrames", {}).items():
        fields = dict(re.findall(r"(\w+)=(\d+)", v))
        # The printer writes a parent's id plus one, so a root frame (parent 0, none) writes 1:
        # JAX's frames of a function called from frame 1 all write 2.
        parents[k] = (int(fields.get("file_location_id", 0)),
                      int(fields.get("parent_frame_id", 1)) - 1)
    chains: dict[int, tuple[tuple[str, int, int], ...]] = {}
    for frame in parents:
        chain: list[tuple[str, int, int]] = []
        seen: set[int] = set()
        at = frame
        while at in parents and at not in seen:
            seen.add(at)
            place, at = parents[at]
            if place in places:
                chain.append(places[place])
        chains[frame] = tuple(chain)
    return chains


_METADATA = re.compile(r"\bmetadata=\{")
_METADATA_FIELD = re.compile(r'\s*(\w+)=("(?:[^"\\]|\\.)*"|[^\s}]*)')


def _metadata(line: str) -> dict[str, str]:
    """An HLO instruction's ``metadata={op_name="..." stack_frame_id=4 ...}`` as key -> value
    (quotes dropped); {} when it has none."""
    start = _METADATA.search(line)
    fields: dict[str, str] = {}
    pos = start.end() if start else len(line)
    while (field := _METADATA_FIELD.match(line, pos)) is not None and field.group(2):
        value = field.group(2)
        fields[field.group(1)] = value[1:-1] if value.startswith('"') else value
        pos = field.end()
    return fields


def _op_frames(meta: dict[str, str], stack: dict[int, tuple[tuple[str, int, int], ...]]
               ) -> tuple[tuple[str, int, int], ...]:
    """The Python frames of a collective's metadata: its stack frame's chain, else its
    ``source_file`` and ``source_line`` (older XLA), else none."""
    frame = meta.get("stack_frame_id", "")
    if frame.isdigit() and int(frame) in stack:
        return stack[int(frame)]
    row, col = meta.get("source_line", ""), meta.get("source_column", "")
    if meta.get("source_file") and row.isdigit():
        return ((meta["source_file"], int(row), int(col) if col.isdigit() else 0),)
    return ()


def _without_metadata(line: str) -> str:
    for key in (", metadata={", ", backend_config=", ", frontend_attributes={"):
        at = line.find(key)
        if at >= 0:
            line = line[:at]
    return line


def _arrays(shape: str) -> list[tuple[str, tuple[int, ...]]]:
    out = []
    for m in _ARRAY.finditer(shape):
        dims = tuple(int(d) for d in m["dims"].replace(" ", "").split(",") if d)
        out.append((m["dtype"], dims))
    return out


def _shape_text(shape: str) -> str:
    return re.sub(r"\{[\d,\s]*\}", "", shape).strip()


def _bytes(dtype: str, dims: tuple[int, ...]) -> int:
    bits = _BITS.get(dtype, 8 if dtype.startswith("f8") else 32)
    return (math.prod(dims) * bits + 7) // 8


def _header_int(header: str, key: str) -> int:
    match = re.search(_HEADER_INT.format(key), header)
    return int(match.group(1)) if match else 1


def _replica_groups(attrs: str) -> tuple[tuple[int, ...], ...]:
    listed = re.search(r"replica_groups=\{((?:\{[\d,\s]*\},?)*)\}", attrs)
    if listed is not None:
        return tuple(tuple(int(d) for d in g.split(",") if d.strip())
                     for g in re.findall(r"\{([\d,\s]*)\}", listed.group(1)))
    axes = re.search(r"replica_groups=mesh\[([^\]]*)\]\s*\{([^}]*)\}", attrs)
    if axes is not None:
        return _mesh_groups(axes.group(1), axes.group(2))
    iota = re.search(r"replica_groups=\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", attrs)
    if iota is None:
        return ()
    shape = [int(d) for d in iota.group(1).split(",")]
    reshape = [int(d) for d in iota.group(2).split(",")]
    perm = [int(d) for d in iota.group(3).split(",")] if iota.group(3) else \
        list(range(len(reshape)))
    return _iota_groups(shape, reshape, perm)


def _iota_groups(shape: list[int], reshape: list[int],
                 perm: list[int]) -> tuple[tuple[int, ...], ...]:
    """XLA's iota replica groups: ``iota(prod(reshape))`` reshaped to ``reshape``, transposed by
    ``perm``, flattened and reshaped to ``shape`` (groups x group size)."""
    strides = [math.prod(reshape[i + 1:]) for i in range(len(reshape))]
    dims = [reshape[p] for p in perm]
    flat = [sum(index[k] * strides[perm[k]] for k in range(len(perm)))
            for index in itertools.product(*(range(d) for d in dims))]
    size = shape[-1] if shape else len(flat)
    return tuple(tuple(flat[i:i + size]) for i in range(0, len(flat), size))


def _mesh_groups(mesh: str, chosen: str) -> tuple[tuple[int, ...], ...]:
    """Groups of XLA's mesh-axes form: devices (numbered row-major over the mesh) that differ
    only along the ``chosen`` axes, one group per position on the other axes. () for sub-axes
    or names not read here."""
    sizes: dict[str, int] = {}
    for item in filter(None, (p.strip() for p in mesh.split(","))):
        m = re.fullmatch(r"'([^']+)'=(\d+)", item)
        if m is None:
            return ()
        sizes[m.group(1)] = int(m.group(2))
    names = [n.strip().strip("'") for n in chosen.split(",") if n.strip()]
    if not all(n in sizes for n in names):
        return ()
    order = list(sizes)
    strides = {n: math.prod(sizes[k] for k in order[i + 1:]) for i, n in enumerate(order)}
    rest = [n for n in order if n not in names]
    groups = []
    for outer in itertools.product(*(range(sizes[n]) for n in rest)):
        base = sum(i * strides[n] for n, i in zip(rest, outer, strict=True))
        groups.append(tuple(base + sum(i * strides[n] for n, i in zip(names, inner, strict=True))
                            for inner in itertools.product(*(range(sizes[n]) for n in names))))
    return tuple(groups)


def _groups_text(attrs: str) -> str:
    match = re.search(r"replica_groups=(mesh\[[^\]]*\]\s*\{[^}]*\}|\{(?:\{[\d,\s]*\},?)*\}|"
                      r"\[[\d,]+\]<=\[[\d,]+\](?:T\([\d,]+\))?)", attrs)
    return match.group(1) if match else ""


def _pairs_of(attrs: str) -> tuple[tuple[int, int], ...]:
    listed = re.search(r"source_target_pairs=\{((?:\{\d+,\d+\},?)*)\}", attrs)
    if listed is None:
        return ()
    return tuple((int(a), int(b)) for a, b in re.findall(r"\{(\d+),(\d+)\}", listed.group(1)))


def _dimensions(attrs: str) -> tuple[int, ...]:
    match = re.search(r"\bdimensions=\{([\d,]*)\}", attrs)
    return tuple(int(d) for d in match.group(1).split(",") if d) if match else ()


def _groups(groups: tuple[tuple[int, ...], ...]) -> str:
    text = "".join("{" + ",".join(map(str, g)) + "}" for g in groups)
    return text if len(text) <= 60 else text[:57] + "..."


def _pairs(pairs: tuple[tuple[int, int], ...]) -> str:
    text = " ".join(f"{a}->{b}" for a, b in pairs)
    return text if len(text) <= 60 else text[:57] + "..."


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    return f"{n / 1024:.1f} KiB" if n < 1024 ** 2 else f"{n / 1024 ** 2:.1f} MiB"
