// The floor of the benchmark: a bare Express 5 app that answers the benchmark's routes with the bodies the real
// server gave (captured by bench/run.ts) and does nothing else: no auth, no rate limit, no validation, no logs.
// PORT and BARE_BODIES (a JSON file {"workspace": …, "apiKeys": …, "apiKeys100": …}) come from the environment.
import { readFileSync } from 'node:fs';
import express from 'express';

const bodies = JSON.parse(readFileSync(process.env.BARE_BODIES ?? '', 'utf8')) as {
  workspace: unknown;
  apiKeys: unknown;
  apiKeys100: unknown;
};
const port = Number(process.env.PORT ?? 0);

const app = express();
// As the real server: no X-Powered-By, no ETag (which would hash every body).
app.disable('x-powered-by');
app.disable('etag');
app.get('/v1/workspace', (_req, res) => {
  res.json(bodies.workspace);
});
app.get('/v1/api-keys', (req, res) => {
  res.json(req.query.limit === '100' ? bodies.apiKeys100 : bodies.apiKeys);
});

const server = app.listen(port, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`bare express listening on ${typeof address === 'object' && address ? address.port : port}\n`);
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));
