// The anywidget front end of reactant_lab.notebook.widget.ExplorerWidget: the shared explorer,
// fed by the synced `payload`, `status` and `result` traits; commands go back as messages.

import { renderExplorer } from './explorer';
import type { BisectEntry, ExplorerCommand, ExplorerPayload, ExplorerResult, ExplorerStatus } from './explorer';

interface AnyModel {
  get(name: 'payload'): ExplorerPayload;
  get(name: 'status'): ExplorerStatus;
  get(name: 'result'): ExplorerResult;
  get(name: 'bisect'): BisectEntry | null | undefined;
  on(event: string, callback: () => void): void;
  off(event: string, callback: () => void): void;
  send(content: ExplorerCommand): void;
}

function render({ model, el }: { model: AnyModel; el: HTMLElement }): () => void {
  const handle = renderExplorer(el, model.get('payload'), {
    onCommand: cmd => model.send(cmd)
  });
  const onPayload = () => handle.update(model.get('payload'));
  const onStatus = () => handle.setStatus(model.get('status'));
  const onResult = () => {
    const result = model.get('result');
    if (result && typeof result.kind === 'string') {
      handle.showResult(result.kind, result);
    }
  };
  const onBisect = () => handle.showBisect(model.get('bisect') ?? null);
  onStatus();
  onBisect();
  model.on('change:payload', onPayload);
  model.on('change:status', onStatus);
  model.on('change:result', onResult);
  model.on('change:bisect', onBisect);
  return () => {
    model.off('change:payload', onPayload);
    model.off('change:status', onStatus);
    model.off('change:result', onResult);
    model.off('change:bisect', onBisect);
    handle.dispose();
  };
}

export default { render };
