"""A small MLIR lexer: one line of module text -> (kind, text) tokens that cover it exactly."""

from __future__ import annotations

import functools
import re

KINDS = {
    "op": "operation name (after its dialect prefix)",
    "dialect": "dialect prefix of an operation, with its dot",
    "ssa": "SSA value (%0, %arg1, %cst_3)",
    "block": "block label (^bb0)",
    "symbol": "symbol reference (@main)",
    "type": "type (tensor<4xf32>, i32, !stablehlo.token)",
    "attr": "attribute alias or dialect attribute (#map, #stablehlo.gather<...>)",
    "key": "attribute or keyword-argument name before '='",
    "kw": "keyword (dense, attributes, public, ...)",
    "str": "string literal",
    "num": "number",
    "comment": "comment",
    "loc": "location (loc(...))",
    "text": "anything else: punctuation, spaces, bare words",
}
"""Token kinds and what each is."""

# Possessive (*+, ++): the alternatives start with different characters, so nothing is lost by
# not backtracking into them, and an unclosed '<' or '(' (a line cut short for display) fails at
# once instead of trying every way to split the words before it (exponential in their number).
_STR = r'"(?:[^"\\]|\\.)*+"'
_ANG0 = rf'(?:[^<>"-]++|->|-|{_STR})*+'
_ANG = rf'<(?:[^<>"-]++|->|-|{_STR}|<(?:[^<>"-]++|->|-|{_STR}|<{_ANG0}>)*+>)*+>'
_PAREN = rf'\((?:[^()"]++|{_STR}|\((?:[^()"]++|{_STR}|\((?:[^()"]++|{_STR})*+\))*+\))*+\)'
_TOKEN = re.compile(rf"""
    (?P<comment>//.*)
  | (?P<str>{_STR}|"(?:[^"\\]|\\.)*)
  | (?P<ssa>%[A-Za-z0-9$._-]+)
  | (?P<block>\^[A-Za-z0-9$._-]+)
  | (?P<symbol>@(?:{_STR}|[A-Za-z0-9$._-]+))
  | (?P<attr>\#[A-Za-z_][\w$.]*(?:{_ANG})?)
  | (?P<loc>loc{_PAREN})
  | (?P<word>!?[A-Za-z_][\w$.]*(?:{_ANG})?)(?P<key>(?=\s*=(?!=)))?
  | (?P<num>-?0x[0-9A-Fa-f]+|-?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)
  | (?P<text>[^"%^@\#!A-Za-z_0-9/-]+|.)
""", re.VERBOSE)
_SCALAR_TYPE = re.compile(r"(?:[su]?i\d+|f\d+(?:E\d+M\d+\w*)?|bf16|tf32|index|none)$")
_KEYWORDS = frozenset({"dense", "array", "attributes", "public", "private", "nested", "affine_map",
                       "true", "false", "unit", "module", "dense_resource", "sparse", "x"})
_ATTR_WORDS = ("dense<", "array<", "affine_map<", "sparse<", "dense_resource<", "affine_set<")
_OP_NAME = re.compile(r"[A-Za-z_][\w$]*(?:\.[\w$]+)+")


def _word(word: str) -> list[tuple[str, str]]:
    """Classify a bare (possibly dotted, possibly ``<...>``-parameterized) identifier."""
    if word.endswith(">"):
        return [("attr" if word.startswith(_ATTR_WORDS) else "type", word)]
    if word.startswith("!") or _SCALAR_TYPE.match(word):
        return [("type", word)]
    if "." in word:
        dot = word.index(".") + 1
        return [("dialect", word[:dot]), ("op", word[dot:])]
    if word == "return":
        return [("op", word)]
    return [("kw" if word in _KEYWORDS else "text", word)]


@functools.lru_cache(maxsize=32_768)
def tokenize(line: str) -> tuple[tuple[str, str], ...]:
    """Tokens of one line; their texts joined give the line back exactly. (Cached: a diff
    tokenizes its changed lines to compare them, then again to render them.)"""
    return tuple(_tokenize(line))


def _tokenize(line: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    op_slot = _op_slot(line) if '"' in line else -1
    for m in _TOKEN.finditer(line):
        kind, text = m.lastgroup, m.group(0)
        assert kind is not None  # every alternative of _TOKEN is a named group
        if kind == "word":
            tokens += _word(text)
        elif (kind == "str" and m.start() == op_slot and len(text) > 1 and text.endswith('"')
              and _OP_NAME.fullmatch(text[1:-1])):  # closed, not a line cut short inside it
            dot = text.index(".")
            tokens += [("text", '"'), ("dialect", text[1:dot + 1]), ("op", text[dot + 1:-1]),
                       ("text", '"')]
        else:
            tokens.append((kind, text))
    return tokens


_OP_SLOT = re.compile(r"\s*(?:%[\w$.:#-]+(?:\s*,\s*%[\w$.:#-]+)*\s*=\s*)?(?=\")")


def _op_slot(line: str) -> int:
    """Offset where a generic-form op name would start on this line, or -1."""
    m = _OP_SLOT.match(line)
    return m.end() if m else -1
