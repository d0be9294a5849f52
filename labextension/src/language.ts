// MLIR for JupyterLab's editors: a CodeMirror 6 language (the explorer's lexer as a stream
// parser), `.mlir` files, ```mlir Markdown blocks, and `%%reactant_mlir` cells.

import { LanguageSupport, StreamLanguage, type StringStream } from '@codemirror/language';
import type { IEditorLanguageRegistry } from '@jupyterlab/codemirror';
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { tokenizeLine, type Token, type TokenKind } from './mlir/tokens';

export const MLIR_MIME = 'text/x-mlir';

/** Token kind -> CodeMirror tag ("name.modifier"), chosen among the tags JupyterLab's editor
 * theme colours. */
const TAGS: Record<TokenKind, string | null> = {
  op: 'keyword',
  dialect: 'tagName',
  ssa: 'variableName.special',
  block: 'labelName',
  symbol: 'variableName.definition',
  type: 'variableName.standard',
  attr: 'attributeName',
  key: 'propertyName',
  kw: 'atom',
  str: 'string',
  num: 'number',
  comment: 'comment',
  loc: 'meta',
  magic: 'meta',
  text: null
};

/** Tokens with their start offsets, for the last lines the editor asked about. */
const cache = new Map<string, [number, Token][]>();

function lineTokens(line: string): [number, Token][] {
  let found = cache.get(line);
  if (!found) {
    let pos = 0;
    found = tokenizeLine(line).map(t => {
      const at = pos;
      pos += t[1].length;
      return [at, t];
    });
    if (cache.size > 2000) {
      cache.clear();
    }
    cache.set(line, found);
  }
  return found;
}

function token(stream: StringStream): string | null {
  const tokens = lineTokens(stream.string);
  for (const [at, [kind, text]] of tokens) {
    if (at + text.length > stream.pos) {
      stream.pos = Math.max(stream.pos + 1, at + text.length);
      return TAGS[kind];
    }
  }
  stream.skipToEnd();
  return null;
}

export const mlirLanguage = StreamLanguage.define<null>({
  name: 'mlir',
  startState: () => null,
  token,
  languageData: { commentTokens: { line: '//' } }
});

export function mlirSupport(): LanguageSupport {
  return new LanguageSupport(mlirLanguage);
}

export function registerMlir(languages: IEditorLanguageRegistry): void {
  languages.addLanguage({
    name: 'mlir',
    displayName: 'MLIR',
    alias: ['MLIR', 'stablehlo'],
    mime: MLIR_MIME,
    extensions: ['mlir'],
    support: mlirSupport()
  });
}

const MAGIC = /^%%reactant_mlir(?:\s|$)/;

/** Highlight a notebook's code cells whose first line is `%%reactant_mlir` as MLIR (and give
 * them back the notebook's language when the line goes). */
export function watchMagicCells(tracker: INotebookTracker): void {
  tracker.widgetAdded.connect((_, panel: NotebookPanel) => {
    const notebook = panel.content;
    const watched = new WeakSet<object>();
    const scan = () => {
      for (const cell of notebook.widgets) {
        const model = cell.model;
        if (model.type !== 'code' || watched.has(model)) {
          continue;
        }
        watched.add(model);
        const apply = () => {
          if (model.isDisposed) {
            return;
          }
          const magic = MAGIC.test(model.sharedModel.getSource());
          if (magic && model.mimeType !== MLIR_MIME) {
            model.mimeType = MLIR_MIME;
          } else if (!magic && model.mimeType === MLIR_MIME) {
            model.mimeType = notebook.codeMimetype;
          }
        };
        model.sharedModel.changed.connect(apply);
        model.mimeTypeChanged.connect(apply);
        apply();
      }
    };
    notebook.modelContentChanged.connect(scan);
    void panel.context.ready.then(scan);
  });
}
