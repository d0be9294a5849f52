// The names the user wrote, where the module has only positions: a call's arguments and results
// by the traced function's parameter and variable names (`p['w1']` for args[0]['w1'], `t` for
// result), a loop's carried values by the statement's variables; as hovers on the IR's SSA
// values and as the graph's labels.

import type { ExplorerPayload, GraphModel, GraphNode, Signature } from './types';

/** The name the user wrote for argument or result `path` (the path itself where the function
 * names it no otherwise, or the payload predates names). */
export function pyName(sig: Signature, path: string): string {
  return sig.names?.[path] ?? path;
}

/** `name (path)`, or the path alone when it is the name. */
export function nameAndPath(sig: Signature, path: string): string {
  const name = pyName(sig, path);
  return name === path ? path : `${name} (${path})`;
}

/** Split a printed type list at its top-level commas: `tensor<f64>, tensor<2xi1>` -> 2. */
export function splitTypes(type: string | undefined): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of type ?? '') {
    depth += '<([{'.includes(ch) ? 1 : '>)]}'.includes(ch) ? -1 : 0;
    if (ch === ',' && depth === 0) {
      out.push(cur.trim());
      cur = '';
    } else {
      cur += ch;
    }
  }
  if (cur.trim()) {
    out.push(cur.trim());
  }
  return out;
}

/** A region op's carried values in words: each result's Python name, or its type (`short`
 * writes types short) where none is known; '' when the op names none. */
export function carriedText(node: GraphNode, short: (type: string) => string = t => t): string {
  const names = node.carried ?? [];
  if (!names.some(n => n)) {
    return '';
  }
  const types = splitTypes(node.type);
  return names.map((n, k) => n ?? short(types[k] ?? '?')).join(', ');
}

/** Lines (0-based, first and last) of `@main`'s body in a module's text, or null. */
export function mainLines(lines: readonly string[]): [number, number] | null {
  const head = lines.findIndex(l => /^\s*func\.func\s+(?:public\s+|private\s+)?@main\(/.test(l));
  if (head < 0) {
    return null;
  }
  const indent = lines[head].length - lines[head].trimStart().length;
  for (let i = head + 1; i < lines.length; i++) {
    const l = lines[i];
    if (l.trimStart().startsWith('}') && l.length - l.trimStart().length === indent) {
      return [head, i];
    }
  }
  return [head, lines.length - 1];
}

/** Hover text per SSA value of `@main` that stands for something the user named: `%argN` (the
 * argument's name, path and type), a loop's block arguments and a while / case op's results
 * (the carried values' names), from `model` (the graph model of this very text) when given. */
export function valueTitles(sig: Signature, model: GraphModel | null): Map<string, string> {
  const out = new Map<string, string>();
  for (const a of sig.args) {
    const name = pyName(sig, a.path);
    out.set(`%arg${a.index}`, name === a.path ? `${a.path} · ${a.type}` : `${name} · ${a.type} · ${a.path}`);
  }
  for (const n of model?.nodes ?? []) {
    if (n.kind !== 'op' || !n.carried || n.id.includes('/')) {
      continue;
    }
    const where = n.title ? ` (${n.title})` : '';
    (n.iter_args ?? []).forEach((ssa, k) => {
      const name = n.carried?.[k];
      if (name) {
        out.set(ssa, `${name}: carried by the loop${where}`);
      }
    });
    const result = (n.ssa ?? '').split(',')[0].split(':')[0].trim();
    if (result) {
      const each = n.carried.map((name, k) => `${result}#${k} ${name ?? '(not named)'}`);
      out.set(result, `${n.op ?? ''}${where}: ${each.join(', ')}`);
    }
  }
  return out;
}

/** The graph model drawn for exactly the text of stage `stage` (its SSA names are the text's),
 * or null. */
export function modelOfText(payload: ExplorerPayload, stage: number): GraphModel | null {
  const text = payload.stages[stage]?.text;
  for (const g of payload.graphs) {
    if (g.model && g.stages.includes(stage) && payload.stages[g.stage]?.text === text) {
      return g.model;
    }
  }
  return null;
}

/** Give the SSA value tokens (`.v`) of a drawn line that `names` names a hover title (and class
 * `rl-named`). */
export function nameValues(cell: HTMLElement, names: ReadonlyMap<string, string>): void {
  for (const v of Array.from(cell.querySelectorAll<HTMLElement>('.v'))) {
    const title = names.get(v.textContent ?? '');
    if (title) {
      v.title = title;
      v.classList.add('rl-named');
    }
  }
}
