// The anywidget front end of reactant_lab.notebook.widget.ExplorerWidget: the shared explorer,
// fed by the synced `payload`, `status` and `result` traits; commands go back as messages.

import { ASK_EVENT, LIVE_VIEW_CLASS, renderExplorer, SHOWN_EVENT } from './explorer';
import type { BisectEntry, ExplorerCommand, ExplorerPayload, ExplorerResult, ExplorerStatus, ShownDetail } from './explorer';

interface AnyModel {
  get(name: 'payload'): ExplorerPayload;
  get(name: 'saved'): Record<string, string> | null | undefined;
  get(name: 'status'): ExplorerStatus;
  get(name: 'result'): ExplorerResult;
  get(name: 'bisect'): BisectEntry | null | undefined;
  on(event: string, callback: () => void): void;
  off(event: string, callback: () => void): void;
  send(content: ExplorerCommand): void;
}

/** How long a command that runs in the kernel waits for the first status before saying so. */
export const ANSWER_WAIT_MS = 10_000;
const RUNS_IN_KERNEL = new Set(['rerun', 'verify', 'bisect']);

function noKernel(detail: string): ExplorerStatus {
  return {
    state: 'error',
    message:
      `${detail}: this explorer's kernel is busy running another cell, or gone (shut down, restarted or ` +
      'disconnected). Run the cell that made it again for a live explorer; saved, the notebook shows it ' +
      'without a kernel.',
    progress: null
  };
}

function render({ model, el }: { model: AnyModel; el: HTMLElement }): () => void {
  let waiting = 0;
  const handle = renderExplorer(el, model.get('payload'), {
    onCommand: cmd => {
      clearTimeout(waiting);
      try {
        model.send(cmd);
      } catch (err) {
        handle.setStatus(noKernel(`Could not reach the kernel (${String(err)})`));
        return;
      }
      if (RUNS_IN_KERNEL.has(cmd.command)) {
        // The kernel answers a run at once with status "running"; silence means no kernel.
        waiting = window.setTimeout(
          () => handle.setStatus(noKernel(`No answer from the kernel after ${ANSWER_WAIT_MS / 1000} s`)),
          ANSWER_WAIT_MS
        );
      }
    }
  });
  /** Tell the output around the view what it shows (see SHOWN_EVENT). */
  const announce = () => {
    const detail: ShownDetail = { payload: model.get('payload'), saved: model.get('saved') ?? {} };
    el.dispatchEvent(new CustomEvent<ShownDetail>(SHOWN_EVENT, { bubbles: true, detail }));
  };
  const onPayload = () => {
    clearTimeout(waiting);
    handle.update(model.get('payload'));
    announce();
  };
  const onStatus = () => {
    clearTimeout(waiting);
    handle.setStatus(model.get('status'));
  };
  const onResult = () => {
    const result = model.get('result');
    if (result && typeof result.kind === 'string') {
      handle.showResult(result.kind, result);
    }
  };
  const onBisect = () => handle.showBisect(model.get('bisect') ?? null);
  onStatus();
  onBisect();
  // The notebook's renderer asks once it shows the view (after a reload: a re-run made before
  // it is saved too).
  el.classList.add(LIVE_VIEW_CLASS);
  el.addEventListener(ASK_EVENT, announce);
  window.setTimeout(announce, 0);
  model.on('change:payload', onPayload);
  model.on('change:status', onStatus);
  model.on('change:result', onResult);
  model.on('change:bisect', onBisect);
  return () => {
    clearTimeout(waiting);
    el.removeEventListener(ASK_EVENT, announce);
    model.off('change:payload', onPayload);
    model.off('change:status', onStatus);
    model.off('change:result', onResult);
    model.off('change:bisect', onBisect);
    handle.dispose();
  };
}

export default { render };
