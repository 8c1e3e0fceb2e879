// A module to preload into a benchmark's server, e.g. `BENCH_NODE_ARGS='--import ./bench/stalls.ts'
// BENCH_STDOUT=stalls.txt npm run bench:fairness`: it times the server's event loop from inside and, when the process
// exits, writes to standard output (which BENCH_STDOUT keeps) each stall of BENCH_STALL_MS (15) or more, with the
// collector's pauses that overlap it and the requests in flight. Not part of `npm test` or of the server.
//
// A stall is a turn of a 5 ms interval timer that came late: the event loop was busy (a task, a pause of the
// collector) or the process did not get the core. Requests are recorded from their `request` event to their answer's
// `finish`, by method, path and body size.
import http from 'node:http';
import { PerformanceObserver, performance } from 'node:perf_hooks';

const STALL_MS = Number(process.env.BENCH_STALL_MS ?? 15);
const TICK_MS = 5;

const pauses: Array<{ at: number; ms: number; kind: number }> = [];
const stalls: Array<{ at: number; ms: number }> = [];
const requests: Array<{ at: number; ms: number; label: string }> = [];

new PerformanceObserver((list) => {
  for (const entry of list.getEntries())
    if (entry.duration >= 3)
      pauses.push({
        at: entry.startTime,
        ms: entry.duration,
        kind: (entry as PerformanceEntry & { detail: { kind: number } }).detail.kind,
      });
}).observe({ entryTypes: ['gc'] });

let last = performance.now();
setInterval(() => {
  const now = performance.now();
  if (now - last >= TICK_MS + STALL_MS) stalls.push({ at: last, ms: now - last - TICK_MS });
  last = now;
}, TICK_MS).unref();

const emit = http.Server.prototype.emit as (this: http.Server, event: string, ...args: unknown[]) => boolean;
http.Server.prototype.emit = function (this: http.Server, event: string, ...args: unknown[]): boolean {
  if (event === 'request') {
    const [req, res] = args as [http.IncomingMessage, http.ServerResponse];
    const at = performance.now();
    const path = (req.url ?? '').split('?')[0]!.slice(0, 48);
    const label = `${req.method} ${path} ${Math.round(Number(req.headers['content-length'] ?? 0) / 1024)} KB`;
    res.once('finish', () => requests.push({ at, ms: performance.now() - at, label }));
  }
  return emit.call(this, event, ...args);
} as typeof http.Server.prototype.emit;

const overlaps = (a: { at: number; ms: number }, b: { at: number; ms: number }) =>
  a.at < b.at + b.ms && b.at < a.at + a.ms;

process.once('exit', () => {
  const lines = stalls.map((stall) => {
    const collector = pauses
      .filter((pause) => overlaps(pause, stall))
      .map((p) => `gc(${p.kind}) ${p.ms.toFixed(0)} ms`);
    const inFlight = requests.filter((request) => overlaps(request, stall)).map((request) => request.label);
    return `${(stall.at / 1000).toFixed(2).padStart(8)} s ${stall.ms.toFixed(0).padStart(4)} ms | ${collector.join(', ') || '-'} | ${inFlight.slice(0, 6).join('; ') || '-'}`;
  });
  process.stdout.write(
    `\nevent-loop stalls of ${STALL_MS} ms or more (s since the process started, length | the collector's pauses | requests in flight):\n${lines.join('\n')}\n`,
  );
});
