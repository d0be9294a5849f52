// The interactive graph's stylesheet (part of the explorer's, see style.ts): JupyterLab's theme
// colours through the explorer's --rl-* variables, so that the graph follows a dark theme; and
// the same colours for a Graphviz summary picture (themedSvg).

/** The tints of shardings (a box's fill, mixed with the page's background so that it reads in light
 * and dark themes): class `rl-sh-K` is colour K. */
export const SHARD_COLOURS = ['#3b82f6', '#a855f7', '#14b8a6', '#eab308', '#ec4899', '#84cc16', '#06b6d4', '#a16207'];

const SHARD_CSS = SHARD_COLOURS.map(
  (c, k) => `.rl-sh-${k}>.rl-gbox,.rl-swatch.rl-sh-${k}{fill:color-mix(in srgb,${c} 26%,var(--rl-bg));background:color-mix(in srgb,${c} 26%,var(--rl-bg))}`
).join('\n');

export const GRAPH_CSS = `
.rl-graph-pane{display:grid;grid-template-columns:minmax(0,1fr) auto;gap:6px;align-items:start}
.rl-gview{height:min(72vh,640px);min-height:240px;overflow:auto;border:1px solid var(--rl-line);
background:var(--rl-bg);resize:vertical;outline:none;cursor:grab}
.rl-gview:focus-visible{outline:2px solid var(--rl-accent)}
.rl-gsvg{display:block;font:11px var(--jp-code-font-family,ui-monospace,SFMono-Regular,Menlo,Consolas,monospace)}
.rl-gn{cursor:pointer}
.rl-gn:focus{outline:none}
.rl-gbox{fill:var(--rl-bg);stroke:var(--rl-mute);stroke-width:1}
.rl-gt{fill:var(--rl-fg)}
.rl-gt0{font-weight:600}
.k-arg .rl-gbox{fill:color-mix(in srgb,var(--rl-accent) 16%,var(--rl-bg));stroke:var(--rl-accent)}
.k-result .rl-gbox{fill:color-mix(in srgb,#2da44e 20%,var(--rl-bg));stroke:#2da44e}
.m-mutated .rl-gbox,.m-writes-back .rl-gbox{fill:color-mix(in srgb,#e16f24 22%,var(--rl-bg));stroke:#e16f24;stroke-width:2}
.m-donated .rl-gbox,.m-preserved .rl-gbox{stroke-dasharray:4 2}
.m-unused .rl-gt{fill:var(--rl-mute)}
.k-region>.rl-gbox{fill:color-mix(in srgb,var(--rl-fg) 3%,var(--rl-bg));stroke-dasharray:5 3}
.k-collapsed .rl-gbox{fill:color-mix(in srgb,var(--rl-fg) 7%,var(--rl-bg));stroke-width:1.5}
.k-entry .rl-gbox,.k-return .rl-gbox{stroke-dasharray:2 2}
${SHARD_CSS}
.rl-gn.d-added>.rl-gbox,.rl-swatch.d-added{fill:color-mix(in srgb,var(--rl-green) 20%,var(--rl-bg));
background:color-mix(in srgb,var(--rl-green) 20%,var(--rl-bg));stroke:var(--rl-green);border:2px solid var(--rl-green);stroke-width:2}
.rl-gn.d-removed>.rl-gbox,.rl-swatch.d-removed{fill:color-mix(in srgb,var(--rl-red) 14%,var(--rl-bg));
background:color-mix(in srgb,var(--rl-red) 14%,var(--rl-bg));stroke:var(--rl-red);border:2px dashed var(--rl-red);stroke-width:2;stroke-dasharray:5 3}
.rl-gn.d-changed>.rl-gbox,.rl-swatch.d-changed{fill:color-mix(in srgb,var(--rl-amber) 20%,var(--rl-bg));
background:color-mix(in srgb,var(--rl-amber) 20%,var(--rl-bg));stroke:var(--rl-amber);border:2px solid var(--rl-amber);stroke-width:2}
.rl-gn.k-region.d-added>.rl-gbox{fill:color-mix(in srgb,var(--rl-green) 6%,var(--rl-bg))}
.rl-gn.k-region.d-removed>.rl-gbox{fill:color-mix(in srgb,var(--rl-red) 6%,var(--rl-bg))}
.rl-gn.k-region.d-changed>.rl-gbox{fill:color-mix(in srgb,var(--rl-amber) 6%,var(--rl-bg))}
.rl-ge.d-added{stroke:var(--rl-green);stroke-width:1.5;opacity:1}
.rl-ge.d-removed{stroke:var(--rl-red);stroke-width:1.5;stroke-dasharray:4 3;opacity:1}
.rl-gp-status.d-added{color:var(--rl-green)}.rl-gp-status.d-removed{color:var(--rl-red)}
.rl-gp-status.d-changed{color:var(--rl-amber)}
.rl-gp-change{flex-direction:row}.rl-gp-was{display:block;width:100%;padding-left:6.5em}
.rl-gdiff-tools{display:inline-flex;gap:.3em;align-items:center}
.rl-gdiff-base{font:inherit;max-width:16em;border:1px solid var(--rl-line);background:var(--rl-bg);color:var(--rl-fg)}
.m-collective>.rl-gbox{stroke:var(--rl-red);stroke-width:2.5}
.rl-gt-coll{fill:var(--rl-red);font-weight:600}
.k-entry .rl-gt,.k-return .rl-gt{fill:var(--rl-mute);font-weight:400}
.rl-gtoggle{fill:var(--rl-accent)}
.rl-gframe{fill:none;stroke:var(--rl-line);stroke-dasharray:3 3}
.rl-gframe-label{fill:var(--rl-mute);font-size:10px}
.rl-ge{fill:none;stroke:var(--rl-mute);stroke-width:1;opacity:.75}
.rl-garrow{fill:var(--rl-mute)}
.rl-gn:hover .rl-gbox{stroke:var(--rl-accent)}
.rl-gn.sel .rl-gbox{stroke:var(--rl-accent);stroke-width:3}
.rl-gn.hit .rl-gbox{stroke:#d4a72c;stroke-width:3}
.rl-sliced .rl-gn:not(.in-slice){opacity:.25}
.rl-sliced .rl-ge:not(.in-slice){opacity:.12}
.rl-sliced .rl-ge.in-slice{stroke:var(--rl-accent);stroke-width:1.6;opacity:1}
.rl-gpanel{width:22em;max-height:min(72vh,640px);overflow:auto;border:1px solid var(--rl-line);
background:var(--rl-bg2);padding:4px 6px;font-size:12px}
.rl-gp-head{display:flex;justify-content:space-between;gap:4px;font-weight:600;margin-bottom:4px;word-break:break-all}
.rl-gp-row,.rl-gp-slice{margin:3px 0;display:flex;flex-wrap:wrap;gap:3px;align-items:baseline}
.rl-gp-key{color:var(--rl-mute);min-width:6.5em}
.rl-gpanel code{font:11px var(--jp-code-font-family,monospace);word-break:break-all;white-space:pre-wrap}
.rl-gp-colls{display:flex;flex-direction:column;gap:2px}
.rl-gp-links{display:flex;flex-wrap:wrap;gap:2px}
.rl-gp-link{font-size:11px;padding:0 4px}
.rl-graph-search{font:inherit;width:14em;padding:1px 4px;border:1px solid var(--rl-line);
background:var(--rl-bg);color:var(--rl-fg)}
.rl-graph-tools{display:inline-flex;gap:.5em;align-items:center;flex-wrap:wrap}
.rl-graph-legend,.rl-gdiff-legend{display:flex;flex-wrap:wrap;gap:.4em 1em;align-items:center;margin:2px 0 4px;font-size:12px}
.rl-shard-key{display:inline-flex;gap:.3em;align-items:center}
.rl-shard-key code{font:11px var(--jp-code-font-family,monospace)}
.rl-swatch{display:inline-block;width:1.1em;height:.9em;border:1px solid var(--rl-mute);background:var(--rl-bg)}
.rl-swatch.rl-coll-swatch{border:2.5px solid var(--rl-red)}
.rl-graph-progress{margin:4px 0;display:flex;gap:.5em;align-items:center}
.rl-graph-bar-progress{width:16em}
`;

/** The theme's colours a summary picture is drawn in (CSS colour values). */
export interface Palette {
  bg: string;
  fg: string;
  mute: string;
  line: string;
  accent: string;
  green: string;
  orange: string;
}

/** A Graphviz SVG of reactant_lab.render.graph_dot (its nodes and edges carry their kind and
 * marks as classes) recoloured with `p`: a stylesheet inside the picture, whose rules win over
 * Graphviz's colour attributes, so that an <img> of it reads in a dark theme too. */
export function themedSvg(svg: string, p: Palette): string {
  const c = Object.fromEntries(
    Object.entries(p).map(([k, v]) => [k, /^[#\w\s(),.%-]+$/.test(v) ? v : '#888'])
  ) as unknown as Palette;
  const mix = (colour: string, pct: number) => `color-mix(in srgb,${colour} ${pct}%,${c.bg})`;
  const shape = (sel: string) => ['path', 'polygon', 'ellipse'].map(t => `${sel}>${t}`).join(',');
  const css = [
    `.graph>polygon{fill:${c.bg}}text{fill:${c.fg}}`,
    `${shape('.node')}{fill:${c.bg};stroke:${c.mute}}`,
    `${shape('.node.arg')}{fill:${mix(c.accent, 18)};stroke:${c.accent}}`,
    `${shape('.node.result')}{fill:${mix(c.green, 20)};stroke:${c.green}}`,
    `${shape('.node.m-mutated')},${shape('.node.m-writes-back')}{fill:${mix(c.orange, 22)};stroke:${c.orange}}`,
    `${shape('.node.m-preserved')}{fill:${mix(c.fg, 7)}}`,
    `${shape('.node.return')},${shape('.node.region-args')}{fill:none}`,
    `.node.m-unused>text{fill:${c.mute}}${shape('.node.m-unused')}{stroke:${c.line}}`,
    `.edge>path{stroke:${c.mute}}.edge>polygon{fill:${c.mute};stroke:${c.mute}}`,
    `.edge.depends>path{stroke:${c.accent}}.edge.depends>polygon{fill:${c.accent};stroke:${c.accent}}`,
    `${shape('.cluster')}{fill:none;stroke:${c.line}}.cluster>text{fill:${c.mute}}`
  ].join('');
  return svg.replace(/<svg\b[^>]*>/, open => `${open}<style>${css}</style>`);
}
