// The MIME extension: JupyterLab renders `application/vnd.reactant-lab.explorer+json` outputs
// with the explorer, from the saved data alone (no kernel needed).

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { staticRendererFactory } from './renderer';

/** Below the HTML renderer (rank 50), so the explorer wins over the bundle's HTML fallback. */
export const STATIC_RANK = 40;

const extension: IRenderMime.IExtension = {
  id: 'reactant-lab:explorer-mime',
  description: 'Renders reactant_lab explorer outputs.',
  rendererFactory: staticRendererFactory,
  rank: STATIC_RANK,
  dataType: 'json'
};

export default extension;
