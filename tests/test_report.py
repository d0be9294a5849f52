"""The HTML report and the payload it is built from: sections, diffs, graphs, texts stored once; the
explorer's front end inline under a strict CSP, beside a script-free rendering."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html.parser import HTMLParser

import jax.numpy as jnp
import numpy as np
import pytest

import reactant_lab as rl
from reactant_lab.errors import RenderError
from reactant_lab.render import report as report_mod
from reactant_lab.render.payload import SCHEMA_VERSION, PayloadOptions, build_payload
from reactant_lab.render.report import explorer_front_end, report_html
from reactant_lab.render.texts import TextStore, decode_text
from reactant_lab.stages.runner import Stage, StageTrace


class Page(HTMLParser):
    """Everything the tests look at in a report."""

    def __init__(self, html: str):
        super().__init__()
        self.tags: list[str] = []
        self.ids: list[str] = []
        self.attrs: list[tuple[str, str, str]] = []
        self.scripts: list[str] = []
        self.styles: list[str] = []
        self.text: list[str] = []
        self._in_script = False
        self._in_style = False
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for k, v in attrs:
            self.attrs.append((tag, k, v or ""))
            if k == "id":
                self.ids.append(v)
        self._in_script = tag == "script"
        self._in_style = tag == "style"
        if tag == "script":
            self.scripts.append("")
        if tag == "style":
            self.styles.append("")

    def handle_endtag(self, tag):
        self._in_script = self._in_style = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data
        elif self._in_style:
            self.styles[-1] += data
        else:
            self.text.append(data)

    def csp(self) -> dict[str, list[str]]:
        """The page's Content-Security-Policy: directive -> sources."""
        (policy,) = [v for t, k, v in self.attrs if t == "meta" and k == "content"
                     and "default-src" in v]
        return {d.split()[0]: d.split()[1:] for d in policy.split(";") if d.strip()}

    def svgs(self) -> list[str]:
        prefix = "data:image/svg+xml;base64,"
        return [base64.b64decode(v[len(prefix):]).decode() for t, k, v in self.attrs
                if t == "img" and k == "src" and v.startswith(prefix)]


def sin_of_matmul(x, w):
    return jnp.sin(x @ w.T)


@pytest.fixture(scope="module")
def fold():
    rng = np.random.default_rng()
    ex = rl.explore(sin_of_matmul, rng.standard_normal((4, 3), np.float32),
                    rng.standard_normal((5, 3), np.float32), granularity="pass")
    return ex, rl.exploration_payload(ex), rl.exploration_html(ex, run={"median_seconds": 1e-5})


def test_report_has_every_section(fold):
    ex, _, html = fold
    page = Page(html)
    for section in ("signature", "stages", "metrics", "compare", "xla", "timing"):
        assert section in page.ids
    assert [f"stage-{s.index}" for s in ex.all_stages] == [i for i in page.ids
                                                          if i.startswith("stage-")]
    text = "".join(page.text)
    for s in ex.all_stages:  # XLA's own stages follow the MLIR ones
        assert s.name in text
    assert "HloModule" in text and "args[0]" in text and "float32[4,3]" in text
    assert "10.0 µs" in text  # the run timing handed to to_html


def test_the_fold_stage_shows_exactly_that_change(fold):
    ex, payload, html = fold
    fold_stage = next(s for s in ex.stages.stages if "stablehlo.transpose" not in s.op_counts
                      and "stablehlo.transpose" in ex.stages[s.index - 1].op_counts)
    entry = next(d for d in payload["diffs"] if d["after"] == fold_stage.index
                 and d["kind"] == "previous")
    assert (entry["added"], entry["removed"], entry["changed"]) == (0, 1, 1)
    kinds = [r[0] for r in entry["rows"] if r[0] != "="]
    assert kinds == ["-", "~"] and not entry["truncated"]
    removed_line = ex.stages[fold_stage.index - 1].as_text().splitlines()[entry["rows"][1][1] - 1]
    assert "stablehlo.transpose" in removed_line
    section = html.split(f'id="stage-{fold_stage.index}"')[1].split("<section")[0]
    dels = re.findall(r'<span class="cd del">(.*?)</span></div>', section)
    adds = re.findall(r'<span class="cd add">(.*?)</span></div>', section)
    sbs = len(dels) // 2  # side-by-side rows first, then the unified ones
    assert "transpose" in dels[0] and "dot_general" in dels[1] and sbs == 2
    assert [a for a in adds[:2] if a] and "transpose" not in "".join(adds)
    for d in payload["diffs"]:
        if d["kind"] == "previous":
            assert d["empty"] == (not ex.stage(d["after"]).changed)


def sha256(text: str) -> str:
    return f"'sha256-{base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()}'"


def test_report_is_self_contained(fold):
    _, payload, html = fold
    page = Page(html)
    data, bundle = page.scripts  # the payload, then the explorer
    outside = html.replace(data, "")
    assert not re.search(r"(?:https?|ftp|file):|(?<![:\w])//[\w-]+\.[\w-]", outside)
    # The only URL in the payload is the SVG namespace of the graphs.
    assert set(re.findall(r"https?://[^\s\"'\\]+", data)) == {"http://www.w3.org/2000/svg"}
    for tag, key, value in page.attrs:
        if key == "src":
            assert value.startswith("data:image/svg+xml;base64,"), (tag, value[:40])
        if key == "href":
            assert value.startswith("#"), value
        assert not key.startswith("on")
    assert bundle == explorer_front_end()[0]
    assert json.loads(data)["stages"] == payload["stages"]
    svgs = page.svgs()
    assert svgs and all("<svg" in s and "args[1]" in s for s in svgs)
    for svg in svgs:
        assert re.findall(r"https?://[^\s\"']+", svg) == ["http://www.w3.org/2000/svg"]


def test_the_csp_allows_exactly_the_inline_script_and_styles(fold):
    _, _, html = fold
    page = Page(html)
    csp = page.csp()
    assert csp == {"default-src": ["'none'"], "script-src": [sha256(page.scripts[1])],
                   "style-src": [sha256(s) for s in page.styles], "img-src": ["data:"],
                   "base-uri": ["'none'"], "form-action": ["'none'"]}
    assert len(page.styles) == 2 and page.styles[1] == explorer_front_end()[1]
    assert ("style", "id", "reactant-lab-explorer-style") in page.attrs  # so it is not added again
    assert ("script", "type", "application/json") in page.attrs  # data: not run, not hashed


def test_without_script_the_report_is_the_static_rendering_alone(fold):
    ex, payload, _ = fold
    html = report_html(payload, script=False)
    page = Page(html)
    assert "script" not in page.tags and page.csp()["script-src"] == ["'none'"]
    assert page.csp()["style-src"] == [sha256(page.styles[0])]
    assert [f"stage-{s.index}" for s in ex.all_stages] == [i for i in page.ids
                                                          if i.startswith("stage-")]


def test_a_report_says_how_to_get_a_missing_front_end(fold, monkeypatch, tmp_path):
    _, payload, _ = fold
    monkeypatch.setattr(report_mod, "EXPLORER_JS", tmp_path / "explorer.js")
    with pytest.raises(RenderError, match=r"Reinstall reactant_lab.*script=False"):
        report_html(payload)
    assert "<script" not in report_html(payload, script=False)


def test_the_static_rendering_is_scoped_away_from_the_explorer(fold):
    _, _, html = fold
    page = Page(html)
    static = page.styles[0]
    # Every rule of the report's own CSS applies inside #rl-static (or hides it), never to the
    # explorer's elements, which the explorer's own stylesheet styles.
    for selectors in re.findall(r"([^{}]+)\{", static):
        for sel in selectors.split(","):
            assert sel.strip() in ("body", ".rl-report-explorer") or "#rl-static" in sel, sel
    assert html.index('class="reactant-lab-payload"') < html.index('id="rl-static"')


def test_payload_is_json_and_stores_texts_once(fold):
    ex, payload, _ = fold
    assert json.loads(json.dumps(payload))["schema_version"] == SCHEMA_VERSION
    stages = payload["stages"]
    for s, st in zip(stages, ex.all_stages, strict=True):
        assert decode_text(payload["texts"], s["text"]) == st.as_text()
    assert len(payload["texts"]) < len(stages) - 5  # unchanged stages share their text
    assert payload["metrics"]["stages"] == [s.name for s in ex.all_stages]
    row = payload["metrics"]["ops"].index("stablehlo.transpose")
    assert payload["metrics"]["counts"][row][0] == 1 and payload["metrics"]["counts"][row][-1] == 0
    graph = payload["graphs"][0]
    assert graph["kind"] == "full" and "args[0]" in graph["dot"] and graph["svg"].startswith("<svg")
    assert payload["signature"]["args"][0]["path"] == "args[0]"
    assert payload["xla"]["hlo"] is not None and payload["run"]["first_call_seconds"] > 0


def test_hidden_unchanged_stages_and_layout_toggles_work_without_script(fold):
    _, _, html = fold
    assert '<input type="checkbox" id="hide-same"' in html
    assert "#hide-same:checked~main section.stage.unchanged" in html
    assert 'class="stage unchanged"' in html and 'class="stage changed"' in html


def big_stage_trace(n_stages: int, lines: int) -> StageTrace:
    """Stages of a large module where every other stage changes a few lines."""
    body = [f"    %{i} = stablehlo.add %{i - 1}, %arg0 : tensor<{i % 7 + 1}xf32>"
            for i in range(1, lines)]
    stages = []
    for k in range(n_stages):
        if k % 2:
            body[k * 13 % len(body)] = body[k * 13 % len(body)].replace("add", "multiply")
        text = ("module {\n  func.func public @main(%arg0: tensor<1xf32>) -> tensor<1xf32> {\n"
                + "\n".join(body) + "\n    return %arg0 : tensor<1xf32>\n  }\n}\n")
        counts = {"stablehlo.add": sum("add" in b for b in body)}
        stages.append(Stage(index=k, name=f"s{k}", group=f"s{k}", pipeline="p" if k else "",
                            ir=text, seconds=0.001, changed=k % 2 == 1 or not k,
                            op_counts=counts))
    return StageTrace(traced=None, optimize="custom", granularity="stage", no_nan=False,
                      target="cpu", stages=tuple(stages))


def test_large_texts_are_compressed_and_left_to_the_explorer(monkeypatch):
    monkeypatch.setattr(report_mod, "STATIC_BUDGET", 10_000)
    st = big_stage_trace(6, 3_000)
    payload = build_payload(st, options=PayloadOptions(svg=False, compress_over=1_000))
    encodings = [t["encoding"] for t in payload["texts"]]
    assert encodings[0] == "gzip" and "delta" in encodings
    for s, stage in zip(payload["stages"], st.stages, strict=True):
        assert decode_text(payload["texts"], s["text"]) == stage.as_text()
    html = report_html(payload)
    page = Page(html)
    embedded = json.loads(page.scripts[0])
    assert embedded["texts"] == payload["texts"]  # the explorer gets every text, as stored
    assert [d["rows"] for d in embedded["diffs"]] == [d["rows"] for d in payload["diffs"]]
    assert all("html" not in d for d in embedded["diffs"])  # the page itself holds that
    text = "".join(page.text)
    assert "too long for this static view (the explorer shows it when JavaScript runs)" in text
    assert "<pre class=\"mlir\"" not in html  # no stage text fits the budget
    script_free = "".join(Page(report_html(payload, script=False)).text)
    assert "(the explorer and reactant_lab.save_html show it)" in script_free
    assert payload["graphs"][0]["kind"] == "summary" and not payload["graphs"][0]["svg"]


def test_text_store_shares_and_deltas():
    store = TextStore(compress_over=100)
    a = "\n".join(f"line {i}" for i in range(500))
    b = a.replace("line 250", "changed")
    ids = [store.add(a), store.add(b), store.add(a), store.add("small")]
    assert ids == [0, 1, 0, 2]
    assert [e["encoding"] for e in store.entries] == ["gzip", "delta", "plain"]
    assert len(store.entries[1]["data"]) < len(store.entries[0]["data"]) / 4
    assert decode_text(store.entries, 1) == b and decode_text(store.entries, 0) == a


def test_report_of_a_module_without_a_traced_call():
    st = big_stage_trace(3, 20)
    page = Page(report_html(build_payload(st, options=PayloadOptions(svg=False))))
    assert "stage-2" in page.ids and "Not compiled." in "".join(page.text)


def test_op_table_marks_where_counts_change(fold):
    ex, _, _ = fold
    from reactant_lab.analysis import op_table

    t = op_table(ex.stages)
    assert t.stages == tuple(s.name for s in ex.stages.stages)
    fold_col = next(s.index for s in ex.stages.stages if "stablehlo.transpose" not in s.op_counts)
    row = t.ops.index("stablehlo.transpose")
    assert t.delta(row, fold_col) == -1 and t.stage_delta(fold_col) == {"stablehlo.transpose": -1}
    assert t.changing() == ("stablehlo.transpose",)
    assert "func.func" not in t.ops  # module / function shells only when they change
    html = rl.op_table_html(t)
    assert html.count('class="down"') == 1 and 'class="up"' not in html
    assert "0 (-1)" in t.table()


def test_a_note_shared_by_stages_is_one_footnote_in_the_static_rendering():
    """The left-out patterns of three optimize stages: one footnote under the stage table, each
    stage's passes cell marked with a link to it (not the note under each of them)."""
    from dataclasses import replace

    note = "left out as measured wrong here: a<1>, b<16> (exact=True runs them)"
    st = big_stage_trace(5, 20)
    stages = tuple(replace(s, unavailable=note if s.index in (1, 3, 4) else None)
                   for s in st.stages)
    payload = build_payload(replace(st, stages=stages), options=PayloadOptions(svg=False))
    html = report_html(payload, script=False)
    assert html.count("a&lt;1&gt;, b&lt;16&gt;") == 1
    assert html.count('href="#pass-note-1"') == 3 and 'id="pass-note-1"' in html
    assert re.search(r"stages 1 s1, 3 s3, 4 s4:</span> left out as measured", html)


def test_the_stage_table_writes_each_pattern_list_once():
    """A preset runs Reactant's pattern list (about 190 patterns) in three or four stages: the
    stage table writes it out at the first and names that stage in the later ones; another
    list is written out again, and every pass around a list is kept."""
    from reactant_lab.render.tables import stage_table_html

    same = "a<1>;b<16>;c"
    other = "a<1>;d"
    pipes = ["", f"inline,enzyme-hlo-generate-td{{patterns={same}}},cse", "canonicalize",
             f"enzyme-hlo-generate-td{{patterns={same}}},transform-interpreter",
             f"enzyme-hlo-generate-td{{patterns={other}}}"]
    stages = [{"index": i, "name": f"s{i}", "pipeline": p, "changed": True, "ops": 3,
               "seconds": 0.001} for i, p in enumerate(pipes)]
    html = stage_table_html(stages)
    assert html.count("a&lt;1&gt;;b&lt;16&gt;;c") == 1 and html.count("a&lt;1&gt;;d") == 1
    assert ('enzyme-hlo-generate-td{patterns=<i>the 3 patterns of <a href="#stage-1">stage 1'
            "</a></i>},transform-interpreter") in html
    assert "inline,enzyme-hlo-generate-td{patterns=a&lt;1&gt;" in html and "},cse" in html
