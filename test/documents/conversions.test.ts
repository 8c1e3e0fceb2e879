// A long document (OFF_LOOP_SIZE or more) is converted in a worker thread: what it becomes is what the conversion in
// place makes of it (Markdown to Yjs and back, an API change applied to a live document as a diff, HTML), the event
// loop turns while it converts, and an editor's change that arrives meanwhile is merged with the API's.
import { describe, expect, test } from 'vitest';
import * as Y from 'yjs';
import { htmlOf, OFF_LOOP_SIZE, replaceLive, seeded, snapshot } from '../../src/features/documents/conversions.ts';
import { renderHtml, renderMarkdown, replaceContent, yDocFromMarkdown } from '../../src/features/documents/markdown.ts';
import { appendParagraph } from '../support/realtime.ts';

/** A document of headed sections, lists, a table and links, of at least `size` characters. */
function longMarkdown(size = OFF_LOOP_SIZE): string {
  const sections: string[] = [];
  for (let n = 1; sections.join('\n\n').length < size; n++)
    sections.push(
      `## Section ${n}\n\nThe harbour's **cranes** unload at dusk, see [the log](https://example.com/${n}).\n\n- crane ${n}\n- berth ${n}\n\n| day | tons |\n|---|---|\n| ${n} | ${n * 7} |`,
    );
  return `# Harbour report\n\n${sections.join('\n\n')}`;
}

/** How many turns the event loop makes while `work` runs: none when it runs on the loop. */
async function loopTurnsDuring<T>(work: () => Promise<T>): Promise<{ result: T; turns: number }> {
  let turns = 0;
  let running = true;
  const turn = () => {
    if (!running) return;
    turns++;
    setImmediate(turn);
  };
  setImmediate(turn);
  try {
    return { result: await work(), turns };
  } finally {
    running = false;
  }
}

describe('conversions of a long document', () => {
  const text = longMarkdown();

  test('a new document from Markdown: the state and Markdown of the conversion in place, the loop turning', async () => {
    const inPlace = yDocFromMarkdown(text);
    const { result, turns } = await loopTurnsDuring(() => seeded(text));
    expect(turns).toBeGreaterThan(0);
    expect(result.markdown).toBe(renderMarkdown(inPlace));
    const doc = new Y.Doc();
    Y.applyUpdate(doc, result.state);
    expect(renderMarkdown(doc)).toBe(result.markdown);
  });

  test('a short one is converted in place: the loop does not turn', async () => {
    const { result, turns } = await loopTurnsDuring(() => seeded('# Short\n\nA paragraph.'));
    expect(turns).toBe(0);
    expect(result.markdown).toBe('# Short\n\nA paragraph.');
  });

  test('the Markdown of a live document, with the state it was rendered from', async () => {
    const live = yDocFromMarkdown(text);
    const { result, turns } = await loopTurnsDuring(() => snapshot(live));
    expect(turns).toBeGreaterThan(0);
    expect(result.markdown).toBe(renderMarkdown(live));
    expect(result.state).toEqual(Y.encodeStateAsUpdate(live));
  });

  test("an API change is the conversion in place's, and reaches an editor's copy as an update", async () => {
    const changed = text.replace('## Section 2\n', '## Section two\n').concat('\n\nA closing paragraph.');
    const live = yDocFromMarkdown(text);
    const twin = new Y.Doc();
    Y.applyUpdate(twin, Y.encodeStateAsUpdate(live));
    const editor = new Y.Doc();
    Y.applyUpdate(editor, Y.encodeStateAsUpdate(live));
    const before = Y.encodeStateVector(editor);

    const { turns } = await loopTurnsDuring(() => replaceLive(live, changed, 'api'));
    replaceContent(twin, changed, 'api');
    expect(turns).toBeGreaterThan(0);
    expect(renderMarkdown(live)).toBe(renderMarkdown(twin));
    Y.applyUpdate(editor, Y.encodeStateAsUpdate(live, before));
    expect(renderMarkdown(editor)).toBe(renderMarkdown(live));
  });

  test('the change is applied in a transaction of its origin', async () => {
    const live = yDocFromMarkdown(text);
    const origins: unknown[] = [];
    live.on('afterTransaction', (transaction) => origins.push(transaction.origin));
    await replaceLive(live, `${text}\n\nOne more paragraph.`, 'api-origin');
    expect(origins).toEqual(['api-origin']);
  });

  test("an editor's paragraph typed while the change is worked out is kept beside it", async () => {
    const live = yDocFromMarkdown(text);
    const changed = text.replace('# Harbour report', '# Harbour report, revised');
    const replacing = replaceLive(live, changed, 'api');
    appendParagraph(live, 'Typed meanwhile.');
    await replacing;
    const markdown = renderMarkdown(live);
    expect(markdown.startsWith('# Harbour report, revised')).toBe(true);
    expect(markdown).toContain('Typed meanwhile.');
  });

  test('HTML of a long document: what renderHtml makes of it', async () => {
    const { result, turns } = await loopTurnsDuring(() => htmlOf(text));
    expect(turns).toBeGreaterThan(0);
    expect(result).toBe(renderHtml(text));
  });
});
