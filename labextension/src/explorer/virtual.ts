// A virtualized list of fixed-height rows: only the rows in view (and a margin) are in the DOM,
// so a 20,000-line module scrolls and switches as fast as a 20-line one.

/** Rows [first, last) to draw for a scroll position. */
export function visibleWindow(
  scrollTop: number,
  viewport: number,
  rowHeight: number,
  count: number,
  overscan = 20
): [number, number] {
  const first = Math.max(0, Math.floor(scrollTop / rowHeight) - overscan);
  const last = Math.min(count, Math.ceil((scrollTop + viewport) / rowHeight) + overscan);
  return [first, Math.max(first, last)];
}

export const ROW_HEIGHT = 18;
const MAX_HEIGHT = 560;

export class VirtualList {
  readonly node: HTMLDivElement;
  private readonly sizer: HTMLDivElement;
  private readonly rows: HTMLDivElement;
  private count = 0;
  private drawn: [number, number] = [0, 0];
  private frame = 0;

  constructor(
    className: string,
    private render: (index: number) => HTMLElement
  ) {
    this.node = document.createElement('div');
    this.node.className = `rl-vlist ${className}`;
    this.node.tabIndex = 0;
    this.sizer = document.createElement('div');
    this.sizer.className = 'rl-vsizer';
    this.rows = document.createElement('div');
    this.rows.className = 'rl-vrows';
    this.sizer.appendChild(this.rows);
    this.node.appendChild(this.sizer);
    this.node.addEventListener('scroll', () => this.schedule());
  }

  /** Show `count` rows drawn by `render`; keeps the scroll position unless `top`. */
  setRows(count: number, render: (index: number) => HTMLElement, top = true): void {
    this.count = count;
    this.render = render;
    this.sizer.style.height = `${count * ROW_HEIGHT}px`;
    this.node.style.height = `${Math.min(count * ROW_HEIGHT + 2, MAX_HEIGHT)}px`;
    if (top) {
      this.node.scrollTop = 0;
    }
    this.draw(true);
  }

  /** Scroll so that row `index` is near the top. */
  scrollTo(index: number): void {
    this.node.scrollTop = Math.max(0, (index - 3) * ROW_HEIGHT);
    this.draw(false);
  }

  dispose(): void {
    cancelAnimationFrame(this.frame);
    this.node.remove();
  }

  private schedule(): void {
    if (!this.frame) {
      this.frame = requestAnimationFrame(() => {
        this.frame = 0;
        this.draw(false);
      });
    }
  }

  private draw(force: boolean): void {
    const viewport = this.node.clientHeight || MAX_HEIGHT;
    const [first, last] = visibleWindow(this.node.scrollTop, viewport, ROW_HEIGHT, this.count);
    if (!force && first === this.drawn[0] && last === this.drawn[1]) {
      return;
    }
    this.drawn = [first, last];
    const children: HTMLElement[] = [];
    for (let i = first; i < last; i++) {
      children.push(this.render(i));
    }
    this.rows.style.transform = `translateY(${first * ROW_HEIGHT}px)`;
    this.rows.replaceChildren(...children);
  }
}
