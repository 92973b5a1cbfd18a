// Types of the polyffi Node.js binding (CommonJS and ESM).
/// <reference types="node" />

/** A value that can be passed to a PackedFunc. */
export type Arg =
  | number | bigint | boolean | string | null | undefined
  | Float | Int | Buffer | ArrayBuffer | NodeJS.TypedArray
  | Device | DataType | Shape | PackedFunc | Module | NDArray | ObjectRef
  | ((...args: any[]) => any)
  | Arg[] | Map<Arg, Arg> | { [key: string]: Arg };

/** A value returned by a PackedFunc (numbers are Int / Float boxes under exactNumbers(true)). */
export type Result =
  | number | bigint | boolean | string | null | Float | Int | Buffer
  | Device | DataType | Shape | PackedFunc | Module | NDArray | ObjectRef | ((...args: any[]) => any);

export declare const version: string;
export declare function runtimeVersion(): string;
/** Sizes the core's async pool (workers before the first async call; 0 keeps a setting). */
export declare function configureAsync(numWorkers?: number, queueLimit?: number):
  { numWorkers: number; queueLimit: number; queued: number };

/** A runtime function, callable like a JS function. */
export interface PackedFunc {
  (...args: Arg[]): any;
  /** Runs the call on the core's worker pool; the event loop stays free. A full queue rejects
   *  with an FFIError of kind QueueFullError. */
  callAsync(...args: Arg[]): Promise<any>;
  /** callAsync that `signal` cancels (rejects with an FFIError of kind CancelledError). */
  callAsyncWithSignal(signal: AbortSignal | undefined, ...args: Arg[]): Promise<any>;
  /** Releases the handle; later calls throw an FFIError of kind ValueError. */
  dispose(): void;
  readonly disposed: boolean;
  [Symbol.dispose](): void;
}
export declare const PackedFunc: {
  prototype: PackedFunc;
};

export declare function getGlobalFunc(name: string): PackedFunc;
export declare function getGlobalFunc(name: string, options: { allowMissing: true }): PackedFunc | null;
export declare function getGlobalFunc(name: string, options?: { allowMissing?: boolean }): PackedFunc | null;
export declare function registerFunc(name: string, fn: ((...args: any[]) => any) | PackedFunc,
  options?: { override?: boolean }): PackedFunc;
export declare function listGlobalFuncNames(): string[];
export declare function removeGlobalFunc(name: string): void;
/** A JS function as a PackedFunc; onFinalize runs once on the JS thread after the runtime drops it. */
export declare function convert(fn: (...args: any[]) => any,
  options?: { onFinalize?: () => void }): PackedFunc;
/** { x: PackedFunc } for every global `prefix.x` (not `prefix.a.b`). */
export declare function initApi(prefix: string): Record<string, PackedFunc>;
export declare function loadModule(path: string, fmt?: string): Module;
export declare function registerObject(typeKey: string, cls: new (...args: any[]) => ObjectRef): void;
/** Numbers come out as Int / Float boxes while on; returns the previous mode. */
export declare function exactNumbers(on: boolean): boolean;
/** The runtime address of a handle: equal for the same object. */
export declare function handleAddress(handle: PackedFunc | Module | NDArray | ObjectRef): bigint;

declare class HandleBase {
  protected constructor();
  dispose(): void;
  readonly disposed: boolean;
  [Symbol.dispose](): void;
}

export declare class Module extends HandleBase {
  getFunction(name: string, options?: { queryImports?: boolean; allowMissing?: false }): PackedFunc;
  getFunction(name: string, options: { queryImports?: boolean; allowMissing: true }): PackedFunc | null;
  importModule(dep: Module): void;
  readonly entryFunc: PackedFunc;
  readonly typeKey: string;
  /** The modules this one imports, in order (a TVM export's factory imports its `library`). */
  readonly imports: Module[];
}

export declare class ObjectRef extends HandleBase {
  readonly typeKey: string;
}

declare class FFIArray extends ObjectRef implements Iterable<any> {
  constructor(items: Arg[]);
  readonly length: number;
  get(index: number): any;
  toArray(): any[];
  [Symbol.iterator](): Iterator<any>;
}
declare class FFIMap extends ObjectRef implements Iterable<[any, any]> {
  constructor(entries: Map<Arg, Arg> | Array<[Arg, Arg]> | { [key: string]: Arg });
  readonly size: number;
  get(key: Arg): any;
  has(key: Arg): boolean;
  entries(): Array<[any, any]>;
  keys(): any[];
  [Symbol.iterator](): Iterator<[any, any]>;
}
export { FFIArray as Array, FFIMap as Map };

export declare class NDArray extends HandleBase {
  readonly shape: number[];
  readonly dtype: string;
  readonly device: Device;
  /** A TypedArray over the array's own memory (no copy). */
  toTypedArray(): NodeJS.TypedArray;
  toBuffer(): Buffer;
  copyFrom(src: NodeJS.TypedArray | Buffer): this;
}

export declare const nd: {
  empty(shape: number[], dtype?: string | DataType, device?: Device): NDArray;
  /** A zero-copy view of a TypedArray or Buffer (1-D unless shape is given). */
  array(data: NodeJS.TypedArray | Buffer, shape?: number[], dtype?: string | DataType): NDArray;
};

export declare class Device {
  constructor(deviceType: number, deviceId?: number);
  readonly deviceType: number;
  readonly deviceId: number;
  equals(other: unknown): boolean;
}
export declare function cpu(id?: number): Device;

export declare class DataType {
  constructor(text: string);
  readonly text: string;
  equals(other: unknown): boolean;
}

export declare class Float {
  constructor(value: number);
  readonly value: number;
}
export declare class Int {
  constructor(value: number | bigint);
  readonly value: number | bigint;
}
export declare function float(x: number): Float;
export declare function int(x: number | bigint): Int;

/**
 * A shape (runtime.ShapeTuple): an Array of dimensions, numbers within +-(2^53-1) and bigints
 * beyond. Every returned shape is a Shape; make one to pass with shape([...]) (a plain array
 * passes as a runtime Array). map/filter/slice give plain arrays.
 */
export declare class Shape extends Array<number | bigint> {}
/** A Shape from integer numbers (safe integers) or bigints (int64); TypeError / RangeError. */
export declare function shape(dims: Iterable<number | bigint>): Shape;

export declare class FFIError extends Error {
  constructor(message: string, kind?: string);
  /** "ValueError", "TypeError", ... or the kind a callback's error carried. */
  readonly kind: string;
}

export declare class GraphModule {
  constructor(module: Module, runner?: Module | null);
  static create(graphJson: string, lib: Module, device?: Device): GraphModule;
  /** A library exported by TVM (a GraphExecutorFactory), over the core's model runner. */
  static fromFactory(factory: Module, device?: Device): GraphModule;
  /** graph.json + kernel library + params, over the core's model runner. */
  static fromParts(graphJson: string, lib: Module, params: Buffer | Uint8Array | null,
    device?: Device): GraphModule;
  readonly module: Module;
  /** The core's model runner (fromFactory), or null for a bare executor. */
  readonly runner: Module | null;
  /** The graph's inputs that are not weights: what infer takes by position. */
  readonly inputNames: string[];
  /** Stateless run: inputs by position or as { name: array }; every output, new. */
  infer(...inputs: (NDArray | NodeJS.TypedArray)[]): NDArray[];
  infer(named: Record<string, NDArray | NodeJS.TypedArray>): NDArray[];
  /** infer() on the core's worker pool: concurrent calls run in parallel. */
  inferAsync(...inputs: (NDArray | NodeJS.TypedArray)[]): Promise<NDArray[]>;
  inferAsync(named: Record<string, NDArray | NodeJS.TypedArray>): Promise<NDArray[]>;
  setInput(nameOrIndex: string | number, array: NDArray | NodeJS.TypedArray): this;
  run(): void;
  runAsync(options?: { signal?: AbortSignal }): Promise<void>;
  getOutput(index: number): NDArray;
  getOutput<T extends NDArray | NodeJS.TypedArray>(index: number, out: T): T;
  getNumOutputs(): number;
  getNumInputs(): number;
  getInputIndex(name: string): number;
  loadParams(bytes: Buffer | Uint8Array): void;
  dispose(): void;
  [Symbol.dispose](): void;
}

/** A relax VM argument: NDArrays and TypedArrays (1-D); the core copies what is misaligned. */
export type VMArg = NDArray | NodeJS.TypedArray | number | bigint | boolean | string | null |
  Float | Int | VMArg[];
/** A VM function's result: an NDArray, or an array of results for a relax Tuple. */
export type VMResult = NDArray | VMResult[] | any;

/** A VM function as a JS function (`vm["forward"]`). */
export interface VMFunction {
  (...args: VMArg[]): VMResult;
  callAsync(...args: VMArg[]): Promise<VMResult>;
}

/** A relax VM executable (TVM 0.2x's export_library) run by function name. */
export declare class VirtualMachine {
  constructor(lib: Module, device?: Device, options?: { allocator?: 'pooled' | 'naive' });
  /** The runner's own VM module (lib's vm_load_executable()), for the stateful API. */
  readonly module: Module;
  /** The core's model runner (polyffi.runner.vm): invoke runs on its pool. */
  readonly runner: Module;
  readonly device: Device;
  invoke(name: string, ...args: VMArg[]): VMResult;
  invokeAsync(name: string, ...args: VMArg[]): Promise<VMResult>;
  getFunction(name: string): VMFunction;
  hasFunction(name: string): boolean;
  setInput(funcName: string, ...args: VMArg[]): void;
  invokeStateful(funcName: string): void;
  getOutputs(funcName: string): VMResult;
  paramNames(funcName: string): string[];
  dispose(): void;
  [Symbol.dispose](): void;
}

/** Options of LanguageModel.generate (the core's defaults for those not given). */
export interface GenerateOptions {
  /** Tokens to generate at most (default 16). */
  maxTokens?: number;
  /** 0: greedy (argmax); else sampling at this temperature (default 1.0). */
  temperature?: number;
  /** Nucleus sampling in (0, 1] (default 1.0). */
  topP?: number;
  /** Seed of the sampler (default 0): the same seed gives the same tokens in every binding. */
  seed?: number;
  /** Stop strings, each exactly one token; a stop token ends the generation and is not returned. */
  stop?: string[];
  /** Stop token ids, added to the model's own. */
  stopTokenIds?: number[];
}

/** One generated token. */
export interface Token {
  id: number;
  text: string;
}

/** The parsed model configuration as the core reports it. */
export interface LanguageModelConfig {
  vocab_size: number;
  kv_cache: Record<string, number>;
  tokenizer: { kind: string; [key: string]: unknown };
  stop_token_ids: number[];
  [key: string]: unknown;
}

/** A language model directory (lm-config.json, the model library, the weights). */
export declare class LanguageModel {
  constructor(dir: string);
  static load(dir: string): LanguageModel;
  /** The core's polyffi.LanguageModel module. */
  readonly module: Module;
  readonly config: LanguageModelConfig;
  encode(text: string): Int32Array;
  decode(tokens: Int32Array | number[]): string;
  tokenText(id: number): string;
  generate(prompt: string | Int32Array | number[], options?: GenerateOptions): Generation;
  dispose(): void;
  [Symbol.dispose](): void;
}

/**
 * One generation: a sync iterator of tokens (next() runs the step on the JS thread) and an async
 * one (each step on the core's async pool). Ends with finishReason 'stop' or 'length' and frees its
 * sequence in the KV cache when it ends, on close() or on a break out of the loop.
 */
export declare class Generation implements IterableIterator<Token>, AsyncIterable<Token> {
  private constructor();
  readonly module: Module;
  readonly model: LanguageModel;
  next(): IteratorResult<Token, undefined>;
  nextAsync(): Promise<IteratorResult<Token, undefined>>;
  return(value?: any): IteratorResult<Token, any>;
  [Symbol.iterator](): Generation;
  [Symbol.asyncIterator](): AsyncIterableIterator<Token>;
  /** '' while running, then 'stop' or 'length'. */
  readonly finishReason: '' | 'stop' | 'length' | string;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly closed: boolean;
  /** A copy of the logits the last token was chosen from. */
  logits(): Float32Array;
  close(): void;
  dispose(): void;
  [Symbol.dispose](): void;
}

declare const ffi: {
  version: typeof version; runtimeVersion: typeof runtimeVersion;
  getGlobalFunc: typeof getGlobalFunc; registerFunc: typeof registerFunc;
  listGlobalFuncNames: typeof listGlobalFuncNames; removeGlobalFunc: typeof removeGlobalFunc;
  convert: typeof convert; initApi: typeof initApi; loadModule: typeof loadModule;
  registerObject: typeof registerObject; exactNumbers: typeof exactNumbers;
  handleAddress: typeof handleAddress;
  PackedFunc: typeof PackedFunc; Module: typeof Module; ObjectRef: typeof ObjectRef;
  Array: typeof FFIArray; Map: typeof FFIMap; NDArray: typeof NDArray; nd: typeof nd;
  Device: typeof Device; cpu: typeof cpu; DataType: typeof DataType;
  Float: typeof Float; Int: typeof Int; float: typeof float; int: typeof int;
  Shape: typeof Shape; shape: typeof shape;
  FFIError: typeof FFIError; GraphModule: typeof GraphModule;
  VirtualMachine: typeof VirtualMachine;
  LanguageModel: typeof LanguageModel; Generation: typeof Generation;
};
export default ffi;
