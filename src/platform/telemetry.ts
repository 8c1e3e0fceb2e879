// OpenTelemetry traces, exported over OTLP/HTTP (JSON) when the standard variables name a collector
// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT). Unset, nothing is installed: the API stays the
// no-op one, and every helper here checks `tracing` first and calls straight through, so a server without a collector
// allocates no span, installs no query hook and sets no header.
//
// The tracer provider, its context manager and its propagator are the process's (the OpenTelemetry API holds them
// globally): the first server or worker of a process that asks installs them, the last one to stop flushes and shuts
// them down.
//
// Spans (docs/guides/operate.md lists them with their attributes): the request (SERVER, named by its operation id),
// database queries (CLIENT, named by their summary: `SELECT api_keys`), jobs (INTERNAL); features make their own with
// inSpan and startClientSpan (the engine's provider calls, the webhooks' delivery attempts, workflow steps).

import {
  type Attributes,
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type { Sampler, TracerProvider } from '@opentelemetry/sdk-trace';
import {
  ATTR_CLIENT_ADDRESS,
  ATTR_DB_COLLECTION_NAME,
  ATTR_DB_OPERATION_NAME,
  ATTR_DB_QUERY_SUMMARY,
  ATTR_DB_QUERY_TEXT,
  ATTR_DB_SYSTEM_NAME,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVICE_NAME,
  ATTR_SERVICE_VERSION,
  ATTR_URL_PATH,
  ATTR_URL_SCHEME,
  ATTR_USER_AGENT_ORIGINAL,
} from '@opentelemetry/semantic-conventions';
import type { NextFunction, Request, Response } from 'express';
import type { LogEvent } from 'kysely';
import type { Logger } from 'pino';
import { operationTable } from '../../generated/operations.ts';
import { locals } from './context.ts';

/** Our own attributes. */
export const ATTR_REQUEST_ID = 'content_service.request_id';
export const ATTR_WORKSPACE_ID = 'content_service.workspace_id';
/** The W3C Trace Context Level 2 response header: the trace and the server span a request was answered in. */
export const TRACE_RESPONSE_HEADER = 'traceresponse';

const SERVICE_VERSION = '1.0.0';

/** True while a tracer provider is installed in this process: every helper below is a pass-through otherwise. */
let tracing = false;
let installed: { provider: TracerProvider; users: number } | undefined;
const tracer: Tracer = trace.getTracer('content-service', SERVICE_VERSION);

export function tracingEnabled(): boolean {
  return tracing;
}

/** Whether the environment asks for traces: an OTLP endpoint is set and the SDK is not disabled. */
export function tracesRequested(env: Readonly<Record<string, string | undefined>>): boolean {
  if (env.OTEL_SDK_DISABLED === 'true' || env.OTEL_TRACES_EXPORTER === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT);
}

export interface Telemetry {
  /** Exports the spans still queued and, for the process's last user, shuts the provider down. */
  shutdown(): Promise<void>;
}

const nothing: Telemetry = { shutdown: async () => {} };

/**
 * The SDK, its exporter and the rest, loaded only by a process that exports traces: some hundreds of modules that a
 * process without a collector would load for nothing at every start.
 */
async function loadSdk() {
  const [{ AsyncLocalStorageContextManager }, { W3CTraceContextPropagator }, { OTLPTraceExporter }, resources, sdk] =
    await Promise.all([
      import('@opentelemetry/context-async-hooks'),
      import('@opentelemetry/core'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/sdk-trace'),
    ]);
  return { AsyncLocalStorageContextManager, W3CTraceContextPropagator, OTLPTraceExporter, ...resources, ...sdk };
}

type Sdk = Awaited<ReturnType<typeof loadSdk>>;

/**
 * Installs tracing for this process when `env` asks for it (see tracesRequested); otherwise does nothing. The exporter
 * reads the rest of the standard variables itself (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION, their _TRACES_
 * forms), and the resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
 */
export async function startTelemetry(
  env: Readonly<Record<string, string | undefined>>,
  logger: Logger,
): Promise<Telemetry> {
  if (!tracesRequested(env)) return nothing;
  const sdk = await loadSdk();
  const {
    AsyncLocalStorageContextManager,
    BatchSpanProcessor,
    defaultResource,
    detectResources,
    envDetector,
    OTLPTraceExporter,
    resourceFromAttributes,
    TracerProvider,
    W3CTraceContextPropagator,
  } = sdk;
  // Another server of this process may have installed it meanwhile.
  if (!installed) {
    const detected = detectResources({ detectors: [envDetector] });
    const resource = defaultResource()
      .merge(
        resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'content-service', [ATTR_SERVICE_VERSION]: SERVICE_VERSION }),
      )
      .merge(detected);
    const processor = new BatchSpanProcessor({
      exporter: new OTLPTraceExporter(),
      scheduledDelayMillis: count(env, 'OTEL_BSP_SCHEDULE_DELAY'),
      exportTimeoutMillis: count(env, 'OTEL_BSP_EXPORT_TIMEOUT'),
      maxQueueSize: count(env, 'OTEL_BSP_MAX_QUEUE_SIZE'),
      maxExportBatchSize: count(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE'),
    });
    const provider = new TracerProvider({ resource, sampler: sampler(sdk, env), spanProcessors: [processor] });
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(provider);
    installed = { provider, users: 0 };
    tracing = true;
    logger.info(
      { endpoint: env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT },
      'traces are exported over OTLP/HTTP',
    );
  }
  const current = installed;
  current.users += 1;
  let stopped = false;
  return {
    async shutdown() {
      if (stopped) return;
      stopped = true;
      current.users -= 1;
      try {
        if (current.users > 0) return await current.provider.forceFlush();
        tracing = false;
        installed = undefined;
        await current.provider.shutdown();
        trace.disable();
        propagation.disable();
        context.disable();
      } catch (error) {
        logger.warn({ err: error }, 'the last spans could not be exported');
      }
    },
  };
}

/**
 * The batch processor's and the sampler's standard variables, which the version 3 SDK no longer reads itself. A value
 * that does not parse is ignored (the SDK's default applies), as the SDKs do.
 */
function count(env: Readonly<Record<string, string | undefined>>, name: string): number | undefined {
  const value = Number(env[name]);
  return env[name] && Number.isInteger(value) && value >= 0 ? value : undefined;
}

/** OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG; the default is `parentbased_always_on`. */
function sampler(sdk: Sdk, env: Readonly<Record<string, string | undefined>>): Sampler {
  const { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler } = sdk;
  const ratio = Number(env.OTEL_TRACES_SAMPLER_ARG ?? '1');
  const traceIdRatio = new TraceIdRatioBasedSampler(Number.isFinite(ratio) && ratio >= 0 && ratio <= 1 ? ratio : 1);
  switch (env.OTEL_TRACES_SAMPLER) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return traceIdRatio;
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: traceIdRatio });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/**
 * The request's server span: continues the caller's `traceparent`, is active for everything the request does, is
 * named by the operation once routing knows it, and ends when the answer does. The trace id goes in the access log
 * line and in the `traceresponse` header beside X-Request-Id.
 */
export function traceRequests() {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (!tracing) {
      next();
      return;
    }
    const parent = propagation.extract(context.active(), req.headers);
    const span = tracer.startSpan(
      req.method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          [ATTR_HTTP_REQUEST_METHOD]: req.method,
          [ATTR_URL_PATH]: req.path,
          [ATTR_URL_SCHEME]: req.protocol,
        },
      },
      parent,
    );
    const { traceId, spanId, traceFlags } = span.spanContext();
    const state = locals(res);
    state.traceId = traceId;
    res.setHeader(TRACE_RESPONSE_HEADER, `00-${traceId}-${spanId}-0${traceFlags.toString(16)}`);
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      const status = res.statusCode;
      const operationId = state.operationId;
      if (operationId) {
        span.updateName(operationId);
        span.setAttribute(ATTR_HTTP_ROUTE, operationTable[operationId].path);
      }
      const attributes: Attributes = { [ATTR_HTTP_RESPONSE_STATUS_CODE]: status, [ATTR_REQUEST_ID]: state.requestId };
      const host = req.hostname;
      if (host) attributes[ATTR_SERVER_ADDRESS] = host;
      const ip = req.ip ?? req.socket.remoteAddress;
      if (ip) attributes[ATTR_CLIENT_ADDRESS] = ip;
      const agent = req.get('user-agent');
      if (agent) attributes[ATTR_USER_AGENT_ORIGINAL] = agent.slice(0, 512);
      if (state.workspaceId) attributes[ATTR_WORKSPACE_ID] = state.workspaceId;
      if (state.errorCode) attributes['content_service.error_code'] = state.errorCode;
      // A server span is an error for our failures only; a 4xx is the client's (HTTP semantic conventions).
      if (status >= 500) {
        attributes[ATTR_ERROR_TYPE] = state.errorCode ?? String(status);
        span.setStatus({ code: SpanStatusCode.ERROR });
      } else if (!res.writableFinished) {
        attributes[ATTR_ERROR_TYPE] = 'aborted';
      }
      span.setAttributes(attributes);
      span.end();
    };
    res.once('finish', end);
    res.once('close', end);
    context.with(trace.setSpan(parent, span), next);
  };
}

/**
 * Runs `work` in a span of its own (a child of the active span, or a new trace in background work), ending it when the
 * work does; a failure is recorded on it and rethrown. Without tracing, `work` is simply called.
 */
export function inSpan<T>(
  name: string,
  kind: SpanKind,
  attributes: Attributes,
  work: (span: Span | undefined) => Promise<T>,
  options: { root?: boolean; parked?: (error: unknown) => boolean } = {},
): Promise<T> {
  if (!tracing) return work(undefined);
  // Background work starts a trace of its own (`root`): a job woken by a request's notification would otherwise be
  // filed under a request that has long been answered.
  return tracer.startActiveSpan(name, { kind, attributes, root: options.root ?? false }, async (span) => {
    try {
      return await work(span);
    } catch (error) {
      // Control flow that is not a failure (a workflow run parked until an approval or a retry) is noted, not failed.
      if (options.parked?.(error)) span.setAttribute('content_service.parked', true);
      else failSpan(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

export { SpanKind };

/**
 * Runs `work` outside any trace: a background loop woken by a request (a job or a delivery notified when it commits)
 * must not file its queries under that request.
 */
export function outsideTraces<T>(work: () => T): T {
  return tracing ? context.with(ROOT_CONTEXT, work) : work();
}

/**
 * Marks a span failed: `error.type` is the problem's code, or the error's name; the status message is that type and
 * the HTTP status the error carries (a provider's, a problem's), never the error's text: a provider's error quotes
 * the prompt it refused, a database's the values it could not store, and traces leave the tenant's keeping.
 */
export function failSpan(span: Span, error: unknown, type?: string): void {
  const code =
    type ??
    ((error as { code?: unknown })?.code && typeof (error as { code?: unknown }).code === 'string'
      ? String((error as { code: string }).code)
      : ((error as Error)?.name ?? 'Error'));
  const fields = error as { statusCode?: unknown; status?: unknown } | null;
  const status = typeof fields?.statusCode === 'number' ? fields.statusCode : fields?.status;
  span.setAttribute(ATTR_ERROR_TYPE, code);
  span.setStatus({
    code: SpanStatusCode.ERROR,
    message: typeof status === 'number' ? `${code} (HTTP ${status})` : code,
  });
}

/**
 * A Kysely log hook that makes a span of every query (the database's `db.system.name`, the query's summary as its
 * name and `db.query.summary`, the statement with its placeholders as `db.query.text`: never a bound value). It runs
 * when the query has ended, in the caller's context, so the span is the child of the request, job, delivery or step
 * that ran it. A query outside those (the workers' polls, migrations, retention, a request log batch) makes none: a
 * trace per poll would bury the traces worth reading. Undefined without tracing: no hook is installed.
 */
export function querySpans(system: 'sqlite' | 'postgresql'): ((event: LogEvent) => void) | undefined {
  if (!tracing) return undefined;
  return (event) => {
    if (!tracing || !trace.getSpan(context.active())?.isRecording()) return;
    const endTime = performance.timeOrigin + performance.now();
    const { summary, operation, collection } = summarize(event.query.sql);
    const attributes: Attributes = {
      [ATTR_DB_SYSTEM_NAME]: system,
      'db.system': system,
      [ATTR_DB_QUERY_SUMMARY]: summary,
      [ATTR_DB_QUERY_TEXT]: event.query.sql.slice(0, 2000),
    };
    if (operation) attributes[ATTR_DB_OPERATION_NAME] = operation;
    if (collection) attributes[ATTR_DB_COLLECTION_NAME] = collection;
    const span = tracer.startSpan(summary, {
      kind: SpanKind.CLIENT,
      startTime: endTime - event.queryDurationMillis,
      attributes,
    });
    if (event.level === 'error') failSpan(span, event.error);
    span.end(endTime);
  };
}

/** `SELECT api_keys`, `INSERT usage_records`, `BEGIN`: the statement's operation and its first table. */
export function summarize(statement: string): { summary: string; operation?: string; collection?: string } {
  const text = statement.trimStart();
  const operation = /^[a-z]+/i.exec(text)?.[0]?.toUpperCase();
  if (!operation) return { summary: 'query' };
  const target =
    operation === 'SELECT' || operation === 'DELETE' || operation === 'WITH'
      ? /\bfrom\s+"?([\w.]+)"?/i.exec(text)
      : operation === 'INSERT'
        ? /\binto\s+"?([\w.]+)"?/i.exec(text)
        : operation === 'UPDATE'
          ? /^update\s+"?([\w.]+)"?/i.exec(text)
          : null;
  const collection = target?.[1];
  return { summary: collection ? `${operation} ${collection}` : operation, operation, collection };
}

/**
 * A CLIENT span started now, a child of the active span (a call of another service that a feature makes: the engine's
 * provider calls), which its caller ends; undefined without tracing.
 */
export function startClientSpan(name: string, attributes: Attributes): Span | undefined {
  if (!tracing) return undefined;
  return tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes });
}
