// The sandbox writes its answer to a long prompt (SANDBOX_OFF_LOOP_CHARS or more) in a worker thread: the answer is
// the one it writes in place, for text, tool calls, images by link and by bytes, `max_tokens` and `stop`, streamed or
// not; and a call aborted while the thread writes ends with the abort.
import type { LanguageModelV4CallOptions, LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { describe, expect, test } from 'vitest';
import { generate, SANDBOX_OFF_LOOP_CHARS, sandboxModel } from '../../src/features/engine/providers/sandbox/model.ts';

const PNG = Uint8Array.from([
  0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 0, 0, 2, 128, 0, 0, 1, 224, 8, 6,
  0, 0, 0,
]);

/** `words` repeated, with spaces, to SANDBOX_OFF_LOOP_CHARS characters or more. */
const long = (words: string) =>
  Array.from({ length: Math.ceil(SANDBOX_OFF_LOOP_CHARS / words.length) }, () => words).join(' ');

const cases: Array<[string, LanguageModelV4CallOptions]> = [
  [
    'a long request for a draft, cut by max_tokens',
    {
      prompt: [
        {
          role: 'user',
          content: [{ type: 'text', text: `Write a blog post about ${long('tidal energy in small harbours')}` }],
        },
      ],
      maxOutputTokens: 64,
    },
  ],
  [
    'a long request with a stop sequence and a seed',
    {
      prompt: [
        { role: 'system', content: long('Answer plainly and briefly.') },
        { role: 'user', content: [{ type: 'text', text: 'Write an email about the quarterly review' }] },
      ],
      stopSequences: ['review'],
      seed: 3,
    },
  ],
  [
    'images by link and by bytes beside a long text',
    {
      prompt: [
        {
          role: 'user',
          content: [
            { type: 'text', text: `Describe these. ${long('harbour cranes at dusk')}` },
            { type: 'file', mediaType: 'image/png', data: new URL('https://images.example/a.png') },
            {
              type: 'file',
              mediaType: 'image/png',
              data: { type: 'url', url: new URL('https://images.example/b.png') },
            },
            { type: 'file', mediaType: 'image/png', data: { type: 'data', data: PNG } },
          ],
        },
      ],
    } as LanguageModelV4CallOptions,
  ],
  [
    'a tool it calls, with a long argument',
    {
      prompt: [{ role: 'user', content: [{ type: 'text', text: `Save a note "${long('remember the harbour')}"` }] }],
      tools: [
        {
          type: 'function',
          name: 'save_note',
          description: 'Saves a note',
          inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
        },
      ],
      maxOutputTokens: 40,
    },
  ],
];

async function streamed(options: LanguageModelV4CallOptions): Promise<LanguageModelV4StreamPart[]> {
  const { stream } = await sandboxModel('sandbox-writer').doStream(options);
  const parts: LanguageModelV4StreamPart[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

describe('the sandbox answers a long prompt in a worker thread', () => {
  test.each(cases)('%s: the answer written in place', async (_name, options) => {
    const inPlace = generate('sandbox-writer', options);
    const answer = await sandboxModel('sandbox-writer').doGenerate(options);
    expect(answer.finishReason.unified).toBe(inPlace.finish);
    expect(answer.usage).toEqual(inPlace.usage);
    if (inPlace.calls.length > 0)
      expect(answer.content).toEqual(
        inPlace.calls.map((call) => ({
          type: 'tool-call',
          toolCallId: call.toolCallId,
          toolName: call.toolName,
          input: call.input,
        })),
      );
    else expect(answer.content).toEqual([{ type: 'text', text: inPlace.text }]);
    const parts = await streamed(options);
    const text = parts.flatMap((part) => (part.type === 'text-delta' ? [part.delta] : [])).join('');
    expect(text).toBe(inPlace.text);
    expect(parts.at(-1)).toMatchObject({ type: 'finish', usage: inPlace.usage });
  });

  test('the images are read as in place: the links named, the bytes measured', async () => {
    const answer = await sandboxModel('sandbox-echo').doGenerate(cases[2]![1]);
    const text = answer.content[0]?.type === 'text' ? answer.content[0].text : '';
    expect(text).toContain('[image: https://images.example/a.png, not fetched]');
    expect(text).toContain('[image: https://images.example/b.png, not fetched]');
    expect(text).toContain('[image: PNG, 640×480]');
  });

  test('a call aborted while the thread writes ends with the abort', async () => {
    const controller = new AbortController();
    const call = sandboxModel('sandbox-writer').doGenerate({ ...cases[0]![1], abortSignal: controller.signal });
    controller.abort(new Error('the client went away'));
    await expect(call).rejects.toThrow('the client went away');
  });
});
