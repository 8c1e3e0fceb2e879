// `npm run make-tiny-gguf -- <out.gguf>`: writes a tiny llama-architecture GGUF with random weights (about 500 KB), so
// the `local` provider (src/features/engine/providers/local.ts) can be tested offline without downloading a model. Its output is
// noise made of printable characters and a few common words, but it goes through llama.cpp for real: tokenizer, chat
// template fallback, sampling, stop triggers, streaming.
//
// Written from the GGUF v3 description (github.com/ggml-org/ggml, docs/gguf.md): little-endian; header "GGUF", u32
// version, u64 tensor count, u64 key/value count; the key/values; the tensor infos (name, dims innermost first, type,
// offset into the data section); the data section, aligned to `general.alignment` (default 32) like each tensor.
// Every value comes from a seeded PRNG, so the same seed gives the same bytes.
//
// Non-text tokens (<unk>, <s>, </s>, the <0xNN> bytes) must never win, or the output would end at once (EOS) or be
// broken UTF-8 (bytes). Zeroing their `output.weight` rows (logit 0) is enough for greedy decoding but not for
// sampling at temperature 1, so the model also carries a constant channel: dimension 0 of every token embedding is
// CONSTANT and no layer writes to it (row 0 of attn_output and ffn_down is zero), so after the final RMS norm it is
// always large and positive; the non-text rows of `output.weight` are zero except a negative weight on that channel,
// which puts their logits near -20 whatever the input.
import { writeFileSync } from 'node:fs';

const N_EMBD = 64;
const N_FF = 128;
const N_LAYER = 2;
const N_HEAD = 4;
const ALIGNMENT = 32;
const CONSTANT = 4;
const WORDS = [
  'the',
  'and',
  'of',
  'to',
  'in',
  'is',
  'for',
  'on',
  'with',
  'that',
  'this',
  'content',
  'model',
  'local',
  'text',
];

/** Token types of tokenizer.ggml.token_type (llama.cpp's llama_token_type). */
const NORMAL = 1;
const UNKNOWN = 2;
const CONTROL = 3;
const BYTE = 6;

/** GGUF metadata value types. */
const U32 = 4;
const I32 = 5;
const F32 = 6;
const STRING = 8;
const ARRAY = 9;

type Value =
  | { type: typeof U32 | typeof I32 | typeof F32; value: number }
  | { type: typeof STRING; value: string }
  | { type: typeof ARRAY; of: typeof I32 | typeof F32 | typeof STRING; values: (number | string)[] };

export interface TinyGguf {
  path: string;
  bytes: number;
  vocabulary: string[];
}

/** SplitMix32-style PRNG: uniform floats in [-1, 1), the same sequence for a seed. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    z = (z ^ (z >>> 16)) >>> 0;
    return (z / 2 ** 32) * 2 - 1;
  };
}

/** The vocabulary, SentencePiece style (▁ stands for a space), with llama.cpp's token types. */
function vocabulary(): { tokens: string[]; types: number[] } {
  const tokens = ['<unk>', '<s>', '</s>'];
  const types = [UNKNOWN, CONTROL, CONTROL];
  for (let byte = 0; byte < 256; byte++) {
    tokens.push(`<0x${byte.toString(16).toUpperCase().padStart(2, '0')}>`);
    types.push(BYTE);
  }
  for (let code = 0x20; code < 0x7f; code++) {
    tokens.push(code === 0x20 ? '▁' : String.fromCharCode(code));
    types.push(NORMAL);
  }
  for (const word of WORDS) {
    tokens.push(`▁${word}`);
    types.push(NORMAL);
  }
  return { tokens, types };
}

class Writer {
  private chunks: Buffer[] = [];
  length = 0;
  private push(buffer: Buffer): void {
    this.chunks.push(buffer);
    this.length += buffer.length;
  }
  u32(value: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(value);
    this.push(b);
  }
  i32(value: number): void {
    const b = Buffer.alloc(4);
    b.writeInt32LE(value);
    this.push(b);
  }
  u64(value: number): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(value));
    this.push(b);
  }
  f32(value: number): void {
    const b = Buffer.alloc(4);
    b.writeFloatLE(value);
    this.push(b);
  }
  string(value: string): void {
    const bytes = Buffer.from(value, 'utf8');
    this.u64(bytes.length);
    this.push(bytes);
  }
  raw(buffer: Buffer): void {
    this.push(buffer);
  }
  pad(): void {
    const rest = this.length % ALIGNMENT;
    if (rest !== 0) this.push(Buffer.alloc(ALIGNMENT - rest));
  }
  scalar(type: number, value: number | string): void {
    if (type === U32) this.u32(value as number);
    else if (type === I32) this.i32(value as number);
    else if (type === F32) this.f32(value as number);
    else this.string(value as string);
  }
  value(v: Value): void {
    this.u32(v.type);
    if (v.type === ARRAY) {
      this.u32(v.of);
      this.u64(v.values.length);
      for (const item of v.values) this.scalar(v.of, item);
    } else this.scalar(v.type, v.value);
  }
  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

/** Writes the model to `path` and says what it wrote. */
export function makeTinyGguf(path: string, seed = 42): TinyGguf {
  const random = prng(seed);
  const { tokens, types } = vocabulary();
  const nVocab = tokens.length;
  const u32 = (value: number): Value => ({ type: U32, value });
  const metadata: [string, Value][] = [
    ['general.architecture', { type: STRING, value: 'llama' }],
    ['general.name', { type: STRING, value: 'tiny-random-llama' }],
    ['general.file_type', u32(0)], // all F32
    ['llama.context_length', u32(4096)],
    ['llama.embedding_length', u32(N_EMBD)],
    ['llama.block_count', u32(N_LAYER)],
    ['llama.feed_forward_length', u32(N_FF)],
    ['llama.attention.head_count', u32(N_HEAD)],
    ['llama.attention.head_count_kv', u32(N_HEAD)],
    ['llama.rope.dimension_count', u32(N_EMBD / N_HEAD)],
    ['llama.attention.layer_norm_rms_epsilon', { type: F32, value: 1e-5 }],
    ['tokenizer.ggml.model', { type: STRING, value: 'llama' }],
    ['tokenizer.ggml.tokens', { type: ARRAY, of: STRING, values: tokens }],
    // SentencePiece merges the pair whose result scores highest: longer pieces score higher.
    [
      'tokenizer.ggml.scores',
      { type: ARRAY, of: F32, values: tokens.map((t, i) => (types[i] === NORMAL ? [...t].length : 0)) },
    ],
    ['tokenizer.ggml.token_type', { type: ARRAY, of: I32, values: types }],
    ['tokenizer.ggml.bos_token_id', u32(1)],
    ['tokenizer.ggml.eos_token_id', u32(2)],
    ['tokenizer.ggml.unknown_token_id', u32(0)],
  ];

  const uniform = (count: number, scale: number): Float32Array =>
    Float32Array.from({ length: count }, () => random() * scale);
  const ones = (count: number): Float32Array => new Float32Array(count).fill(1);
  /** Row r of a [ne0, ne1] tensor is data[r * ne0, (r + 1) * ne0). */
  const zeroRow = (data: Float32Array, ne0: number, row: number): Float32Array => (
    data.fill(0, row * ne0, (row + 1) * ne0), data
  );

  const embeddings = uniform(N_EMBD * nVocab, 1);
  for (let t = 0; t < nVocab; t++) embeddings[t * N_EMBD] = CONSTANT;
  const output = uniform(N_EMBD * nVocab, 0.5);
  for (let t = 0; t < nVocab; t++) {
    output[t * N_EMBD] = 0;
    if (types[t] !== NORMAL) zeroRow(output, N_EMBD, t)[t * N_EMBD] = -CONSTANT;
  }
  const tensors: [string, number[], Float32Array][] = [
    ['token_embd.weight', [N_EMBD, nVocab], embeddings],
    ['output_norm.weight', [N_EMBD], ones(N_EMBD)],
    ['output.weight', [N_EMBD, nVocab], output],
  ];
  for (let layer = 0; layer < N_LAYER; layer++) {
    const blk = `blk.${layer}`;
    tensors.push(
      [`${blk}.attn_norm.weight`, [N_EMBD], ones(N_EMBD)],
      [`${blk}.attn_q.weight`, [N_EMBD, N_EMBD], uniform(N_EMBD * N_EMBD, 0.3)],
      [`${blk}.attn_k.weight`, [N_EMBD, N_EMBD], uniform(N_EMBD * N_EMBD, 0.3)],
      [`${blk}.attn_v.weight`, [N_EMBD, N_EMBD], uniform(N_EMBD * N_EMBD, 0.3)],
      [`${blk}.attn_output.weight`, [N_EMBD, N_EMBD], zeroRow(uniform(N_EMBD * N_EMBD, 0.2), N_EMBD, 0)],
      [`${blk}.ffn_norm.weight`, [N_EMBD], ones(N_EMBD)],
      [`${blk}.ffn_gate.weight`, [N_EMBD, N_FF], uniform(N_EMBD * N_FF, 0.3)],
      [`${blk}.ffn_up.weight`, [N_EMBD, N_FF], uniform(N_EMBD * N_FF, 0.3)],
      [`${blk}.ffn_down.weight`, [N_FF, N_EMBD], zeroRow(uniform(N_FF * N_EMBD, 0.2), N_FF, 0)],
    );
  }

  const file = new Writer();
  file.raw(Buffer.from('GGUF', 'ascii'));
  file.u32(3);
  file.u64(tensors.length);
  file.u64(metadata.length);
  for (const [key, value] of metadata) {
    file.string(key);
    file.value(value);
  }
  let offset = 0;
  for (const [name, dims, data] of tensors) {
    file.string(name);
    file.u32(dims.length);
    for (const dim of dims) file.u64(dim);
    file.u32(0); // GGML_TYPE_F32
    file.u64(offset);
    offset += Math.ceil(data.byteLength / ALIGNMENT) * ALIGNMENT;
  }
  for (const [, , data] of tensors) {
    file.pad();
    file.raw(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  }
  const bytes = file.bytes();
  writeFileSync(path, bytes);
  return { path, bytes: bytes.length, vocabulary: tokens };
}

if (import.meta.main) {
  const [path, seed] = process.argv.slice(2);
  if (!path) {
    console.error('usage: node scripts/make-tiny-gguf.ts <out.gguf> [seed]');
    process.exit(2);
  }
  const made = makeTinyGguf(path, seed === undefined ? undefined : Number(seed));
  console.log(`${made.path}: ${made.bytes} bytes, ${made.vocabulary.length} tokens`);
}
