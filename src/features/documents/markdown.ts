// The document's two forms: Markdown (what the API reads and writes, and what versions store) and the Yjs document
// that real-time sessions edit (Tiptap's ProseMirror content in the XmlFragment `default`, of the schema in
// extensions.ts, which the reference editor shares). Tiptap's MarkdownManager converts between Markdown and ProseMirror JSON; y-prosemirror
// between ProseMirror and Yjs. Public pages render Markdown to HTML with markdown-it, raw HTML escaped.
import { getSchema } from '@tiptap/core';
import { MarkdownManager } from '@tiptap/markdown';
import { Node as ProseMirrorNode } from '@tiptap/pm/model';
import MarkdownIt from 'markdown-it';
import { prosemirrorJSONToYXmlFragment, updateYFragment, yXmlFragmentToProsemirrorJSON } from 'y-prosemirror';
import * as Y from 'yjs';
import { documentExtensions } from './extensions.ts';

/** The XmlFragment of the Yjs document that holds the content (Tiptap's Collaboration extension's default field). */
export const FIELD = 'default';

const extensions = documentExtensions();
const schema = getSchema(extensions);
const markdown = new MarkdownManager({ extensions });

/** Markdown → ProseMirror document of the editor's schema. */
function parse(text: string): ProseMirrorNode {
  const json = markdown.parse(text);
  return ProseMirrorNode.fromJSON(
    schema,
    json.content?.length ? json : { type: 'doc', content: [{ type: 'paragraph' }] },
  );
}

interface JsonNode {
  type: string;
  content?: JsonNode[];
  text?: string;
  [key: string]: unknown;
}

/**
 * Keeps of a ProseMirror JSON tree what the schema knows, so that anything a client put into the shared document
 * (a bare text at the top, an element of another editor's schema) cannot stop the document from rendering: unknown
 * nodes give their text, a bare top-level text becomes a paragraph.
 */
function known(node: JsonNode, top: boolean): JsonNode[] {
  if (node.type === 'text')
    return typeof node.text === 'string' && node.text !== ''
      ? top
        ? [{ type: 'paragraph', content: [node] }]
        : [node]
      : [];
  const children = (node.content ?? []).flatMap((child) => known(child, false));
  if (!schema.nodes[node.type])
    return top
      ? children.map((child) => (child.type === 'text' ? { type: 'paragraph', content: [child] } : child))
      : children;
  return [{ ...node, ...(node.content ? { content: children } : {}) }];
}

/** The Markdown of a Yjs document's content. */
export function renderMarkdown(doc: Y.Doc): string {
  const json = yXmlFragmentToProsemirrorJSON(doc.getXmlFragment(FIELD)) as JsonNode;
  const content = (json.content ?? []).flatMap((node) => known(node, true));
  let node: ProseMirrorNode;
  try {
    node = ProseMirrorNode.fromJSON(schema, { type: 'doc', content });
    node.check();
  } catch {
    // Still not a valid document (a table without rows, a list item at the top…): its text, one paragraph a block.
    const blocks = content.map((block) => textOf(block)).filter((text) => text !== '');
    node = ProseMirrorNode.fromJSON(schema, {
      type: 'doc',
      content: blocks.map((text) => ({ type: 'paragraph', content: [{ type: 'text', text }] })),
    });
  }
  return markdown.serialize(node.toJSON()).trimEnd();
}

function textOf(node: JsonNode): string {
  return node.type === 'text' ? (node.text ?? '') : (node.content ?? []).map(textOf).join(' ');
}

/** A new Yjs document holding this Markdown. */
export function yDocFromMarkdown(text: string): Y.Doc {
  const doc = new Y.Doc();
  prosemirrorJSONToYXmlFragment(schema, parse(text).toJSON(), doc.getXmlFragment(FIELD));
  return doc;
}

/**
 * Makes a live Yjs document hold this Markdown, changing only the blocks that differ (y-prosemirror's diff), so that
 * editors keep their place in the parts that did not change. `origin` marks the transaction (not an editor's).
 */
export function replaceContent(doc: Y.Doc, text: string, origin: unknown): void {
  doc.transact(
    () => updateYFragment(doc, doc.getXmlFragment(FIELD), parse(text), { mapping: new Map(), isOMark: new Map() }),
    origin,
  );
}

const html = new MarkdownIt({ html: false, linkify: true, typographer: false });
// Links leave the page for another site: no referrer to follow, no window.opener, no ranking credit.
html.renderer.rules.link_open = (tokens, index, options, _env, self) => {
  tokens[index]!.attrSet('rel', 'nofollow noopener');
  return self.renderToken(tokens, index, options);
};

/** Markdown → HTML that is safe to insert into a page: raw HTML is escaped, and markdown-it refuses
 *  `javascript:`, `vbscript:`, `file:` and non-image `data:` links. */
export function renderHtml(text: string): string {
  return html.render(text);
}

const SAMPLE =
  '# Sample\n\nA *short* text with a [link](https://example.com).\n\n- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |';

/**
 * Converts a small document each way once (the documents feature's preload, before a server says it is ready): the
 * first document a request converts would otherwise wait for the conversions' code to be compiled.
 */
export function warmUpConversions(): void {
  renderMarkdown(yDocFromMarkdown(SAMPLE));
  renderHtml(SAMPLE);
}

// Sticky: each tests the character at its lastIndex, in place (no string of that character is made).
const LETTER_OR_DIGIT_AT = /[\p{L}\p{N}]/uy;
const WHITESPACE_AT = /\s/uy;

/**
 * The words of a Markdown text: whitespace-separated tokens with a letter or digit (`#`, `-`, `|` are markup). Read
 * character by character, not split into an array of its tokens: a long document's tokens would be megabytes of
 * strings that outlive a young-generation collection.
 */
export function countWords(text: string): number {
  let words = 0;
  let wordish = false;
  for (let at = 0; at < text.length; at++) {
    const code = text.charCodeAt(at);
    let space: boolean;
    let letterOrDigit: boolean;
    if (code < 0x80) {
      space = code === 0x20 || (code >= 0x09 && code <= 0x0d);
      letterOrDigit = (code >= 0x30 && code <= 0x39) || ((code | 0x20) >= 0x61 && (code | 0x20) <= 0x7a);
    } else {
      WHITESPACE_AT.lastIndex = at;
      space = WHITESPACE_AT.test(text);
      LETTER_OR_DIGIT_AT.lastIndex = at;
      letterOrDigit = !space && LETTER_OR_DIGIT_AT.test(text);
      if (text.codePointAt(at)! > 0xffff) at += 1;
    }
    if (space) {
      if (wordish) words += 1;
      wordish = false;
    } else if (letterOrDigit) wordish = true;
  }
  return wordish ? words + 1 : words;
}
