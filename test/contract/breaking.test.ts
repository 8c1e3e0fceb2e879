// The guard that keeps v1 additive (`npm run check:breaking`, scripts/contract.ts): each kind of break made on a
// copy of the bundled documents is named, additive changes pass, and publishing records a break only on purpose.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, test } from 'vitest';
import { type Change, type ChangeKind, type Contract, compareContracts } from '../../scripts/contract-diff.ts';
import { projectRoot } from '../support/prism.ts';
import type { Json } from '../support/spec.ts';

const run = promisify(execFile);
const current: Contract = {
  openapi: JSON.parse(readFileSync(join(projectRoot, 'generated', 'openapi.json'), 'utf8')),
  asyncapi: JSON.parse(readFileSync(join(projectRoot, 'generated', 'asyncapi.json'), 'utf8')),
};
const copy = (): Contract => structuredClone(current);
/** Each change of a kind as `<where>: <what>`, one a place. */
const lines = (changes: Change[], kind: ChangeKind) =>
  changes.filter((c) => c.kind === kind).map((c) => `${c.where}: ${c.what}`);
const without = <T>(list: T[], value: T): T[] => list.filter((item) => item !== value);

describe('breaking changes are named, each kind', () => {
  const changed = copy();
  const { openapi, asyncapi } = changed;
  const schemas = openapi.components.schemas;
  // A removed operation, and a renamed path (its operations removed from the old path).
  delete openapi.paths['/v1/workspace'].get;
  openapi.paths['/v1/voices/{id}/verify'] = openapi.paths['/v1/voices/{id}/check'];
  delete openapi.paths['/v1/voices/{id}/check'];
  // A removed parameter, and a new required one.
  const listVoices = openapi.paths['/v1/voices'].get;
  listVoices.parameters = listVoices.parameters.filter((p: Json) => p.name !== 'status');
  openapi.paths['/v1/documents'].get.parameters.push({
    name: 'folder',
    in: 'query',
    required: true,
    schema: { type: 'string' },
  });
  // A removed response field (a rename is a removal and an addition).
  delete schemas.Voice.properties.style_summary;
  schemas.Voice.required = without(schemas.Voice.required, 'style_summary');
  // A new required request field.
  schemas.VoiceCreateRequest.required.push('description');
  // A narrowed request enum and a narrowed request type.
  schemas.ChatCompletionRequest.properties.reasoning_effort.enum = without(
    schemas.ChatCompletionRequest.properties.reasoning_effort.enum,
    'minimal',
  );
  schemas.ChatCompletionRequest.properties.temperature.maximum = 1;
  schemas.ChatCompletionRequest.properties.seed.type = 'integer';
  // A widened response enum that clients switch on, and a widened response type.
  schemas.VoiceStatus.enum.push('archived');
  schemas.Voice.properties.sample_word_count.type = ['integer', 'string'];
  // A removed event type, in both documents.
  delete openapi.webhooks['chat.thread.deleted'];
  delete asyncapi.operations.sendChatThreadDeleted;
  // A removed key of an event's data, in OpenAPI's webhooks and (apart) in an AsyncAPI message.
  delete schemas.ChatMessageCreatedEventData.properties.voice_id;
  schemas.ChatMessageCreatedEventData.required = without(schemas.ChatMessageCreatedEventData.required, 'voice_id');
  const trained = asyncapi.operations.sendVoiceTrained.messages[0].payload;
  const trainedData = trained.properties.data;
  delete trainedData.properties.banned_phrases;
  trainedData.required = without(trainedData.required, 'banned_phrases');
  // A removed header of a delivery, in both documents.
  const messageCreated = openapi.webhooks['chat.message.created'].post;
  messageCreated.parameters = messageCreated.parameters.filter(
    (p: Json) => !String(p.$ref).endsWith('/WebhookSignatureHeader'),
  );
  const messageHeaders = asyncapi.operations.sendChatMessageCreated.messages[0].headers;
  delete messageHeaders.properties['Service-Signature'];
  messageHeaders.required = without(messageHeaders.required, 'Service-Signature');
  // A changed constant of an answer: the type an event says it is.
  schemas.DocumentPublishedEvent.properties.type.const = 'document.made_public';
  // An enum where a request had none, a closed request body, a parameter made required.
  schemas.VoiceName.enum = ['House voice'];
  schemas.Metadata.additionalProperties = false;
  openapi.components.parameters.Limit.required = true;
  // A changed error code.
  schemas.ErrorCode.enum = schemas.ErrorCode.enum.map((code: string) =>
    code === 'conflict' ? 'state_conflict' : code,
  );

  const breaking = lines(compareContracts(current, changed), 'breaking');

  test.each([
    ['a removed operation', 'GET /v1/workspace: operation removed'],
    ['a renamed path', 'POST /v1/voices/{id}/check: operation removed'],
    ['a removed parameter', 'GET /v1/voices: query parameter `status` removed'],
    ['a new required parameter', 'GET /v1/documents: required query parameter `folder` added'],
    ['a removed response field', 'GET /v1/voices/{id}: response 200: property `style_summary` removed'],
    ['a new required request field', 'POST /v1/voices: request body: `description` made required'],
    [
      'a narrowed request enum',
      'POST /v1/chat/completions: request body: value `minimal` removed from `reasoning_effort`',
    ],
    [
      'a narrowed request type',
      'POST /v1/chat/completions: request body: maximum of `temperature` changed from 2 to 1',
    ],
    [
      'a narrowed request type (null no longer accepted)',
      'POST /v1/chat/completions: request body: type of `seed` changed from ["integer","null"] to `integer`',
    ],
    ['a widened response enum', 'GET /v1/voices/{id}: response 200: value `archived` added to `status`'],
    [
      'a widened response type',
      'GET /v1/voices/{id}: response 200: type of `sample_word_count` changed from `integer` to ["integer","string"]',
    ],
    ['a removed event type (OpenAPI webhooks)', 'webhook chat.thread.deleted: event removed'],
    [
      'a removed event type (AsyncAPI)',
      'AsyncAPI message chat.thread.deleted (sent to the Webhook endpoint): message removed',
    ],
    [
      "a removed key of an event's data (OpenAPI webhooks)",
      'webhook chat.message.created: payload: property `data.voice_id` removed',
    ],
    [
      "a removed key of an event's data (AsyncAPI)",
      'AsyncAPI message voice.trained (sent to the Webhook endpoint): payload: property `data.banned_phrases` removed',
    ],
    [
      'a removed header of a delivery (OpenAPI webhooks)',
      'webhook chat.message.created: header `Service-Signature` removed',
    ],
    [
      'a removed header of a delivery (AsyncAPI)',
      'AsyncAPI message chat.message.created (sent to the Webhook endpoint): header `Service-Signature` removed',
    ],
    [
      'a changed constant of an answer',
      'webhook document.published: payload: const of `type` changed from `document.published` to `document.made_public`',
    ],
    ['an enum where a request had none', 'POST /v1/voices: request body: enum of `name` added'],
    [
      'a request object closed to other fields',
      'POST /v1/voices: request body: additionalProperties of `metadata` changed from {',
    ],
    ['a parameter made required', 'GET /v1/voices: query parameter `limit` made required'],
    ['a changed error code', 'schema ErrorCode: [Removed] value `conflict`'],
  ])('%s', (_kind, expected) => {
    expect(
      breaking.some((line) => line.startsWith(expected)),
      `${expected}\n\nnamed:\n${breaking.join('\n')}`,
    ).toBe(true);
  });
});

describe('additive changes pass', () => {
  const changed = copy();
  const { openapi, asyncapi } = changed;
  const schemas = openapi.components.schemas;
  // A new operation.
  openapi.paths['/v1/voice-presets'] = {
    get: { ...structuredClone(openapi.paths['/v1/voices'].get), operationId: 'listVoicePresets' },
  };
  // A new optional request field, a new optional parameter, a widened request enum.
  schemas.VoiceCreateRequest.properties.tone = { type: 'string', description: 'A tone.' };
  openapi.paths['/v1/voices'].get.parameters.push({ name: 'language', in: 'query', schema: { type: 'string' } });
  schemas.ChatCompletionRequest.properties.reasoning_effort.enum.push('xhigh');
  // A widened request type, and a narrowed response type.
  schemas.ChatCompletionRequest.properties.seed.type = ['integer', 'string', 'null'];
  schemas.Voice.properties.sample_word_count.type = ['integer'];
  // A new response field.
  schemas.Voice.properties.usage_count = { type: 'integer' };
  schemas.Voice.required.push('usage_count');
  // A new event type, in both documents, and a new key of an event's data.
  openapi.webhooks['document.archived'] = structuredClone(openapi.webhooks['document.published']);
  schemas.EventType.enum.push('document.archived');
  asyncapi.operations.sendDocumentArchived = structuredClone(asyncapi.operations.sendDocumentPublished);
  asyncapi.operations.sendDocumentArchived.messages[0].name = 'document.archived';
  schemas.ChatMessageCreatedEventData.properties.tokens = { type: 'integer' };
  schemas.ChatMessageCreatedEventData.required.push('tokens');
  // A new error code, and the new event in the union of events that lists and deliveries answer with.
  schemas.ErrorCode.enum.push('voice_preset_not_found');
  schemas.Event.oneOf.push({ $ref: '#/components/schemas/DocumentPublishedEvent' });
  // A deprecation with a sunset date.
  Object.assign(openapi.paths['/v1/voices/{id}/check'].post, { deprecated: true, 'x-sunset': '2027-06-30' });

  const changes = compareContracts(current, changed);

  test('no change is breaking', () => {
    expect(lines(changes, 'breaking')).toEqual([]);
  });

  test.each([
    ['a new operation', 'GET /v1/voice-presets: operation added'],
    ['a new optional request field', 'POST /v1/voices: request body: property `tone` added'],
    ['a new optional parameter', 'GET /v1/voices: query parameter `language` added'],
    ['a new response field', 'GET /v1/voices/{id}: response 200: property `usage_count` added'],
    ['a new event type', 'webhook document.archived: event added'],
    ['a new event type (AsyncAPI)', 'AsyncAPI message document.archived (sent to the Webhook endpoint): message added'],
    ['a new key of an event', 'webhook chat.message.created: payload: property `data.tokens` added'],
    ['a new event type value', 'schema EventType: [Added] value `document.archived`'],
    ['a new error code', 'schema ErrorCode: [Added] value `voice_preset_not_found`'],
    ['a new branch of the event union', 'GET /v1/events/{id}: response 200: property the body added'],
  ])('%s is listed as added', (_kind, expected) => {
    expect(lines(changes, 'added')).toContain(expected);
  });

  test('a deprecation is listed as deprecated', () => {
    expect(lines(changes, 'deprecated')).toContain('POST /v1/voices/{id}/check: deprecated');
  });
});

describe('npm run check:breaking and contract:publish', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cs-contract-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, contract: Contract) => {
    mkdirSync(join(dir, name), { recursive: true });
    writeFileSync(join(dir, name, 'openapi.json'), JSON.stringify(contract.openapi));
    writeFileSync(join(dir, name, 'asyncapi.json'), JSON.stringify(contract.asyncapi));
    return join(dir, name);
  };
  const contract = (...args: string[]) =>
    run(process.execPath, [join(projectRoot, 'scripts', 'contract.ts'), ...args], { cwd: projectRoot }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (error: { code: number; stdout: string; stderr: string }) => ({
        code: error.code,
        stdout: error.stdout,
        stderr: error.stderr,
      }),
    );

  // Four processes, each comparing the whole contract: on a loaded two-core machine they can outlast the default timeout.
  test('a removed operation fails the check, is refused by publish, and is published only on purpose; a hand-copied edition is refused', {
    timeout: 120_000,
  }, async () => {
    const published = join(dir, 'published');
    const changelog = join(dir, 'changelog.md');
    const first = await contract(
      'publish',
      '--published',
      published,
      '--current',
      write('first', current),
      '--changelog',
      changelog,
      '--date',
      '2027-01-01',
    );
    expect(first.code, first.stderr).toBe(0);
    expect(readFileSync(changelog, 'utf8')).toMatch(
      /## 2027-01-01\n\nFirst published edition of v1 [^\n]+\n\n<!-- published sha256:[0-9a-f]{64} -->/,
    );
    const changed = copy();
    delete changed.openapi.paths['/v1/workspace'].get;
    const next = write('next', changed);
    const paths = ['--published', published, '--current', next, '--changelog', changelog];

    const check = await contract('check', ...paths);
    expect(check.code).toBe(1);
    expect(check.stderr).toContain('GET /v1/workspace: operation removed');
    expect(check.stderr).toContain('--breaking');

    const refused = await contract('publish', ...paths);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('GET /v1/workspace: operation removed');
    expect(JSON.parse(readFileSync(join(published, 'openapi.json'), 'utf8')).paths['/v1/workspace'].get).toBeDefined();

    // Copying the new documents into the published edition by hand does not pass for publishing them.
    const saved = readFileSync(join(published, 'openapi.json'));
    writeFileSync(join(published, 'openapi.json'), readFileSync(join(next, 'openapi.json')));
    const copied = await contract('check', ...paths);
    expect(copied.code).toBe(1);
    expect(copied.stderr).toContain('changes only through `npm run contract:publish`');
    writeFileSync(join(published, 'openapi.json'), saved);

    const reason = 'GET /v1/workspace is replaced by GET /v1/workspaces/{id}.';
    const note = 'Workspaces are read by id.';
    const accepted = await contract('publish', ...paths, '--breaking', reason, '--note', note, '--date', '2027-01-15');
    expect(accepted.code).toBe(0);
    const log = readFileSync(changelog, 'utf8');
    expect(log).toContain('# Changelog');
    expect(log).toContain(
      `## 2027-01-15\n\n${note}\n\n### Breaking\n\n${reason}\n\n- GET /v1/workspace: operation removed`,
    );
    expect(log.indexOf('## 2027-01-15')).toBeLessThan(log.indexOf('## 2027-01-01'));

    const after = await contract('check', ...paths);
    expect(after.code, after.stderr).toBe(0);
    // Nothing breaks any more: a --breaking would put a false reason into the changelog.
    const needless = await contract('publish', ...paths, '--breaking', 'again');
    expect(needless.code).toBe(1);
    expect(needless.stderr).toContain('nothing breaks');
  });
});
