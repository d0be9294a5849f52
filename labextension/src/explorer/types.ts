// The explorer payload and the widget protocol: their types are generated from the one schema
// (reactant_lab/render/explorer.schema.json, see payload.generated.ts); here only what the front
// end itself adds.

import type { BisectEntry, ExplorerCommand, ExplorerPayload, ExplorerStatus } from './payload.generated';

export type {
  BenchEntry,
  BenchRowEntry,
  BisectCommand,
  BisectEntry,
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
  GraphEntry,
  GraphModel,
  GraphNode,
  GzipText,
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
  XlaEntry
} from './payload.generated';

export const MIME_TYPE = 'application/vnd.reactant-lab.explorer+json';
export const SCHEMA_VERSION = 1;

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
