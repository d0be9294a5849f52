// A virtualized list of rows of one or more 18px lines (a wrapped diff line takes several): only
// the rows in view (and a margin) are in the DOM, so a 20,000-line module scrolls and switches
// as fast as a 20-line one.

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

/** Rows [first, last) to draw for a scroll position, rows of different heights: `offsets[i]`
 * is where row i starts (px), `offsets[count]` the total height. */
export function visibleRange(
  scrollTop: number,
  viewport: number,
  offsets: readonly number[],
  overscan = 20
): [number, number] {
  const count = offsets.length - 1;
  const rowAt = (y: number) => {
    let [lo, hi] = [0, count];
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (offsets[mid] <= y) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo;
  };
  const first = Math.max(0, rowAt(scrollTop) - overscan);
  const last = Math.min(count, rowAt(scrollTop + viewport) + 1 + overscan);
  return [first, Math.max(first, last)];
}

export const ROW_HEIGHT = 18;
const MAX_HEIGHT = 560;

export class VirtualList {
  readonly node: HTMLDivElement;
  private readonly sizer: HTMLDivElement;
  private readonly rows: HTMLDivElement;
  private count = 0;
  /** Where each row starts, when some row is taller than one line; null: all are. */
  private offsets: number[] | null = null;
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

  /** Show `count` rows drawn by `render`; keeps the scroll position unless `top`. `lines(i)`:
   * how many 18px lines row i takes (1 when not given); `render` sizes such a row itself. */
  setRows(count: number, render: (index: number) => HTMLElement, top = true, lines?: (index: number) => number): void {
    this.count = count;
    this.render = render;
    this.offsets = null;
    if (lines) {
      const offsets = new Array<number>(count + 1);
      offsets[0] = 0;
      let tall = false;
      for (let i = 0; i < count; i++) {
        const n = Math.max(1, lines(i));
        tall ||= n > 1;
        offsets[i + 1] = offsets[i] + n * ROW_HEIGHT;
      }
      this.offsets = tall ? offsets : null;
    }
    const height = this.top(count);
    this.sizer.style.height = `${height}px`;
    this.node.style.height = `${Math.min(height + 2, MAX_HEIGHT)}px`;
    if (top) {
      this.node.scrollTop = 0;
    }
    this.draw(true);
  }

  /** Scroll so that row `index` is near the top. */
  scrollTo(index: number): void {
    this.node.scrollTop = Math.max(0, this.top(Math.max(0, index - 3)));
    this.draw(false);
  }

  /** Width (px) of one character of a row's cell of class `className`, as the rows' font
   * draws it. */
  charWidth(className: string): number {
    const row = document.createElement('div');
    row.className = 'r';
    row.style.cssText = 'position:absolute;visibility:hidden;display:block;height:0';
    const probe = document.createElement('span');
    probe.className = className;
    probe.style.cssText = 'padding:0;display:inline;white-space:pre';
    probe.textContent = 'x'.repeat(64);
    row.appendChild(probe);
    this.rows.appendChild(row);
    const px = probe.getBoundingClientRect().width / 64;
    row.remove();
    return px;
  }

  dispose(): void {
    cancelAnimationFrame(this.frame);
    this.node.remove();
  }

  /** Where row `index` starts (px). */
  private top(index: number): number {
    return this.offsets ? this.offsets[Math.min(index, this.count)] : index * ROW_HEIGHT;
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
    const [first, last] = this.offsets
      ? visibleRange(this.node.scrollTop, viewport, this.offsets)
      : visibleWindow(this.node.scrollTop, viewport, ROW_HEIGHT, this.count);
    if (!force && first === this.drawn[0] && last === this.drawn[1]) {
      return;
    }
    this.drawn = [first, last];
    const children: HTMLElement[] = [];
    for (let i = first; i < last; i++) {
      children.push(this.render(i));
    }
    this.rows.style.transform = `translateY(${this.top(first)}px)`;
    this.rows.replaceChildren(...children);
  }
}
