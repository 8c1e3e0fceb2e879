// A document's text is read in time linear in it: each case feeds what made a pattern of the document commands (or of a
// document's title and sources) backtrack super-linearly, as long as a document may be (1,000,000 characters; a source
// page, the 512 KiB readHtml reads), and checks the result. A super-linear pattern takes minutes on such an input, so a
// case that hangs is one come back. `npm run lint:redos` finds the patterns (scripts/lint-redos.ts).
import { describe, expect, test } from 'vitest';
import {
  referencesStart,
  withoutCodeSpans,
  withoutFencedBlocks,
  withReferences,
} from '../../../src/features/documents/commands/cite.ts';
import { clean, wholeFence } from '../../../src/features/documents/commands/prompts.ts';
import { mask } from '../../../src/features/documents/commands/translate-mask.ts';
import { runCommand } from '../../../src/features/documents/commands.ts';
import { headingsOf, withoutTags } from '../../../src/features/documents/documents.ts';
import { renderMarkdown, yDocFromMarkdown } from '../../../src/features/documents/markdown.ts';
import { fallbackTitle, readHtml } from '../../../src/features/documents/sources.ts';
import { input, recorder } from './support.ts';

const DOCUMENT = 1_000_000;

describe('document commands on the longest document', () => {
  test('cite: a "## References" line that is not one, then spaces without end', () => {
    const line = `## References${'\t'.repeat(DOCUMENT)}References`;
    expect(referencesStart(line)).toBe(-1);
  });

  test("cite: the content's trailing white space, after a run of it in the middle", () => {
    const content = `Text${'\t'.repeat(DOCUMENT)}x\t`;
    expect(withReferences(content, '## References\n\n- [1] A')).toBe(
      `Text${'\t'.repeat(DOCUMENT)}x\n\n## References\n\n- [1] A`,
    );
  });

  test('cite: fences never closed and backticks never paired, left out of the marker count', () => {
    const fences = '~~~\r'.repeat(DOCUMENT / 4);
    expect(withoutFencedBlocks(fences)).toBe(fences);
    const opened = '````a\n'.repeat(DOCUMENT / 6);
    expect(withoutFencedBlocks(opened)).toBe(opened);
    expect(withoutCodeSpans('`'.repeat(DOCUMENT))).toBe('');
    expect(withoutCodeSpans(`${'`'.repeat(DOCUMENT - 1)}a`)).toBe('`a');
  });

  test("cite: a model's references heading that is not one", async () => {
    const answer = `Retail sales rose [1].\n# Sources${'\t'.repeat(DOCUMENT)}L`;
    const result = await runCommand(
      { command: 'cite', sources: ['https://www.example.org/r'], style: 'apa' },
      input('Retail sales rose.'),
      recorder(() => answer).generate,
      [{ n: 1, url: 'https://www.example.org/r', title: 'Report', excerpt: 'Retail sales rose.' }],
      new Date('2026-03-14T00:00:00Z'),
    );
    expect(result.output).toBe(answer);
  });

  test('an answer that opens a fence and never closes it', () => {
    const answer = `~~~\t${'\t'.repeat(DOCUMENT)}\u0000`;
    expect(wholeFence(answer)).toBeNull();
    expect(clean(answer)).toBe(answer);
    const unclosed = `\`\`\`\n${'\n'.repeat(DOCUMENT)}x`;
    expect(clean(unclosed)).toBe(unclosed);
  });

  test('translate: backtick runs without a closing one, link titles without a closing quote', () => {
    const ticks = '`'.repeat(DOCUMENT);
    expect(mask(ticks)).toEqual({ text: ticks, kept: [] });
    const titles = '](x "'.repeat(DOCUMENT / 5);
    expect(mask(titles)).toEqual({ text: titles, kept: [] });
    const spans = `${'`a'.repeat(DOCUMENT / 2)}`;
    expect(mask(spans).kept).toHaveLength(DOCUMENT / 4);
  });

  test("the title of a document's page: tags and headings never closed", () => {
    expect(withoutTags('<'.repeat(DOCUMENT))).toBe('<'.repeat(DOCUMENT));
    expect(headingsOf('<h1'.repeat(DOCUMENT / 3))).toEqual([]);
    expect(headingsOf(`<h1>${'<h1'.repeat(DOCUMENT / 3)}`)).toEqual([]);
  });

  test('the Markdown of a document, its white space run in the middle', () => {
    expect(renderMarkdown(yDocFromMarkdown(`a${'\t'.repeat(DOCUMENT)}b\t\n`))).toBe(`a${'\t'.repeat(DOCUMENT)}b`);
  });

  test("a cited page's title: a long path of slashes, a tag of one long attribute name", () => {
    expect(fallbackTitle(`https://example.com/${'/'.repeat(2000)}a/`)).toBe(`example.com/${'/'.repeat(2000)}a`);
    const page = `<html><head><meta ${'-'.repeat(512 * 1024 - 30)}>`;
    expect(readHtml(page)).toEqual({ title: '', excerpt: '' });
  });
});
