// Keyboard navigation of the tabs and the stage list, as pure functions of the key (the
// WAI-ARIA tabs and listbox patterns): what a key moves to, or null when the key is not theirs.

/** The tab `key` moves to from tab `at` of `count`: Left / Right (wrapping), Home, End. */
export function tabKeyTarget(key: string, at: number, count: number): number | null {
  if (count <= 0) {
    return null;
  }
  switch (key) {
    case 'ArrowRight':
      return (at + 1) % count;
    case 'ArrowLeft':
      return (at - 1 + count) % count;
    case 'Home':
      return 0;
    case 'End':
      return count - 1;
    default:
      return null;
  }
}

/** Where `key` moves the stage selection in the list: a step (Down / j: next listed stage, Up / k:
 * the one before) or an end (Home: first listed, End: last listed). */
export type StageMove = { kind: 'step'; delta: 1 | -1 } | { kind: 'end'; last: boolean };

export function stageKeyMove(key: string): StageMove | null {
  switch (key) {
    case 'ArrowDown':
    case 'j':
      return { kind: 'step', delta: 1 };
    case 'ArrowUp':
    case 'k':
      return { kind: 'step', delta: -1 };
    case 'Home':
      return { kind: 'end', last: false };
    case 'End':
      return { kind: 'end', last: true };
    default:
      return null;
  }
}

/** Whether a key event has modifiers that leave it to the browser and JupyterLab. */
export function hasModifier(ev: { altKey: boolean; ctrlKey: boolean; metaKey: boolean }): boolean {
  return ev.altKey || ev.ctrlKey || ev.metaKey;
}
