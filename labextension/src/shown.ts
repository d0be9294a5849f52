// What a notebook output saves once the live widget shows another payload (see SHOWN_EVENT).

import { MIME_TYPE, type ShownDetail } from './explorer/types';

/** Output types a re-run's bundle may replace (the widget view's own entry is kept). */
const SAVED_TYPES = ['text/html', 'text/plain'];

/** The output's data with what the live widget shows, or null when that is what it holds. */
export function shownData(
  data: Readonly<Record<string, unknown>>,
  detail: ShownDetail
): Record<string, unknown> | null {
  const next: Record<string, unknown> = { ...data, [MIME_TYPE]: detail.payload };
  for (const type of SAVED_TYPES) {
    const value = detail.saved?.[type];
    if (typeof value === 'string') {
      next[type] = value;
    }
  }
  const same = [MIME_TYPE, ...SAVED_TYPES].every(t => JSON.stringify(next[t]) === JSON.stringify(data[t]));
  return same ? null : next;
}
