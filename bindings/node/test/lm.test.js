'use strict';
// LanguageModel / Generation over the core's language-model API, on the TVM 0.27 tiny llama
// fixture (tests/tvm_models/tvm027/lm): greedy tokens and logits equal what TVM 0.27 computed
// (io.json and the .bin files), two interleaved generations, seeded sampling equal to the core's
// recorded tokens (sampled.json, the same in every binding), stop and length, typed errors, the
// async iterator equal to the sync one, and several generations running concurrently.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { REPO_ROOT } = require('./helpers');
const ffi = require('..');

const DIR = path.join(REPO_ROOT, 'tests', 'tvm_models', 'tvm027', 'lm');
const IO = JSON.parse(fs.readFileSync(path.join(DIR, 'io.json'), 'utf8'));
const V = IO.config.vocab_size;
const GREEDY = { temperature: 0, maxTokens: IO.greedy.tokens.length };
const SAMPLED_OPTIONS = { temperature: 0.8, topP: 0.9, seed: 7, maxTokens: 20 };

const lm = ffi.LanguageModel.load(DIR);

function readF32(file) {
  const b = fs.readFileSync(path.join(DIR, file));
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}

function assertClose(got, want, what) {
  assert.ok(got instanceof Float32Array, `${what}: not a Float32Array`);
  assert.strictEqual(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) {
    const tol = 1e-4 + 1e-4 * Math.abs(want[i]);
    if (!(Math.abs(got[i] - want[i]) <= tol)) {
      assert.fail(`${what}: logits[${i}] = ${got[i]}, expected ${want[i]}`);
    }
  }
}

const ids = (gen) => [...gen].map((t) => t.id);

async function idsAsync(gen) {
  const out = [];
  for await (const t of gen) out.push(t.id);
  return out;
}

function assertFFIError(fn, kind, pattern) {
  assert.throws(fn, (e) => {
    assert.ok(e instanceof ffi.FFIError, `not an FFIError: ${e}`);
    assert.strictEqual(e.kind, kind, `kind of: ${e.message}`);
    if (pattern) assert.match(e.message, pattern);
    return true;
  });
}

test('config, encode, decode and tokenText follow the chars tokenizer', () => {
  assert.strictEqual(lm.config.vocab_size, 96);
  assert.strictEqual(lm.config.tokenizer.kind, 'chars');
  assert.deepStrictEqual(lm.config.stop_token_ids, []);
  const enc = lm.encode('Hi!\n');
  assert.ok(enc instanceof Int32Array);
  // id 0 is "\n", then the printable ASCII characters 32..126 from id 1.
  assert.deepStrictEqual([...enc], [72 - 31, 105 - 31, 33 - 31, 0]);
  assert.strictEqual(lm.decode(enc), 'Hi!\n');
  assert.strictEqual(lm.decode([...enc]), 'Hi!\n');
  assert.strictEqual(lm.decode([]), '');
  assert.strictEqual(lm.tokenText(0), '\n');
  assert.strictEqual(lm.tokenText(1), ' ');
  assert.strictEqual(lm.tokenText(95), '~');
});

test('greedy generation gives the fixture tokens and TVM 0.27 logits at every step', () => {
  const gen = lm.generate(IO.greedy.prompt, GREEDY);
  assert.strictEqual(gen.finishReason, '');
  const prefill = readF32(IO.greedy.prefill_logits);
  assert.strictEqual(prefill.length, IO.greedy.prompt.length * V);
  const got = [];
  for (let step = 0; step < IO.greedy.tokens.length; step++) {
    const r = gen.next();
    assert.strictEqual(r.done, false, `step ${step} ended the generation`);
    assert.strictEqual(r.value.text, lm.tokenText(r.value.id));
    got.push(r.value.id);
    const want = step === 0 ? prefill.subarray(prefill.length - V)
      : readF32(IO.greedy.decode_logits[step - 1]);
    assertClose(gen.logits(), want, `step ${step}`);
  }
  assert.deepStrictEqual(got, IO.greedy.tokens);
  assert.strictEqual(gen.next().done, true);
  assert.strictEqual(gen.finishReason, 'length');
  assert.strictEqual(gen.promptTokens, IO.greedy.prompt.length);
  assert.strictEqual(gen.completionTokens, IO.greedy.tokens.length);
  assert.strictEqual(gen.closed, true);
  assert.strictEqual(gen.next().done, true);
});

test('a string prompt equals its token ids', () => {
  const text = lm.decode(IO.greedy.prompt);
  assert.deepStrictEqual([...lm.encode(text)], IO.greedy.prompt);
  assert.deepStrictEqual(ids(lm.generate(text, GREEDY)), IO.greedy.tokens);
  assert.deepStrictEqual(ids(lm.generate(Int32Array.from(IO.greedy.prompt), GREEDY)),
    IO.greedy.tokens);
});

test('two generations interleaved step by step give the fixture tokens each', () => {
  const [pa, pb] = IO.two_sequences.prompts;
  const n = IO.two_sequences.tokens[0].length;
  const a = lm.generate(pa, { temperature: 0, maxTokens: n });
  const b = lm.generate(pb, { temperature: 0, maxTokens: n });
  const got = [[], []];
  for (let i = 0; i < n; i++) {
    got[0].push(a.next().value.id);
    got[1].push(b.next().value.id);
  }
  assert.deepStrictEqual(got, IO.two_sequences.tokens);
  assert.strictEqual(a.next().done, true);
  assert.strictEqual(b.next().done, true);
});

test('seeded sampling gives the tokens the core recorded in sampled.json', () => {
  const sampled = JSON.parse(fs.readFileSync(path.join(DIR, 'sampled.json'), 'utf8'));
  assert.deepStrictEqual(sampled.prompt, IO.greedy.prompt);
  assert.deepStrictEqual(sampled.options, { temperature: 0.8, top_p: 0.9, seed: 7, max_tokens: 20 });
  const want = sampled.tokens;
  assert.strictEqual(want.length, 20);
  const gen = lm.generate(IO.greedy.prompt, SAMPLED_OPTIONS);
  assert.deepStrictEqual(ids(gen), want);
  assert.deepStrictEqual(ids(lm.generate(IO.greedy.prompt, SAMPLED_OPTIONS)), want);
  assert.notDeepStrictEqual(ids(lm.generate(IO.greedy.prompt, { ...SAMPLED_OPTIONS, seed: 8 })),
    want);
});

test('a stop token ends the generation without being returned', () => {
  const tokens = IO.greedy.tokens;
  const k = tokens.findIndex((t, i) => tokens.indexOf(t) === i && i >= 2);
  const stopId = tokens[k];
  const byId = lm.generate(IO.greedy.prompt, { temperature: 0, maxTokens: 16, stopTokenIds: [stopId] });
  assert.deepStrictEqual(ids(byId), tokens.slice(0, k));
  assert.strictEqual(byId.finishReason, 'stop');
  assert.strictEqual(byId.completionTokens, k);
  const byText = lm.generate(IO.greedy.prompt,
    { temperature: 0, maxTokens: 16, stop: [lm.tokenText(stopId)] });
  assert.deepStrictEqual(ids(byText), tokens.slice(0, k));
  assert.strictEqual(byText.finishReason, 'stop');
});

test('maxTokens bounds the generation with finishReason "length"', () => {
  const gen = lm.generate(IO.greedy.prompt, { temperature: 0, maxTokens: 5 });
  assert.deepStrictEqual(ids(gen), IO.greedy.tokens.slice(0, 5));
  assert.strictEqual(gen.finishReason, 'length');
  assert.strictEqual(gen.completionTokens, 5);
});

test('bad input gives typed errors and the model keeps working', () => {
  assertFFIError(() => ffi.LanguageModel.load(path.join(DIR, 'no-such-dir')), 'FileNotFoundError');
  assertFFIError(() => new ffi.LanguageModel(42), 'TypeError');
  assertFFIError(() => lm.encode('caf\u00e9'), 'ValueError', /\u00e9/);
  assertFFIError(() => lm.decode([5, V]), 'ValueError');
  assertFFIError(() => lm.decode([1.5]), 'TypeError');
  assertFFIError(() => lm.decode('ab'), 'TypeError');
  assertFFIError(() => lm.generate('', GREEDY), 'ValueError');
  assertFFIError(() => lm.generate([], GREEDY), 'ValueError');
  assertFFIError(() => lm.generate('a'.repeat(IO.cache_args.max_total_seq_len + 1), GREEDY),
    'ValueError');
  assertFFIError(() => lm.generate('hello', { maxTokens: -1 }), 'ValueError');
  assertFFIError(() => lm.generate('hello', { max_tokens: 3 }), 'ValueError', /max_tokens/);
  assertFFIError(() => lm.generate('hello', { stop: ['ab'] }), 'ValueError');
  assertFFIError(() => lm.generate('hello', 'greedy'), 'TypeError');
  assertFFIError(() => lm.generate('hello', { temperature: NaN }), 'ValueError');
  assertFFIError(() => lm.generate([1, 'x'], GREEDY), 'TypeError');
  const gen = lm.generate('hello', GREEDY);
  assertFFIError(() => gen.logits(), 'ValueError');
  gen.close();
  assert.strictEqual(gen.next().done, true);
  assert.deepStrictEqual(ids(lm.generate(IO.greedy.prompt, GREEDY)), IO.greedy.tokens);
});

test('one generation more than the cache holds is a RuntimeError; closing frees a slot', () => {
  const live = [];
  for (let i = 0; i < IO.cache_args.max_batch_size; i++) {
    const g = lm.generate('hello', GREEDY);
    g.next();
    live.push(g);
  }
  assertFFIError(() => {
    const extra = lm.generate('hello', GREEDY);
    try {
      extra.next();
    } finally {
      extra.close();
    }
  }, 'RuntimeError', /too many concurrent generations/);
  live.pop().close();
  const g = lm.generate(IO.greedy.prompt, GREEDY);
  assert.deepStrictEqual(ids(g), IO.greedy.tokens);
  for (const x of live) x.close();
});

test('a full KV cache ends the generation with a RuntimeError from next()', () => {
  const prompt = IO.greedy.prompt.concat(IO.greedy.prompt, IO.greedy.prompt, IO.greedy.prompt,
    IO.greedy.prompt).slice(0, IO.cache_args.max_total_seq_len - 8);
  const gen = lm.generate(prompt, { temperature: 0, maxTokens: 64 });
  let produced = 0;
  assertFFIError(() => {
    for (;;) {
      const r = gen.next();
      assert.strictEqual(r.done, false, 'the generation ended before the cache was full');
      produced += 1;
    }
  }, 'RuntimeError', /KV cache is full/);
  assert.ok(produced > 0 && produced < 64);
  assert.strictEqual(gen.next().done, true);
  assert.deepStrictEqual(ids(lm.generate(IO.greedy.prompt, GREEDY)), IO.greedy.tokens);
});

test('the async iterator gives what the sync one gives', async () => {
  assert.deepStrictEqual(await idsAsync(lm.generate(IO.greedy.prompt, GREEDY)), IO.greedy.tokens);
  const sync = ids(lm.generate(IO.greedy.prompt, SAMPLED_OPTIONS));
  const gen = lm.generate(IO.greedy.prompt, SAMPLED_OPTIONS);
  const tokens = [];
  for await (const t of gen) tokens.push(t);
  assert.deepStrictEqual(tokens.map((t) => t.id), sync);
  assert.deepStrictEqual(tokens.map((t) => t.text), sync.map((id) => lm.tokenText(id)));
  assert.strictEqual(gen.finishReason, 'length');
  // nextAsync calls made at once still run in order.
  const g2 = lm.generate(IO.greedy.prompt, GREEDY);
  const steps = await Promise.all(IO.greedy.tokens.map(() => g2.nextAsync()));
  assert.deepStrictEqual(steps.map((r) => r.value.id), IO.greedy.tokens);
  assert.strictEqual((await g2.nextAsync()).done, true);
});

test('the event loop turns between async steps (each step is a callAsync on the libuv pool)',
  async () => {
    // setImmediate callbacks only run when the loop turns; a step resolved on the JS thread as a
    // plain promise would never let one run before the loop ends.
    let turns = 0;
    let running = true;
    const spin = () => {
      turns += 1;
      if (running) setImmediate(spin);
    };
    setImmediate(spin);
    const n = IO.greedy.tokens.length;
    const seen = [];
    for await (const t of lm.generate(IO.greedy.prompt, GREEDY)) seen.push([t.id, turns]);
    running = false;
    assert.deepStrictEqual(seen.map((x) => x[0]), IO.greedy.tokens);
    assert.ok(seen[n - 1][1] > seen[0][1], `the loop did not turn during ${n} steps`);
  });

test('several generations run concurrently from async loops', async () => {
  const runs = [
    [IO.greedy.prompt, GREEDY, IO.greedy.tokens],
    [IO.two_sequences.prompts[0], { temperature: 0, maxTokens: IO.two_sequences.tokens[0].length },
      IO.two_sequences.tokens[0]],
    [IO.greedy.prompt, SAMPLED_OPTIONS, ids(lm.generate(IO.greedy.prompt, SAMPLED_OPTIONS))],
    [IO.two_sequences.prompts[1], GREEDY, IO.two_sequences.tokens[1]],
  ];
  for (let round = 0; round < 3; round++) {
    const got = await Promise.all(runs.map(([p, o]) => idsAsync(lm.generate(p, o))));
    assert.deepStrictEqual(got, runs.map((r) => r[2]));
  }
});

test('a break out of for await closes the generation and frees its sequence', async () => {
  for (let i = 0; i < IO.cache_args.max_batch_size + 2; i++) {
    const gen = lm.generate(IO.greedy.prompt, GREEDY);
    const got = [];
    for await (const t of gen) {
      got.push(t.id);
      if (got.length === 2) break;
    }
    assert.deepStrictEqual(got, IO.greedy.tokens.slice(0, 2));
    assert.strictEqual(gen.closed, true);
  }
  for (let i = 0; i < IO.cache_args.max_batch_size + 2; i++) {
    const gen = lm.generate(IO.greedy.prompt, GREEDY);
    for (const t of gen) {
      assert.strictEqual(t.id, IO.greedy.tokens[0]);
      break;
    }
    assert.strictEqual(gen.closed, true);
  }
});

test('Symbol.dispose and dispose() release a generation', () => {
  const gen = lm.generate('hello', GREEDY);
  gen.next();
  gen[Symbol.dispose]();
  assert.strictEqual(gen.closed, true);
  assert.strictEqual(gen.next().done, true);
  assertFFIError(() => gen.logits(), 'ValueError');
});
