// The standalone HTML report's front end: the same explorer, drawn from the payload the page
// carries in a <script type="application/json" class="reactant-lab-payload"> element. The page
// also holds a script-free rendering for viewers that run no JavaScript; once the explorer is
// drawn, <html> gets the class `rl-explorer-on` and the page's CSS hides that rendering.

import { renderExplorer, type ExplorerHandle, type ExplorerPayload } from './explorer';

export const PAYLOAD_CLASS = 'reactant-lab-payload';
export const SHOWN_CLASS = 'rl-explorer-on';

/** Render the explorer for `payload` into `el` (saved-output mode: no kernel). */
export function render(el: HTMLElement, payload: ExplorerPayload): ExplorerHandle {
  return renderExplorer(el, payload);
}

/** Draw an explorer in front of each payload element of `doc` not drawn yet; returns how many
 * were drawn. A payload that cannot be read leaves the page as it is. */
export function mountAll(doc: Document): number {
  let drawn = 0;
  for (const data of Array.from(doc.querySelectorAll<HTMLScriptElement>(`script.${PAYLOAD_CLASS}`))) {
    if (data.dataset.mounted) {
      continue;
    }
    data.dataset.mounted = 'true';
    const payload = JSON.parse(data.textContent ?? '') as ExplorerPayload;
    const host = doc.createElement('div');
    host.className = 'rl-report-explorer';
    data.before(host);
    render(host, payload);
    drawn++;
  }
  if (drawn) {
    doc.documentElement.classList.add(SHOWN_CLASS);
  }
  return drawn;
}

mountAll(document);
