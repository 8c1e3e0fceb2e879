// Liveness, readiness and the contract itself: public, no key, no rate limit.
import type { components } from '../../../generated/openapi.ts';
import type { Handlers } from '../../../generated/operations.ts';
import type { RequestContext } from '../../platform/context.ts';
import { Problem, problemBody } from '../../platform/problems.ts';
import { openApiDocument } from '../../platform/spec.ts';

type Check = components['schemas']['ServiceReadinessCheck'];

const CHECK_TIMEOUT_MS = 2000;

async function check(name: string, probe: () => Promise<void>): Promise<Check> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      probe(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
      }),
    ]);
    return { name, status: 'ok', duration_ms: Math.round(performance.now() - started), detail: null };
  } catch (error) {
    return {
      name,
      status: 'failing',
      duration_ms: Math.round(performance.now() - started),
      detail: String((error as Error).message ?? error).slice(0, 500),
    };
  } finally {
    clearTimeout(timer);
  }
}

export const serviceHandlers = {
  async getHealth() {
    return { status: 200, contentType: 'application/json', body: { status: 'ok' } };
  },

  async getReadiness(_request, context) {
    const { platform } = context;
    const probes = [{ name: 'database', probe: () => platform.storage.ping() }];
    const store = platform.rateLimitStore;
    if (store.ping) probes.push({ name: 'rate_limit_store', probe: store.ping });
    for (const feature of platform.features) probes.push(...(feature.readiness?.(platform) ?? []));
    const checks = await Promise.all(probes.map(({ name, probe }) => check(name, probe)));
    if (checks.every((c) => c.status === 'ok'))
      return { status: 200, contentType: 'application/json', body: { status: 'ready', checks } };
    const failing = checks.filter((c) => c.status === 'failing').map((c) => c.name);
    const problem = new Problem(
      'service_unavailable',
      `The ${failing.join(' and ')} check failed; this process cannot serve requests.`,
    );
    return {
      status: 503,
      contentType: 'application/problem+json',
      body: { ...problemBody(problem, '/readyz', context.requestId), status: 503, code: 'service_unavailable', checks },
    };
  },

  async getOpenApiDocument() {
    return { status: 200, contentType: 'application/json', body: openApiDocument as never };
  },
} satisfies Pick<Handlers<RequestContext>, 'getHealth' | 'getReadiness' | 'getOpenApiDocument'>;
