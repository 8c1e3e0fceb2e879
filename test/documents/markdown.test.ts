// Markdown ⇄ Yjs: what a document can hold survives the round trip (tables, task lists, images, code), an API change
// is applied to a live document as a diff, and content a client put into the shared document that the schema does
// not know cannot stop it from rendering.
import { describe, expect, test } from 'vitest';
import * as Y from 'yjs';
import { renderHtml, renderMarkdown, replaceContent, yDocFromMarkdown } from '../../src/features/documents/markdown.ts';

describe('Markdown and the Yjs document', () => {
  test.each([
    '# Spring sale\n\nEvery plan is **20%** off, *this week* only. See [the offer](https://example.com/offer).',
    '- one\n- two\n\n1. first\n2. second',
    '- [ ] task\n- [x] done',
    '![Logo](https://example.com/logo.png)',
    '> quoted\n\n```js\nconst a = 1;\n```',
  ])('%j survives the round trip', (markdown) => {
    expect(renderMarkdown(yDocFromMarkdown(markdown))).toBe(markdown);
  });

  test('tables survive, padded the editor’s way', () => {
    expect(renderMarkdown(yDocFromMarkdown('| a | b |\n|---|---|\n| 1 | 2 |'))).toContain('| 1   | 2   |');
  });

  test('an API change reaches a copy of the live document as an update', () => {
    const live = yDocFromMarkdown('# Title\n\nFirst.\n\nSecond.');
    const editor = new Y.Doc();
    Y.applyUpdate(editor, Y.encodeStateAsUpdate(live));
    const before = Y.encodeStateVector(editor);
    replaceContent(live, '# Title\n\nFirst.\n\nChanged.', 'api');
    Y.applyUpdate(editor, Y.encodeStateAsUpdate(live, before));
    expect(renderMarkdown(editor)).toBe('# Title\n\nFirst.\n\nChanged.');
  });

  test('content the schema does not know cannot stop the document from rendering', () => {
    const doc = yDocFromMarkdown('# Hello\n\nWorld');
    const fragment = doc.getXmlFragment('default');
    fragment.insert(0, [new Y.XmlText('bare text')]);
    const unknown = new Y.XmlElement('somethingElse');
    unknown.insert(0, [new Y.XmlText('inside an unknown element')]);
    fragment.insert(1, [unknown]);
    expect(renderMarkdown(doc)).toContain('inside an unknown element\n\n# Hello\n\nWorld');
  });

  test('HTML for public pages escapes raw HTML and unsafe links', () => {
    const html = renderHtml('<img src=x onerror=alert(1)> [a](javascript:alert(1)) [b](https://example.com)');
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(html).not.toContain('href="javascript:');
    expect(html).toContain('<a href="https://example.com" rel="nofollow noopener">b</a>');
  });
});
