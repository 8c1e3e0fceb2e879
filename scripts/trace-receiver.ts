// `npx node scripts/trace-receiver.ts [port]`: a minimal OTLP/HTTP receiver for looking at a server's traces without a
// collector. It listens on 127.0.0.1 (port 4318, OTLP/HTTP's, unless given), takes what the server's exporter posts
// to /v1/traces (OTLP/JSON, the exporter's encoding) and prints each trace as a tree: the span's name, its duration
// and the attributes worth reading (the operation's status, the query, the model, tokens and cost). Start the server
// with OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318. For real use, send traces to a collector, Jaeger or Tempo.
import { createServer } from 'node:http';

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes?: Array<{ key: string; value: OtlpValue }>;
  status?: { code?: number };
}

const SHOWN = [
  'http.response.status_code',
  'content_service.request_id',
  'db.query.summary',
  'gen_ai.request.model',
  'gen_ai.response.model',
  'gen_ai.usage.input_tokens',
  'gen_ai.usage.output_tokens',
  'gen_ai.response.finish_reasons',
  'content_service.cost_usd',
  'content_service.job.kind',
  'content_service.workflow_step.status',
  'error.type',
];

/** An OTLP/JSON attribute value (AnyValue): one of its fields is set. */
interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
}

function plain(value: OtlpValue): unknown {
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(plain);
  return value.stringValue ?? value.intValue ?? value.doubleValue ?? value.boolValue;
}

function print(spans: Span[]): void {
  const byTrace = Map.groupBy(spans, (span) => span.traceId);
  for (const [traceId, members] of byTrace) {
    const ids = new Set(members.map((span) => span.spanId));
    const children = Map.groupBy(members, (span) =>
      span.parentSpanId && ids.has(span.parentSpanId) ? span.parentSpanId : 'root',
    );
    process.stdout.write(`trace ${traceId}\n`);
    const walk = (span: Span, depth: number) => {
      const ms = (Number(BigInt(span.endTimeUnixNano) - BigInt(span.startTimeUnixNano)) / 1e6).toFixed(1);
      const attributes = Object.fromEntries((span.attributes ?? []).map(({ key, value }) => [key, plain(value)]));
      const shown = SHOWN.filter(
        (key) => key in attributes && !(key === 'db.query.summary' && attributes[key] === span.name),
      ).map((key) => `${key}=${JSON.stringify(attributes[key])}`);
      process.stdout.write(
        `${'  '.repeat(depth + 1)}${span.name} ${ms} ms${span.status?.code === 2 ? ' ERROR' : ''}${shown.length ? `  ${shown.join(' ')}` : ''}\n`,
      );
      for (const child of children.get(span.spanId) ?? []) walk(child, depth + 1);
    };
    for (const root of children.get('root') ?? []) walk(root, 0);
  }
}

const port = Number(process.argv[2] ?? 4318);
createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    if (req.method === 'POST' && req.url === '/v1/traces') {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: Array<{ scopeSpans: Array<{ spans: Span[] }> }>;
      };
      print(body.resourceSpans.flatMap((resource) => resource.scopeSpans.flatMap((scope) => scope.spans)));
    }
    res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
  });
}).listen(port, '127.0.0.1', () => process.stdout.write(`OTLP/HTTP receiver on http://127.0.0.1:${port}/v1/traces\n`));
