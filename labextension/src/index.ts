// The reactant-lab JupyterLab extension: MLIR language support, and in notebooks an explorer
// renderer that prefers the live widget while its kernel has it.

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { MLIR_MIME, registerMlir, watchMagicCells } from './language';
import { notebookRendererFactory, WIDGET_MIME } from './renderer';

/** Ahead of the widget manager's renderer (rank -10): the explorer decides which to show. */
const NOTEBOOK_RANK = -20;

const language: JupyterFrontEndPlugin<void> = {
  id: 'reactant-lab:mlir-language',
  description: 'MLIR highlighting: .mlir files, ```mlir Markdown blocks and %%reactant_mlir cells.',
  autoStart: true,
  requires: [IEditorLanguageRegistry],
  optional: [INotebookTracker],
  activate: (
    app: JupyterFrontEnd,
    languages: IEditorLanguageRegistry,
    tracker: INotebookTracker | null
  ) => {
    registerMlir(languages);
    app.docRegistry.addFileType({
      name: 'mlir',
      displayName: 'MLIR',
      extensions: ['.mlir'],
      mimeTypes: [MLIR_MIME],
      fileFormat: 'text',
      contentType: 'file'
    });
    if (tracker) {
      watchMagicCells(tracker);
    }
  }
};

const notebookExplorer: JupyterFrontEndPlugin<void> = {
  id: 'reactant-lab:notebook-explorer',
  description: 'Shows a live reactant_lab explorer widget when its kernel has it, else the saved explorer.',
  autoStart: true,
  requires: [INotebookTracker, IRenderMimeRegistry],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker, rendermime: IRenderMimeRegistry) => {
    const unbound = () => rendermime.getFactory(WIDGET_MIME);
    tracker.widgetAdded.connect((_, panel) => {
      panel.content.rendermime.addFactory(notebookRendererFactory(panel, unbound), NOTEBOOK_RANK);
    });
  }
};

export default [language, notebookExplorer];
