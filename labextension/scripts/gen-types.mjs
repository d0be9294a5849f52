// TypeScript types of the explorer payload and the widget protocol, generated from the one schema
// (reactant_lab/render/explorer.schema.json) with json-schema-to-typescript.
//   node scripts/gen-types.mjs          write src/explorer/payload.generated.ts
//   node scripts/gen-types.mjs --check  fail when the committed file differs from the schema's
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compile } from 'json-schema-to-typescript';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const SCHEMA = join(ROOT, '..', 'reactant_lab', 'render', 'explorer.schema.json');
export const OUTPUT = join(ROOT, 'src', 'explorer', 'payload.generated.ts');

const BANNER = `// Generated from reactant_lab/render/explorer.schema.json by scripts/gen-types.mjs: do not edit.
// Change the schema, then run \`jlpm gen:types\` (\`jlpm test\` fails while this file is stale).
`;

/** The schema as the generator reads it. It knows draft-07 tuples only: a draft 2020-12 tuple
 * (`prefixItems`, `items: false`) becomes `items: [...]` with `additionalItems: false`, which
 * means the same. And it would type a list with `minItems` as a tuple: for lists that bound
 * is left to the validators. */
function forGenerator(node) {
  if (Array.isArray(node)) {
    return node.map(forGenerator);
  }
  if (node === null || typeof node !== 'object') {
    return node;
  }
  const out = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, forGenerator(v)]));
  if (Array.isArray(out.prefixItems)) {
    out.additionalItems = out.items ?? true;
    out.items = out.prefixItems;
    if (out.additionalItems === false) {
      out.maxItems = out.prefixItems.length;
    }
    delete out.prefixItems;
  } else if (out.items !== undefined && !Array.isArray(out.items)) {
    delete out.minItems;
    delete out.maxItems;
  }
  return out;
}

/** The generated module's text. */
export async function generateTypes() {
  const schema = forGenerator(JSON.parse(readFileSync(SCHEMA, 'utf8')));
  delete schema.$schema;
  return compile(schema, 'ExplorerPayload', {
    bannerComment: BANNER,
    additionalProperties: false,
    unreachableDefinitions: true,
    unknownAny: true,
    style: { singleQuote: true, printWidth: 120, trailingComma: 'none', arrowParens: 'avoid' }
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = await generateTypes();
  if (process.argv.includes('--check')) {
    if (readFileSync(OUTPUT, 'utf8') !== text) {
      process.stderr.write(
        'src/explorer/payload.generated.ts is out of date with reactant_lab/render/explorer.schema.json: ' +
          'run `jlpm gen:types` in labextension/ and commit the result.\n'
      );
      process.exit(1);
    }
  } else {
    writeFileSync(OUTPUT, text);
  }
}
