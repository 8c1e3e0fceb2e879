// Renders the docs portal into docs/site/: the OpenAPI reference (Redocly, webhooks included) and the AsyncAPI
// reference (the AsyncAPI React component). Both pages are self-contained: scripts and styles are inlined, so they
// open from disk or any static host without reaching a CDN.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync, copyFileSync } from 'node:fs';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const site = join(root, 'docs', 'site');
mkdirSync(site, { recursive: true });

execFileSync(
  join(root, 'node_modules', '.bin', 'redocly'),
  ['build-docs', 'generated/openapi.json', '-o', join(site, 'index.html'), '--inlineBundle', '--title', 'content-service API reference'],
  { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] },
);

const component = join(root, 'node_modules', '@asyncapi', 'react-component');
const script = readFileSync(join(component, 'browser', 'standalone', 'index.js'), 'utf8');
const style = readFileSync(join(component, 'styles', 'default.min.css'), 'utf8');
const asyncapi = readFileSync(join(root, 'generated', 'asyncapi.json'), 'utf8');
// `</script>` inside the inlined JSON or script would end the tag early.
const safe = (text: string) => text.replaceAll('</script', '<\\/script');

writeFileSync(
  join(site, 'asyncapi.html'),
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>content-service webhooks (AsyncAPI)</title>
<style>${style}</style>
</head>
<body>
<p style="padding:8px 16px;margin:0;font-family:sans-serif"><a href="index.html">HTTP API reference</a> · Webhooks (AsyncAPI)</p>
<div id="asyncapi"></div>
<script>${safe(script)}</script>
<script>
AsyncApiStandalone.render({
  schema: ${safe(asyncapi)},
  config: { show: { sidebar: true, errors: true }, sidebar: { showOperations: 'byDefault' } },
}, document.getElementById('asyncapi'));
</script>
</body>
</html>
`,
);

for (const file of ['openapi.json', 'asyncapi.json']) copyFileSync(join(root, 'generated', file), join(site, file));
console.log(`Docs written to docs/site/: index.html (OpenAPI), asyncapi.html (AsyncAPI), openapi.json, asyncapi.json.`);
