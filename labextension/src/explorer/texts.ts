// Payload texts decoded on first use (plain, gzip or line delta; see docs/explorer-schema.md),
// with the browser's DecompressionStream, and kept split into lines.

import type { TextEntry } from './types';

/** The UTF-8 text that `reactant_lab.render.texts.pack` packed (base64 of gzip). */
export async function gunzipBase64(data: string): Promise<string> {
  const binary = atob(data);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) {
    bytes[i] = binary.charCodeAt(i);
  }
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  return await new Response(stream).text();
}

/** Apply a delta's edit script to its base's lines. */
export function applyDelta(base: readonly string[], ops: readonly unknown[]): string[] {
  const lines: string[] = [];
  for (const op of ops) {
    if (Array.isArray(op)) {
      const [a0, a1] = op as [number, number];
      for (let i = a0; i < a1; i++) {
        lines.push(base[i]);
      }
    } else if (typeof op === 'string') {
      lines.push(...op.split('\n'));
    } else {
      throw new Error(`bad delta operation ${JSON.stringify(op)}`);
    }
  }
  return lines;
}

/** Decodes entries of one payload's `texts` on demand; each entry is decoded at most once. */
export class TextStore {
  private readonly pending = new Map<number, Promise<string[]>>();

  constructor(private readonly entries: readonly TextEntry[]) {}

  /** Number of lines of an entry, known without decoding it. */
  lineCount(id: number): number {
    return this.entry(id).lines;
  }

  /** The entry's lines (split on newlines). */
  lines(id: number): Promise<string[]> {
    let found = this.pending.get(id);
    if (!found) {
      found = this.decode(id);
      this.pending.set(id, found);
      // A failed decode is not cached: a later request tries again.
      found.catch(() => this.pending.delete(id));
    }
    return found;
  }

  /** The entry's text. */
  async text(id: number): Promise<string> {
    return (await this.lines(id)).join('\n');
  }

  private entry(id: number): TextEntry {
    const entry = this.entries[id];
    if (!entry) {
      throw new Error(`the payload has no text ${id} (it holds ${this.entries.length})`);
    }
    return entry;
  }

  private async decode(id: number): Promise<string[]> {
    const entry = this.entry(id);
    switch (entry.encoding) {
      case 'plain':
        return entry.data.split('\n');
      case 'gzip':
        return (await gunzipBase64(entry.data)).split('\n');
      case 'delta': {
        if (entry.base === undefined || entry.base >= id) {
          throw new Error(`text ${id} is a delta without an earlier base`);
        }
        const [base, ops] = await Promise.all([
          this.lines(entry.base),
          gunzipBase64(entry.data).then(s => JSON.parse(s) as unknown[])
        ]);
        return applyDelta(base, ops);
      }
      default:
        throw new Error(
          `text ${id} has unknown encoding ${JSON.stringify((entry as TextEntry).encoding)}; ` +
            'known: plain, gzip, delta'
        );
    }
  }
}
