// The document schema: the Tiptap extensions that define what a document can hold. The server (Markdown ⇄ Yjs,
// markdown.ts) and the reference editor (editor/client.ts) must use the same list, or content one of them does not
// know is dropped: StarterKit (headings, lists, quotes, code, marks, links) and GitHub tables.
import StarterKit from '@tiptap/starter-kit';
import { TableKit } from '@tiptap/extension-table';

export const documentExtensions = [StarterKit, TableKit];
