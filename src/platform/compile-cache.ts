// Node's module compile cache (node:module, enableCompileCache): the code V8 compiled for each module, and the
// JavaScript that type stripping made of each .ts file, kept on disk, so that a process that loads the same modules
// again reads them instead of compiling them. Each entry point turns it on first, before it loads anything else (a
// module compiled before is not cached).
//
// Where: Node's own default, `node-compile-cache` in the system's temporary directory, or NODE_COMPILE_CACHE when set
// (NODE_DISABLE_COMPILE_CACHE=1 turns it off). A temporary directory is writable where the project's own folders may
// not be (an image whose node_modules belongs to another user). Sharing it is safe: Node keeps one folder per Node
// version and V8 flags, checks each entry against the file's path and content before it uses it, and writes an entry
// to a temporary file it then renames. Nothing fails when it cannot be used (read-only, another user's): the modules
// are compiled as without it.
import module from 'node:module';

export function enableCompileCache(): void {
  // A worker thread (the engine's text pool) turns on no cache of its own: it inherits this one through its
  // environment, as child processes do. (The directory enabled, not getCompileCacheDir(): that is the folder of this
  // Node version inside it, to which a process given it adds that folder again.)
  const { directory } = module.enableCompileCache();
  if (directory) process.env.NODE_COMPILE_CACHE ??= directory;
}

/**
 * Writes what was compiled since the start now, not at the process's exit (which a process that is killed never
 * reaches). Entries read from the cache are not written again.
 */
export function flushCompileCache(): void {
  module.flushCompileCache();
}
