// The explorer's stylesheet, installed once per document by both front ends (JupyterLab's theme
// variables when present, the report's colours otherwise). Every text colour reads at WCAG AA
// (4.5:1) on each background it can sit on (the page, the toolbars' grey, the selected row's blue,
// the diff's green and red and their stronger changed-span tints, search hits), in JupyterLab's
// light and dark themes: the status and token colours are the explorer's own, one set per theme
// (JupyterLab's editor colours do not all reach 4.5:1). Keyboard focus shows as an outline.

import { GRAPH_CSS } from './graphstyle';

export const CSS = `
.rl-explorer{--rl-fg:var(--jp-ui-font-color1,#1f2328);--rl-mute:#575757;
--rl-line:var(--jp-border-color2,#d0d7de);--rl-bg:var(--jp-layout-color0,#fff);
--rl-bg2:var(--jp-layout-color2,#f6f8fa);--rl-add:rgba(46,160,67,.15);--rl-del:rgba(248,81,73,.15);
--rl-addx:rgba(46,160,67,.3);--rl-delx:rgba(248,81,73,.3);--rl-accent:var(--jp-brand-color1,#0969da);
--rl-sel:rgba(9,105,218,.12);--rl-hit:rgba(212,167,44,.4);--rl-focus:#0969da;
--rl-red:#a8101b;--rl-amber:#7a4d00;--rl-orange:#9c3a00;--rl-green:#17622b;
--rl-tk-o:#7221c9;--rl-tk-d:#8a3300;--rl-tk-v:#0550ae;--rl-tk-b:#116329;--rl-tk-s:#a8101b;--rl-tk-t:#0a3069;
--rl-tk-a:#6639ba;--rl-tk-k:#4d5560;--rl-tk-w:#a8101b;--rl-tk-q:#0a3069;--rl-tk-n:#0550ae;--rl-tk-c:#4f5862;
font:13px/1.45 var(--jp-ui-font-family,system-ui,sans-serif);color:var(--rl-fg);
border:1px solid var(--rl-line);background:var(--rl-bg);padding:6px;box-sizing:border-box}
.rl-explorer *{box-sizing:border-box}
[data-jp-theme-light=false] .rl-explorer{--rl-mute:#b3b3b3;--rl-bg2:var(--jp-layout-color1,#212121);
--rl-add:rgba(46,160,67,.2);--rl-del:rgba(248,81,73,.2);--rl-addx:rgba(46,160,67,.35);--rl-delx:rgba(248,81,73,.35);
--rl-sel:rgba(56,139,253,.25);--rl-hit:rgba(212,167,44,.3);--rl-focus:#58a6ff;
--rl-red:#ffa198;--rl-amber:#e3b341;--rl-orange:#ffa657;--rl-green:#56d364;
--rl-tk-o:#d2a8ff;--rl-tk-d:#ffa657;--rl-tk-v:#79c0ff;--rl-tk-b:#7ee787;--rl-tk-s:#ffa198;--rl-tk-t:#a5d6ff;
--rl-tk-a:#d2a8ff;--rl-tk-k:#c9d1d9;--rl-tk-w:#ffa198;--rl-tk-q:#a5d6ff;--rl-tk-n:#79c0ff;--rl-tk-c:#b1bac4}
.rl-explorer :focus-visible{outline:2px solid var(--rl-focus);outline-offset:1px}
.rl-explorer .rl-vlist:focus-visible,.rl-explorer .rl-stage-table:focus-visible,
.rl-explorer .rl-panel:focus-visible{outline-offset:-2px}
.rl-explorer .rl-stage-table:focus-visible tr.selected td{box-shadow:inset 0 2px 0 var(--rl-focus),inset 0 -2px 0 var(--rl-focus)}
.rl-explorer [hidden]{display:none!important}
.rl-title{margin-bottom:4px}.rl-fn{font-weight:600;font-size:1.1em}
.rl-note{color:var(--rl-mute)}.rl-error-text{color:var(--rl-red)}
.rl-problem{padding:.6em;border:1px solid var(--rl-red);color:var(--rl-red);background:rgba(248,81,73,.08)}
.rl-body{display:grid;grid-template-columns:minmax(16em,max-content) minmax(0,1fr);gap:8px;align-items:start}
.rl-toolbar{display:flex;gap:.5em;align-items:center;flex-wrap:wrap;margin:2px 0 4px}
.rl-btn{font:inherit;padding:1px 8px;border:1px solid var(--rl-line);background:var(--rl-bg2);
color:var(--rl-fg);border-radius:3px;cursor:pointer}
.rl-btn:disabled{opacity:.5;cursor:default}
.rl-stages{max-height:620px;overflow:auto;border:1px solid var(--rl-line)}
.rl-stage-table{border-collapse:collapse;width:100%}
.rl-stage-table th{position:sticky;top:0;background:var(--rl-bg2);text-align:left;font-weight:600}
.rl-stage-table td,.rl-stage-table th{padding:1px 5px;border-bottom:1px solid var(--rl-line);white-space:nowrap}
.rl-stage-table tr{cursor:pointer}.rl-stage-table tr.unchanged td{color:var(--rl-mute)}
.rl-stage-table tr.selected td{background:var(--rl-sel)}
.rl-stage-table td.rl-stage-name{min-width:10em;max-width:26em;white-space:normal;overflow-wrap:anywhere}
.rl-stage-table tr.rl-compared td{box-shadow:inset 0 -1px 0 var(--rl-accent)}
.rl-compared-mark{display:inline-block;margin:0 .3em;padding:0 .35em;border:1px solid var(--rl-accent);border-radius:3px;
font-size:.8em;line-height:1.3;color:var(--rl-fg)}
.rl-mark-changed{color:var(--rl-amber)}.rl-mark-same{color:var(--rl-mute)}.rl-group{color:var(--rl-mute);font-size:.85em}
.rl-unavailable{color:var(--rl-orange)}.rl-num{text-align:right;font-variant-numeric:tabular-nums}
td.up{background:var(--rl-add)}td.down{background:var(--rl-del)}
.rl-hide-unchanged{padding:2px 4px;margin:0}
.rl-stages-bar{display:flex;align-items:center;justify-content:space-between;gap:4px;flex-wrap:wrap;
background:var(--rl-bg2);padding-right:2px}.rl-stage-columns{font-size:11px;padding:0 5px}
.rl-body.rl-narrow-stages{grid-template-columns:minmax(0,max-content) minmax(0,1fr)}
.rl-body.rl-sbs-diff{display:flex;flex-wrap:wrap}.rl-sbs-diff>.rl-stages{flex:0 0 auto}
.rl-sbs-diff>.rl-main{flex:1 1 0;min-width:min(100%,40em)}
.rl-narrow-stages .rl-stages{max-width:17em}
.rl-narrow-stages .rl-stage-table :is(th,td):nth-child(3),
.rl-narrow-stages .rl-stage-table :is(th,td):nth-child(n+5){display:none}
.rl-narrow-stages .rl-stage-table td.rl-stage-name{min-width:0;max-width:12em;white-space:nowrap;
overflow:hidden;text-overflow:ellipsis}
.rl-narrow-stages .rl-hide-unchanged .rl-note{display:none}
.rl-tabs{display:flex;gap:2px;border-bottom:1px solid var(--rl-line);flex-wrap:wrap}
.rl-tab{border-radius:3px 3px 0 0;border-bottom:none}.rl-tab.active{background:var(--rl-bg);
border-color:var(--rl-accent);font-weight:600}
.rl-panel{padding-top:4px;min-width:0}
.rl-vlist{position:relative;overflow:auto;border:1px solid var(--rl-line);background:var(--rl-bg);outline:none}
.rl-vsizer{position:relative;min-width:100%;width:max-content}
.rl-vrows{position:absolute;left:0;top:0;min-width:100%;will-change:transform}
.rl-vrows .r,.rl-vrows .fold{height:18px;line-height:18px;white-space:pre;
font:12px/18px var(--jp-code-font-family,ui-monospace,SFMono-Regular,Menlo,Consolas,monospace)}
.rl-vrows .r{display:flex}
.rl-vrows .ln{flex:0 0 auto;min-width:4.5em;padding-right:.6em;text-align:right;color:var(--rl-mute);user-select:none}
.rl-vrows .mk{flex:0 0 1.2em;color:var(--rl-mute)}
.rl-vrows .cd{flex:1 0 auto;padding-right:1em}
.rl-diff:not(.rl-uni) .rl-vsizer,.rl-diff:not(.rl-uni) .rl-vrows{width:100%}
.rl-diff:not(.rl-uni) .rl-vrows .r{display:grid;grid-template-columns:4.5em minmax(0,1fr) 4.5em minmax(0,1fr)}
.rl-diff:not(.rl-uni) .rl-vrows .cd{overflow:hidden;text-overflow:ellipsis;padding-right:.3em}
.rl-vrows .cd.rl-wrapped{line-height:18px}
.rl-vrows .cd.add{background:var(--rl-add)}.rl-vrows .cd.del{background:var(--rl-del)}
.rl-vrows .cd.add .x{background:var(--rl-addx)}.rl-vrows .cd.del .x{background:var(--rl-delx)}
.rl-vrows .fold{background:var(--rl-bg2);color:var(--rl-mute);padding-left:1em;cursor:pointer;font-size:11px}
.rl-diff-summary{padding:2px 0 4px;font-weight:500}
.rl-text-head{color:var(--rl-mute);padding:2px 0}
.rl-loading .rl-vlist{opacity:.5}
/* MLIR token colours (the editor's classes, src/language.ts), the theme's set. */
.rl-explorer .o{color:var(--rl-tk-o);font-weight:600}
.rl-explorer .d{color:var(--rl-tk-d)}
.rl-explorer .v{color:var(--rl-tk-v)}
.rl-explorer .v.rl-named{text-decoration:underline dotted;text-underline-offset:2px;cursor:help}
.rl-explorer .b{color:var(--rl-tk-b)}
.rl-explorer .s{color:var(--rl-tk-s)}
.rl-explorer .t{color:var(--rl-tk-t)}
.rl-explorer .a{color:var(--rl-tk-a)}
.rl-explorer .k{color:var(--rl-tk-k)}
.rl-explorer .w{color:var(--rl-tk-w)}
.rl-explorer .q{color:var(--rl-tk-q)}
.rl-explorer .n{color:var(--rl-tk-n)}
.rl-explorer .c{color:var(--rl-tk-c);font-style:italic}
.rl-explorer .l{color:var(--rl-tk-c)}
.rl-explorer .el{color:var(--rl-mute);font-style:italic}
.rl-panzoom{position:relative;height:480px;overflow:hidden;border:1px solid var(--rl-line);
background:var(--rl-bg);cursor:grab;touch-action:none}
.rl-graph-cap,.rl-graph-summary{display:flex;flex-wrap:wrap;gap:.3em .5em;align-items:center}
.rl-graph-offer{display:inline-flex;flex-wrap:wrap;gap:.3em;align-items:center}
.rl-slice-result{font:inherit;max-width:18em;background:var(--rl-bg);color:var(--rl-fg);border:1px solid var(--rl-line)}
.rl-pz-stage{position:absolute;left:0;top:0;transform-origin:0 0}
.rl-graph-img{display:block;max-width:none;user-select:none}
.rl-hotspots{position:absolute;inset:0}
.rl-hotspot{position:absolute;padding:0;border:2px solid transparent;background:transparent;cursor:pointer}
.rl-hotspot:hover,.rl-hotspot:focus{border-color:var(--rl-accent);background:rgba(9,105,218,.08)}
.rl-hint{color:var(--rl-mute);font-size:.9em}
.rl-graph-footer{margin-top:4px;display:flex;gap:4px;flex-wrap:wrap;align-items:center}
.rl-explorer table.rl-ops,.rl-explorer .rl-timing table,.rl-explorer .rl-signature table,
.rl-explorer .rl-xla-facts table{border-collapse:collapse;margin:4px 0}
.rl-explorer .rl-ops td,.rl-explorer .rl-ops th,.rl-explorer .rl-timing td,.rl-explorer .rl-timing th,
.rl-explorer .rl-signature td,.rl-explorer .rl-signature th,.rl-explorer .rl-xla-facts td,
.rl-explorer .rl-xla-facts th{border:1px solid var(--rl-line);padding:1px 6px;text-align:left}
.rl-metrics{overflow:auto;max-height:620px}.rl-ops td{text-align:right}
.rl-explorer .rl-ops thead th{vertical-align:bottom;text-align:right}
.rl-col-index{display:block}.rl-col-name{display:block;max-width:9em;font-weight:400;font-size:.85em;
white-space:normal;overflow-wrap:anywhere;color:var(--rl-mute)}
.rl-ops .selected{outline:2px solid var(--rl-accent);outline-offset:-2px}
.rl-sticky{position:sticky;left:0;background:var(--rl-bg2)}.rl-total th,.rl-total td{font-weight:600}
.rl-bars{max-height:360px;overflow:auto}
.rl-bar-row{display:grid;grid-template-columns:14em 1fr 6em;gap:6px;align-items:center;font-size:12px}
.rl-bar-label{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.rl-bar-track{background:var(--rl-bg2);height:10px}.rl-bar{display:block;height:10px;background:var(--rl-accent)}
.rl-controls{display:flex;gap:.5em;align-items:center;flex-wrap:wrap;padding:4px;
background:var(--rl-bg2);border:1px solid var(--rl-line);margin-bottom:4px}
.rl-pipeline{flex:1 1 18em;min-width:12em;font:12px var(--jp-code-font-family,monospace)}
.rl-status{padding:3px 6px;margin-bottom:4px;border:1px solid var(--rl-line)}
.rl-status[data-state=error]{border-color:var(--rl-red);color:var(--rl-red);background:rgba(248,81,73,.08);
white-space:pre-wrap}
.rl-status progress{margin-right:.6em;vertical-align:middle}
.rl-tools{display:inline-flex;gap:.4em;align-items:center;margin-left:auto}
.rl-verify-note{padding:3px 6px;margin-bottom:4px;border:1px solid var(--rl-line);background:var(--rl-bg2)}
.rl-verify-wrong{color:var(--rl-red);font-weight:600}.rl-verify-slower{color:var(--rl-amber);font-weight:600}
.rl-verify-ok{color:var(--rl-green)}
.rl-stage-table td.rl-verdict{text-align:right;font-variant-numeric:tabular-nums}
.rl-stage-table td.rl-ok{color:var(--rl-green)}.rl-stage-table td.rl-bad{color:var(--rl-red);font-weight:600}
.rl-stage-table td.rl-slower{color:var(--rl-amber);font-weight:600}
.rl-stage-table tr.rl-first-wrong td{box-shadow:inset 0 -2px 0 #cf222e;background:rgba(248,81,73,.12)}
.rl-stage-table tr.rl-first-slower:not(.rl-first-wrong) td{box-shadow:inset 0 -2px 0 #bf8700;
background:rgba(212,167,44,.15)}
.rl-verify-mark{font-size:.85em;font-weight:600;color:var(--rl-red)}
.rl-first-slower:not(.rl-first-wrong) .rl-verify-mark{color:var(--rl-amber)}
.rl-bisect{padding:4px 6px;margin-bottom:4px;border:1px solid var(--rl-line);border-left:4px solid #cf222e}
.rl-bisect-none{border-left-color:var(--rl-mute)}.rl-bisect-fine{border-left-color:var(--rl-green)}
.rl-stage-notes{margin:2px 0;padding:2px 4px;font-size:12px;border:1px solid var(--rl-line);background:var(--rl-bg2)}
.rl-stage-notes summary{cursor:pointer}.rl-stage-notes li{margin:2px 0;overflow-wrap:anywhere}
.rl-stage-notes ul{margin:2px 0;padding-left:.2em;list-style:none}.rl-note-where{font-weight:600}
.rl-unavailable sup{font-size:.7em}.rl-culprit{font-weight:600}
.rl-bisect table{border-collapse:collapse;margin:4px 0}.rl-bisect td,.rl-bisect th{border:1px solid var(--rl-line);
padding:1px 6px;text-align:left}
.rl-bisect pre{max-height:320px;overflow:auto;margin:2px 0;
font:12px/1.4 var(--jp-code-font-family,ui-monospace,SFMono-Regular,Menlo,Consolas,monospace)}
.rl-title{display:flex;align-items:center;gap:.5em;flex-wrap:wrap}.rl-title-text{flex:1 1 auto}
.rl-file-tools{display:inline-flex;gap:.3em}.rl-find{display:inline-flex;gap:.2em;align-items:center}
.rl-find-input{font:inherit;width:12em;padding:0 4px;border:1px solid var(--rl-line);background:var(--rl-bg);color:var(--rl-fg)}
.rl-find-count{min-width:5em}.rl-text-bar .rl-text-head{flex:1 1 auto;padding:0}
.rl-explorer mark.rl-hit{background:var(--rl-hit);color:inherit;border-radius:2px}
.rl-explorer mark.rl-hit-current{background:#ffa940;color:#111;outline:1px solid #bc4c00}
.rl-copy-note{padding:3px 6px;margin:2px 0;border:1px solid var(--rl-line);background:var(--rl-bg2)}
.rl-copy-note .rl-close{margin-left:.6em;padding:0 5px}
.rl-copy-box{display:block;width:100%;margin-top:4px;font:12px var(--jp-code-font-family,monospace);
background:var(--rl-bg);color:var(--rl-fg)}
.rl-diff-tools{font-size:12px}.rl-diff-tools .rl-change-count{min-width:8em}
.rl-vrows .r.rl-current{box-shadow:inset 3px 0 0 var(--rl-accent)}
.rl-vrows .r.rl-hit-row{box-shadow:inset 3px 0 0 #bc4c00}
.rl-diff .rl-vrows .cd .el{cursor:pointer;text-decoration:underline dotted}
.rl-diff:not(.rl-uni) .rl-vrows .cd.rl-whole{overflow-x:auto;text-overflow:clip;scrollbar-width:thin}
.rl-vrows .fold.rl-gap{cursor:default;text-align:center;padding:0}
.rl-vrows .fold.rl-hlo-tables{font-size:12px}
.rl-bench-summary{margin:0 0 4px;padding:2px 6px;border-left:3px solid var(--rl-accent);background:var(--rl-bg2)}
.rl-bench-summary .rl-note{color:var(--rl-fg)}
.rl-timing tr.rl-noisy td{color:var(--rl-amber)}.rl-skipped{margin:2px 0 6px;padding-left:1.4em}
.rl-diff-text .add{background:var(--rl-add)}.rl-diff-text .del{background:var(--rl-del)}
.rl-kernel-list{max-height:240px;overflow:auto;border:1px solid var(--rl-line);margin:4px 0}
.rl-kernel-table{border-collapse:collapse;width:100%}
.rl-kernel-table th{position:sticky;top:0;background:var(--rl-bg2);text-align:left;font-weight:600}
.rl-kernel-table td,.rl-kernel-table th{padding:1px 6px;border-bottom:1px solid var(--rl-line);vertical-align:top}
.rl-kernel-table tr.selected td{background:var(--rl-sel)}.rl-kernel-from{overflow-wrap:anywhere}
.rl-kernel-pick,.rl-xla-kernel{font:12px var(--jp-code-font-family,ui-monospace,SFMono-Regular,Menlo,Consolas,monospace)}
.rl-xla-kernel{padding:0 4px;margin:1px 0}
.rl-code-kind.active{border-color:var(--rl-accent);font-weight:600}
.rl-code-note{margin:4px 0}
` + GRAPH_CSS;

const STYLE_ID = 'reactant-lab-explorer-style';

export function installStyle(doc: Document): void {
  if (!doc.getElementById(STYLE_ID)) {
    const style = doc.createElement('style');
    style.id = STYLE_ID;
    style.textContent = CSS;
    doc.head.appendChild(style);
  }
}
