// `npm run lint:words`: fails when the docs or the source comments speak of how the project was built (an issue's
// number, a work session, a probe, a target met or not) rather than of what it is. The rules are in
// process-words.ts; the files are every Markdown page a reader meets and the comments of src/.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { commentsOf, findProcessWords } from './process-words.ts';

const root = join(import.meta.dirname, '..');

/** Every file under `dir` (relative to the repository) whose name ends with one of `endings`. */
function filesUnder(dir: string, endings: string[]): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'site' && entry.name !== 'node_modules') found.push(...filesUnder(path, endings));
    } else if (endings.some((ending) => entry.name.endsWith(ending))) found.push(path);
  }
  return found;
}

/** The files the check reads: the docs (the changelog too: it says what changed, not who changed it) and src/. */
export function checkedFiles(): { markdown: string[]; sources: string[] } {
  return {
    markdown: [
      'README.md',
      'bench/README.md',
      'test/README.md',
      'openapi/README.md',
      'packages/client/README.md',
      ...filesUnder('docs', ['.md']),
    ],
    sources: filesUnder('src', ['.ts', '.tsx']),
  };
}

export function lintWords(): string[] {
  const { markdown, sources } = checkedFiles();
  const problems: string[] = [];
  const report = (file: string, text: string) => {
    for (const finding of findProcessWords(text))
      problems.push(`${relative(root, join(root, file))}:${finding.line}: "${finding.text}" ${finding.why}`);
  };
  for (const file of markdown) report(file, readFileSync(join(root, file), 'utf8'));
  for (const file of sources) report(file, commentsOf(readFileSync(join(root, file), 'utf8')));
  return problems;
}

if (import.meta.main) {
  const problems = lintWords();
  for (const problem of problems) console.error(problem);
  if (problems.length > 0) {
    console.error(
      `lint:words: ${problems.length} place(s) speak of how the project was built (scripts/process-words.ts).`,
    );
    process.exit(1);
  }
  const { markdown, sources } = checkedFiles();
  console.log(
    `lint:words: ${markdown.length} pages and the comments of ${sources.length} source files state the present.`,
  );
}
