"""Grouping of argument / result paths, so a summary of a model with a thousand parameters stays
readable: paths that differ only in their indices share a node (``args[0][*]['w']``)."""

from __future__ import annotations

import re

SUMMARY_NODES = 40
"""A summary draws at most about this many argument (and result) nodes."""


def group_id(prefix: str, g: int, groups: list[tuple[str, list[int]]]) -> str:
    """Node id of group ``g``: the member's own id when it is alone."""
    members = groups[g][1]
    return f"{prefix}{members[0]}" if len(members) == 1 else f"{prefix}_group{g}"


def group_paths(paths: list[str], limit: int = SUMMARY_NODES) -> list[tuple[str, list[int]]]:
    """(label, member indices) per group of paths: each path alone when there are at most
    ``limit``; else the index position with the most distinct values becomes ``[*]``
    (``args[0][*][0]``: every layer's weight), then the next, and as a last resort paths are cut
    to shorter prefixes, until at most ``limit`` groups remain."""
    if len(paths) <= limit:
        return [(p, [i]) for i, p in enumerate(paths)]
    parts = [re.findall(r"\[[^\]]*\]|[^\[]+", p) for p in paths]
    while len({tuple(c) for c in parts}) > limit:
        values: dict[int, set[str]] = {}
        for comps in parts:
            for k, c in enumerate(comps):
                if _INDEX.fullmatch(c):
                    values.setdefault(k, set()).add(c)
        if not values:
            break
        k = max(values, key=lambda k: len(values[k]))
        parts = [[("[*]" if i == k and _INDEX.fullmatch(c) else c) for i, c in enumerate(comps)]
                 for comps in parts]
    cut = [False] * len(parts)
    while len({tuple(c) for c in parts}) > limit and any(len(c) > 1 for c in parts):
        longest = max(len(c) for c in parts)
        for i, comps in enumerate(parts):
            if len(comps) == longest:
                parts[i], cut[i] = comps[:-1], True
    groups: dict[str, list[int]] = {}
    for i, comps in enumerate(parts):
        groups.setdefault("".join(comps) + ("[…]" if cut[i] else ""), []).append(i)
    return [(k if len(v) > 1 else paths[v[0]], v) for k, v in groups.items()]


_INDEX = re.compile(r"\[\d+\]")
