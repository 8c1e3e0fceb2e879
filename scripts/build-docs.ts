// Renders the docs portal into docs/site/ (or the directory given as the first argument): the OpenAPI reference
// (Redocly, webhooks included), the AsyncAPI reference (static HTML, asyncapi-page.ts), the SCIM 2.0 reference (Redocly,
// from openapi/scim.yaml) and the guides of docs/guides/
// and the changelog (Markdown). Every page is self-contained: scripts, styles and images are inlined, so they open from
// disk or any static host without reaching a CDN.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Marked } from 'marked';
import { scheduleTable } from '../src/features/webhooks/index.ts';
import { renderAsyncApiPage } from './asyncapi-page.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The guides, each rendered to `<name>.html` with the portal's navigation. */
const guides: Array<{ name: string; title: string; source?: string }> = [
  { name: 'chat', title: 'Chat completions' },
  { name: 'tools', title: 'Call tools' },
  { name: 'embeddings-and-responses', title: 'Embeddings and the Responses API' },
  { name: 'receiving-webhooks', title: 'Receiving webhooks' },
  { name: 'voices', title: 'Brand voices' },
  { name: 'documents', title: 'Documents' },
  { name: 'chatbots', title: 'Add a chatbot to your site' },
  { name: 'workflows', title: 'Write a workflow' },
  { name: 'scim', title: 'Provisioning with SCIM' },
  { name: 'sign-in', title: 'Signing in' },
  { name: 'single-sign-on', title: 'Single sign-on' },
  { name: 'operate', title: 'Operate content-service' },
  // What changed in the contract, written by `npm run contract:publish`.
  { name: 'changelog', title: 'Changelog', source: join(root, 'docs', 'changelog.md') },
];

/** The portal's pages, in the order of its navigation bar: the references, then the guides and the changelog. */
const portalPages = [
  { file: 'index.html', title: 'HTTP API reference' },
  { file: 'asyncapi.html', title: 'Webhooks (AsyncAPI)' },
  { file: 'scim-reference.html', title: 'SCIM 2.0 reference' },
  ...guides.map((g) => ({ file: `${g.name}.html`, title: g.title })),
];

// The bar sits above each page's own layout (Redoc's three panes, the AsyncAPI page, a guide) and scrolls away with
// it, so no page's sticky sidebar has to make room for it. Its style is its own, in every page's font.
const navigationStyle = `nav.portal { display: flex; flex-wrap: wrap; align-items: baseline; gap: 4px 16px; margin: 0;
padding: 10px 16px; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; background: #0f172a; color: #e2e8f0; }
nav.portal strong { margin-right: 8px; color: #fff; }
nav.portal a { color: #bfdbfe; text-decoration: none; }
nav.portal a:hover, nav.portal a:focus-visible { text-decoration: underline; color: #fff; }
nav.portal [aria-current="page"] { color: #fff; font-weight: 600; border-bottom: 2px solid #60a5fa; }`;

/** The portal's navigation bar: every page of the portal, the current one marked and not a link. */
function navigation(current: string): string {
  const items = portalPages.map((p) =>
    p.file === current ? `<span aria-current="page">${p.title}</span>` : `<a href="${p.file}">${p.title}</a>`,
  );
  return `<style>${navigationStyle}</style>\n<nav class="portal" aria-label="Docs portal"><strong>content-service docs</strong> ${items.join(' ')}</nav>`;
}

const site = resolve(process.argv[2] ?? join(root, 'docs', 'site'));
mkdirSync(site, { recursive: true });

/** A Redoc page of a bundled OpenAPI document, with the portal's navigation and nothing loaded from the network. */
function buildReference(source: string, file: string, title: string): void {
  execFileSync(
    join(root, 'node_modules', '.bin', 'redocly'),
    ['build-docs', source, '-o', join(site, file), '--inlineBundle', '--title', title],
    { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const reference = readFileSync(join(site, file), 'utf8')
    .replaceAll('https://cdn.redoc.ly/redoc/logo-mini-full.svg', redocLogo('Redocly', 60))
    .replaceAll('https://cdn.redoc.ly/redoc/logo-mini.svg', redocLogo('R', 12))
    .replace(/<body([^>]*)>/, (body) => `${body}\n${navigation(file)}`);
  if (!reference.includes('<nav class="portal"')) throw new Error(`docs/site/${file} has no <body> for the navigation`);
  if (reference.includes('cdn.redoc.ly')) throw new Error(`docs/site/${file} still loads an asset from cdn.redoc.ly`);
  writeFileSync(join(site, file), reference);
}

// Redoc's sidebar shows "API docs by Redocly" with a logo image from its CDN. The page must load nothing from the
// network, so the logo's addresses become an inline SVG of the same words; any other remote asset stops the build.
const redocLogo = (text: string, width: number) =>
  'data:image/svg+xml,' +
  encodeURIComponent(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="20" viewBox="0 0 ${width} 20"><text x="0" y="15" font-family="sans-serif" font-size="14" font-weight="600" fill="#f0466d">${text}</text></svg>`,
  );
buildReference('generated/openapi.json', 'index.html', 'content-service API reference');
buildReference('generated/scim.json', 'scim-reference.html', 'content-service SCIM 2.0 reference');

/**
 * The guide's Markdown with every include expanded: the lines from `<!-- include: NAME -->` to `<!-- end include -->`
 * (a link or a note for readers of the Markdown source) become the file NAME as a code block, or `retry-schedule`
 * the table of schedule.ts. The page can therefore never show code or a table other than what the tests run.
 */
function expandIncludes(markdown: string): string {
  const expanded = markdown.replace(/^<!-- include: (\S+) -->\n[\s\S]*?^<!-- end include -->$/gm, (_, name: string) => {
    if (name === 'retry-schedule') return scheduleTable();
    const text = readFileSync(join(root, name), 'utf8');
    // A fence longer than any run of backticks in the file, so that none of them ends the block.
    const fence = '`'.repeat(Math.max(3, ...[...text.matchAll(/`+/g)].map((m) => m[0].length + 1)));
    return `${fence}${extname(name).slice(1)}\n${text.replace(/\n$/, '')}\n${fence}`;
  });
  if (expanded.includes('<!-- include:')) throw new Error('an include of the guide has no `<!-- end include -->` line');
  return expanded;
}

const guideStyle = `
body { margin: 0; font: 16px/1.55 system-ui, sans-serif; color: #1f2328; }
main { max-width: 52rem; margin: 0 auto; padding: 8px 16px 48px; }
h1, h2, h3 { line-height: 1.25; margin-top: 1.8em; }
code { font: 0.9em ui-monospace, monospace; background: #f3f4f6; padding: 0.1em 0.3em; border-radius: 4px; }
pre { background: #f6f8fa; padding: 12px 16px; overflow-x: auto; white-space: pre-wrap; overflow-wrap: anywhere; border-radius: 6px; line-height: 1.4; }
pre code { background: none; padding: 0; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #d0d7de; padding: 4px 10px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td:first-child code { white-space: nowrap; }
a { color: #0969da; }
`;

const slug = (text: string) =>
  text
    .toLowerCase()
    .replace(/<[^>]+>/g, '')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
// Headings get ids, so that a section of the guide can be linked to.
const markdown = new Marked({
  renderer: {
    heading({ tokens, depth }) {
      const html = this.parser.parseInline(tokens);
      return `<h${depth} id="${slug(html)}">${html}</h${depth}>\n`;
    },
  },
});
writeFileSync(
  join(site, 'asyncapi.html'),
  renderAsyncApiPage(JSON.parse(readFileSync(join(root, 'generated', 'asyncapi.json'), 'utf8')), {
    navigation: navigation('asyncapi.html'),
    style: guideStyle.replace('max-width: 52rem', 'max-width: 64rem'),
    markdown,
  }),
);

for (const { name, title, source } of guides) {
  const guide = expandIncludes(readFileSync(source ?? join(root, 'docs', 'guides', `${name}.md`), 'utf8'));
  writeFileSync(
    join(site, `${name}.html`),
    `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · content-service</title>
<style>${guideStyle}</style>
</head>
<body>
${navigation(`${name}.html`)}
<main>
${markdown.parse(guide, { async: false })}
</main>
</body>
</html>
`,
  );
}

for (const file of ['openapi.json', 'asyncapi.json', 'scim.json'])
  copyFileSync(join(root, 'generated', file), join(site, file));
console.log(
  `Docs written to ${site}: index.html (OpenAPI), asyncapi.html (AsyncAPI), scim-reference.html (SCIM), ${guides.map((g) => `${g.name}.html`).join(', ')} (guides), openapi.json, asyncapi.json, scim.json.`,
);
