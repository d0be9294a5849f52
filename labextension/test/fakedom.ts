// A small stand-in for the browser's DOM, enough for the explorer's panes to be built and read in
// Node: elements with classes, attributes, children and text, event listeners (bubbling), and
// `querySelectorAll` / `closest` for selectors like `tag.a.b` (a comma-separated list of them).

const SVG_NS = 'http://www.w3.org/2000/svg';

class FakeText {
  parentNode: FakeElement | null = null;
  constructor(public data: string) {}

  get textContent(): string {
    return this.data;
  }
}

type Child = FakeElement | FakeText;
type Listener = (ev: { target: FakeElement; key?: string; preventDefault(): void }) => void;

class FakeElement {
  readonly tagName: string;
  readonly childNodes: Child[] = [];
  readonly attributes = new Map<string, string>();
  readonly dataset: Record<string, string> = {};
  readonly style: Record<string, string> = {};
  readonly listeners = new Map<string, Listener[]>();
  parentNode: FakeElement | null = null;
  hidden = false;
  clientWidth = 0;
  clientHeight = 0;
  scrollLeft = 0;
  scrollTop = 0;
  /** An input's text (a find box). */
  value = '';

  constructor(
    tag: string,
    readonly namespaceURI = 'http://www.w3.org/1999/xhtml'
  ) {
    this.tagName = tag.toUpperCase();
  }

  get className(): string {
    return this.attributes.get('class') ?? '';
  }

  set className(value: string) {
    this.attributes.set('class', value);
  }

  get classList() {
    const names = (): string[] => this.className.split(/\s+/).filter(Boolean);
    const set = (list: string[]): void => void (this.className = list.join(' '));
    return {
      contains: (c: string) => names().includes(c),
      add: (...cs: string[]) => set([...names(), ...cs.filter(c => !names().includes(c))]),
      remove: (...cs: string[]) => set(names().filter(c => !cs.includes(c))),
      toggle: (c: string, force?: boolean) => {
        const on = force ?? !names().includes(c);
        set(on ? [...names().filter(n => n !== c), c] : names().filter(n => n !== c));
        return on;
      }
    };
  }

  setAttribute(name: string, value: string): void {
    this.attributes.set(name, String(value));
  }

  getAttribute(name: string): string | null {
    return this.attributes.get(name) ?? null;
  }

  get children(): FakeElement[] {
    return this.childNodes.filter((c): c is FakeElement => c instanceof FakeElement);
  }

  get childElementCount(): number {
    return this.children.length;
  }

  get firstElementChild(): FakeElement | null {
    return this.children[0] ?? null;
  }

  get textContent(): string {
    return this.childNodes.map(c => c.textContent).join('');
  }

  set textContent(text: string) {
    this.replaceChildren(text);
  }

  append(...nodes: (Child | string)[]): void {
    for (const n of nodes) {
      const child = typeof n === 'string' ? new FakeText(n) : n;
      child.parentNode?.childNodes.splice(child.parentNode.childNodes.indexOf(child), 1);
      child.parentNode = this;
      this.childNodes.push(child);
    }
  }

  appendChild<T extends Child>(node: T): T {
    this.append(node);
    return node;
  }

  replaceChildren(...nodes: (Child | string)[]): void {
    this.childNodes.forEach(c => (c.parentNode = null));
    this.childNodes.length = 0;
    this.append(...nodes);
  }

  addEventListener(type: string, fn: Listener): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), fn]);
  }

  matches(selector: string): boolean {
    return selector.split(',').some(one => {
      const [tag, ...classes] = one.trim().split('.');
      return (!tag || tag.toUpperCase() === this.tagName) && classes.every(c => this.classList.contains(c));
    });
  }

  querySelectorAll(selector: string): FakeElement[] {
    const out: FakeElement[] = [];
    const walk = (e: FakeElement): void => {
      for (const c of e.children) {
        if (c.matches(selector)) {
          out.push(c);
        }
        walk(c);
      }
    };
    walk(this);
    return out;
  }

  querySelector(selector: string): FakeElement | null {
    return this.querySelectorAll(selector)[0] ?? null;
  }

  closest(selector: string): FakeElement | null {
    return this.matches(selector) ? this : (this.parentNode?.closest(selector) ?? null);
  }

  get tBodies(): FakeElement[] {
    return this.children.filter(c => c.tagName === 'TBODY');
  }

  get rows(): FakeElement[] {
    return this.children.filter(c => c.tagName === 'TR');
  }

  setPointerCapture(): void {}
}

/** Dispatch event `type` at `target`, bubbling up to the root. */
export function fire(target: Element, type: string, key?: string): void {
  const at = target as unknown as FakeElement;
  const ev = { target: at, key, preventDefault: () => undefined };
  for (let e: FakeElement | null = at; e; e = e.parentNode) {
    for (const fn of e.listeners.get(type) ?? []) {
      fn(ev);
    }
  }
}

/** Install the stand-in as the global `document` (and `DOMParser`, as far as the explorer uses it). */
export function installDom(): void {
  const document = {
    createElement: (tag: string) => new FakeElement(tag),
    createElementNS: (ns: string, tag: string) => new FakeElement(tag, ns),
    createTextNode: (text: string) => new FakeText(text)
  };
  class DOMParser {
    parseFromString(): { body: { firstElementChild: FakeElement } } {
      return { body: { firstElementChild: new FakeElement('svg', SVG_NS) } };
    }
  }
  Object.assign(globalThis, { document, DOMParser });
}
