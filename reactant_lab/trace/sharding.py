"""Sharded arguments: a JAX array's NamedSharding over a mesh, or ``in_shardings=`` (a
PartitionSpec per argument path, over ``mesh=``) for NumPy arguments.

Nothing here partitions anything: the shardings are handed to JAX's lowering, which writes the
mesh (``sdy.mesh``) and each argument's ``sdy.sharding`` into the module, and XLA's Shardy
partitioner does the rest when the module compiles.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import AbstractMesh, Mesh, NamedSharding, PartitionSpec

from reactant_lab.errors import ShardingError

MeshLike = Mesh | Mapping[str, int] | None
"""A jax.sharding.Mesh, or axis sizes (``{"data": 4, "model": 2}``) for a mesh over the first
devices present."""


def describe(sharding: NamedSharding) -> str:
    """A readable sharding: ``mesh['data'=4, 'model'=2] P('data', None)``."""
    return f"{_mesh_name(sharding.mesh)} {sharding.spec}"


def _mesh_name(mesh: Mesh | AbstractMesh) -> str:
    axes = ", ".join(f"{name!r}={size}" for name, size in mesh.shape.items())
    return f"mesh[{axes}]"


def of_value(value: Any) -> NamedSharding | None:
    """The NamedSharding of a JAX array placed over a mesh of several devices, else None (a
    single-device array, a NumPy array: the unsharded path)."""
    if not isinstance(value, jax.Array):
        return None
    sharding = getattr(value, "sharding", None)
    if isinstance(sharding, NamedSharding) and sharding.mesh.size > 1:
        return sharding
    return None


def make_mesh(mesh: MeshLike) -> Mesh | None:
    """``mesh=`` as a Mesh (None stays None). Axis sizes build one over the first devices
    present; more devices than there are is an error."""
    if mesh is None or isinstance(mesh, Mesh):
        return mesh
    if not isinstance(mesh, Mapping) or not all(
            isinstance(k, str) and isinstance(v, int) and v > 0 for k, v in mesh.items()):
        raise ShardingError(f"mesh= must be a jax.sharding.Mesh or a dict of axis sizes such as "
                            f"{{'data': 4, 'model': 2}}, not {mesh!r}")
    size, devices = math.prod(mesh.values()), jax.devices()
    if size > len(devices):
        raise ShardingError(
            f"mesh {dict(mesh)} needs {size} devices and {len(devices)} "
            f"{'is' if len(devices) == 1 else 'are'} present. On CPU, simulate more with "
            "XLA_FLAGS=--xla_force_host_platform_device_count=N, set before JAX starts.")
    grid = np.array(devices[:size], dtype=object).reshape(tuple(mesh.values()))
    return Mesh(grid, tuple(mesh.keys()))


def resolve(paths: Sequence[str], shapes: Sequence[tuple[int, ...]], values: Sequence[Any],
            in_shardings: Mapping[str, Any] | None, mesh: MeshLike) -> tuple[Any, ...]:
    """Per linear argument, its NamedSharding or None: from ``in_shardings`` (path ->
    PartitionSpec over ``mesh``, or a NamedSharding), else from the JAX array itself. Empty when
    no argument is sharded (the unsharded path). When some are, the others are replicated over
    the same mesh. Every check runs here, before anything is traced or run."""
    given = in_mapping(in_shardings)
    unknown = sorted(set(given) - set(paths))
    if unknown:
        raise ShardingError(
            f"in_shardings names {', '.join(unknown)}, which {'is' if len(unknown) == 1 else 'are'}"
            f" not a traced argument; traced arguments: {', '.join(paths) or 'none'}", unknown[0])
    the_mesh = make_mesh(mesh) if given or mesh is not None else None
    found: list[NamedSharding | None] = []
    for path, shape, value in zip(paths, shapes, values, strict=True):
        spec = given.get(path)
        if spec is None:
            found.append(of_value(value))
            continue
        if isinstance(spec, NamedSharding):
            check(path, shape, spec.mesh, spec.spec)
            found.append(spec)
        elif isinstance(spec, PartitionSpec):
            if the_mesh is None:
                raise ShardingError(f"in_shardings gives {path} a PartitionSpec but no mesh= "
                                    "was given to lay it over", path)
            check(path, shape, the_mesh, spec)
            found.append(NamedSharding(the_mesh, spec))
        else:
            raise ShardingError(f"in_shardings[{path!r}] must be a jax.sharding.PartitionSpec "
                                f"or NamedSharding, not {type(spec).__name__}", path)
    if not any(s is not None for s in found):
        return ()
    meshes = {s.mesh for s in found if s is not None}
    if len(meshes) > 1:
        lines = [f"  {p}: {describe(s)}" for p, s in zip(paths, found, strict=True)
                 if s is not None]
        raise ShardingError("the arguments are sharded over different meshes; one call runs "
                            "over one mesh:\n" + "\n".join(lines))
    (common,) = meshes
    replicated = NamedSharding(common, PartitionSpec())  # type: ignore[no-untyped-call]  # JAX ships PartitionSpec untyped
    return tuple(replicated if s is None else s for s in found)


def in_mapping(in_shardings: Any) -> dict[str, Any]:
    """``in_shardings=`` (argument path -> PartitionSpec or NamedSharding; or ExploreOptions'
    own tuple of those pairs) as a dict; a ShardingError for anything else."""
    if not in_shardings:
        return {}
    if isinstance(in_shardings, Mapping) or (isinstance(in_shardings, tuple) and all(
            isinstance(p, tuple) and len(p) == 2 for p in in_shardings)):
        return dict(in_shardings)
    raise ShardingError("in_shardings= must map argument paths (e.g. 'args[0]', "
                        "\"kwargs['w']\") to PartitionSpecs, not "
                        f"{type(in_shardings).__name__} {in_shardings!r:.60}")


def check_out(out_shardings: Mapping[str, Any] | None,
              shardings: Sequence[Any] | None = None) -> tuple[tuple[str, Any], ...]:
    """``out_shardings=`` (result path -> PartitionSpec or NamedSharding) as (path, sharding)
    pairs, checked as far as can be before tracing: the values' types, and, given the call's
    argument ``shardings``, that it is sharded (a PartitionSpec is laid over their mesh)."""
    if not out_shardings:
        return ()
    if not isinstance(out_shardings, Mapping):
        raise ShardingError("out_shardings= must map result paths (e.g. 'result', "
                            f"'result[0]') to PartitionSpecs, not {type(out_shardings).__name__}")
    for path, spec in out_shardings.items():
        if not isinstance(spec, PartitionSpec | NamedSharding):
            raise ShardingError(f"out_shardings[{path!r}] must be a jax.sharding.PartitionSpec "
                                f"or NamedSharding, not {type(spec).__name__}", path)
    if shardings is not None and not shardings:
        raise ShardingError(
            "out_shardings= needs a sharded call: shard an argument (pass a JAX array placed "
            "with a NamedSharding, or in_shardings= with mesh=) so the results have a mesh "
            "to be laid over", next(iter(out_shardings)))
    return tuple(out_shardings.items())


def resolve_out(paths: Sequence[str], shapes: Sequence[tuple[int, ...]],
                out_shardings: Sequence[tuple[str, Any]],
                shardings: Sequence[Any]) -> list[NamedSharding | None]:
    """Per result of ``@main`` (``paths``, ``shapes``), the NamedSharding ``out_shardings``
    gives it over the arguments' mesh, or None (left to the partitioner). A path that is no
    result, or a spec that does not fit its result, is an error naming it."""
    given = dict(out_shardings)
    unknown = sorted(set(given) - set(paths))
    if unknown:
        raise ShardingError(
            f"out_shardings names {', '.join(unknown)}, which {'is' if len(unknown) == 1 else 'are'}"
            f" not a computed result; computed results: {', '.join(paths) or 'none'}",
            unknown[0])
    mesh = next(s.mesh for s in shardings if s is not None)
    out: list[NamedSharding | None] = []
    for path, shape in zip(paths, shapes, strict=True):
        spec = given.get(path)
        if spec is None:
            out.append(None)
            continue
        if isinstance(spec, NamedSharding) and spec.mesh != mesh:
            raise ShardingError(f"{path}: out_shardings lays it over {describe(spec)}, and "
                                f"the arguments are over another mesh, {_mesh_name(mesh)}", path)
        check(path, shape, mesh, spec.spec if isinstance(spec, NamedSharding) else spec)
        out.append(spec if isinstance(spec, NamedSharding) else NamedSharding(mesh, spec))
    return out


def check(path: str, shape: tuple[int, ...], mesh: Mesh | AbstractMesh,
          spec: PartitionSpec) -> None:
    """Refuse a spec naming axes ``mesh`` lacks (or one twice), or not dividing a dimension."""
    sizes = dict(mesh.shape)
    if mesh.size > len(jax.devices()):
        raise ShardingError(f"{path}: the mesh has {mesh.size} devices and "
                            f"{len(jax.devices())} are present", path)
    if len(spec) > len(shape):
        raise ShardingError(f"{path}: {spec} names {len(spec)} dimensions and {path} has "
                            f"{len(shape)} (shape {shape})", path)
    used: list[str] = []
    for dim, entry in enumerate(spec):
        if entry is None:
            continue
        names = entry if isinstance(entry, tuple) else (entry,)
        for name in names:
            if name not in sizes:
                raise ShardingError(
                    f"{path}: {spec} names axis {name!r}, which the mesh does not have "
                    f"(its axes: {', '.join(map(repr, sizes))})", path)
            if name in used:
                raise ShardingError(f"{path}: {spec} uses axis {name!r} twice", path)
            used.append(name)
        parts = math.prod(sizes[n] for n in names)
        if shape[dim] % parts:
            raise ShardingError(
                f"{path}: {spec} splits dimension {dim} (size {shape[dim]}) into {parts} parts "
                f"({' x '.join(f'{n}={sizes[n]}' for n in names)}), which does not divide it; "
                f"shape {shape}", path)
