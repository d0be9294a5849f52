// Bundle the explorer (src/explorer and its entries) for the Python package, in one build:
//   reactant_lab/notebook/static/widget.js  the anywidget front end (ES module, src/widget.ts)
//   reactant_lab/render/static/explorer.js  the HTML report's script (classic script, src/report.ts;
//                                           global `reactantLabExplorer.render(el, payload)`)
//   reactant_lab/render/static/explorer.css the explorer's stylesheet (src/explorer/style.ts), which
//                                           the report inlines so its CSP can name it by hash
import { build } from 'esbuild';
import { Buffer } from 'node:buffer';
import { mkdirSync, writeFileSync } from 'node:fs';

const common = {
  bundle: true,
  target: 'es2022',
  minify: true,
  legalComments: 'none',
  logLevel: 'warning'
};

await build({
  ...common,
  entryPoints: ['src/widget.ts'],
  outfile: '../reactant_lab/notebook/static/widget.js',
  format: 'esm'
});
await build({
  ...common,
  entryPoints: ['src/report.ts'],
  outfile: '../reactant_lab/render/static/explorer.js',
  format: 'iife',
  globalName: 'reactantLabExplorer'
});

const style = await build({ ...common, entryPoints: ['src/explorer/style.ts'], format: 'esm', write: false });
const { CSS } = await import(`data:text/javascript;base64,${Buffer.from(style.outputFiles[0].text).toString('base64')}`);
mkdirSync('../reactant_lab/render/static', { recursive: true });
writeFileSync('../reactant_lab/render/static/explorer.css', CSS.trim() + '\n');
