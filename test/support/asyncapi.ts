// The AsyncAPI document as tests read it: bundled with every reference resolved, so a message's payload is a complete
// schema, and a check of an event against the message of its type.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { projectRoot } from './prism.ts';
import type { Json } from './spec.ts';

export const asyncapi: Json = JSON.parse(readFileSync(join(projectRoot, 'generated', 'asyncapi.json'), 'utf8'));
const asyncAjv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
addFormats.default(asyncAjv);

/** The AsyncAPI message whose payload is the event of this type (its `type` is a `const`). */
export function messageFor(type: string): Json | undefined {
  return Object.values<Json>(asyncapi.components.messages).find(
    (message) => message.payload?.properties?.type?.const === type,
  );
}

const payloadValidators = new Map<string, ValidateFunction>();

/** What breaks the event's AsyncAPI message (none: `[]`). */
export function asyncApiErrors(event: Json): string[] {
  const message = messageFor(event.type);
  if (!message) return [`no AsyncAPI message for ${event.type}`];
  let validate = payloadValidators.get(event.type);
  if (!validate) payloadValidators.set(event.type, (validate = asyncAjv.compile(message.payload)));
  if (validate(event)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
}
