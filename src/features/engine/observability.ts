// What the engine tells operators, declared by the engine and recorded through the platform's generic metrics and
// traces: its counters and histograms (engineMetrics, the engine's Feature.metrics: provider calls, their latency, time
// to first token, tokens and cost) and a provider call's span, after the GenAI semantic conventions
// (docs/guides/operate.md lists both).
import type { Attributes } from '@opentelemetry/api';
import { counter, histogram, type Metrics } from '../../platform/metrics.ts';
import { failSpan, startClientSpan } from '../../platform/telemetry.ts';
import type { TokenUsage } from './generation.ts';

/**
 * How a provider call ended: `ok`; `aborted` (its client went away); `rate_limited` (429), `unavailable` (5xx, 408,
 * unreachable), `timeout` (PROVIDER_TIMEOUT_MS) and `upstream_error` (another refusal) from the provider; `refused`
 * when the provider could not take the prompt (a local model's context).
 */
export type ProviderOutcome =
  | 'ok'
  | 'aborted'
  | 'rate_limited'
  | 'unavailable'
  | 'timeout'
  | 'upstream_error'
  | 'refused';

const providerCalls = counter({
  name: 'ai_provider_calls_total',
  help: 'Calls to AI providers (one per choice and per embedding batch), by catalogue model, provider and outcome.',
  labelNames: ['model', 'provider', 'outcome'],
});
const providerDuration = histogram({
  name: 'ai_provider_call_duration_seconds',
  help: 'Duration of AI provider calls, retries included, by catalogue model, provider and outcome.',
  labelNames: ['model', 'provider', 'outcome'],
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300],
});
const firstToken = histogram({
  name: 'ai_time_to_first_token_seconds',
  help: 'Time from the start of a streamed generation call to its first text or tool call, by catalogue model.',
  labelNames: ['model'],
  buckets: [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60],
});
const tokens = counter({
  name: 'ai_tokens_total',
  help: 'Tokens billed, by feature, catalogue model and kind (input includes cached_input).',
  labelNames: ['feature', 'model', 'kind'],
});
const cost = counter({
  name: 'ai_cost_usd_total',
  help: 'Cost of model calls in US dollars, priced from the catalogue, by feature and catalogue model.',
  labelNames: ['feature', 'model'],
});

/** The engine's counters and histograms (its Feature.metrics). */
export const engineMetrics = [providerCalls, providerDuration, firstToken, tokens, cost];

/** A provider call ended: counted by model, provider and outcome, with its duration. */
export function recordProviderCall(
  metrics: Metrics,
  model: string,
  provider: string,
  outcome: ProviderOutcome,
  seconds: number,
): void {
  metrics.count(providerCalls, { model, provider, outcome });
  metrics.observe(providerDuration, { model, provider, outcome }, seconds);
}

/** A streamed call's first text or tool call, `seconds` after its start. */
export function recordFirstToken(metrics: Metrics, model: string, seconds: number): void {
  metrics.observe(firstToken, { model }, seconds);
}

/** The tokens and cost of a call, by the feature it was made for. */
export function recordUsageMetrics(
  metrics: Metrics,
  feature: string,
  model: string,
  usage: TokenUsage,
  costUsd: number,
): void {
  if (usage.inputTokens > 0) metrics.count(tokens, { feature, model, kind: 'input' }, usage.inputTokens);
  if (usage.cachedInputTokens > 0)
    metrics.count(tokens, { feature, model, kind: 'cached_input' }, usage.cachedInputTokens);
  if (usage.outputTokens > 0) metrics.count(tokens, { feature, model, kind: 'output' }, usage.outputTokens);
  if (costUsd > 0) metrics.count(cost, { feature, model }, costUsd);
}

/** The GenAI conventions are still incubating: their names are copied here, as the package advises, not imported. */
export const GEN_AI = {
  operationName: 'gen_ai.operation.name',
  providerName: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  requestMaxTokens: 'gen_ai.request.max_tokens',
  requestTemperature: 'gen_ai.request.temperature',
  responseModel: 'gen_ai.response.model',
  responseFinishReasons: 'gen_ai.response.finish_reasons',
  inputTokens: 'gen_ai.usage.input_tokens',
  cachedInputTokens: 'gen_ai.usage.cache_read.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
} as const;
/** Our own attribute: no convention names a call's price. */
export const ATTR_COST_USD = 'content_service.cost_usd';

/** What a provider call reports on its span as it goes; every method is a no-op without tracing. */
export interface ProviderSpan {
  responseModel(model: string): void;
  finishReason(reason: string): void;
  fail(error: unknown, type: string): void;
  /** Ends the span with what the call used and cost (asked only when traced). */
  end(
    used: () => { usage: { inputTokens: number; cachedInputTokens: number; outputTokens: number }; costUsd: number },
  ): void;
}

const noProviderSpan: ProviderSpan = { responseModel() {}, finishReason() {}, fail() {}, end() {} };

/**
 * A provider call's span, after the GenAI semantic conventions (`chat gpt-4o-mini`, `embeddings text-embedding-3-small`):
 * the operation, the provider, the requested and the answering model, the finish reasons, the tokens, and the cost.
 */
export function providerSpan(call: {
  operation: 'chat' | 'embeddings';
  provider: string;
  model: string;
  maxTokens?: number;
  temperature?: number | null;
}): ProviderSpan {
  const attributes: Attributes = {
    [GEN_AI.operationName]: call.operation,
    [GEN_AI.providerName]: call.provider,
    [GEN_AI.requestModel]: call.model,
  };
  if (call.maxTokens != null) attributes[GEN_AI.requestMaxTokens] = call.maxTokens;
  if (call.temperature != null) attributes[GEN_AI.requestTemperature] = call.temperature;
  const span = startClientSpan(`${call.operation} ${call.model}`, attributes);
  if (!span) return noProviderSpan;
  const reasons: string[] = [];
  let answeredBy = call.model;
  let ended = false;
  return {
    responseModel(model) {
      answeredBy = model;
    },
    finishReason(reason) {
      reasons.push(reason);
    },
    fail: (error, type) => failSpan(span, error, type),
    end(used) {
      if (ended) return;
      ended = true;
      const { usage, costUsd } = used();
      span.setAttributes({
        [GEN_AI.responseModel]: answeredBy,
        [GEN_AI.inputTokens]: usage.inputTokens,
        [GEN_AI.cachedInputTokens]: usage.cachedInputTokens,
        [GEN_AI.outputTokens]: usage.outputTokens,
        [ATTR_COST_USD]: costUsd,
        ...(reasons.length > 0 ? { [GEN_AI.responseFinishReasons]: reasons } : {}),
      });
      span.end();
    },
  };
}
