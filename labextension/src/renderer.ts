// JupyterLab renderers for the explorer MIME type: the static one (from saved data alone) and,
// in notebooks, one that shows the live widget when the output's kernel still has it.

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import type { NotebookPanel } from '@jupyterlab/notebook';
import { Panel, Widget } from '@lumino/widgets';
import {
  ASK_EVENT,
  LIVE_VIEW_CLASS,
  MIME_TYPE,
  renderExplorer,
  SHOWN_EVENT,
  type ExplorerHandle,
  type ExplorerPayload,
  type ShownDetail
} from './explorer';
import { shownData } from './shown';
import { hasWidgetModel } from './widgetmodel';

export const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';
/** How long a saved explorer waits for the notebook's widget manager (kernel start included). */
const FACTORY_WAIT_MS = 120_000;

/** Renders the explorer from the output's saved payload. */
export class ExplorerRenderer extends Widget implements IRenderMime.IRenderer {
  private handle: ExplorerHandle | null = null;

  constructor() {
    super();
    this.addClass('jp-RenderedReactantLabExplorer');
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const payload = model.data[MIME_TYPE] as unknown as ExplorerPayload;
    if (this.handle) {
      this.handle.update(payload);
    } else {
      this.handle = renderExplorer(this.node, payload);
    }
  }

  dispose(): void {
    this.handle?.dispose();
    this.handle = null;
    super.dispose();
  }
}

export const staticRendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MIME_TYPE],
  createRenderer: () => new ExplorerRenderer()
};

/** In a notebook: an output that carries both the widget view and the payload shows the live
 * widget when its model is alive in the notebook's kernel (trusted output, kernel attached,
 * the widget manager finds the model), else the explorer from the saved payload. The saved
 * explorer shows at once; it is swapped for the live widget when the kernel turns out to have
 * the model (as after reloading the page while the kernel runs). */
export class NotebookExplorerRenderer extends Panel implements IRenderMime.IRenderer {
  private live: Widget | null = null;
  private saved: ExplorerRenderer | null = null;
  private observer: MutationObserver | null = null;
  private model: IRenderMime.IMimeModel | null = null;

  /** `unbound()` is the application-wide widget renderer factory: it has no widget manager, so
   * the notebook's own factory (installed once its kernel is connected) must be used. */
  constructor(
    private readonly options: IRenderMime.IRendererOptions,
    private readonly panel: NotebookPanel,
    private readonly unbound: () => IRenderMime.IRendererFactory | undefined
  ) {
    super();
    this.addClass('jp-RenderedReactantLabExplorer');
    this.node.addEventListener(SHOWN_EVENT, this.onShown);
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.model = model;
    if (this.live) {
      return;
    }
    const view = model.data[WIDGET_MIME] as { model_id?: string } | undefined;
    const wantsWidget = model.trusted && !!view?.model_id;
    const kernel = () => !!this.panel.sessionContext.session?.kernel;
    const tried = wantsWidget && kernel();
    if (tried && (await this.tryWidget(model))) {
      return;
    }
    if (!this.saved) {
      this.saved = new ExplorerRenderer();
      this.addWidget(this.saved);
    }
    await this.saved.renderModel(model);
    if (wantsWidget && !tried) {
      void this.panel.sessionContext.ready.then(() => {
        if (!this.isDisposed && !this.live && kernel()) {
          void this.tryWidget(model);
        }
      });
    }
  }

  dispose(): void {
    this.observer?.disconnect();
    this.node.removeEventListener(SHOWN_EVENT, this.onShown);
    this.model = null;
    super.dispose();
  }

  /** The live widget shows another payload (a re-run): the output saves it, so that the saved
   * notebook holds what is on screen. Setting the output model's data re-renders this output
   * (which keeps the live view) and updates the notebook's document. */
  private readonly onShown = (event: Event): void => {
    const detail = (event as CustomEvent<ShownDetail>).detail;
    const model = this.model;
    if (!this.live || !model || !detail?.payload) {
      return;
    }
    const data = shownData(model.data, detail);
    if (data) {
      model.setData({ data: data as IRenderMime.IMimeModel['data'] });
    }
  };

  /** Ask the notebook's widget renderer for the view; true when it is shown. */
  private async tryWidget(model: IRenderMime.IMimeModel): Promise<boolean> {
    const factory = await this.notebookWidgetFactory();
    if (!factory || this.isDisposed) {
      return false;
    }
    const renderer = factory.createRenderer({ ...this.options, mimeType: WIDGET_MIME });
    // Ask the manager first: the widget renderer logs an error ("widget model not found") for
    // each output whose model the kernel lacks (a saved notebook opened with a new kernel).
    const id = (model.data[WIDGET_MIME] as { model_id?: string } | undefined)?.model_id ?? '';
    if ((await hasWidgetModel(renderer, id)) === false || this.isDisposed) {
      renderer.dispose();
      return false;
    }
    // The widget renderer adds the view as a child once the model is found (possibly later,
    // when the widget manager has restored the kernel's models); otherwise it only writes a
    // message ("model not found") into its node.
    const hasView = () => ((renderer as unknown as Partial<Panel>).widgets?.length ?? 0) > 0;
    await renderer.renderModel(model);
    if (hasView()) {
      this.showLive(renderer);
      return true;
    }
    this.observer?.disconnect();
    this.observer = new MutationObserver(() => {
      if (hasView()) {
        this.showLive(renderer);
      } else if (/not found|Error/.test(renderer.node.textContent ?? '')) {
        this.observer?.disconnect();
        renderer.dispose();
      }
    });
    this.observer.observe(renderer.node, { childList: true, characterData: true, subtree: true });
    return false;
  }

  /** The notebook's widget renderer factory, once the widget manager has installed it. */
  private async notebookWidgetFactory(): Promise<IRenderMime.IRendererFactory | undefined> {
    for (let waited = 0; waited < FACTORY_WAIT_MS && !this.isDisposed; waited += 250) {
      const factory = this.panel.content.rendermime.getFactory(WIDGET_MIME);
      if (factory && factory !== this.unbound()) {
        return factory;
      }
      await new Promise(resolve => setTimeout(resolve, 250));
    }
    return undefined;
  }

  private showLive(renderer: Widget): void {
    this.observer?.disconnect();
    this.saved?.dispose();
    this.saved = null;
    this.live = renderer;
    this.addWidget(renderer);
    // The view says what it shows (a re-run made before the page was reloaded, say).
    renderer.node.querySelectorAll(`.${LIVE_VIEW_CLASS}`).forEach(view => view.dispatchEvent(new CustomEvent(ASK_EVENT)));
  }
}

export function notebookRendererFactory(
  panel: NotebookPanel,
  unbound: () => IRenderMime.IRendererFactory | undefined
): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [MIME_TYPE],
    createRenderer: options => new NotebookExplorerRenderer(options, panel, unbound)
  };
}
