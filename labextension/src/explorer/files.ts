// Copy and download of what a view shows (a stage's IR, a diff, XLA's HLO, the payload): the
// clipboard when the browser allows it, a selected text box when it does not, and a download
// through a Blob's object URL and `<a download>` (no request leaves the page, so it works under
// the report's `default-src 'none'` Content-Security-Policy too).

import { button, el } from './dom';

/** Save `text` as file `name` through the browser's download. */
export function download(doc: Document, name: string, text: string, type = 'text/plain'): void {
  const url = URL.createObjectURL(new Blob([text], { type: `${type};charset=utf-8` }));
  const a = doc.createElement('a');
  a.href = url;
  a.download = name;
  a.hidden = true;
  doc.body.appendChild(a);
  a.click();
  a.remove();
  // The download has started from the click; the URL only has to outlive it.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

export interface FileSource {
  /** The text to copy or download (decoded on demand). */
  text(): Promise<string> | string;
  /** The downloaded file's name. */
  name(): string;
  /** What the buttons call it ("stage 3", "the diff"). */
  what(): string;
  type?: string;
}

/** Copy and download buttons for one view, with a note under them for what happened. */
export class FileTools {
  readonly node: HTMLSpanElement;
  readonly note: HTMLDivElement;

  constructor(
    private readonly source: FileSource,
    extension: string
  ) {
    this.node = el('span', 'rl-file-tools');
    this.note = el('div', 'rl-copy-note');
    this.note.hidden = true;
    const copy = button('copy', () => void this.copy(), 'rl-copy');
    copy.title = 'copy the whole text to the clipboard';
    const save = button(`⤓ .${extension}`, () => void this.download(), 'rl-download');
    save.title = `download as a .${extension} file`;
    this.node.append(copy, save);
  }

  private async copy(): Promise<void> {
    const text = await this.source.text();
    try {
      await navigator.clipboard.writeText(text);
      this.say(`Copied ${this.source.what()} (${lineCount(text)}).`);
    } catch (err) {
      // Permission refused, or no clipboard API (an insecure page): let the user copy by hand.
      const box = el('textarea', 'rl-copy-box');
      box.readOnly = true;
      box.value = text;
      box.rows = 6;
      this.say(
        `The browser did not allow copying to the clipboard (${errorName(err)}). The text is ` +
          'selected below: press Ctrl+C (⌘C on a Mac), or download it.',
        box
      );
      box.focus();
      box.select();
    }
  }

  private async download(): Promise<void> {
    const text = await this.source.text();
    download(this.node.ownerDocument, this.source.name(), text, this.source.type);
    this.say(`Downloading ${this.source.name()} (${lineCount(text)}).`);
  }

  private say(text: string, extra?: HTMLElement): void {
    const close = button('×', () => {
      this.note.hidden = true;
      this.note.replaceChildren();
    }, 'rl-close');
    close.title = 'dismiss';
    this.note.replaceChildren(el('span', '', text), close, ...(extra ? [extra] : []));
    this.note.hidden = false;
  }
}

function lineCount(text: string): string {
  const n = text === '' ? 0 : text.split('\n').length;
  return `${n.toLocaleString('en-US')} line${n === 1 ? '' : 's'}`;
}

function errorName(err: unknown): string {
  if (err instanceof Error) {
    return err.name === 'NotAllowedError' ? 'permission denied' : err.message || err.name;
  }
  return 'no clipboard';
}
