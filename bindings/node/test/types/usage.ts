// Compiled with `tsc --noEmit` (npm run typecheck): the public API as a TypeScript user types it.
import ffi, {
  FFIError, GenerateOptions, Generation, GraphModule, LanguageModel, NDArray, PackedFunc, Shape,
  Token, VirtualMachine, cpu, nd, shape as makeShape,
} from 'polyffi';

const add3: PackedFunc = ffi.getGlobalFunc('testing.add3');
const n: number = add3(1, 2, ffi.int(3));
const maybe: PackedFunc | null = ffi.getGlobalFunc('missing', { allowMissing: true });
const later: Promise<unknown> = add3.callAsync(1, 2n, 3);
add3.dispose();
add3[Symbol.dispose]();

const cb = ffi.convert((a: number, b: number) => a + b, { onFinalize: () => undefined });
ffi.registerFunc('app.add', cb, { override: true });
const api: Record<string, PackedFunc> = ffi.initApi('testing');
const names: string[] = ffi.listGlobalFuncNames();

const m = ffi.loadModule('/path/lib.so');
const f: PackedFunc = m.getFunction('main', { queryImports: true });
const g: PackedFunc | null = m.getFunction('other', { allowMissing: true });
const key: string = m.typeKey;

const view: NDArray = nd.array(new Float32Array(4), [2, 2]);
const arr = nd.empty([2, 2], 'float32', cpu(0));
const shape: number[] = arr.shape;
const data = arr.toTypedArray();
arr.copyFrom(new Float32Array(4));

const list = new ffi.Array([1, 'a', [2.5]]);
const size: number = list.length;
const dict = new ffi.Map(new Map([['k', 1]]));
const has: boolean = dict.has('k');

try {
  ffi.getGlobalFunc('nope');
} catch (e) {
  if (e instanceof FFIError) {
    const kind: string = e.kind;
    console.log(kind);
  }
}

async function infer(graph: string, lib: typeof m, x: Float32Array): Promise<Float32Array> {
  const gm = GraphModule.create(graph, lib, cpu());
  gm.setInput('data', x);
  await gm.runAsync();
  return gm.getOutput(0, new Float32Array(10));
}

// A library exported by Apache TVM (export_library) loads as its GraphExecutorFactory.
async function inferTvmExport(path: string, x: Float32Array): Promise<Float32Array> {
  const lib = ffi.loadModule(path);
  const imported: string[] = lib.imports.map((mod) => mod.typeKey);
  console.log(imported);
  const gm: GraphModule = GraphModule.fromFactory(lib, cpu());
  const same: GraphModule = new GraphModule(lib.getFunction('default')(cpu()));
  same.dispose();
  gm.setInput('data', x);
  await gm.runAsync();
  return gm.getOutput(0, new Float32Array(10));
}

// A relax VM executable exported by TVM 0.27.
async function inferRelax(path: string, x: Float32Array): Promise<NDArray> {
  const vm = new VirtualMachine(ffi.loadModule(path), cpu());
  const y: NDArray = vm.invoke('forward', nd.array(x, [1, 16]));
  y.dispose();
  const forward = vm.getFunction('forward');
  const pair = (await forward.callAsync(x, x)) as NDArray[];
  pair.forEach((a) => a.dispose());
  vm.setInput('forward', x);
  vm.invokeStateful('forward');
  const names: string[] = vm.paramNames('forward');
  console.log(names, vm.hasFunction('forward'));
  const out = vm.getOutputs('forward') as NDArray;
  vm.dispose();
  return out;
}

// Shapes: an Array of dimensions out, ffi.shape([...]) in.
const dims: Shape = makeShape([2, 3n]);
const firstDim: number | bigint = dims[0];
const echoed = ffi.getGlobalFunc('testing.echo')(ffi.shape(dims));
const isShape: boolean = echoed instanceof Shape && Array.isArray(echoed);

// A language model: sync and async iteration over tokens.
async function complete(dir: string): Promise<string> {
  const lm = LanguageModel.load(dir);
  const ids: Int32Array = lm.encode('hi');
  let text: string = lm.decode(ids) + lm.decode([1, 2]) + lm.tokenText(3);
  const gen: Generation = lm.generate(ids, { maxTokens: 4, temperature: 0, stop: ['.'] });
  for (const t of gen) text += t.text;
  const reason: string = gen.finishReason;
  const opts: GenerateOptions = { temperature: 0.8, topP: 0.9, seed: 7, stopTokenIds: [0] };
  const g2 = lm.generate('hello', opts);
  for await (const t of g2) {
    const tok: Token = t;
    text += tok.text;
  }
  const logits: Float32Array = g2.logits();
  g2.close();
  gen[Symbol.dispose]();
  const vocab: number = lm.config.vocab_size;
  lm.dispose();
  return `${text}${reason}${logits.length}${vocab}`;
}

export {
  complete,
  inferRelax, n, maybe, later, api, names, f, g, key, view, shape, data, size, has, infer,
  inferTvmExport, firstDim, isShape,
};
