// Usage: npx node .profile-layer.ts <layers> <path>  (a local profiling aid, not committed)
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { seedWorkspace } from './bench/support.ts';
const [layers = 'validator', path = '/v1/workspace', script = 'bench/layered.ts'] = process.argv.slice(2);
const work = mkdtempSync(join(tmpdir(), 'prof-'));
const db = `sqlite:${join(work, 'b.db')}`;
const secrets = await seedWorkspace(db, 200, 'admin');
const { startServer } = await import('./src/server.ts');
const { loadConfig } = await import('./src/config.ts');
const real = await startServer(loadConfig({ ...process.env, DATABASE_URL: db, PORT: '0', HOST: '127.0.0.1', NODE_ENV: 'production', LOG_LEVEL: 'warn', REDIS_URL: '' }));
const get = async (p: string) => (await fetch(real.url + p, { headers: { authorization: `Bearer ${secrets[0]}` } })).json();
writeFileSync(join(work, 'bodies.json'), JSON.stringify({ workspace: await get('/v1/workspace'), apiKeys: await get('/v1/api-keys?limit=20'), apiKeys100: await get('/v1/api-keys?limit=100') }));
await real.close();
const port = 5900 + Math.floor(Math.random() * 99);
const child = spawn(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${work}`, script], { env: { ...process.env, PORT: String(port), BARE_BODIES: process.env.BODIES ?? join(work, 'bodies.json'), DATABASE_URL: db, LAYERS: layers, NODE_ENV: 'production', LOG_LEVEL: 'warn', REDIS_URL: '', PUBLIC_BASE_URL: `http://127.0.0.1:${port}`, HOST: '127.0.0.1' }, stdio: 'inherit' });
for (let i = 0; i < 200; i++) { try { await fetch(`http://127.0.0.1:${port}/readyz`); break; } catch { await new Promise((r) => setTimeout(r, 100)); } }
let n = 0;
const result = await autocannon({ url: `http://127.0.0.1:${port}`, connections: 20, duration: 6, requests: [{ method: 'GET', path, setupRequest: (r: any) => ({ ...r, headers: { ...r.headers, authorization: `Bearer ${secrets[n++ % secrets.length]}` } }) }] });
console.log('req/s', Math.round(result.requests.total / result.duration), 'non2xx', result.non2xx);
child.kill('SIGTERM');
await new Promise((r) => child.once('exit', r));
const file = readdirSync(work).find((f) => f.endsWith('.cpuprofile'))!;
const profile = JSON.parse(readFileSync(join(work, file), 'utf8'));
const self = new Map<string, number>();
const byId = new Map<number, any>(profile.nodes.map((node: any) => [node.id, node]));
const counts = new Map<number, number>();
for (const sample of profile.samples) counts.set(sample, (counts.get(sample) ?? 0) + 1);
let total = 0;
for (const [id, count] of counts) { const node = byId.get(id); const f = node.callFrame; const key = `${f.functionName || '(anon)'} ${f.url.replace(/.*node_modules\//, '').replace(/.*\/work\/main\//, '')}:${f.lineNumber}`; self.set(key, (self.get(key) ?? 0) + count); total += count; }
console.log([...self].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.TOP ?? 30)).map(([k, c]) => `${(c / total * 100).toFixed(1).padStart(5)}% ${k}`).join('\n'));
console.log('profile', join(work, file));
