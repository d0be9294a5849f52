// The explorer payload and the widget protocol: their types are generated from the one schema
// (reactant_lab/render/explorer.schema.json, see payload.generated.ts); here only what the front
// end itself adds.

import type { BisectEntry, ExplorerCommand, ExplorerPayload, ExplorerStatus } from './payload.generated';

export type {
  BenchEntry,
  BenchRowEntry,
  BisectCommand,
  BisectEntry,
  CodeCommand,
  CodeData,
  CodeResult,
  CollectiveEntry,
  DeltaText,
  DiffCommand,
  DiffEntry,
  DiffHtml,
  DiffResult,
  DiffRow,
  ErrorResult,
  ExplorerCommand,
  ExplorerPayload,
  ExplorerResult,
  ExplorerStatus,
  GraphData,
  GraphDiffEntry,
  GraphEntry,
  GraphModel,
  GraphNode,
  GzipText,
  KernelCodeEntry,
  LinePair,
  Metrics,
  PayloadMeta,
  PlainText,
  Provenance,
  RerunCommand,
  Roofline,
  RunTimings,
  Signature,
  SignatureArg,
  SignatureResult,
  SkippedArg,
  SliceCommand,
  SliceData,
  SliceResult,
  SourceCode,
  StageCheckEntry,
  StageEntry,
  TextEntry,
  VerificationEntry,
  VerifyCommand,
  XlaCode,
  XlaEntry,
  XlaPasses,
  XlaSharding
} from './payload.generated';

export const MIME_TYPE = 'application/vnd.reactant-lab.explorer+json';
export const SCHEMA_VERSION = 1;

/** The DOM event the live widget dispatches (bubbling) from its view with what it shows: the
 * notebook's explorer renderer writes it into the output's data, so that a save stores what is
 * on screen (re-runs included), not the cell's first run. */
export const SHOWN_EVENT = 'reactant-lab-shown';
/** Class of the live widget's view element; it answers ASK_EVENT with SHOWN_EVENT. */
export const LIVE_VIEW_CLASS = 'reactant-lab-live';
/** Dispatched by the notebook's renderer on the live view once it shows it. */
export const ASK_EVENT = 'reactant-lab-ask';

export interface ShownDetail {
  /** The payload on screen (as a notebook saves it). */
  payload: ExplorerPayload;
  /** The rest of the output's bundle for it (`text/html`, `text/plain`); empty when the
   * kernel sent none (the cell's own run). */
  saved: Record<string, string>;
}

export interface ExplorerOptions {
  /** Set by a live front end (the widget): commands go to the kernel. Without it the explorer
   * shows only what the payload holds. */
  onCommand?: (cmd: ExplorerCommand) => void;
}

export interface ExplorerHandle {
  update(payload: ExplorerPayload): void;
  setStatus(status: ExplorerStatus): void;
  showResult(kind: string, data: unknown): void;
  /** Show what a bisection found (null: nothing yet). */
  showBisect(entry: BisectEntry | null): void;
  dispose(): void;
}
