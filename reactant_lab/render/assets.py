"""The report's inline CSS (no external assets). Its script is the explorer's front end, built from
labextension/ with the package (reactant_lab/render/static/)."""

from __future__ import annotations

CSS = """
:root{--fg:#1f2328;--mute:#656d76;--line:#d0d7de;--add:#e6ffec;--del:#ffebe9;--addx:#abf2bc;
--delx:#ffb3ad;--bg2:#f6f8fa}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:var(--fg);
margin:0;padding:0 1.5em 3em}
header{border-bottom:1px solid var(--line);margin-bottom:.5em}
h1{font-size:1.6em;margin:.6em 0 .1em}h2{font-size:1.25em;margin:1.4em 0 .4em}
h3{font-size:1.05em;margin:1em 0 .3em}.meta,.note{color:var(--mute)}
nav.toc{position:sticky;top:0;background:#fff;padding:.4em 0;border-bottom:1px solid var(--line);
z-index:2}nav.toc a{margin-right:.8em}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre.mlir,pre.hlo{background:var(--bg2);padding:.6em;overflow:auto;max-height:40em;
border:1px solid var(--line)}
table{border-collapse:collapse;margin:.3em 0}td,th{border:1px solid var(--line);padding:.15em .5em;
text-align:left;vertical-align:top}table.ops td{text-align:right}
td.up{background:var(--add)}td.down{background:var(--del)}
tr.unchanged td{color:var(--mute)}.chg{color:#9a6700;font-weight:600}.same{color:var(--mute)}
tr.first-wrong td{background:#ffebe9}tr.first-slower td{background:#fff8c5}
.bad{color:#cf222e;font-weight:600}.slow{color:#9a6700;font-weight:600}
.note-mark{text-decoration:none;color:#9c3a00;white-space:nowrap}.note-mark sup{font-size:.7em}
.stage-notes{list-style:none;padding:0;margin:.3em 0;color:var(--mute);font-size:.9em}
.stage-notes li{margin:.2em 0}.note-where{color:var(--fg);font-weight:600}
.verify-note{margin:.4em 0;padding:.3em .6em;border:1px solid var(--line);background:var(--bg2)}
.mark{font-size:.8em;padding:0 .4em;border-radius:.6em;background:var(--bg2);border:1px solid var(--line)}
.mark.mutated{background:#fed7aa}.mark.donated{border-style:dashed}.mark.preserved{background:#f3f4f6}
section.stage{border-top:2px solid var(--line);margin-top:1.5em}
img.graph{max-width:100%;height:auto;border:1px solid var(--line);background:#fff}
.diff{border:1px solid var(--line);margin:.3em 0;overflow:auto;max-height:48em}
.diff .dh{background:var(--bg2);padding:.2em .5em;border-bottom:1px solid var(--line)}
.diff .empty{padding:.4em .6em;color:var(--mute)}
.diff .r{display:grid;font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.diff.sbs .r{grid-template-columns:3.5em minmax(0,1fr) 3.5em minmax(0,1fr)}
.diff.uni .r{grid-template-columns:3.5em 3.5em 1.2em minmax(0,1fr)}
.diff .ln{color:var(--mute);text-align:right;padding-right:.4em;user-select:none}
.diff .cd{white-space:pre-wrap;overflow-wrap:anywhere}
.diff .cd.add{background:var(--add)}.diff .cd.del{background:var(--del)}
.diff .cd.add .x{background:var(--addx)}.diff .cd.del .x{background:var(--delx)}
.diff .fold,.diff details.fold>summary{background:#eef3fb;color:var(--mute);padding:0 .5em;
font-size:12px;cursor:pointer}
.o{color:#8250df;font-weight:600}.d{color:#953800}.v{color:#0550ae}.b{color:#116329}
.s{color:#cf222e}.t{color:#0a3069}.a{color:#6639ba}.k{color:#57606a}.w{color:#cf222e}
.q{color:#0a3069;background:#eef6ff}.n{color:#0550ae}.c{color:#6e7781;font-style:italic}
.l{color:#8c959f}.el{color:var(--mute);background:var(--bg2);font-style:italic}
.toggles{font-size:.9em;color:var(--mute);margin:.4em 0}
#lay-uni:checked~main .diff.sbs:not(.only),#lay-sbs:checked~main .diff.uni{display:none}
#hide-same:checked~main section.stage.unchanged,#hide-same:checked~main tr.unchanged{display:none}
.toggle{position:absolute;left:-9999px}
ul.stage-key{columns:3;color:var(--mute);font-size:.9em}
"""

PAGE_CSS = """
body{margin:0;background:#fff}
.rl-report-explorer{margin:.6em 1em 2em}
html.rl-explorer-on #rl-static{display:none}
"""
"""The report page around its two renderings: once the explorer is drawn (report.ts marks
``<html>`` with ``rl-explorer-on``), the script-free one (``#rl-static``) is hidden."""
