// Bundle the anywidget front end (src/widget.ts and the shared explorer) into one ES module that
// the Python widget loads: reactant_lab/notebook/static/widget.js.
import { build } from 'esbuild';

await build({
  entryPoints: ['src/widget.ts'],
  outfile: '../reactant_lab/notebook/static/widget.js',
  bundle: true,
  format: 'esm',
  target: 'es2022',
  minify: true,
  legalComments: 'none',
  logLevel: 'warning'
});
