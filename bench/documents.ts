// `npm run bench:documents`: real-time editing under load, through real Hocuspocus clients on the server's WebSocket
// endpoint (/v1/documents/{id}/realtime). Not part of `npm test`. The case: 50 concurrent editors on 10
// documents; target: an edit-to-other-editor latency p99 under 50 ms on loopback, and the server's CPU and memory
// per connected editor (no target, reported).
//
// The server runs as `npm start` does in production (NODE_ENV=production, LOG_LEVEL=warn, SQLite, its own process,
// default REALTIME_VERSION_IDLE_MS), so the whole path is measured: the upgrade, Hocuspocus, our hooks (onChange on
// every update, the debounced save of the Yjs state and its Markdown to the row, at most every 5 s while typing).
// This process creates BENCH_DOCUMENTS documents (10) through the API and an edit token per editor
// (POST /v1/documents, then POST /v1/documents/{id}/edit-token), and samples the server process from /proc.
//
// The editors (test/support/realtime.ts's connectEditor, one WebSocket each) run in one worker thread of this
// process (this same file), so their work (Yjs, the provider's encoding and decoding) is not done on the main
// thread, which only orchestrates and samples, and none of it is counted as the server's: the server's CPU is its
// own process's. BENCH_EDITORS (50) are spread round-robin over the documents (5 each). Each editor appends a
// paragraph of its own and types into it, one character per transaction, as a keyboard does: a character every
// BENCH_TYPE_INTERVAL_MS (150) ± a third (100 to 200 ms at the default), a new paragraph every 60 characters. All
// editors type for BENCH_WARMUP seconds (3) unmeasured, then BENCH_DURATION seconds (20) measured; then typing stops
// and the receivers get 2 s to see the last edits (an edit not seen by then is counted as lost).
//
// Latency, edit to other editor: every edit is identified by the Yjs ID it creates (its editor's clientID and the
// clock after it), unique by construction, and timed from just before the sender's local transaction (which sends
// the update over its socket) to the moment each other editor of the same document has integrated it: the
// receiver's afterTransaction, whose afterState for the sender's clientID reaches that clock. Senders and receivers
// share the worker's clock (performance.now()). So one latency is: sender's Yjs encode and send, loopback,
// the server (decode, apply, onChange, broadcast), loopback, the receiver's decode and apply; with 50 editors typing,
// it also includes the time a message waits for the worker's event loop.
//
// Server CPU and memory, from /proc/<pid>/stat (utime + stime) and /proc/<pid>/status (VmRSS): idle with 0 editors
// (documents created, none open), idle with all editors connected and synced (its 10 live Yjs documents loaded), and
// during the measured typing. RSS per editor = (RSS with editors − RSS without) / editors, so it includes the live
// documents; CPU per editor = CPU-ms of the server during the measured phase / seconds / editors. BENCH_NODE_ARGS
// adds Node options to the server (`--cpu-prof --cpu-prof-dir=DIR` profiles it).

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import * as Y from 'yjs';
import { COMMAND_LINE_FLAGS } from '../src/platform/collector.ts';
import { appendParagraph, connectEditor, type Editor } from '../test/support/realtime.ts';
import { children, cleanUp, cleanups, freePort, positive, root, seedWorkspace, startProcess } from './support.ts';

const EDITORS = positive('BENCH_EDITORS', 50);
const DOCUMENTS = positive('BENCH_DOCUMENTS', 10);
const DURATION = positive('BENCH_DURATION', 20);
const WARMUP = positive('BENCH_WARMUP', 3, true);
const TYPE_INTERVAL_MS = positive('BENCH_TYPE_INTERVAL_MS', 150);
const P99_TARGET_MS = 50;
/** Characters of a paragraph before the editor starts a new one (Enter). */
const PARAGRAPH_LENGTH = 60;
/** How long the receivers get, once typing stops, to see the last edits. */
const GRACE_MS = 2000;
const SENTENCE = 'The spring roast ships on Monday, and members get ten percent off every bag. ';

interface Plan {
  baseUrl: string;
  /** Per editor: its document and its own edit token. */
  editors: Array<{ documentId: string; token: string }>;
  typeIntervalMs: number;
}

/** Main thread → worker. */
type Command = { type: 'start' } | { type: 'measure' } | { type: 'stop' } | { type: 'close' };
/** Worker → main thread. */
type Report =
  | { type: 'ready'; connectMs: number }
  | { type: 'results'; latencies: Float64Array; edits: number; expected: number; lost: number; disconnects: number }
  | { type: 'closed' }
  | { type: 'error'; message: string };

if (!isMainThread) {
  await editors(workerData as Plan);
} else {
  await main();
}

// ---------------------------------------------------------------------------------------------------- editors (worker)

interface Edit {
  /** The sender's clock after the edit: a receiver has it once its state for the sender reaches this. */
  end: number;
  sentAt: number;
  measured: boolean;
}

interface Typist {
  editor: Editor;
  documentId: string;
  text: Y.XmlText | null;
  typed: number;
  edits: Edit[];
  timer?: NodeJS.Timeout;
}

async function editors(plan: Plan): Promise<void> {
  const port = parentPort!;
  const post = (report: Report) => port.postMessage(report);
  const typists: Typist[] = [];
  let measuring = false;
  let typing = false;
  let disconnects = 0;
  const latencies: number[] = [];
  let expected = 0;
  try {
    const connecting = performance.now();
    for (const { documentId, token } of plan.editors)
      typists.push({
        editor: connectEditor(plan.baseUrl, documentId, token),
        documentId,
        text: null,
        typed: 0,
        edits: [],
      });
    const scopes = await Promise.all(typists.map((typist) => typist.editor.ready));
    if (scopes.some((scope) => scope !== 'read-write')) throw new Error('an editor was granted read-only access');
    for (const typist of typists) void typist.editor.closed.then(() => (disconnects += 1));

    // Per receiver, the other editors of its document, each with a cursor: the sender's next edit it has not seen.
    for (const receiver of typists) {
      const senders = new Map<number, { sender: Typist; next: number }>();
      for (const sender of typists)
        if (sender !== receiver && sender.documentId === receiver.documentId)
          senders.set(sender.editor.doc.clientID, { sender, next: 0 });
      receiver.editor.doc.on('afterTransaction', (transaction: Y.Transaction) => {
        if (transaction.local) return;
        const now = performance.now();
        for (const [client, clock] of transaction.afterState) {
          if (clock === (transaction.beforeState.get(client) ?? 0)) continue;
          const seen = senders.get(client);
          if (!seen) continue;
          const edits = seen.sender.edits;
          while (seen.next < edits.length && edits[seen.next]!.end <= clock) {
            const edit = edits[seen.next++]!;
            if (edit.measured) latencies.push(now - edit.sentAt);
          }
        }
      });
    }
    post({ type: 'ready', connectMs: performance.now() - connecting });

    const others = new Map<string, number>();
    for (const typist of typists) others.set(typist.documentId, (others.get(typist.documentId) ?? 0) + 1);
    /** One keystroke (or Enter): a transaction of its own, timed and identified by the clock it reaches. */
    const keystroke = (typist: Typist) => {
      const doc = typist.editor.doc;
      const sentAt = performance.now();
      if (typist.text === null || (typist.typed % PARAGRAPH_LENGTH === 0 && typist.text.length > 0)) {
        appendParagraph(doc, '');
        const fragment = doc.getXmlFragment('default');
        typist.text = (fragment.get(fragment.length - 1) as Y.XmlElement).get(0) as Y.XmlText;
      } else {
        const text = typist.text;
        doc.transact(() => text.insert(text.length, SENTENCE[typist.typed % SENTENCE.length]!));
        typist.typed += 1;
      }
      typist.edits.push({ end: Y.getState(doc.store, doc.clientID), sentAt, measured: measuring });
      if (measuring) expected += others.get(typist.documentId)! - 1;
    };
    const schedule = (typist: Typist) => {
      const delay = plan.typeIntervalMs * (2 / 3 + (2 / 3) * Math.random());
      typist.timer = setTimeout(() => {
        if (!typing) return;
        keystroke(typist);
        schedule(typist);
      }, delay);
    };

    port.on('message', async (command: Command) => {
      try {
        if (command.type === 'start') {
          typing = true;
          // Editors do not start in step: each first waits a random part of an interval.
          for (const typist of typists) {
            typist.timer = setTimeout(() => {
              if (!typing) return;
              keystroke(typist);
              schedule(typist);
            }, Math.random() * plan.typeIntervalMs);
          }
        } else if (command.type === 'measure') {
          measuring = true;
        } else if (command.type === 'stop') {
          measuring = false;
          typing = false;
          for (const typist of typists) clearTimeout(typist.timer);
          const deadline = performance.now() + GRACE_MS;
          while (latencies.length < expected && performance.now() < deadline)
            await new Promise((resolve) => setTimeout(resolve, 50));
          const edits = typists.reduce((sum, typist) => sum + typist.edits.filter((edit) => edit.measured).length, 0);
          post({
            type: 'results',
            latencies: Float64Array.from(latencies),
            edits,
            expected,
            lost: expected - latencies.length,
            disconnects,
          });
        } else if (command.type === 'close') {
          for (const typist of typists) typist.editor.close();
          post({ type: 'closed' });
        }
      } catch (error) {
        post({ type: 'error', message: String(error) });
      }
    });
  } catch (error) {
    for (const typist of typists) typist.editor.close();
    post({ type: 'error', message: error instanceof Error ? error.message : String(error) });
  }
}

// ---------------------------------------------------------------------------------------------------- main thread

/** Clock ticks a second, the unit of /proc/<pid>/stat's CPU times. */
function clockTicks(): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
}

interface Sample {
  at: number;
  /** CPU time of the process so far (user + system), in ms. */
  cpuMs: number;
  rssBytes: number;
}

function sample(pid: number, ticksPerSecond: number): Sample {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name, in parentheses, may hold spaces: the fields that follow start at field 3 (state).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[14 - 3]) + Number(fields[15 - 3]);
  const rss = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return { at: performance.now(), cpuMs: (ticks * 1000) / ticksPerSecond, rssBytes: Number(rss![1]) * 1024 };
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function mib(bytes: number): string {
  return (bytes / 1024 / 1024).toFixed(1);
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'content-service-bench-documents-'));
  cleanups.push(async () => rmSync(work, { recursive: true, force: true }));
  process.once('SIGINT', () => void cleanUp().finally(() => process.exit(130)));
  const load = loadavg()[0]!;
  let worker: Worker | undefined;
  try {
    const databaseUrl = `sqlite:${join(work, 'bench.db')}`;
    const [secret] = await seedWorkspace(databaseUrl, 1, 'editor');
    const port = await freePort();
    const serverUrl = `http://127.0.0.1:${port}`;
    // BENCH_NODE_ARGS: extra Node options for the server, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile it.
    const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
    const stop = await startProcess(
      'server',
      process.execPath,
      [...COMMAND_LINE_FLAGS, ...nodeArgs, 'src/main.ts'],
      {
        HOST: '127.0.0.1',
        PORT: String(port),
        PUBLIC_BASE_URL: serverUrl,
        DATABASE_URL: databaseUrl,
        NODE_ENV: 'production',
        LOG_LEVEL: 'warn',
        REDIS_URL: '',
      },
      serverUrl,
      '/readyz',
    );
    const pid = [...children].at(-1)!.pid!;
    const ticks = clockTicks();

    const call = async (path: string, body: unknown) => {
      const response = await fetch(serverUrl + path, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${secret}` },
        body: JSON.stringify(body),
      });
      const json = (await response.json()) as Record<string, unknown>;
      if (response.status !== 201) throw new Error(`POST ${path}: ${response.status} ${JSON.stringify(json)}`);
      return json;
    };
    const documents: Array<{ id: string; tokens: string[] }> = [];
    for (let d = 0; d < DOCUMENTS; d++) {
      const created = (await call('/v1/documents', {
        title: `Benchmark document ${d + 1}`,
        content: `# Spring launch ${d + 1}\n\nThe first paragraph, written through the API.`,
      })) as { id: string; edit_token: { token: string } };
      documents.push({ id: created.id, tokens: [created.edit_token.token] });
    }
    const plan: Plan = { baseUrl: serverUrl, editors: [], typeIntervalMs: TYPE_INTERVAL_MS };
    for (let e = 0; e < EDITORS; e++) {
      const document = documents[e % DOCUMENTS]!;
      // Each editor its own token: the document's first comes with its creation, the others are asked for.
      const token =
        e < DOCUMENTS
          ? document.tokens[0]!
          : ((await call(`/v1/documents/${document.id}/edit-token`, {})) as { token: string }).token;
      plan.editors.push({ documentId: document.id, token });
    }

    await sleep(1000);
    const idle = sample(pid, ticks);
    await sleep(2000);
    const idleEnd = sample(pid, ticks);

    worker = new Worker(new URL(import.meta.url), { workerData: plan });
    const inbox: Report[] = [];
    let wake: (() => void) | undefined;
    let failure: Error | undefined;
    worker.on('message', (report: Report) => {
      inbox.push(report);
      wake?.();
    });
    worker.on('error', (error) => {
      failure = error;
      wake?.();
    });
    const next = async <T extends Report['type']>(
      type: T,
      timeoutMs: number,
    ): Promise<Extract<Report, { type: T }>> => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const index = inbox.findIndex((report) => report.type === type || report.type === 'error');
        if (index >= 0) {
          const [report] = inbox.splice(index, 1);
          if (report!.type === 'error') throw new Error(`editors: ${report!.message}`);
          return report as Extract<Report, { type: T }>;
        }
        if (failure) throw failure;
        if (Date.now() > deadline) throw new Error(`editors: no ${type} within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, 100);
        });
      }
    };
    const command = (type: Command['type']) => worker!.postMessage({ type } satisfies Command);

    const { connectMs } = await next('ready', 60_000);
    process.stdout.write(
      `${EDITORS} editors on ${DOCUMENTS} documents connected and synced in ${connectMs.toFixed(0)} ms\n`,
    );
    await sleep(1000);
    const connected = sample(pid, ticks);
    await sleep(2000);
    const connectedEnd = sample(pid, ticks);

    command('start');
    await sleep(WARMUP * 1000);
    command('measure');
    const clientCpu = process.cpuUsage();
    const editing = [sample(pid, ticks)];
    const deadline = performance.now() + DURATION * 1000;
    while (performance.now() < deadline) {
      await sleep(Math.min(500, deadline - performance.now()));
      editing.push(sample(pid, ticks));
    }
    command('stop');
    const usedByClient = process.cpuUsage(clientCpu);
    const results = await next('results', GRACE_MS + 10_000);
    command('close');
    await next('closed', 10_000);
    await worker.terminate();
    worker = undefined;
    // Stopped with SIGTERM, so that it exits as in production (and writes its profile with BENCH_NODE_ARGS).
    await stop();

    const sorted = results.latencies.sort();
    const first = editing[0]!;
    const last = editing.at(-1)!;
    const seconds = (last.at - first.at) / 1000;
    const editCpuMs = last.cpuMs - first.cpuMs;
    const rssDuring = editing.map((s) => s.rssBytes);
    const rssPerEditor = (connected.rssBytes - idle.rssBytes) / EDITORS;
    const p99 = percentile(sorted, 99);
    const ms = (value: number) => value.toFixed(2);
    const cpuPercent = (from: Sample, to: Sample) => ((100 * (to.cpuMs - from.cpuMs)) / (to.at - from.at)).toFixed(1);

    const report = [
      `# bench:documents, ${new Date().toISOString()}`,
      '',
      `Node ${process.version}, ${cpus().length} cores, load average before ${load.toFixed(2)}; ${EDITORS} editors on ${DOCUMENTS} documents (one worker thread), ` +
        `a character every ${TYPE_INTERVAL_MS} ms ± a third per editor; ${DURATION} s measured after ${WARMUP} s of warm-up; server: SQLite, its own process (CPU time in ${ticks} ticks a second).`,
      '',
      '| edits | receipts | lost | p50 ms | p90 ms | p99 ms | max ms |',
      '|--:|--:|--:|--:|--:|--:|--:|',
      `| ${results.edits} | ${sorted.length} | ${results.lost} | ${ms(percentile(sorted, 50))} | ${ms(percentile(sorted, 90))} | ${ms(p99)} | ${ms(sorted.at(-1) ?? NaN)} |`,
      '',
      '| server | CPU % | RSS MiB |',
      '|---|--:|--:|',
      `| idle, 0 editors | ${cpuPercent(idle, idleEnd)} | ${mib(idle.rssBytes)} |`,
      `| idle, ${EDITORS} editors connected | ${cpuPercent(connected, connectedEnd)} | ${mib(connected.rssBytes)} |`,
      `| ${EDITORS} editors typing (mean, max RSS) | ${cpuPercent(first, last)} | ${mib(rssDuring.reduce((a, b) => a + b, 0) / rssDuring.length)}, ${mib(Math.max(...rssDuring))} |`,
      '',
      `- Edit to other editor: p99 ${ms(p99)} ms (target < ${P99_TARGET_MS} ms: ${p99 < P99_TARGET_MS ? 'met' : 'NOT met'}); ${(results.edits / seconds).toFixed(0)} edits/s sent, ${(sorted.length / seconds).toFixed(0)} receipts/s.`,
      `- Server CPU while typing: ${cpuPercent(first, last)} % of a core, ${(editCpuMs / seconds / EDITORS).toFixed(2)} CPU-ms per editor per second, ${(editCpuMs / results.edits).toFixed(3)} CPU-ms per edit.`,
      `- Server RSS per connected editor: ${(rssPerEditor / 1024).toFixed(0)} KiB ((${mib(connected.rssBytes)} − ${mib(idle.rssBytes)} MiB) / ${EDITORS}, including the ${DOCUMENTS} live documents).`,
      `- Editors' process (worker and main thread) while typing: ${((100 * (usedByClient.user + usedByClient.system)) / 1000 / (DURATION * 1000)).toFixed(1)} % of a core; ${results.disconnects} disconnects.`,
      '',
    ].join('\n');
    process.stdout.write(`\n${report}`);
    mkdirSync(join(root, 'bench', 'results'), { recursive: true });
    const file = join(root, 'bench', 'results', `documents-${new Date().toISOString().replace(/[:.]/g, '-')}.md`);
    writeFileSync(file, report);
    process.stdout.write(`Written to ${file}\n`);
  } finally {
    await worker?.terminate();
    await cleanUp();
  }
}
