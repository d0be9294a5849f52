// The explorer payload (docs/explorer-schema.md, schema version 1) and the widget protocol
// (docs/widget-protocol.md) as TypeScript types.

export const MIME_TYPE = 'application/vnd.reactant-lab.explorer+json';
export const SCHEMA_VERSION = 1;

/** Presets a live explorer can re-run with (reactant_lab.PRESETS). */
export const PRESETS = [
  'none',
  'canonicalize',
  'just_batch',
  'only_enzyme',
  'after_enzyme',
  'before_enzyme',
  'no_enzyme',
  'before_kernel',
  'before_raise',
  'before_jit',
  'all',
  'noopt'
] as const;

export interface TextEntry {
  id: number;
  lines: number;
  chars: number;
  encoding: 'plain' | 'gzip' | 'delta';
  data: string;
  base?: number;
}

export interface StageEntry {
  index: number;
  name: string;
  group: string;
  pipeline: string;
  seconds: number;
  changed: boolean;
  unavailable: string | null;
  ops: number;
  op_counts: Record<string, number>;
  op_delta: Record<string, number>;
  text: number;
  structure: number;
}

/** Compact diff rows: 1-based line numbers into the two stages' texts, flat character spans. */
export type DiffRow =
  | ['=', number, [number, number][], [number, number][]]
  | ['-', number, number[]]
  | ['+', number, number[]]
  | ['~', number, number, number[], number[]];

export interface DiffEntry {
  before: number;
  after: number;
  kind: 'previous' | 'pair';
  empty: boolean;
  added: number;
  removed: number;
  changed: number;
  summary: string;
  truncated?: boolean;
  rows: DiffRow[];
}

export interface GraphEntry {
  stage: number;
  stages: number[];
  kind: 'full' | 'summary' | null;
  ops?: number;
  note?: string;
  dot?: string;
  svg?: string | null;
  error?: string | null;
}

export interface SignatureArg {
  index: number;
  path: string;
  type: string;
  mutated: boolean;
  donated: boolean;
}

export interface SignatureResult {
  index: number | null;
  path: string;
  type: string;
  preserved_from: string | null;
  writes_back: string | null;
}

export interface XlaEntry {
  stage: number | string;
  device: string;
  compile_seconds: number;
  donate: boolean;
  hlo: number;
  cost: Record<string, number>;
  memory: Record<string, number>;
}

export interface BenchRowEntry {
  name: string;
  kind: string;
  median_s: number;
  iqr_s: number;
  min_s: number;
  compile_s: number | null;
  ratio: number | null;
  gflops_per_s: number | null;
  gb_per_s: number | null;
  roofline_fraction: number | null;
  noisy: boolean;
}

export interface BenchEntry {
  fn_name: string;
  device: string;
  reference: string | null;
  skipped: Record<string, string>;
  rows: BenchRowEntry[];
}

export interface ExplorerPayload {
  schema_version: number;
  meta: {
    function: string;
    mode: string | null;
    optimize: string;
    granularity: string;
    target: string;
    versions?: Record<string, string>;
    [key: string]: unknown;
  };
  signature: {
    args: SignatureArg[];
    results: SignatureResult[];
    skipped: [string, string][];
  };
  texts: TextEntry[];
  stages: StageEntry[];
  diffs: DiffEntry[];
  metrics: { stages: string[]; ops: string[]; counts: number[][]; totals: number[] };
  graphs: GraphEntry[];
  xla: XlaEntry | null;
  run: Record<string, unknown> | null;
  /** Optional: a BenchResult.to_dict() the live widget or the magic attached. */
  bench?: BenchEntry | null;
}

export type ExplorerCommand =
  | {
      command: 'rerun';
      optimize: string;
      granularity: 'stage' | 'pass';
      no_nan: boolean;
      pipeline: string | null;
    }
  | { command: 'diff'; id: number; before: number; after: number }
  | { command: 'slice'; id: number; stage: number; result: string };

export interface ExplorerStatus {
  state: 'idle' | 'running' | 'error';
  message?: string;
  progress?: number | null;
}

/** The widget's `result` trait: the answer to the request with the same id. */
export interface ExplorerResult {
  id: number;
  kind: 'diff' | 'slice' | 'error' | string;
  data: unknown;
}

export interface SliceData {
  stage: number;
  result: string;
  svg: string;
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
  dispose(): void;
}
