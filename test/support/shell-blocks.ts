// The `sh` blocks of a Markdown file (the README, a guide), and a bash session that runs them one after another as a
// reader's shell would: variables set by one block are there for the next. A block that a test cannot run carries a
// visible marker right before it, `<!-- not run by test/docs/<file>: <why> -->`; every other block is run.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ShellBlock {
  /** 1-based line of the opening fence. */
  line: number;
  /** The nearest `##` (or `###`) heading above the block. */
  section: string;
  code: string;
  /** Why the block is not run, from its marker; undefined for a block the test runs. */
  notRun?: string;
  /** The test file the marker names. */
  markerFile?: string;
}

const MARKER = /^<!-- not run by (\S+): (.+?) -->$/;

/** Every fenced block of `markdown` whose info string is `language`, in order, with its marker if it has one. */
export function fencedBlocks(markdown: string, language: string): ShellBlock[] {
  const lines = markdown.split('\n');
  const blocks: ShellBlock[] = [];
  let section = '(top)';
  for (let index = 0; index < lines.length; index++) {
    const heading = /^#{2,3} (.+)$/.exec(lines[index]!);
    if (heading) section = heading[1]!;
    const fence = /^(`{3,})(\S*)\s*$/.exec(lines[index]!);
    if (!fence) continue;
    const end = lines.findIndex((text, at) => at > index && text.startsWith(fence[1]!) && text.trim() === fence[1]);
    if (end < 0) throw new Error(`the block at line ${index + 1} is never closed`);
    if (fence[2] === language) {
      let before = index - 1;
      while (before >= 0 && lines[before]!.trim() === '') before--;
      const marker = before >= 0 ? MARKER.exec(lines[before]!.trim()) : null;
      blocks.push({
        line: index + 1,
        section,
        code: `${lines.slice(index + 1, end).join('\n')}\n`,
        ...(marker ? { markerFile: marker[1]!, notRun: marker[2]! } : {}),
      });
    }
    index = end;
  }
  return blocks;
}

/** The text of the first fenced block (any language) that contains `needle`. */
export function blockContaining(markdown: string, needle: string): string {
  const found = [...markdown.matchAll(/^(`{3,})\S*\n([\s\S]*?)^\1$/gm)].find((match) => match[2]!.includes(needle));
  if (!found) throw new Error(`no block contains ${needle}`);
  return found[2]!;
}

export interface BlockResult {
  stdout: string;
  /** stderr without the session's own markers. */
  stderr: string;
  /** The commands that failed (non-zero status, a failed pipeline or command substitution), with their line. */
  failures: string[];
  /** The HTTP status of every curl call of the block, in order. */
  httpStatuses: number[];
}

// Each curl call reports its status on stderr after its output (curl's `%{stderr}` write-out), and each failing
// command is reported by the ERR trap; `errtrace` carries the trap into functions and command substitutions.
const PRELUDE = `set -o pipefail -o errtrace
curl() { command curl -w '%{stderr}\\n@@curl-status %{http_code}\\n' "$@"; }
trap 'echo "@@failed status $? at line $LINENO: $BASH_COMMAND" >&2' ERR
`;

/** One bash process fed block after block; stop() ends it. */
export class ShellSession {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly dir = mkdtempSync(join(tmpdir(), 'shell-blocks-'));
  private output = '';
  private count = 0;

  constructor(options: { cwd: string; env: Record<string, string> }) {
    this.child = spawn('bash', ['--noprofile', '--norc'], {
      cwd: options.cwd,
      env: options.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child.stdout.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.child.stderr.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.child.stdin.write(PRELUDE);
  }

  /** Runs `code` in the session (bounded by `timeoutMs`) and returns what it printed and what failed. */
  async run(code: string, timeoutMs: number): Promise<BlockResult> {
    const n = ++this.count;
    const script = join(this.dir, `block-${n}.sh`);
    const out = join(this.dir, `out-${n}`);
    const err = join(this.dir, `err-${n}`);
    writeFileSync(script, code);
    this.child.stdin.write(`source ${script} > ${out} 2> ${err} < /dev/null\necho "@@done ${n}"\n`);
    const deadline = Date.now() + timeoutMs;
    while (!this.output.includes(`@@done ${n}\n`)) {
      if (this.child.exitCode !== null)
        throw new Error(`the shell exited (${this.child.exitCode}) during the block:\n${this.output}`);
      if (Date.now() > deadline) {
        this.stop();
        throw new Error(
          `the block did not finish within ${timeoutMs} ms; it printed:\n${readFileSync(out, 'utf8')}\n${readFileSync(err, 'utf8')}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const stderr = readFileSync(err, 'utf8');
    return {
      stdout: readFileSync(out, 'utf8'),
      stderr: stderr.replace(/^@@(curl-status|failed) .*\n?/gm, ''),
      failures: [...stderr.matchAll(/^@@failed (.*)$/gm)].map((match) => match[1]!),
      httpStatuses: [...stderr.matchAll(/^@@curl-status (\d{3})$/gm)].map((match) => Number(match[1])),
    };
  }

  stop(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * The error statuses a block documents: a comment naming a 4xx or 5xx status (`# 422 policy_violation`,
 * `# → 409 …`). A block may answer an error status only if it says so.
 */
export function documentedErrorStatuses(code: string): number[] {
  return [...code.matchAll(/#[^\n]*?\b([45]\d\d)\b/g)].map((match) => Number(match[1]));
}

/** JSON printed compactly by the server, compared with the README's spaced rendering: whitespace removed. */
export const squeeze = (text: string) => text.replace(/\s+/g, '');

/**
 * Every top-level JSON object or array in `text`, in order: what a run of commands printed, where one answer may
 * follow another on the same line (curl prints no newline after a body) and other text may come between.
 */
// biome-ignore lint/suspicious/noExplicitAny: whatever JSON the documented commands printed, read by the fields the docs show
export function jsonValues(text: string): any[] {
  const values: ReturnType<typeof jsonValues> = [];
  let start = -1;
  let depth = 0;
  let inString = false;
  for (let at = 0; at < text.length; at++) {
    const char = text[at]!;
    if (inString) {
      if (char === '\\') at++;
      else if (char === '"') inString = false;
    } else if (char === '"' && depth > 0) inString = true;
    else if (char === '{' || char === '[') {
      if (depth++ === 0) start = at;
    } else if ((char === '}' || char === ']') && depth > 0 && --depth === 0) {
      try {
        values.push(JSON.parse(text.slice(start, at + 1)));
      } catch {
        // Brackets of plain text, not JSON.
      }
    }
  }
  return values;
}
