"""Module texts stored once: identical texts share an entry, large ones are gzipped, and a large
text close to an earlier one is stored as a line delta against it."""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

from reactant_lab.analysis.align import align
from reactant_lab.errors import RenderError

ENCODINGS = ("plain", "gzip", "delta")
DELTA_OVER = 512
"""A text given a ``base`` is stored as a delta from this many characters (when shorter)."""


def pack(data: bytes) -> str:
    """base64 of the gzip-compressed bytes (what the report's script unpacks)."""
    return base64.b64encode(gzip.compress(data, 9, mtime=0)).decode()


def unpack(data: str) -> bytes:
    """The bytes ``pack`` packed."""
    return gzip.decompress(base64.b64decode(data))


class TextStore:
    """Collects texts; ``entries`` is the payload's ``texts`` list."""

    def __init__(self, compress_over: int = 32_768):
        self.compress_over = compress_over
        self.entries: list[dict[str, Any]] = []
        self._ids: dict[str, int] = {}
        self._texts: list[str] = []
        self._last_large: tuple[int, list[str]] | None = None

    def add(self, text: str, base: int | None = None, *, packed: bool = False) -> int:
        """Id of ``text``'s entry (an existing one when the same text was added before).
        ``base``: the id of a text it is close to (the stage before it), against which it is
        stored as a line delta whenever that is shorter (XLA's stages: many small texts, each
        a pass's few changes away from the one before). ``packed``: gzipped whatever its length
        when that is shorter (a text the explorer shows only on request, such as a kernel's
        LLVM IR)."""
        found = self._ids.get(text)
        if found is not None:
            return found
        tid = len(self.entries)
        entry: dict[str, Any] = {"id": tid, "lines": text.count("\n") + 1, "chars": len(text)}
        if len(text) <= self.compress_over:
            entry.update(encoding="plain", data=text)
            if packed and len(data := pack(text.encode())) < len(text):
                entry.update(encoding="gzip", data=data)
        else:
            entry.update(encoding="gzip", data=pack(text.encode()))
            lines = text.split("\n")
            if self._last_large is not None and base is None:
                self._delta_if_shorter(entry, *self._last_large, lines)
            self._last_large = (tid, lines)
        if base is not None and len(text) > DELTA_OVER:
            self._delta_if_shorter(entry, base, self._texts[base].split("\n"),
                                   text.split("\n"))
        self.entries.append(entry)
        self._ids[text] = tid
        self._texts.append(text)
        return tid

    def add_within(self, text: str, base: int | None, room: int, *,
                   packed: bool = False) -> tuple[int | None, int]:
        """``add``, when storing ``text`` takes at most ``room`` characters of data: (its id,
        the characters it took; 0 for a text stored before); else (None, 0), the store as it
        was."""
        found = self._ids.get(text)
        if found is not None:
            return found, 0
        last_large = self._last_large
        tid = self.add(text, base, packed=packed)
        size = len(self.entries[tid]["data"])
        if size <= room:
            return tid, size
        self.entries.pop()
        self._texts.pop()
        del self._ids[text]
        self._last_large = last_large
        return None, 0

    @staticmethod
    def _delta_if_shorter(entry: dict[str, Any], base: int, base_lines: list[str],
                          lines: list[str]) -> None:
        """Store ``entry`` as a delta from text ``base`` when that is shorter."""
        packed = pack(json.dumps(_delta(base_lines, lines), separators=(",", ":")).encode())
        if len(packed) < len(entry["data"]):
            entry.update(encoding="delta", base=base, data=packed)


def _delta(base: list[str], new: list[str]) -> list[Any]:
    """Line edit script: ``[a0, a1]`` copies base lines a0..a1, a string inserts its lines."""
    ops: list[Any] = []
    for tag, a0, a1, b0, b1 in align(base, new):
        if tag == "equal":
            ops.append([a0, a1])
        elif b1 > b0:
            ops.append("\n".join(new[b0:b1]))
    return ops


def decode_text(texts: list[dict[str, Any]], tid: int) -> str:
    """The text of entry ``tid`` of a payload's ``texts`` list."""
    entry = texts[tid]
    enc = entry.get("encoding")
    if enc == "plain":
        text: str = entry["data"]
        return text
    if enc == "gzip":
        return unpack(entry["data"]).decode()
    if enc == "delta":
        base = decode_text(texts, entry["base"]).split("\n")
        lines: list[str] = []
        for op in json.loads(unpack(entry["data"])):
            lines.extend(base[op[0]:op[1]] if isinstance(op, list) else op.split("\n"))
        return "\n".join(lines)
    raise RenderError(f"text {tid} has unknown encoding {enc!r}; known: {', '.join(ENCODINGS)}")
