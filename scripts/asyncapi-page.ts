// The AsyncAPI reference of the docs portal as static HTML: the document's servers, channels, operations and
// messages, each message with its headers, its payload's schema as a tree of fields and its examples. Descriptions
// are Markdown, rendered like the guides' (inline code as code, in the portal's fonts). Built at `npm run docs`, the
// page needs no script: it is a fraction of the size of the AsyncAPI React component with the document inlined, and
// shows at once.
import type { Marked } from 'marked';

// biome-ignore lint/suspicious/noExplicitAny: the bundled AsyncAPI document, read by the fields the page shows
type Json = any;

const escapeHtml = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');

/** The schema's type as a reader says it: `string`, `string | null`, `array of object`, `one of 2`. */
function typeOf(schema: Json): string {
  if (schema === true || schema === undefined) return 'any';
  if (schema.const !== undefined) return `${JSON.stringify(schema.const)}`;
  const variants = schema.oneOf ?? schema.anyOf;
  if (variants) return `one of ${variants.length}`;
  const type = Array.isArray(schema.type) ? schema.type.join(' | ') : (schema.type ?? 'any');
  if (type === 'array' && schema.items) return `array of ${typeOf(schema.items)}`;
  return type;
}

/** What the schema restricts beside its type: format, enum, pattern, lengths, bounds. */
function constraintsOf(schema: Json): string[] {
  const out: string[] = [];
  if (schema.format) out.push(`format ${schema.format}`);
  if (Array.isArray(schema.enum)) out.push(`one of ${schema.enum.map((v: unknown) => JSON.stringify(v)).join(', ')}`);
  if (schema.pattern) out.push(`pattern ${schema.pattern}`);
  if (schema.minLength !== undefined) out.push(`at least ${schema.minLength} characters`);
  if (schema.maxLength !== undefined) out.push(`at most ${schema.maxLength} characters`);
  if (schema.minimum !== undefined) out.push(`≥ ${schema.minimum}`);
  if (schema.maximum !== undefined) out.push(`≤ ${schema.maximum}`);
  if (schema.minItems !== undefined) out.push(`at least ${schema.minItems} items`);
  if (schema.maxItems !== undefined) out.push(`at most ${schema.maxItems} items`);
  return out;
}

export function renderAsyncApiPage(document: Json, options: { navigation: string; style: string; markdown: Marked }) {
  const block = (text: string | undefined) => (text ? options.markdown.parse(text, { async: false }) : '');
  const inline = (text: string | undefined) => (text ? options.markdown.parseInline(text, { async: false }) : '');

  /** A schema's fields as nested lists; a field with fields of its own opens on demand (details). */
  function fields(schema: Json, depth: number): string {
    if (!schema || typeof schema !== 'object' || depth > 8) return '';
    const rows: string[] = [];
    const required = new Set<string>(schema.required ?? []);
    for (const [name, property] of Object.entries<Json>(schema.properties ?? {}))
      rows.push(field(name, property, required.has(name), depth));
    const variants = schema.oneOf ?? schema.anyOf;
    if (variants)
      variants.forEach((variant: Json, index: number) => {
        rows.push(field(variant.title ?? `variant ${index + 1}`, variant, false, depth));
      });
    if (
      schema.type === 'array' &&
      schema.items &&
      (schema.items.properties || schema.items.oneOf || schema.items.anyOf)
    )
      rows.push(field('items', schema.items, false, depth));
    return rows.length > 0 ? `<ul class="fields">${rows.join('')}</ul>` : '';
  }

  function field(name: string, schema: Json, required: boolean, depth: number): string {
    const constraints = constraintsOf(schema);
    const head = `<code class="name">${escapeHtml(name)}</code> <span class="type">${escapeHtml(typeOf(schema))}</span>${
      required ? ' <span class="required">required</span>' : ''
    }${constraints.length > 0 ? ` <span class="constraints">${escapeHtml(constraints.join('; '))}</span>` : ''}`;
    const description = schema.description ? `<div class="description">${inline(schema.description)}</div>` : '';
    const children = fields(
      schema.type === 'array' && schema.items && !schema.properties ? schema.items : schema,
      depth + 1,
    );
    return children
      ? `<li><details${depth < 1 ? ' open' : ''}><summary>${head}</summary>${description}${children}</details></li>`
      : `<li>${head}${description}</li>`;
  }

  // Every message of every channel (the webhooks' events and the real-time channel's), each once, by name.
  const byName = new Map<string, Json>();
  for (const channel of Object.values<Json>(document.channels ?? {}))
    for (const message of Object.values<Json>(channel.messages ?? {}))
      if (!byName.has(message.name)) byName.set(message.name, message);
  for (const message of Object.values<Json>(document.components?.messages ?? {}))
    if (!byName.has(message.name)) byName.set(message.name, message);
  const messages = [...byName.entries()];
  const messageId = (message: Json) => `message-${String(message.name).replace(/[^A-Za-z0-9._-]/g, '-')}`;
  const messageLink = (message: Json) =>
    `<a href="#${messageId(message)}"><code>${escapeHtml(message.name)}</code></a>`;

  const channels = Object.entries<Json>(document.channels ?? {}).map(
    ([key, channel]) => `<section id="channel-${escapeHtml(key)}">
<h3>${escapeHtml(channel.title ?? key)}</h3>
${channel.address ? `<p>Address: <code>${escapeHtml(channel.address)}</code></p>` : ''}
${channel.summary ? `<p><strong>${inline(channel.summary)}</strong></p>` : ''}
${block(channel.description)}
${(channel.servers ?? [])
  .map(
    (server: Json) =>
      `<p>Server: <strong>${escapeHtml(server.title ?? server.host)}</strong> (<code>${escapeHtml(`${server.protocol}://${server.host}${server.pathname ?? ''}`)}</code>)</p>${block(server.description)}`,
  )
  .join('\n')}
<p>Messages: ${Object.values<Json>(channel.messages ?? {})
      .map(messageLink)
      .join(', ')}</p>
</section>`,
  );

  const operations = Object.entries<Json>(document.operations ?? {}).map(
    ([key, operation]) => `<section id="operation-${escapeHtml(key)}">
<h3>${escapeHtml(operation.title ?? key)} <span class="action">${escapeHtml(operation.action)}</span></h3>
${operation.summary ? `<p>${inline(operation.summary)}</p>` : ''}
${block(operation.description)}
<p>Channel: ${escapeHtml(operation.channel?.title ?? '')}. Messages: ${(operation.messages ?? []).map(messageLink).join(', ')}</p>
</section>`,
  );

  const messageSections = messages.map(
    ([, message]) => `<section id="${messageId(message)}" class="message">
<h3><code>${escapeHtml(message.name)}</code> ${message.title ? `· ${escapeHtml(message.title)}` : ''}</h3>
${message.summary ? `<p><strong>${inline(message.summary)}</strong></p>` : ''}
${block(message.description)}
${message.headers ? `<h4>Headers</h4>${fields(message.headers, 1)}` : ''}
<h4>Payload${message.contentType ? ` (<code>${escapeHtml(message.contentType)}</code>)` : ''}</h4>
${message.payload?.description ? `<div class="description">${block(message.payload.description)}</div>` : ''}
${fields(message.payload, 0)}
${(message.examples ?? [])
  .map(
    (example: Json) =>
      `<details class="example"><summary>Example: ${escapeHtml(example.summary ?? example.name ?? '')}</summary><pre><code>${escapeHtml(
        JSON.stringify({ headers: example.headers, payload: example.payload }, null, 2),
      )}</code></pre></details>`,
  )
  .join('\n')}
</section>`,
  );

  const contents = `<ul class="contents">
<li><a href="#channels">Channels</a></li>
<li><a href="#operations">Operations</a></li>
<li><a href="#messages">Messages</a>: ${messages.map(([, message]) => messageLink(message)).join(' ')}</li>
</ul>`;

  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(document.info?.title ?? 'AsyncAPI')} · content-service</title>
<style>${options.style}
ul.fields { list-style: none; padding-left: 1.1rem; border-left: 2px solid #e5e7eb; margin: 0.3rem 0; }
ul.fields li { margin: 0.3rem 0; }
ul.fields summary { cursor: pointer; }
.type { color: #6e7781; font-size: 0.9em; }
.required { color: #b42318; font-size: 0.85em; }
.constraints { color: #6e7781; font-size: 0.85em; }
.description { margin: 0.1rem 0 0.2rem; }
.description p { margin: 0.2rem 0; }
.action { font-size: 0.7em; text-transform: uppercase; border: 1px solid #d0d7de; border-radius: 1rem; padding: 0 0.5rem; }
section.message { border-top: 1px solid #d0d7de; }
</style>
</head>
<body>
${options.navigation}
<main id="asyncapi">
<h1>${escapeHtml(document.info?.title ?? '')} <span class="type">AsyncAPI ${escapeHtml(document.asyncapi)}, version ${escapeHtml(document.info?.version ?? '')}</span></h1>
${block(document.info?.description)}
${contents}
<h2 id="channels">Channels</h2>
${channels.join('\n')}
<h2 id="operations">Operations</h2>
${operations.join('\n')}
<h2 id="messages">Messages</h2>
${messageSections.join('\n')}
</main>
</body>
</html>
`;
}
