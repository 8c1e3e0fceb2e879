const gc = (globalThis as any).gc as () => void;
const mb = (n: number) => Math.round(n / 1048576);
let last = 0;
const step = async (label: string, spec: string) => { await import(spec); gc(); gc(); const u = process.memoryUsage().heapUsed; console.log(label.padEnd(50), mb(u), '+' + mb(u - last)); last = u; };
gc(); last = process.memoryUsage().heapUsed; console.log('base', mb(last));
for (const [l, s] of [
  ['express', 'express'], ['kysely', 'kysely'], ['pino', 'pino'], ['pino-http','pino-http'], ['express-openapi-validator', 'express-openapi-validator'],
  ['zod', 'zod'], ['ai', 'ai'], ['@ai-sdk/openai', '@ai-sdk/openai'], ['@ai-sdk/anthropic', '@ai-sdk/anthropic'], ['@ai-sdk/google', '@ai-sdk/google'], ['@ai-sdk/mistral', '@ai-sdk/mistral'], ['@ai-sdk/openai-compatible', '@ai-sdk/openai-compatible'],
  ['gpt-tokenizer o200k', 'gpt-tokenizer/encoding/o200k_base'],
  ['spec', '/work/main/src/platform/spec.ts'], ['catalogue', '/work/main/src/features/engine/catalogue.ts'], ['config', '/work/main/src/config.ts'],
  ['openworkflow', 'openworkflow'], ['yjs', 'yjs'], ['@hocuspocus/server', '@hocuspocus/server'], ['rate-limiter-flexible','rate-limiter-flexible'], ['ioredis','ioredis'], ['pg','pg'],
  ['validation', '/work/main/src/platform/validation.ts'],
  ...['workspace','webhooks','engine','chat','voices','policy','documents','knowledge','chatbots','workflows','dashboard'].map((f) => [f, `/work/main/src/features/${f}/index.ts`]),
] as Array<[string, string]>) { try { await step(l, s); } catch (e) { console.log(l, 'ERR', (e as Error).message.slice(0, 80)); } }
console.log('rss', mb(process.memoryUsage().rss));
