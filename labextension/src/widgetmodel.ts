// Whether the notebook's widget manager has a widget's model, asked before the widget renderer
// is: that renderer logs an error ("widget model not found") for each output whose model the
// kernel lacks (a saved notebook opened with a new kernel). No Lumino or JupyterLab import, so
// the node tests run it.

/** What is read of ipywidgets' widget manager (`@jupyter-widgets/base`'s ManagerBase,
 * public methods; ipywidgets 8.1). */
interface WidgetManagerLike {
  has_model(id: string): boolean;
  /** False until the manager has restored the kernel's widgets (LabWidgetManager). */
  restoredStatus?: boolean;
}

/** How long to wait for a model the kernel may still be announcing (the widget manager's own
 * `get_model` waits as long), and for the manager to restore the kernel's widgets. */
const MODEL_WAIT_MS = 2_000;
const RESTORE_WAIT_MS = 30_000;

/** Whether the widget manager behind `renderer` (ipywidgets' WidgetRenderer) has model `id`:
 * after it restored the kernel's widgets, polling up to MODEL_WAIT_MS as its `get_model` does;
 * null when the renderer does not show its manager. The manager is a private field of the
 * renderer (`_manager`, a PromiseDelegate): read only here, and without it the renderer is
 * asked as before. */
export async function hasWidgetModel(renderer: unknown, id: string): Promise<boolean | null> {
  const delegate = (renderer as { _manager?: { promise?: unknown } } | null)?._manager;
  const promise = delegate?.promise;
  if (!(promise instanceof Promise)) {
    return null;
  }
  const manager = (await Promise.race([promise, sleep(MODEL_WAIT_MS).then(() => null)])) as WidgetManagerLike | null;
  if (!manager || typeof manager.has_model !== 'function') {
    return null;
  }
  for (let waited = 0; manager.restoredStatus === false && waited < RESTORE_WAIT_MS; waited += 100) {
    await sleep(100);
  }
  for (let waited = 0; !manager.has_model(id) && waited < MODEL_WAIT_MS; waited += 100) {
    await sleep(100);
  }
  return manager.has_model(id);
}

function sleep(ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms));
}
