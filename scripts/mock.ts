// `npm run mock`: the Prism mock of the whole API (generated/openapi.json) on loopback, port 4010 unless
// `-- --port N` or MOCK_PORT says otherwise (`--host` or MOCK_HOST likewise). Prism's other options pass through
// (`npm run mock -- --dynamic`). The port is given to Prism once: Prism refuses a flag given twice.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const root = join(import.meta.dirname, '..');
const { values, tokens } = parseArgs({
  options: { port: { type: 'string', short: 'p' }, host: { type: 'string', short: 'h' } },
  strict: false,
  allowPositionals: true,
  tokens: true,
});
const port = String(values.port ?? process.env.MOCK_PORT ?? 4010);
const host = String(values.host ?? process.env.MOCK_HOST ?? '127.0.0.1');
if (!/^\d+$/.test(port) || Number(port) > 65535) {
  process.stderr.write(`mock: the port must be a number from 0 to 65535, got ${port}\n`);
  process.exit(2);
}
// Everything but --port and --host, as it was written.
const passed: string[] = [];
for (const token of tokens) {
  if (token.kind === 'option' && (token.name === 'port' || token.name === 'host')) continue;
  if (token.kind === 'option') passed.push(token.rawName, ...(token.value === undefined ? [] : [token.value]));
  else if (token.kind === 'positional') passed.push(token.value);
  else passed.push('--');
}

const prism = spawn(
  join(root, 'node_modules', '.bin', 'prism'),
  ['mock', join(root, 'generated', 'openapi.json'), '--host', host, '--port', port, ...passed],
  { cwd: root, stdio: 'inherit' },
);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => prism.kill(signal));
prism.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
