// The document schema: the Tiptap extensions that define what a document can hold. The server (Markdown ⇄ Yjs,
// markdown.ts) and the reference editor (editor/client.ts) must use the same list: content that one side's schema
// does not know is dropped by it, and an editor would delete it from the shared document. StarterKit (headings,
// lists, quotes, code, marks, links), task lists, images and GitHub tables.
import { Image } from '@tiptap/extension-image';
import { TaskItem, TaskList } from '@tiptap/extension-list';
import { TableKit } from '@tiptap/extension-table';
import StarterKit from '@tiptap/starter-kit';

/** `undoRedo: false` in an editor with the Collaboration extension, which keeps its own undo history. */
export function documentExtensions(options: { undoRedo?: boolean } = {}) {
  return [
    StarterKit.configure({ undoRedo: options.undoRedo === false ? false : undefined }),
    TaskList,
    TaskItem.configure({ nested: true }),
    Image,
    TableKit,
  ];
}
