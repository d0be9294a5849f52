"""Pure text analysis: location stripping, structural normalization, op counts."""

from __future__ import annotations

from reactant_lab.analysis import normalize, op_counts, op_delta, same_structure, strip_locations

MODULE = '''#loc1 = loc("args[0]")
#map = affine_map<(d0) -> (d0)>
module @m {
  func.func public @main(%arg0: tensor<3xf32> loc("args[0]"), %arg1: tensor<3xf32> loc("a(b)\\"c")) -> tensor<3xf32> {
    %cst_3 = stablehlo.constant dense<1.0> : tensor<3xf32> loc(#loc4)
    %0 = stablehlo.add %arg0, %cst_3 {note = "loc(not a location)"} : tensor<3xf32> loc(callsite(#loc2 at #loc3))
    %1:2 = "stablehlo.custom"(%0) {m = #map} : (tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) loc("f.py":1:2)
    return %1#0 : tensor<3xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc2 = loc("x.py":3:4 to :9)
'''


def test_strip_locations_keeps_argument_names_and_strings():
    out = strip_locations(MODULE)
    assert 'loc("args[0]")' in out and 'loc("a(b)\\"c")' in out
    assert "loc(#" not in out and "loc(callsite" not in out and "#loc" not in out
    assert '{note = "loc(not a location)"}' in out
    assert 'loc("f.py":1:2)' not in out
    bare = strip_locations(MODULE, keep_names=False)
    assert "loc(" not in bare.replace("loc(not a location)", "")


def test_renumbering_and_locations_are_not_changes():
    renumbered = (MODULE.replace("%cst_3", "%cst").replace("%0", "%7").replace("%1", "%x")
                  .replace("#loc4", "#loc9").replace('"x.py":3:4', '"y.py":1:1'))
    assert same_structure(MODULE, renumbered)
    aliased = MODULE.replace("#map", "#map1")
    assert normalize(MODULE) == normalize(aliased)


def test_real_changes_are_changes():
    assert not same_structure(MODULE, MODULE.replace("stablehlo.add", "stablehlo.multiply"))
    assert not same_structure(MODULE, MODULE.replace("%arg0, %cst_3", "%cst_3, %arg0"))
    assert not same_structure(MODULE, MODULE.replace("dense<1.0>", "dense<2.0>"))


def test_op_counts():
    counts = op_counts(MODULE)
    assert counts == {"builtin.module": 1, "func.func": 1, "func.return": 1,
                      "stablehlo.add": 1, "stablehlo.constant": 1, "stablehlo.custom": 1}
    assert op_delta(counts, {**counts, "stablehlo.add": 3, "stablehlo.custom": 0}) == {
        "stablehlo.add": 2, "stablehlo.custom": -1}


def test_long_hex_literals_are_found_as_the_regex_of_their_form_finds_them(rng):
    """normalize / returned_arguments shorten '"0x<256+ hex digits>"' literals with str.find
    instead of a regex over megabytes: on any text they replace exactly what the regex
    matches."""
    import re

    from reactant_lab.analysis.normalize import replace_long_hex

    pattern = re.compile(r'"0x[0-9A-Fa-f]{256,}"')
    pieces = ['"0x', '"', "AB" * 130, "ab", "z", " ", "\n", "0x", "F" * 300, "é"]
    for _ in range(500):
        text = "".join(rng.choice(pieces, size=int(rng.integers(1, 30))))
        want = pattern.sub(lambda m: f"<{len(m.group(0))}>", text)
        assert replace_long_hex(text, lambda s: f"<{len(s)}>") == want, text
