// Generated from reactant_lab/render/explorer.schema.json by scripts/gen-types.mjs: do not edit.
// Change the schema, then run `jlpm gen:types` (`jlpm test` fails while this file is stale).

/**
 * A static argument: its path and the repr of its value.
 *
 * @minItems 2
 * @maxItems 2
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "SkippedArg".
 */
export type SkippedArg = [string, string];
/**
 * A module text, stored plain, gzipped, or as a line delta of an earlier text.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "TextEntry".
 */
export type TextEntry = PlainText | GzipText | DeltaText;
/**
 * One row of a diff: 1-based line numbers into the two stages' texts, flat [start, end, ...] character spans that differ.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "DiffRow".
 */
export type DiffRow =
  ['=', number, LinePair[], LinePair[]] | ['-', Line, Spans] | ['+', Line, Spans] | ['~', Line, Line, Spans, Spans];
/**
 * [before_line, after_line] of an unchanged line shown as context.
 *
 * @minItems 2
 * @maxItems 2
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "LinePair".
 */
export type LinePair = [Line, Line];
/**
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "Line".
 */
export type Line = number;
/**
 * Flat [start, end, start, end, ...] character ranges (empty past the first 200 changed lines).
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "Spans".
 */
export type Spans = number[];
/**
 * The live widget's result trait: the answer to request id.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "ExplorerResult".
 */
export type ExplorerResult = DiffResult | SliceResult | GraphResult | CodeResult | ErrorResult;
/**
 * A message from the live explorer to the kernel.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "ExplorerCommand".
 */
export type ExplorerCommand =
  RerunCommand | DiffCommand | GraphCommand | CodeCommand | SliceCommand | VerifyCommand | BisectCommand;

/**
 * The explorer payload, schema version 1: everything the explorer shows of one exploration (reactant_lab.render.payload.build_payload). Indices are 0-based, times are seconds, text is plain text unless a field name says html or svg. The meaning of each part: docs/explorer-schema.md.
 */
export interface ExplorerPayload {
  /**
   * 1. Any incompatible change bumps it; readers refuse versions they do not know.
   */
  schema_version: 1;
  meta: PayloadMeta;
  signature: Signature;
  /**
   * Every distinct module text, stored once; stages and xla.hlo refer to them by id (their index here).
   */
  texts: TextEntry[];
  /**
   * One entry per stage (or pass), stage 0 being the traced module.
   */
  stages: StageEntry[];
  /**
   * Each stage against the one before, then pairs of distinct structures.
   */
  diffs: DiffEntry[];
  metrics: Metrics;
  /**
   * Dataflow graphs of main, one per distinct structure drawn (at most max_graphs, the first and last distinct structures first).
   */
  graphs: GraphEntry[];
  /**
   * Which boxes of one graph's model are boxes of another's, per pair of graphs with a model (consecutive graphs first, then first vs last, then the others, while the matches stay within a budget): the explorer draws the two stages as one graph and marks what was added, removed or changed. Absent when no two graphs have a model.
   */
  graph_diffs?: GraphDiffEntry[];
  /**
   * The compiled executable; null when nothing was compiled (a module given as text).
   */
  xla: XlaEntry | null;
  /**
   * Run timings; null when the call was not run.
   */
  run: RunTimings | null;
  bench?: BenchEntry;
  verification?: VerificationEntry;
  provenance?: Provenance;
  /**
   * The traced module's stablehlo.custom_call ops (absent when it has none, and in payloads of earlier releases).
   */
  custom_calls?: CustomCallEntry[];
}
/**
 * What was explored, and how.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "PayloadMeta".
 */
export interface PayloadMeta {
  /**
   * The function's name; "module" for a module given as text.
   */
  function: string;
  /**
   * How the function was traced; null for a module given as text.
   */
  mode: 'jax' | 'numpy' | null;
  /**
   * The optimize preset, or "custom" for a pass pipeline.
   */
  optimize: string;
  /**
   * One step per preset stage, or one per pass.
   */
  granularity: 'stage' | 'pass';
  /**
   * The target the lowering passes ran for ("cpu", "cuda", ...).
   */
  target: string;
  /**
   * Whether the enzyme-hlo patterns could assume no NaNs (absent in payloads of earlier releases).
   */
  no_nan?: boolean;
  /**
   * Whether Reactant's enzyme-hlo pattern list ran untouched, the exclusion table not applied (absent in payloads of earlier releases).
   */
  exact?: boolean;
  /**
   * The optimize presets a live explorer can re-run with (reactant_lab.PRESETS, in order; absent in payloads of earlier releases).
   */
  presets?: string[];
  /**
   * Package -> version of the compiler stack that made the payload.
   */
  versions?: {
    [k: string]: string;
  };
}
/**
 * The call's linear arguments, linear results and static arguments.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "Signature".
 */
export interface Signature {
  args: SignatureArg[];
  results: SignatureResult[];
  /**
   * The static arguments baked into the module: [path, value repr].
   */
  skipped: SkippedArg[];
  /**
   * The name the user wrote for each argument (linear or static) and result path that the traced function names otherwise: its parameter names in place of args[i] / kwargs['k'] (args[0]['w1'] -> p['w1']), the variable its return statements hand back in place of result (result -> t), a mutated argument's name for its resargs result. A path it does not name is absent (absent altogether in payloads saved before it was recorded).
   */
  names?: {
    [k: string]: string;
  };
}
/**
 * One linear argument (a traced leaf of the call's arguments).
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "SignatureArg".
 */
export interface SignatureArg {
  /**
   * The block argument (%argN) of main.
   */
  index: number;
  /**
   * Where the leaf sits in the call, e.g. args[0]['w'].
   */
  path: string;
  /**
   * Dtype and shape, e.g. float32[4,3].
   */
  type: string;
  /**
   * The function updates it in place.
   */
  mutated: boolean;
  /**
   * The executable was given its buffer.
   */
  donated: boolean;
}
/**
 * One linear result.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "SignatureResult".
 */
export interface SignatureResult {
  /**
   * The result of main; null for a preserved result (not computed).
   */
  index: number | null;
  /**
   * Where it sits in what the call returns, e.g. result[0], or resargs[i] for a mutated argument.
   */
  path: string;
  /**
   * Dtype and shape.
   */
  type: string;
  /**
   * The argument a preserved result is (returned unchanged), else null.
   */
  preserved_from: string | null;
  /**
   * The mutated argument this result's value is written into, else null.
   */
  writes_back: string | null;
  /**
   * The argument this result is after the pass pipeline (the passes reduced it to the argument returned unchanged: the executable does not compute it, and the argument is not donated), else null. preserved_from is the traced view.
   */
  preserved_after?: string | null;
  /**
   * True when NumPy mode computed the result while tracing, from constants alone: the module does not compute it, and each call hands back a new copy.
   */
  constant?: boolean;
}
/**
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "PlainText".
 */
export interface PlainText {
  /**
   * Its index in texts.
   */
  id: number;
  /**
   * Number of lines (split on \n).
   */
  lines: number;
  /**
   * Length of the text in characters.
   */
  chars: number;
  encoding: 'plain';
  /**
   * The text.
   */
  data: string;
}
/**
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "GzipText".
 */
export interface GzipText {
  /**
   * Its index in texts.
   */
  id: number;
  /**
   * Number of lines (split on \n).
   */
  lines: number;
  /**
   * Length of the text in characters.
   */
  chars: number;
  encoding: 'gzip';
  /**
   * base64 of the gzip-compressed UTF-8 text.
   */
  data: string;
}
/**
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "DeltaText".
 */
export interface DeltaText {
  /**
   * Its index in texts.
   */
  id: number;
  /**
   * Number of lines (split on \n).
   */
  lines: number;
  /**
   * Length of the text in characters.
   */
  chars: number;
  encoding: 'delta';
  /**
   * The id of the earlier text this one edits.
   */
  base: number;
  /**
   * base64 of gzip-compressed JSON: a list of [a0, a1] (copy base lines a0..a1-1) or strings (insert their lines).
   */
  data: string;
}
/**
 * The module after one stage (or pass).
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "StageEntry".
 */
export interface StageEntry {
  /**
   * Its position; 0 is the traced module.
   */
  index: number;
  /**
   * The stage or pass name.
   */
  name: string;
  /**
   * The preset stage it belongs to (its name at stage granularity).
   */
  group: string;
  /**
   * The passes that ran; empty for stage 0.
   */
  pipeline: string;
  /**
   * Wall time of its passes (of tracing and lowering for stage 0).
   */
  seconds: number;
  /**
   * Its structure differs from the stage before (locations, SSA numbering and attribute alias order ignored).
   */
  changed: boolean;
  /**
   * Why some of its passes could not run here, else null.
   */
  unavailable: string | null;
  /**
   * Op count without the module and function shells.
   */
  ops: number;
  /**
   * Op name -> count.
   */
  op_counts: {
    [k: string]: number;
  };
  /**
   * Op name -> change from the stage before (changed names only).
   */
  op_delta: {
    [k: string]: number;
  };
  /**
   * The id of its module text (op locations dropped, argument paths kept).
   */
  text: number;
  /**
   * The index of the first stage with the same structure; stages sharing it share graphs and diffs.
   */
  structure: number;
}
/**
 * The diff of stage before -> stage after.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "DiffEntry".
 */
export interface DiffEntry {
  /**
   * The stage on the left.
   */
  before: number;
  /**
   * The stage on the right.
   */
  after: number;
  /**
   * previous: after against after - 1; pair: two distinct structures.
   */
  kind: 'previous' | 'pair';
  /**
   * No structural change.
   */
  empty: boolean;
  /**
   * Lines only on the right.
   */
  added: number;
  /**
   * Lines only on the left.
   */
  removed: number;
  /**
   * Lines on both sides with different content.
   */
  changed: number;
  /**
   * The counts in words.
   */
  summary: string;
  /**
   * Script-free HTML of the diff; null when empty. Absent from the copy a report embeds beside its own HTML and from the live widget's diff answers.
   */
  html?: DiffHtml | null;
  /**
   * Over 200 changed lines: the HTML shows the first 200 (rows always hold all).
   */
  truncated: boolean;
  /**
   * The whole diff in compact form (docs/explorer-schema.md).
   */
  rows: DiffRow[];
}
/**
 * HTML fragments of a diff (CSS classes of reactant_lab.render.assets.CSS).
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "DiffHtml".
 */
export interface DiffHtml {
  'side-by-side': string;
  /**
   * Only when the side-by-side fragment is at most 256 KiB.
   */
  unified?: string;
}
/**
 * Op counts across stages.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "Metrics".
 */
export interface Metrics {
  /**
   * Column labels: the stage names.
   */
  stages: string[];
  /**
   * Row labels: op names (module and function shells only when their count changes).
   */
  ops: string[];
  /**
   * counts[row][column].
   */
  counts: number[][];
  /**
   * Per stage, the op total.
   */
  totals: number[];
}
/**
 * The dataflow graph of one structure's main. A graph that could not be built has kind null, error, and none of ops, note, dot, svg.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "GraphEntry".
 */
export interface GraphEntry {
  /**
   * The stage it was drawn for (the first of its structure).
   */
  stage: number;
  /**
   * Every stage it is valid for.
   */
  stages: number[];
  /**
   * full: every op, region ops as clusters; summary: one edge per result/argument dependence; null: main could not be parsed.
   */
  kind: 'full' | 'summary' | null;
  /**
   * Ops in main.
   */
  ops?: number;
  /**
   * What the drawing leaves out, or empty.
   */
  note?: string;
  /**
   * The Graphviz source.
   */
  dot?: string;
  /**
   * The laid-out SVG (no prologue, DOCTYPE or external reference); null when no layout program was available.
   */
  svg?: string | null;
  /**
   * Why there is no graph or no SVG, else null.
   */
  error: string | null;
  model?: GraphModel;
}
/**
 * Every node of main for the interactive graph, which the front end lays out, folds, slices and searches: linear arguments, then ops in text order (region bodies after their region op), then linear results, then the bodies of called functions (each func.call op the parent of its callee's ops and return, one region). Absent past the model's op cap or when main could not be parsed.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "GraphModel".
 */
export interface GraphModel {
  /**
   * Ops in main.
   */
  ops: number;
  nodes: GraphNode[];
  /**
   * The device mesh of a sharded module, as its sdy.mesh names it: axis=size, comma-separated (data=2, model=4). Absent when the module carries no mesh.
   */
  mesh?: string;
}
/**
 * An argument, op or result of the graph model.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "GraphNode".
 */
export interface GraphNode {
  /**
   * argN, opN or resN; an op of a called function's body CALL/opN (CALL the call's id), its return CALL/return.
   */
  id: string;
  kind: 'arg' | 'op' | 'result';
  /**
   * Op name (func.call @f for calls).
   */
  op?: string;
  /**
   * An argument's or result's name as the user wrote it (p['w1'], t); its path where the function names it no otherwise.
   */
  name?: string;
  /**
   * SSA name(s) it defines (%0, %5:2, %arg0); empty for a result or an op without results.
   */
  ssa?: string;
  /**
   * Result type(s) as printed (a result's shape and dtype).
   */
  type?: string;
  /**
   * The op's attributes as printed (operands and types left out; cut past 400 characters).
   */
  attrs?: string;
  /**
   * Indices (into nodes) of the producers of the values it uses, one per use; a block argument's producer is the region op owning it.
   */
  in: number[];
  /**
   * Index of the region op it is nested in.
   */
  parent?: number;
  /**
   * Which region of parent.
   */
  region?: number;
  /**
   * A region op's region labels (cond, do; else, then).
   */
  regions?: string[];
  /**
   * The Python statement a region op was made from, and its line.
   */
  title?: string;
  /**
   * 1-based line of the op in its stage's text.
   */
  line?: number;
  /**
   * The Python source file:line:col its location names (the innermost user-code frame; the file relative to the working directory, cell for a notebook cell, else its name: no path of the machine).
   */
  src?: string;
  /**
   * An argument's or result's marks: mutated, donated, unused, preserved, writes-back; an op's mark collective (a Shardy collective or reshard op in the module).
   */
  marks?: string[];
  /**
   * The value's sharding over the mesh, one {...} per dimension listing the mesh axes it is split over ({} replicated, ? open), in Shardy's notation without quotes: [{data}, {}]. Several results are separated by '; '. Absent when the module gives the value no sharding.
   */
  sharding?: string;
  /**
   * For a dot_general, dot or convolution: the precision it asks for (precision_config), and on a target whose DEFAULT is reduced what it computes there (a TPU: float32 at DEFAULT in one bfloat16 pass).
   */
  precision?: string;
  /**
   * The collectives XLA's partitioner inserted for this op in the compiled (per-device) HLO, matched by source location and op name, one line each: op, per-device shape, bytes, devices.
   */
  collectives?: string[];
  /**
   * An argument's or result's path in the call (args[0]['w1'], result[1]); name is what the user wrote for it (p['w1']). Absent in payloads saved before it was recorded (name is the path there).
   */
  path?: string;
  /**
   * A while or case op: the Python name of each of its results, in order (a while's carried values: its statement's variables, (index) / (counter) for a converted loop's own, an operand that is an argument of the call by that argument's name), null where not known. Absent when none is known.
   */
  carried?: (string | null)[];
  /**
   * A while op: its block arguments' SSA names as printed (%iterArg, %iterArg_1, ...), one per carried value; absent when they are not printed that way.
   */
  iter_args?: string[];
}
/**
 * The nodes of the graph model drawn for stage after matched to those of the one drawn for stage before (reactant_lab.analysis.graph_diff): arguments and results by path; an op by name, attributes, type and sharding where its operands and region op are matches too (unchanged), else by name and operands or Python source position (changed), else as the same operand of its user's match.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "GraphDiffEntry".
 */
export interface GraphDiffEntry {
  /**
   * The stage of the earlier graph (a GraphEntry's stage).
   */
  before: number;
  /**
   * The stage of the later graph (a GraphEntry's stage).
   */
  after: number;
  /**
   * Per node of after's model: the index of its match among before's nodes, -1 when it was added.
   */
  match: number[];
  /**
   * Nodes of after's model (indices) that match a node of before's but differ from it: attributes, type, sharding or operands.
   */
  changed: number[];
  /**
   * How many nodes of after's model match none of before's.
   */
  added: number;
  /**
   * How many nodes of before's model match none of after's.
   */
  removed: number;
  /**
   * The counts in words: 2 added, 1 removed, 3 changed (or no box changed).
   */
  summary: string;
}
/**
 * The compiled executable.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "XlaEntry".
 */
export interface XlaEntry {
  /**
   * The name of the stage whose module was compiled.
   */
  stage: string;
  /**
   * The device it was compiled for.
   */
  device: string;
  /**
   * XLA compile time.
   */
  compile_seconds: number;
  /**
   * Argument buffers were donated.
   */
  donate: boolean;
  /**
   * The id of XLA's optimized HLO text.
   */
  hlo: number;
  /**
   * XLA's cost model: name -> number (flops, bytes accessed, ...).
   */
  cost: {
    [k: string]: number;
  };
  /**
   * The cost keys in reading order (totals, then per output and operand; a notebook file sorts an object's keys), each with its name in words: [key, name] (bytes accessed1{} -> bytes read from operand 1).
   */
  cost_names?: [string, string][];
  /**
   * XLA's memory analysis: name -> bytes (per device for a partitioned executable).
   */
  memory: {
    [k: string]: number;
  };
  sharding?: XlaSharding;
  /**
   * What to know about how it was compiled (absent when nothing): what the device computes another way (float64 emulated on a TPU), how XLA was worked around.
   */
  notes?: string[];
  passes?: XlaPasses;
  code?: XlaCode;
}
/**
 * For an executable partitioned over several devices (absent for one): what XLA's SPMD partitioner made of the module's shardings.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "XlaSharding".
 */
export interface XlaSharding {
  /**
   * Devices the program is partitioned over.
   */
  partitions: number;
  /**
   * Replicas.
   */
  replicas: number;
  /**
   * The module's mesh (axis=size, comma-separated); empty when it has no sdy.mesh.
   */
  mesh: string;
  /**
   * The devices it runs on, as JAX names them.
   */
  devices: string[];
  /**
   * Collective op -> how many (all-reduce, all-gather, reduce-scatter, collective-permute, all-to-all, collective-broadcast), the ops present only.
   */
  counts: {
    [k: string]: number;
  };
  /**
   * Sum of the collectives' result bytes on one device (each op once, as written: an op in a loop body counts once).
   */
  bytes: number;
  collectives: CollectiveEntry[];
  /**
   * XLA's memory analysis of the per-device program: name -> bytes.
   */
  memory_per_device: {
    [k: string]: number;
  };
}
/**
 * One collective op of the partitioned HLO.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "CollectiveEntry".
 */
export interface CollectiveEntry {
  op: 'all-reduce' | 'all-gather' | 'reduce-scatter' | 'collective-permute' | 'all-to-all' | 'collective-broadcast';
  /**
   * The instruction's name in the HLO.
   */
  name: string;
  /**
   * Its result shape on one device.
   */
  shape: string;
  /**
   * Bytes of its result on one device.
   */
  bytes: number;
  /**
   * Who takes part: groups {0,1}{2,3}, pairs 0->1 1->2, or all devices.
   */
  devices: string;
  /**
   * The gathered, scattered or exchanged dimensions.
   */
  dimensions: number[];
  /**
   * XLA split it into -start / -done.
   */
  asynchronous: boolean;
  /**
   * The HLO computation it is in (the entry, a loop body...).
   */
  computation: string;
  /**
   * The traced op it was inserted for, as XLA's metadata names it (jit(f)/dot_general); empty when not known.
   */
  op_name: string;
  /**
   * The Python source file:line:col of that op (same form as GraphNode.src); absent when not known.
   */
  src?: string;
  /**
   * The HLO line, metadata dropped.
   */
  line: string;
}
/**
 * XLA's own HLO pipeline for the compiled stage (absent when the compile did not keep it): its stages follow the MLIR stages in `stages`, from `first` on (the HLO XLA began with, then the module after each pass that changed it, the last being the optimized HLO); this says where the compile's time went and which passes ran.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "XlaPasses".
 */
export interface XlaPasses {
  /**
   * The index in `stages` of XLA's first stage (the HLO it began with).
   */
  first: number;
  /**
   * XLA printed the module after every pass, so `totals` lists every pass that ran; false for a large module, whose `totals` lists the passes that changed it.
   */
  every_pass: boolean;
  /**
   * From handing the module to XLA to its first HLO (lowering to HLO).
   */
  import_seconds: number;
  /**
   * XLA's HLO passes, printing the module after each included.
   */
  pass_seconds: number;
  /**
   * From the optimized HLO to the executable (code generation).
   */
  codegen_seconds: number;
  /**
   * Per pass name, slowest first: [name, runs, runs that changed the module, seconds].
   */
  totals: [string, number, number, number, ...unknown[]][];
  /**
   * The kernels XLA:CPU emitted, each named after the fusion or instruction of the optimized HLO it computes (empty on other platforms).
   */
  kernels: string[];
}
/**
 * The code XLA:CPU generated per kernel (absent where it emitted none): each kernel's optimized LLVM IR and its machine code disassembled, kept compressed up to `budget` characters in all; a live explorer asks the kernel for a text left out.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "XlaCode".
 */
export interface XlaCode {
  /**
   * Per kernel, in XLA's order.
   */
  kernels: KernelCodeEntry[];
  /**
   * At most this many characters of the kernels' texts were kept (their LLVM IR first, then their assembly).
   */
  budget: number;
  /**
   * Why no kernel's assembly is here: no disassembler (objdump, llvm-objdump) was on PATH where the payload was made; null otherwise.
   */
  assembly_error: string | null;
}
/**
 * One kernel XLA:CPU emitted and the ids of its texts.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "KernelCodeEntry".
 */
export interface KernelCodeEntry {
  /**
   * The kernel, named after the fusion or instruction of the optimized HLO it computes (its SSA name without %).
   */
  name: string;
  /**
   * The id of its optimized LLVM IR text; null: left out past the budget.
   */
  llvm_ir: number | null;
  /**
   * The id of its assembly (objdump -d); null: left out past the budget, or no disassembler (assembly_error).
   */
  assembly: number | null;
}
/**
 * Measured run times: the first call, and where measured the median, IQR and sample count, and baselines' medians as NAME_median_seconds.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "RunTimings".
 */
export interface RunTimings {
  /**
   * The first call (transfers included).
   */
  first_call_seconds?: number;
  median_seconds?: number;
  iqr_seconds?: number;
  /**
   * Samples the median was taken over.
   */
  samples?: number;
  /**
   * This interface was referenced by `RunTimings`'s JSON-Schema definition
   * via the `patternProperty` "^[a-z][a-z0-9_]*_seconds$".
   */
  [k: string]: number | undefined;
}
/**
 * A benchmark of the call (reactant_lab.BenchResult.to_dict()); only in payloads of benchmarked calls.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "BenchEntry".
 */
export interface BenchEntry {
  /**
   * The benchmarked function.
   */
  fn_name: string;
  /**
   * How it was traced.
   */
  mode: 'jax' | 'numpy';
  /**
   * Where it ran.
   */
  device: string;
  /**
   * The baseline ratios are taken against, or null.
   */
  reference: string | null;
  /**
   * Variant -> why it was not measured.
   */
  skipped: {
    [k: string]: string;
  };
  roofline: Roofline | null;
  /**
   * One per variant, in the order measured.
   */
  rows: BenchRowEntry[];
  /**
   * What may have skewed this run's samples, and what to do about it, one sentence each (absent in payloads saved before it was recorded).
   */
  caveats?: string[];
  /**
   * The element type whose matmul peak bounds the roofline's compute (absent in payloads saved before it was recorded).
   */
  compute_dtype?: 'float32' | 'bfloat16';
}
/**
 * The device's measured peak compute and bandwidth.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "Roofline".
 */
export interface Roofline {
  device: string;
  /**
   * Floating-point operations per second of a dense float32 matmul.
   */
  peak_flops: number;
  /**
   * Bytes per second (read + write) of a large copy.
   */
  peak_bytes_per_s: number;
  /**
   * How long the measurements took.
   */
  seconds: number;
  /**
   * Floating-point operations per second of a dense bfloat16 matmul, or null (absent in payloads saved before it was recorded).
   */
  peak_flops_bf16?: number | null;
  /**
   * The peaks measured on the device (field names); the others were given (absent in payloads saved before it was recorded).
   */
  measured?: ('peak_flops' | 'peak_flops_bf16' | 'peak_bytes_per_s')[];
}
/**
 * Timing of one variant (seconds per call; null where unknown).
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "BenchRowEntry".
 */
export interface BenchRowEntry {
  /**
   * Preset or baseline name.
   */
  name: string;
  kind: 'preset' | 'baseline';
  samples_s: number[];
  median_s: number;
  iqr_s: number;
  min_s: number;
  compile_s: number | null;
  /**
   * Median over the reference baseline's median.
   */
  ratio: number | null;
  flops: number | null;
  bytes_accessed: number | null;
  /**
   * The time floor over the median (1.0: at the roofline).
   */
  roofline_fraction: number | null;
  calls_per_sample: number;
  /**
   * IQR over median above 10%.
   */
  noisy: boolean;
  gflops_per_s: number | null;
  gb_per_s: number | null;
  /**
   * Bytes a call of NumPy arrays copies host to device first; null when its inputs are on the device already.
   */
  h2d_bytes?: number | null;
  /**
   * Seconds those copies take, timed apart from the samples.
   */
  h2d_s?: number | null;
  /**
   * Bytes of results and updated arrays a call of NumPy arrays copies back to the host.
   */
  d2h_bytes?: number | null;
  /**
   * Seconds those copies take, timed apart from the samples.
   */
  d2h_s?: number | null;
  /**
   * The median plus both copies, or null without them.
   */
  with_transfers_s?: number | null;
}
/**
 * Every stage compiled, run on copies of the example inputs, compared with a reference and timed (reactant_lab.verify.Verification); only in payloads of verified explorations.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "VerificationEntry".
 */
export interface VerificationEntry {
  /**
   * What the stages were compared with.
   */
  reference: 'numpy' | 'jax' | 'stage0';
  /**
   * The reference in words (NumPy eager, jax.jit, the traced module).
   */
  reference_label: string;
  /**
   * The tolerance rule, in words.
   */
  tolerance: string;
  /**
   * Timed samples per stage (run times are their median).
   */
  repeat: number;
  /**
   * A stage is marked slower past this many times the fastest earlier stage.
   */
  slower_factor: number;
  /**
   * The index of the first stage whose result is off the reference, else null.
   */
  first_wrong: number | null;
  /**
   * The index of the first stage more than slower_factor times slower than the fastest before it, else null.
   */
  first_slower: number | null;
  /**
   * One per stage, in stage order.
   */
  checks: StageCheckEntry[];
}
/**
 * One stage's module compiled, run and compared (reactant_lab.verify.StageCheck); figures are null where unknown (or not finite).
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "StageCheckEntry".
 */
export interface StageCheckEntry {
  /**
   * The stage's index.
   */
  index: number;
  /**
   * The stage's name.
   */
  name: string;
  /**
   * XLA compile time of the stage's module.
   */
  compile_seconds: number | null;
  /**
   * Median run time of the executable alone.
   */
  run_seconds: number | null;
  /**
   * Largest absolute difference from the reference.
   */
  max_abs: number | null;
  /**
   * Largest relative difference from the reference.
   */
  max_rel: number | null;
  /**
   * Within tolerance of the reference; null when it could not run.
   */
  ok: boolean | null;
  /**
   * The first value off, when not ok.
   */
  first_bad: string | null;
  /**
   * Why the module could not be compiled or run.
   */
  error: string | null;
  /**
   * The earlier stage whose module this one equals (its figures are reused), else null.
   */
  same_as: number | null;
  /**
   * More than slower_factor times the fastest earlier stage.
   */
  slower: boolean;
}
/**
 * Where each op came from in Python: per stage, displayed text line -> source (absent when no op has a location in user code, and in payloads of earlier releases).
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "Provenance".
 */
export interface Provenance {
  /**
   * File names of the sources (a notebook's cells as Cell In[N], other files shortened).
   */
  files: string[];
  /**
   * The distinct sources of ops: one frame chain per location of the op (several for an op a pass fused from several lines), each flat [file, line, column, ...] triples, the frame the op was traced in first, then the user-code calls leading there (file: index into files; line and column 1-based, column 0 when unknown).
   */
  sources: number[][][];
  /**
   * Distinct line maps: entry i is for the 1-based line i + 1 of a stage's text (op locations dropped): 0 for no source, k for sources[k - 1]. Lines past the end have no source.
   */
  maps: number[][];
  /**
   * Per stage, the index of its map in maps.
   */
  stages: number[];
  /**
   * The traced function's source lines (widened to nearby lines of its file that ops come from); null when they could not be read.
   */
  code: SourceCode | null;
}
/**
 * Lines first .. first + lines.length - 1 of one source file.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "SourceCode".
 */
export interface SourceCode {
  /**
   * Index into provenance.files.
   */
  file: number;
  /**
   * The 1-based number of the first line.
   */
  first: number;
  lines: string[];
}
/**
 * One stablehlo.custom_call of the traced module.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "CustomCallEntry".
 */
export interface CustomCallEntry {
  /**
   * The call target (tpu_custom_call, ...).
   */
  target: string;
  /**
   * Its function type, (operands) -> results.
   */
  type: string;
  /**
   * The one platform whose XLA implements the target ('tpu', 'gpu'); null: any, or not known.
   */
  platform: string | null;
  /**
   * Marked as having side effects.
   */
  has_side_effect: boolean;
  /**
   * The custom-call API version as printed; null when not given.
   */
  api_version: string | null;
  /**
   * Indices of the stages whose module holds the call unchanged (target, backend config, type).
   */
  stages: number[];
  /**
   * The backend config (a string's value, or a dictionary as printed), cut at 4,096 characters; null when it has none or carries a kernel (see kernel).
   */
  config: string | null;
  /**
   * config was cut.
   */
  config_truncated: boolean;
  /**
   * The Pallas TPU kernel it runs (tpu_custom_call's Mosaic module); null for other calls.
   */
  kernel: KernelEntry | null;
}
/**
 * A Pallas TPU kernel as tpu_custom_call's backend config carries it.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "KernelEntry".
 */
export interface KernelEntry {
  /**
   * The kernel's name; null when not given.
   */
  name: string | null;
  /**
   * Size of the serialized Mosaic module (MLIR bytecode).
   */
  body_bytes: number;
  /**
   * The config's other fields: [name, JSON value].
   */
  fields: [] | [string] | [string, string][];
  /**
   * The id of the kernel's MLIR text (decoded from the body); null when it could not be decoded.
   */
  text: number | null;
  /**
   * Why the kernel's MLIR is not shown; null when it is.
   */
  note: string | null;
}
/**
 * The live widget's bisect trait: the pass a bisection found (reactant_lab.BisectResult), or null before any.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "BisectEntry".
 */
export interface BisectEntry {
  fn_name: string;
  /**
   * What was bisected on.
   */
  metric: 'result' | 'runtime' | 'compile_time';
  /**
   * The factor a time metric had to grow by, else null.
   */
  threshold: number | null;
  /**
   * What results were compared with (the result metric), else null.
   */
  reference: string | null;
  /**
   * A single culprit pass was found.
   */
  found: boolean;
  /**
   * The final module was bad (false: nothing regressed, nothing to bisect); absent from older entries.
   */
  regressed?: boolean;
  /**
   * What the bisection concluded, in words.
   */
  why: string;
  /**
   * The stage the culprit ran in.
   */
  stage: string | null;
  pass_index: number | null;
  pass_name: string | null;
  /**
   * The culprit pass as a pipeline string.
   */
  pass_pipeline: string | null;
  /**
   * The enzyme-hlo patterns narrowed to, when the culprit is a pattern set.
   */
  patterns: string[];
  /**
   * The figures without the culprit.
   */
  good: StageCheckEntry | null;
  /**
   * The figures with it.
   */
  bad: StageCheckEntry | null;
  /**
   * Compile-and-run tests the bisection took.
   */
  tests: number;
  seconds: number;
  /**
   * The folder of the standalone reproducer, else null.
   */
  reproducer: string | null;
  /**
   * The culprit's before -> after diff as plain unified text (Diff.text), else null.
   */
  diff: string | null;
  diff_summary: string | null;
  /**
   * What each step tested.
   */
  log: string[];
}
/**
 * The live widget's status trait (docs/widget-protocol.md).
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "ExplorerStatus".
 */
export interface ExplorerStatus {
  state: 'idle' | 'running' | 'error';
  message: string;
  /**
   * Fraction done while running, else null.
   */
  progress: number | null;
}
export interface DiffResult {
  id: number;
  kind: 'diff';
  data: DiffEntry;
}
export interface SliceResult {
  id: number;
  kind: 'slice';
  data: SliceData;
}
/**
 * The backward slice of one result at one stage.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "SliceData".
 */
export interface SliceData {
  stage: number;
  /**
   * The result's path (or index) as asked.
   */
  result: string | number;
  svg: string;
}
export interface GraphResult {
  id: number;
  kind: 'graph';
  data: GraphData;
}
/**
 * Every node of one stage's main, for a module past the payload's graph cap: the explorer draws it whole, or one result's slice of it; asked with compare, the compared stage's model too and the graph diff of the two.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "GraphData".
 */
export interface GraphData {
  stage: number;
  model: GraphModel;
  /**
   * The stage compared with (as asked).
   */
  compare?: number;
  compare_model?: GraphModel;
  diff?: GraphDiffEntry;
}
export interface CodeResult {
  id: number;
  kind: 'code';
  data: CodeData;
}
/**
 * One kernel's LLVM IR or assembly, for a kernel whose text the payload left out.
 *
 * This interface was referenced by `ExplorerPayload`'s JSON-Schema
 * via the `definition` "CodeData".
 */
export interface CodeData {
  kernel: string;
  what: 'llvm_ir' | 'assembly';
  text: string;
}
export interface ErrorResult {
  id: number;
  kind: 'error';
  data: {
    message: string;
  };
}
export interface RerunCommand {
  command: 'rerun';
  optimize: string;
  granularity: 'stage' | 'pass';
  no_nan: boolean;
  /**
   * Run Reactant's enzyme-hlo pattern list untouched (the exclusion table not applied); absent: as the payload was made.
   */
  exact?: boolean;
  pipeline: string | null;
}
export interface DiffCommand {
  command: 'diff';
  id: number;
  before: number;
  after: number;
}
export interface GraphCommand {
  command: 'graph';
  id: number;
  stage: number;
  /**
   * Another stage: its model and the graph diff of the two come too.
   */
  compare?: number;
}
/**
 * A kernel's LLVM IR or assembly, left out of the payload.
 */
export interface CodeCommand {
  command: 'code';
  id: number;
  kernel: string;
  what: 'llvm_ir' | 'assembly';
}
export interface SliceCommand {
  command: 'slice';
  id: number;
  stage: number;
  result: string;
}
/**
 * Verify every stage of the shown exploration on the example inputs.
 */
export interface VerifyCommand {
  command: 'verify';
}
/**
 * Find the pass that makes the metric go wrong, with the explorer's options.
 */
export interface BisectCommand {
  command: 'bisect';
  metric: 'result' | 'runtime' | 'compile_time';
}
