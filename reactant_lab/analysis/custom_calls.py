"""The ``stablehlo.custom_call`` ops of module text: call target, backend config, and the
kernel a Pallas TPU call carries (Mosaic's serialized module). Pure text, no bindings."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from reactant_lab.analysis.normalize import strip_locations

_CALL = re.compile(r'^\s*(?:%[\w$.:#-]+(?:\s*,\s*%[\w$.:#-]+)*\s*=\s*)?"?stablehlo\.custom_call"?'
                   r'[\s(]')
_PRETTY_TARGET = re.compile(r'stablehlo\.custom_call\s+@("(?:[^"\\]|\\.)*"|[\w$.-]+)')
_GENERIC_TARGET = re.compile(r'\bcall_target_name\s*=\s*"((?:[^"\\]|\\.)*)"')
_STRING = r'"((?:[^"\\]|\\.)*)"'
_CONFIG_STRING = re.compile(r"\bbackend_config\s*=\s*" + _STRING)
_CONFIG_DICT = re.compile(r"\bbackend_config\s*=\s*\{")
_KERNEL_NAME = re.compile(r"\bkernel_name\s*=\s*" + _STRING)
_API_VERSION = re.compile(r"\bapi_version\s*=\s*(?:#stablehlo<api_version\s*)?(\w+)")
_SIDE_EFFECT = re.compile(r"\bhas_side_effect\s*=\s*true\b")
_TYPE = re.compile(r"\}\s*:\s*(\(.*)$")
_ESCAPE = re.compile(r"\\(\\|[0-9A-Fa-f]{2})")

PLATFORM_OF_TARGET = {
    "tpu_custom_call": "tpu",
    "mosaic_gpu": "gpu",
    "mosaic_gpu_v2": "gpu",
    "__gpu$xla.gpu.triton": "gpu",
    "triton_kernel_call": "gpu",
}
"""Call targets only one platform's XLA implements (Pallas' TPU and GPU kernels), and that
platform as ``jax.Device.platform`` names it ('gpu' for CUDA and ROCm alike)."""


@dataclass(frozen=True)
class MosaicKernel:
    """A Pallas TPU kernel as ``tpu_custom_call``'s backend config carries it."""

    name: str | None
    """The kernel's name (the op's ``kernel_name``), if given."""
    body: str
    """The serialized Mosaic module: base64 of MLIR bytecode."""
    fields: tuple[tuple[str, str], ...]
    """The config's other fields (``serialization_format``, ``needs_layout_passes``, ...), as
    JSON values."""

    @property
    def body_bytes(self) -> int:
        """Size of the serialized module in bytes."""
        return len(self.body) * 3 // 4 - self.body[-2:].count("=")


@dataclass(frozen=True)
class CustomCall:
    """One ``stablehlo.custom_call`` of a module."""

    target: str
    """Its call target (``tpu_custom_call``, ``lapack_sgetrf_ffi``, ...)."""
    line: int
    """1-based line of the op in the text."""
    op: str
    """The op's line as printed, locations dropped."""
    type: str
    """Its function type, ``(operands) -> results``."""
    backend_config: str | None
    """The backend config: the string's value (escapes decoded), the dictionary as printed
    (typed FFI calls), or None."""
    has_side_effect: bool
    """Whether the op is marked as having side effects (passes then never drop it)."""
    api_version: str | None
    """The custom-call API version as printed, if given."""
    kernel: MosaicKernel | None
    """The Pallas TPU kernel it runs (``tpu_custom_call``), else None."""

    @property
    def platform(self) -> str | None:
        """The one platform whose XLA implements the target (``PLATFORM_OF_TARGET``), else None
        (any platform, or not known here)."""
        return PLATFORM_OF_TARGET.get(self.target)

    @property
    def identity(self) -> tuple[str, str | None, str]:
        """What a pass must not change: target, backend config and type."""
        return (self.target, self.backend_config, self.type)


def mlir_string(escaped: str) -> str:
    """The value of an MLIR string literal from its contents as printed (``\\22`` -> ``"``,
    ``\\\\`` -> ``\\``; other bytes as ``\\XX``)."""
    out = bytearray()
    last = 0
    for m in _ESCAPE.finditer(escaped):
        out += escaped[last:m.start()].encode()
        out += b"\\" if m.group(1) == "\\" else bytes([int(m.group(1), 16)])
        last = m.end()
    out += escaped[last:].encode()
    return out.decode("utf-8", errors="replace")


def custom_calls(text: str) -> tuple[CustomCall, ...]:
    """The custom calls of module text, in order of appearance."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if "custom_call" not in line or not _CALL.match(line):
            continue
        op = strip_locations(line).strip()
        found.append(_call(op, number))
    return tuple(found)


def _call(op: str, line: int) -> CustomCall:
    pretty = _PRETTY_TARGET.search(op)
    generic = _GENERIC_TARGET.search(op)
    target = (pretty.group(1).strip('"') if pretty
              else mlir_string(generic.group(1)) if generic else "")
    config = _config(op)
    name = _KERNEL_NAME.search(op)
    version = _API_VERSION.search(op)
    typ = _TYPE.search(op)
    return CustomCall(
        target=target, line=line, op=op, type=typ.group(1).strip() if typ else "",
        backend_config=config, has_side_effect=bool(_SIDE_EFFECT.search(op)),
        api_version=version.group(1) if version else None,
        kernel=mosaic_kernel(config, mlir_string(name.group(1)) if name else None)
        if target == "tpu_custom_call" else None)


def _config(op: str) -> str | None:
    """The backend config of one op's line: a string's value, or a dictionary as printed."""
    string = _CONFIG_STRING.search(op)
    if string:
        return mlir_string(string.group(1))
    start = _CONFIG_DICT.search(op)
    if not start:
        return None
    depth, i = 0, start.end() - 1
    in_string = False
    for j in range(i, len(op)):
        c = op[j]
        if in_string:
            in_string = not (c == '"' and op[j - 1] != "\\")
        elif c == '"':
            in_string = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return op[i:j + 1]
    return op[i:]


def mosaic_kernel(config: str | None, name: str | None) -> MosaicKernel | None:
    """The Mosaic kernel in a ``tpu_custom_call``'s backend config (JSON:
    ``{"custom_call_config": {"body": BASE64, ...}}``), or None when it holds none."""
    if not config:
        return None
    try:
        fields = json.loads(config).get("custom_call_config")
    except (ValueError, AttributeError):
        return None
    if not isinstance(fields, dict) or not isinstance(fields.get("body"), str):
        return None
    rest = tuple((k, json.dumps(v)) for k, v in fields.items() if k != "body")
    return MosaicKernel(name=name, body=fields["body"], fields=rest)


def custom_call_changes(before: str, after: str) -> tuple[str, ...]:
    """What changed in the custom calls from module ``before`` to ``after``, in words (one entry
    per call dropped, added or altered); empty when every call passed through as it was."""
    old = [c.identity for c in custom_calls(before)]
    new = [c.identity for c in custom_calls(after)]
    changes = [f"{t} {typ} dropped" for t, _, typ in _missing(old, new)]
    changes += [f"{t} {typ} added or changed" for t, _, typ in _missing(new, old)]
    return tuple(changes)


def _missing(have: list[tuple[str, str | None, str]], other: list[tuple[str, str | None, str]]
             ) -> list[tuple[str, str | None, str]]:
    rest = list(other)
    gone = []
    for item in have:
        if item in rest:
            rest.remove(item)
        else:
            gone.append(item)
    return gone
