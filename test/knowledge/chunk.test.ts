// Chunking (src/features/knowledge/chunk.ts): every chunk at most max_chunk_tokens tokens (as the engine counts them),
// ending at a sentence or paragraph boundary, repeating up to overlap_tokens of the previous chunk from a word or
// sentence start, Markdown sections kept whole (with their heading) where they fit, nothing lost, the same chunks
// every time.
import { describe, expect, test } from 'vitest';
import { countTokens } from '../../src/features/engine/tokens.ts';
import { boundarySplits, type Chunk, chunkText } from '../../src/features/knowledge/chunk.ts';

const WORDS = (
  'coffee beans roast grind water filter brew cup milk sugar espresso latte origin farm harvest temperature ' +
  'delivery invoice wholesale customer order minimum kilogram Tuesday Friday harbour district flavour chocolate ' +
  'acidity body aroma ratio extraction kettle scale barista café crème naïve'
).split(' ');

/** A deterministic pseudo-random generator (a linear congruential one), so the corpus is the same every run. */
function generator(seed: number) {
  let state = seed;
  const next = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  const sentence = () => {
    const words = Array.from({ length: int(5, 18) }, () => WORDS[int(0, WORDS.length - 1)]!);
    const end = ['.', '.', '.', '?', '!'][int(0, 4)]!;
    return `${words.join(' ').replace(/^./, (c) => c.toUpperCase())}${end}`;
  };
  const paragraph = (min = 2, max = 7) => Array.from({ length: int(min, max) }, sentence).join(' ');
  return { int, sentence, paragraph };
}

/** Prose: paragraphs of sentences, some long enough to be cut inside. */
function prose(seed: number, paragraphs: number): string {
  const g = generator(seed);
  return Array.from({ length: paragraphs }, () => g.paragraph(1, 12)).join('\n\n');
}

/** The longest end of `previous` that `next` starts with. */
function overlapOf(previous: string, next: string): string {
  for (let length = Math.min(previous.length, next.length); length > 0; length--) {
    if (previous.endsWith(next.slice(0, length))) return next.slice(0, length);
  }
  return '';
}

function expectWellFormed(chunks: Chunk[], max: number) {
  expect(chunks.length).toBeGreaterThan(0);
  chunks.forEach((chunk, i) => {
    expect(chunk.index).toBe(i);
    expect(chunk.tokens).toBe(countTokens(chunk.text));
    expect(chunk.tokens).toBeLessThanOrEqual(max);
    expect(chunk.text.trim()).toBe(chunk.text);
    expect(chunk.text).not.toBe('');
    expect(chunk.text.isWellFormed()).toBe(true);
  });
}

describe('chunkText', () => {
  test.each([
    [100, 0],
    [100, 50],
    [256, 32],
    [512, 64],
    [2000, 1000],
  ])(
    'max %i tokens, overlap %i: every chunk within the limit, ending at a sentence, nothing lost',
    async (max, overlap) => {
      const text = prose(max + overlap, 120);
      const chunks = await chunkText(text, { maxChunkTokens: max, overlapTokens: overlap });
      expectWellFormed(chunks, max);
      expect(chunks.length).toBeGreaterThan(countTokens(text) / max);
      // The sentences are shorter than any limit: every chunk ends with one, and every sentence is whole in a chunk.
      for (const chunk of chunks) expect(chunk.text).toMatch(/[.?!]$/);
      for (const sentence of text.split(/(?<=[.?!])\s+/))
        expect(chunks.some((chunk) => chunk.text.includes(sentence))).toBe(true);
    },
  );

  test('without overlap, the chunks are the text cut in pieces: joined, they are the text (whitespace aside)', async () => {
    const text = prose(1, 80);
    const chunks = await chunkText(text, { maxChunkTokens: 120, overlapTokens: 0 });
    expectWellFormed(chunks, 120);
    expect(
      chunks
        .map((chunk) => chunk.text)
        .join('')
        .replace(/\s+/g, ''),
    ).toBe(text.replace(/\s+/g, ''));
    for (let i = 1; i < chunks.length; i++) expect(overlapOf(chunks[i - 1]!.text, chunks[i]!.text).trim()).toBe('');
  });

  test.each([
    [100, 20],
    [100, 50],
    [512, 64],
    [400, 200],
  ])(
    'max %i, overlap %i: each chunk repeats from half to all of the overlap (or all of a shorter chunk), from a word start',
    async (max, overlap) => {
      const text = prose(max * 3 + overlap, 150);
      const chunks = await chunkText(text, { maxChunkTokens: max, overlapTokens: overlap });
      expectWellFormed(chunks, max);
      expect(chunks.length).toBeGreaterThan(5);
      for (let i = 1; i < chunks.length; i++) {
        const previous = chunks[i - 1]!.text;
        const repeated = overlapOf(previous, chunks[i]!.text);
        expect(countTokens(repeated)).toBeLessThanOrEqual(overlap);
        // At least half of the overlap, unless the previous chunk is shorter than that and repeated whole.
        if (repeated !== previous) expect(countTokens(repeated)).toBeGreaterThanOrEqual(overlap / 2);
        // From a word start: the whole previous chunk, or what follows a space in it.
        expect(repeated === previous || /\s$/.test(previous.slice(0, previous.length - repeated.length))).toBe(true);
        // And the text goes on: the next chunk adds something.
        expect(chunks[i]!.text.length).toBeGreaterThan(repeated.length);
      }
    },
  );

  test('the same text and options give the same chunks', async () => {
    const text = prose(42, 60);
    const first = await chunkText(text, { maxChunkTokens: 150, overlapTokens: 40 });
    const second = await chunkText(text, { maxChunkTokens: 150, overlapTokens: 40 });
    expect(second).toEqual(first);
    expect(await chunkText(text, { maxChunkTokens: 150, overlapTokens: 40 })).toEqual(first);
  });

  test('Markdown sections that fit are kept whole, each with its heading; a chunk starting at a heading repeats nothing', async () => {
    const g = generator(3);
    const sections = Array.from(
      { length: 12 },
      (_, i) => `## Section ${i + 1}\n\n${g.paragraph(2, 4)}\n\n${g.paragraph(1, 3)}`,
    );
    const text = `# Handbook\n\n${g.paragraph(1, 2)}\n\n${sections.join('\n\n')}`;
    const chunks = await chunkText(text, { maxChunkTokens: 200, overlapTokens: 30 });
    expectWellFormed(chunks, 200);
    for (const section of sections) {
      expect(countTokens(section)).toBeLessThan(170);
      expect(chunks.filter((chunk) => chunk.text.includes(section))).toHaveLength(1);
    }
    for (const chunk of chunks) expect(chunk.text).toMatch(/^#{1,2} /);
  });

  test('a section too large for one chunk: its heading is in the chunk with its first sentences, never alone', async () => {
    const g = generator(5);
    const long = () => Array.from({ length: 6 }, () => g.paragraph(6, 10)).join('\n\n');
    const text = `# Guide\n\n## Grinding\n\n${long()}\n\n## Water\n\n${long()}\n\n### Temperature\n\n${long()}`;
    const chunks = await chunkText(text, { maxChunkTokens: 100, overlapTokens: 20 });
    expectWellFormed(chunks, 100);
    for (const heading of ['## Grinding', '## Water', '### Temperature']) {
      const chunk = chunks.find((c) => c.text.includes(heading))!;
      // At the start of its chunk, or after the headings above it ("# Guide" has no text of its own).
      expect(chunk.text.slice(0, chunk.text.indexOf(heading))).toMatch(/^(#{1,6} [^\n]*\n+)*$/);
      expect(chunk.text.length).toBeGreaterThan(heading.length + 20);
    }
    for (const chunk of chunks) expect(chunk.text).not.toMatch(/^(#{1,6} [^\n]*\s*)+$/);
  });

  test('a paragraph longer than a chunk is cut between its sentences, a sentence longer than a chunk between words', async () => {
    const g = generator(9);
    const longSentence = `${Array.from({ length: 400 }, (_, i) => WORDS[i % WORDS.length]).join(' ')}.`;
    const text = `${g.paragraph(20, 20)}\n\n${longSentence}\n\n${g.paragraph(2, 2)}`;
    const chunks = await chunkText(text, { maxChunkTokens: 100, overlapTokens: 0 });
    expectWellFormed(chunks, 100);
    const inside = chunks.filter((chunk) => longSentence.includes(chunk.text));
    expect(inside.length).toBeGreaterThan(2);
    for (const chunk of inside) expect(WORDS).toContain(chunk.text.split(' ').at(-1)!.replace(/\.$/, ''));
  });

  test('text without spaces (a long token run, CJK with its own full stops, emoji) stays within the limit and whole', async () => {
    const noSpaces = 'x9Q'.repeat(3000);
    const cjk = '咖啡豆在烘焙后需要静置几天。'.repeat(200);
    const emoji = '☕️🫘🥐'.repeat(400);
    for (const text of [noSpaces, cjk, emoji]) {
      const chunks = await chunkText(text, { maxChunkTokens: 100, overlapTokens: 0 });
      expectWellFormed(chunks, 100);
      expect(chunks.map((chunk) => chunk.text).join('')).toBe(text);
    }
    for (const chunk of await chunkText(cjk, { maxChunkTokens: 100, overlapTokens: 0 }))
      expect(chunk.text.endsWith('。')).toBe(true);
  });

  test('short text is one chunk; empty or blank text is none', async () => {
    expect(await chunkText('  One short paragraph.  \n', { maxChunkTokens: 512, overlapTokens: 64 })).toEqual([
      { index: 0, text: 'One short paragraph.', tokens: countTokens('One short paragraph.') },
    ]);
    expect(await chunkText('', { maxChunkTokens: 512, overlapTokens: 64 })).toEqual([]);
    expect(await chunkText(' \n\n\t ', { maxChunkTokens: 512, overlapTokens: 64 })).toEqual([]);
  });

  test('options outside their ranges are a RangeError', async () => {
    for (const options of [
      { maxChunkTokens: 0, overlapTokens: 0 },
      { maxChunkTokens: 100.5, overlapTokens: 0 },
      { maxChunkTokens: 100, overlapTokens: -1 },
      { maxChunkTokens: 100, overlapTokens: 51 },
    ]) {
      await expect(chunkText('Text.', options)).rejects.toBeInstanceOf(RangeError);
    }
  });
});

// The splitter is RecursiveCharacterTextSplitter's algorithm written in chunk.ts (the package brings @langchain/core
// with it). Compared here with the package itself (a dev dependency), configured as chunk.ts configured it before.
describe('the boundary splitter', () => {
  const SENTENCE_END = /(?<=[.!?…]["'”’»)\]]*)(?=\s)|(?<=[。！？])/u;
  const CLAUSE_END = /(?<=[;:,])(?=\s)/u;
  const SEPARATORS = [
    '\n# ',
    '\n## ',
    '\n### ',
    '\n#### ',
    '\n##### ',
    '\n###### ',
    '\n\n',
    '\n',
    '. ',
    '? ',
    '! ',
    '。',
    '！',
    '？',
    '; ',
    ', ',
    ' ',
    '',
  ];

  async function librarySplits(text: string, chunkSize: number): Promise<string[]> {
    const { RecursiveCharacterTextSplitter } = await import('@langchain/textsplitters');
    class Reference extends RecursiveCharacterTextSplitter {
      protected override splitOnSeparator(piece: string, separator: string): string[] {
        if (['. ', '? ', '! ', '。', '！', '？'].includes(separator))
          return piece.split(SENTENCE_END).filter((part) => part !== '');
        if (['; ', ', '].includes(separator)) return piece.split(CLAUSE_END).filter((part) => part !== '');
        if (separator === '') return Array.from(piece);
        return super.splitOnSeparator(piece, separator);
      }
    }
    return new Reference({
      chunkSize,
      chunkOverlap: 0,
      keepSeparator: true,
      separators: SEPARATORS,
      lengthFunction: (piece: string) => countTokens(piece),
    }).splitText(text);
  }

  test('cuts every text as @langchain/textsplitters cuts it', async () => {
    const g = generator(7);
    const texts = [
      prose(3, 40),
      `# Roasting\n\n${prose(4, 6)}\n\n## Light roasts\n\n${prose(5, 3)}\n\n### Notes\n${g.paragraph()}\n- one\n- two`,
      `${'a'.repeat(3000)} ${g.paragraph()}`,
      `${g.paragraph()}; ${g.paragraph()}, ${g.paragraph()}: ${g.sentence()}`,
      '咖啡豆的烘焙程度决定了风味。浅烘焙保留更多酸度！深烘焙带来苦味？'.repeat(40),
      `${'🙂'.repeat(500)}\n\n${'word '.repeat(900)}`,
      '   \n\n  ',
    ];
    for (const text of texts)
      for (const size of [1, 5, 20, 64, 100, 400])
        expect(boundarySplits(text, size)).toEqual(await librarySplits(text, size));
  });
});
