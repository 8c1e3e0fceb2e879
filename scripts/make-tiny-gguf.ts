// `npm run make-tiny-gguf -- PATH`: writes a tiny llama-architecture GGUF model with random weights (about 0.4 MB),
// deterministically, for the tests of the `local` provider: it exercises the real local-model path (load, context,
// chat template, streaming, max tokens, stop, abort) with no download. Its text is gibberish by design.
//
// The format (GGUF v3, https://github.com/ggml-org/ggml/blob/master/docs/gguf.md): the magic and version, counts of
// tensors and metadata pairs, the metadata (typed key-value pairs), the tensor infos (name, dimensions innermost
// first, type, offset), then the tensor data, every tensor aligned to 32 bytes. All tensors are F32.
import { writeFileSync } from 'node:fs';

const N_EMBD = 64;
const N_LAYER = 2;
const N_HEAD = 4;
const N_FF = 128;
const CONTEXT = 4096;
const WORDS = ['the', 'and', 'our', 'sale', 'spring', 'coffee', 'new', 'for', 'with', 'you', 'is', 'to', 'of', 'in', 'on'];

// GGUF value types.
const UINT32 = 4;
const INT32 = 5;
const FLOAT32 = 6;
const STRING = 8;
const ARRAY = 9;

type Value = { type: typeof UINT32 | typeof INT32 | typeof FLOAT32; value: number } | { type: typeof STRING; value: string } | { type: typeof ARRAY; of: typeof INT32 | typeof FLOAT32 | typeof STRING; values: Array<number | string> };

class Writer {
  chunks: Buffer[] = [];
  length = 0;
  push(buffer: Buffer): void {
    this.chunks.push(buffer);
    this.length += buffer.length;
  }
  u32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n);
    this.push(b);
  }
  i32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeInt32LE(n);
    this.push(b);
  }
  u64(n: number): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(n));
    this.push(b);
  }
  f32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeFloatLE(n);
    this.push(b);
  }
  string(s: string): void {
    const bytes = Buffer.from(s, 'utf8');
    this.u64(bytes.length);
    this.push(bytes);
  }
  align(to: number): void {
    const pad = (to - (this.length % to)) % to;
    if (pad) this.push(Buffer.alloc(pad));
  }
  scalar(type: number, value: number | string): void {
    if (type === UINT32) this.u32(value as number);
    else if (type === INT32) this.i32(value as number);
    else if (type === FLOAT32) this.f32(value as number);
    else this.string(value as string);
  }
}

/** A small deterministic PRNG (mulberry32), so the same seed writes the same file. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The vocabulary of a SentencePiece ("llama") tokenizer: control tokens, the 256 byte tokens, characters, words. */
function vocabulary(): { tokens: string[]; types: number[] } {
  const tokens = ['<unk>', '<s>', '</s>'];
  const types = [2, 3, 3];
  for (let byte = 0; byte < 256; byte++) {
    tokens.push(`<0x${byte.toString(16).toUpperCase().padStart(2, '0')}>`);
    types.push(6);
  }
  for (let code = 33; code < 127; code++) {
    tokens.push(String.fromCharCode(code));
    types.push(1);
  }
  tokens.push('▁');
  types.push(1);
  for (const word of WORDS) {
    tokens.push(`▁${word}`);
    types.push(1);
  }
  return { tokens, types };
}

export function tinyGguf(seed = 42): Buffer {
  const { tokens, types } = vocabulary();
  const nVocab = tokens.length;
  const next = random(seed);
  const metadata: Array<[string, Value]> = [
    ['general.architecture', { type: STRING, value: 'llama' }],
    ['general.name', { type: STRING, value: 'content-service tiny test model' }],
    ['general.alignment', { type: UINT32, value: 32 }],
    ['llama.context_length', { type: UINT32, value: CONTEXT }],
    ['llama.embedding_length', { type: UINT32, value: N_EMBD }],
    ['llama.block_count', { type: UINT32, value: N_LAYER }],
    ['llama.feed_forward_length', { type: UINT32, value: N_FF }],
    ['llama.attention.head_count', { type: UINT32, value: N_HEAD }],
    ['llama.attention.head_count_kv', { type: UINT32, value: N_HEAD }],
    ['llama.rope.dimension_count', { type: UINT32, value: N_EMBD / N_HEAD }],
    ['llama.attention.layer_norm_rms_epsilon', { type: FLOAT32, value: 1e-5 }],
    ['tokenizer.ggml.model', { type: STRING, value: 'llama' }],
    ['tokenizer.ggml.tokens', { type: ARRAY, of: STRING, values: tokens }],
    ['tokenizer.ggml.scores', { type: ARRAY, of: FLOAT32, values: tokens.map((token, i) => (types[i] === 1 ? -i / nVocab + token.length : 0)) }],
    ['tokenizer.ggml.token_type', { type: ARRAY, of: INT32, values: types }],
    ['tokenizer.ggml.bos_token_id', { type: UINT32, value: 1 }],
    ['tokenizer.ggml.eos_token_id', { type: UINT32, value: 2 }],
    ['tokenizer.ggml.unknown_token_id', { type: UINT32, value: 0 }],
  ];

  // Tensors: name, dimensions (innermost first), values.
  const tensors: Array<[string, number[], Float32Array]> = [];
  const tensor = (name: string, dims: number[], fill: (row: number) => number = () => (next() - 0.5) * 0.4) => {
    const size = dims.reduce((a, b) => a * b, 1);
    const values = new Float32Array(size);
    for (let i = 0; i < size; i++) values[i] = fill(Math.floor(i / dims[0]!));
    tensors.push([name, dims, values]);
  };
  const ones = () => 1;
  tensor('token_embd.weight', [N_EMBD, nVocab]);
  tensor('output_norm.weight', [N_EMBD], ones);
  // Rows of tokens that are not normal text are zero, so the model writes printable text and does not stop at once.
  tensor('output.weight', [N_EMBD, nVocab], (row) => (types[row] === 1 ? (next() - 0.5) * 2 : 0));
  for (let layer = 0; layer < N_LAYER; layer++) {
    tensor(`blk.${layer}.attn_norm.weight`, [N_EMBD], ones);
    for (const part of ['q', 'k', 'v', 'output']) tensor(`blk.${layer}.attn_${part}.weight`, [N_EMBD, N_EMBD]);
    tensor(`blk.${layer}.ffn_norm.weight`, [N_EMBD], ones);
    tensor(`blk.${layer}.ffn_gate.weight`, [N_EMBD, N_FF]);
    tensor(`blk.${layer}.ffn_up.weight`, [N_EMBD, N_FF]);
    tensor(`blk.${layer}.ffn_down.weight`, [N_FF, N_EMBD]);
  }

  const out = new Writer();
  out.push(Buffer.from('GGUF', 'ascii'));
  out.u32(3);
  out.u64(tensors.length);
  out.u64(metadata.length);
  for (const [key, value] of metadata) {
    out.string(key);
    out.u32(value.type);
    if (value.type === ARRAY) {
      out.u32(value.of);
      out.u64(value.values.length);
      for (const item of value.values) out.scalar(value.of, item);
    } else out.scalar(value.type, value.value);
  }
  let offset = 0;
  for (const [name, dims, values] of tensors) {
    out.string(name);
    out.u32(dims.length);
    for (const dim of dims) out.u64(dim);
    out.u32(0); // F32
    out.u64(offset);
    offset += Math.ceil((values.length * 4) / 32) * 32;
  }
  out.align(32);
  for (const [, , values] of tensors) {
    out.push(Buffer.from(values.buffer, values.byteOffset, values.byteLength));
    out.align(32);
  }
  return Buffer.concat(out.chunks);
}

if (import.meta.main) {
  const path = process.argv[2];
  if (!path) {
    process.stderr.write('usage: npm run make-tiny-gguf -- PATH\n');
    process.exit(2);
  }
  writeFileSync(path, tinyGguf());
  process.stdout.write(`Wrote ${path}\n`);
}
