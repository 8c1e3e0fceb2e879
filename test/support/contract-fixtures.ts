// What the contract suite creates on a real server before the success case of an implemented operation, so that
// the request really succeeds on an empty workspace. An operation without a fixture is called with the spec's
// example request (exampleRequest), which must then succeed as it is.
//
// Fixtures go through the HTTP API only (no database access), so they work against an external server
// (CONTRACT_BASE_URL) as well as against the one of the global setup.
import { readFileSync } from 'node:fs';
import type { components } from '../../generated/openapi.ts';
import type { OperationId } from '../../generated/operations.ts';
import type { notImplemented } from '../../src/handlers.ts';
import { type ExampleRequest, exampleRequest } from './spec.ts';

type Schemas = components['schemas'];
type JsonObject = Record<string, unknown>;

export type ImplementedOperationId = Exclude<OperationId, (typeof notImplemented)[number]>;

export interface FixtureTarget {
  baseUrl: string;
  /** An owner key of the target's workspace. */
  apiKey: string;
  /** Sessions of the key's member, where the suite started the server itself (global-setup.ts). */
  sessions?: { revocable: { id: string } };
}

/** The parts of the example request a fixture replaces. */
export type RequestOverrides = Partial<Pick<ExampleRequest, 'path' | 'query' | 'body'>>;

export type Fixture = (target: FixtureTarget) => Promise<RequestOverrides>;

/** The resources the fixtures created (`/v1/members/usr_…`), removed by removeFixtureResources. */
const createdByFixtures: string[] = [];

let counter = 0;
/** Unique within the run and across runs against one long-lived external server. */
export function unique(): string {
  return `${Date.now().toString(36)}${process.pid.toString(36)}${(counter++).toString(36)}`;
}

async function post<T extends object = JsonObject>(
  target: FixtureTarget,
  path: string,
  body: unknown,
): Promise<T & { id: string }> {
  const response = await fetch(target.baseUrl + path, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${target.apiKey}`,
      'Content-Type': 'application/json',
      Accept: 'application/json',
    },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status !== 201) throw new Error(`fixture POST ${path} answered ${response.status}: ${text}`);
  const created = JSON.parse(text) as T & { id: string };
  createdByFixtures.push(`${path}/${created.id}`);
  return created;
}

/** The spec's example member with an email no other member of the workspace has. */
function newMemberBody(): Record<string, unknown> {
  const example = exampleRequest('addMember').body as Record<string, unknown>;
  return { ...example, email: `contract-${unique()}@test.example` };
}

/** A fresh key of the spec's example (an editor key): rotating or revoking it touches nothing else. */
async function freshKey(target: FixtureTarget): Promise<RequestOverrides> {
  const example = exampleRequest('createApiKey').body as Record<string, unknown>;
  const key = await post(target, '/v1/api-keys', { ...example, name: `${String(example.name)} ${unique()}` });
  return { path: { id: String(key.id) } };
}

/** A fresh directory token (the example's directory): reading, rotating or revoking it touches nothing else. */
async function freshDirectoryToken(target: FixtureTarget): Promise<RequestOverrides> {
  const example = exampleRequest('createDirectoryToken').body as Record<string, unknown>;
  const token = await post(target, '/v1/directory-tokens', { ...example, name: `${String(example.name)} ${unique()}` });
  return { path: { id: String(token.id) } };
}

/**
 * A SAML connection whose identity provider is described inline (the single sign-on tests' test certificate), so
 * that creating it reads nothing from the network, unlike the examples' Okta and Entra ID.
 */
function newSsoConnectionBody(): Record<string, unknown> {
  const cert = readFileSync(new URL('../sso/fixtures/idp-cert.pem', import.meta.url), 'utf8')
    .replace(/-----[A-Z ]+-----/g, '')
    .replace(/\s+/g, '');
  const metadata = `<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="https://idp.test.example/saml/metadata"><md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"><md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${cert}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor><md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.test.example/saml/sso"/></md:IDPSSODescriptor></md:EntityDescriptor>`;
  return { name: `Contract SAML ${unique()}`, protocol: 'saml', saml: { idp_metadata_xml: metadata } };
}

/** A fresh single sign-on connection: reading, updating or deleting it touches nothing else. */
async function freshSsoConnection(target: FixtureTarget): Promise<RequestOverrides> {
  const connection = await post(target, '/v1/sso-connections', newSsoConnectionBody());
  return { path: { id: String(connection.id) } };
}

/** A fresh member (the example's role, a unique email): reading or removing it touches nothing else. */
async function freshMember(target: FixtureTarget): Promise<RequestOverrides> {
  const member = await post(target, '/v1/members', newMemberBody());
  return { path: { id: String(member.id) } };
}

async function get<T extends object = JsonObject>(target: FixtureTarget, path: string): Promise<T> {
  const response = await fetch(target.baseUrl + path, {
    headers: { Authorization: `Bearer ${target.apiKey}`, Accept: 'application/json' },
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`fixture GET ${path} answered ${response.status}: ${text}`);
  return JSON.parse(text) as T;
}

/**
 * The spec's example endpoint, disabled and pointing at a closed loopback port: nothing is ever delivered to it
 * (a test event, sent even to a disabled endpoint, is refused at once). The target must allow loopback URLs
 * (WEBHOOKS_ALLOW_LOOPBACK=true, as the global setup's server has); the example's own host does not resolve.
 */
function newEndpointBody(): Record<string, unknown> {
  const example = exampleRequest('createWebhookEndpoint').body as Record<string, unknown>;
  return { ...example, url: `http://127.0.0.1:9/contract-${unique()}`, enabled: false };
}

async function freshEndpoint(target: FixtureTarget): Promise<RequestOverrides> {
  const endpoint = await post(target, '/v1/webhooks/endpoints', newEndpointBody());
  return { path: { id: String(endpoint.id) } };
}

/** A new event of the workspace (adding a member records one) and its id. */
async function freshEvent(target: FixtureTarget): Promise<string> {
  const member = await post(target, '/v1/members', newMemberBody());
  const events = await get(target, '/v1/events?type=workspace.member.added&limit=20');
  const event = (events.data as Array<{ id: string; data: { user_id: string } }>).find(
    (e) => e.data.user_id === member.id,
  );
  if (!event) throw new Error(`fixture: no workspace.member.added event for ${String(member.id)}`);
  return event.id;
}

/**
 * The spec's example project with a name no other project of the workspace has (names are unique), without its
 * default voice (it does not exist on the target).
 */
function newProjectBody(): Record<string, unknown> {
  const { default_voice_id: _voice, ...example } = exampleRequest('createProject').body as Record<string, unknown>;
  return { ...example, name: `${String(example.name)} ${unique()}` };
}

/** A monthly limit on a fresh key: each scope has one limit per period, and a fresh key's calls are nobody else's. */
async function newSpendLimitBody(target: FixtureTarget): Promise<Record<string, unknown>> {
  const { path } = await freshKey(target);
  return {
    ...(exampleRequest('createSpendLimit').body as Record<string, unknown>),
    scope: { type: 'api_key', id: path!.id },
  };
}

async function freshSpendLimit(target: FixtureTarget): Promise<RequestOverrides> {
  const limit = await post(target, '/v1/spend-limits', await newSpendLimitBody(target));
  return { path: { id: String(limit.id) } };
}

async function freshProject(target: FixtureTarget): Promise<RequestOverrides> {
  const project = await post(target, '/v1/projects', newProjectBody());
  return { path: { id: String(project.id) } };
}

/** The spec's example document without its project and voice (they do not exist on the target). */
function newDocumentBody(): Record<string, unknown> {
  const {
    project_id: _project,
    voice_id: _voice,
    ...example
  } = exampleRequest('createDocument').body as Record<string, unknown>;
  return example;
}

async function freshDocument(target: FixtureTarget): Promise<Schemas['Document']> {
  return post<Schemas['Document']>(target, '/v1/documents', newDocumentBody());
}

async function freshDocumentPath(target: FixtureTarget): Promise<RequestOverrides> {
  return { path: { id: String((await freshDocument(target)).id) } };
}

async function freshKnowledgeBase(target: FixtureTarget): Promise<RequestOverrides> {
  const base = await post(target, '/v1/knowledge-bases', { name: `Contract ${unique()}` });
  return { path: { id: String(base.id) } };
}

async function freshKnowledgeSource(target: FixtureTarget): Promise<RequestOverrides> {
  const { path } = await freshKnowledgeBase(target);
  const response = await fetch(`${target.baseUrl}/v1/knowledge-bases/${String(path!.id)}/sources`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${target.apiKey}`,
      'Content-Type': 'application/json',
      Accept: 'application/json',
    },
    body: JSON.stringify({ type: 'text', title: 'Refunds', content: 'Refunds are paid within 14 days of a return.' }),
  });
  if (response.status !== 202)
    throw new Error(`fixture: adding a source answered ${response.status}: ${await response.text()}`);
  return { path: { id: String(path!.id), source_id: String(((await response.json()) as { id: string }).id) } };
}

async function freshDocumentVersion(target: FixtureTarget): Promise<RequestOverrides> {
  const document = await freshDocument(target);
  return { path: { id: String(document.id), version_id: String(document.current_version.id) } };
}

/**
 * The spec's example compliance rule, disabled and for the whole workspace (the example's project does not exist on
 * the target): a fixture's rule never checks the outputs of the other tests, which run concurrently. Its name
 * ends with the fixture marker, by which removeFixtureResources finds it.
 */
function newComplianceRuleBody(): Record<string, unknown> {
  const { project_id: _project, ...example } = exampleRequest('createComplianceRule').body as Record<string, unknown>;
  return { ...example, name: `${String(example.name)} contract-${unique()}`, enabled: false };
}

async function freshComplianceRule(target: FixtureTarget): Promise<RequestOverrides> {
  const rule = await post(target, '/v1/compliance-rules', newComplianceRuleBody());
  return { path: { id: String(rule.id) } };
}

/** A voice trained from the spec's example sample, once it is ready (training is a background job of seconds). */
async function freshVoice(target: FixtureTarget): Promise<RequestOverrides> {
  const response = await fetch(`${target.baseUrl}/v1/voices`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${target.apiKey}`,
      'Content-Type': 'application/json',
      Accept: 'application/json',
    },
    body: JSON.stringify(exampleRequest('createVoice').body),
  });
  const text = await response.text();
  if (response.status !== 202) throw new Error(`fixture POST /v1/voices answered ${response.status}: ${text}`);
  const id = String((JSON.parse(text) as { id: string }).id);
  createdByFixtures.push(`/v1/voices/${id}`);
  for (let attempt = 0; attempt < 200; attempt++) {
    const voice = (await (
      await fetch(`${target.baseUrl}/v1/voices/${id}`, { headers: { Authorization: `Bearer ${target.apiKey}` } })
    ).json()) as { status: string };
    if (voice.status === 'ready') return { path: { id } };
    if (voice.status === 'failed')
      throw new Error(`fixture: the example voice failed training: ${JSON.stringify(voice)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('fixture: the example voice did not finish training in 20 s');
}

/** The spec's example completion on a sandbox model, which every server can call (no provider key needed). */
function sandboxCompletionBody(): Record<string, unknown> {
  return { ...(exampleRequest('createChatCompletion').body as Record<string, unknown>), model: 'sandbox-writer' };
}

/** A new saved thread (a sandbox completion with `store: true`). */
async function freshThread(target: FixtureTarget): Promise<RequestOverrides> {
  const response = await fetch(`${target.baseUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${target.apiKey}`,
      'Content-Type': 'application/json',
      Accept: 'application/json',
    },
    body: JSON.stringify({ ...sandboxCompletionBody(), store: true, metadata: { source: 'contract-fixture' } }),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`fixture: a stored completion answered ${response.status}: ${text}`);
  const threadId = String((JSON.parse(text) as { thread_id: string }).thread_id);
  createdByFixtures.push(`/v1/chat/threads/${threadId}`);
  return { path: { id: threadId } };
}

/** A new stored response (a sandbox response; its thread is removed with the fixtures). */
async function freshResponse(target: FixtureTarget): Promise<RequestOverrides> {
  const response = await fetch(`${target.baseUrl}/v1/responses`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${target.apiKey}`,
      'Content-Type': 'application/json',
      Accept: 'application/json',
    },
    body: JSON.stringify({
      ...(exampleRequest('createResponse').body as Record<string, unknown>),
      model: 'sandbox-writer',
      metadata: { source: 'contract-fixture' },
    }),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`fixture: a stored response answered ${response.status}: ${text}`);
  const { id, thread_id: threadId } = JSON.parse(text) as { id: string; thread_id: string };
  createdByFixtures.push(`/v1/chat/threads/${threadId}`);
  return { path: { id } };
}

/** A workflow on the sandbox model that waits for a review: its runs reach `awaiting_approval` at step `review`. */
function newWorkflowBody(): Record<string, unknown> {
  return {
    name: `Contract workflow ${unique()}`,
    inputs: { topic: { required: true } },
    steps: [
      {
        id: 'draft',
        type: 'generate',
        model: 'sandbox-writer',
        prompt: 'Write two sentences about {{ inputs.topic }}.',
      },
      { id: 'review', type: 'approval', instructions: 'Check the draft.', show: '{{ steps.draft.output.text }}' },
    ],
    outputs: { text: '{{ steps.draft.output.text }}' },
  };
}

async function freshWorkflowPath(target: FixtureTarget): Promise<RequestOverrides> {
  return { path: { id: String((await post(target, '/v1/workflows', newWorkflowBody())).id) } };
}

/** A run of a fresh workflow; with `awaiting`, once it waits at its review (runs are carried out in the background). */
async function freshRunPath(target: FixtureTarget, awaiting = false): Promise<RequestOverrides> {
  const workflowId = String((await post(target, '/v1/workflows', newWorkflowBody())).id);
  const response = await fetch(`${target.baseUrl}/v1/workflows/${workflowId}/runs`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${target.apiKey}`,
      'Content-Type': 'application/json',
      Accept: 'application/json',
    },
    body: JSON.stringify({ inputs: { topic: 'release notes' } }),
  });
  const text = await response.text();
  if (response.status !== 202) throw new Error(`fixture: starting a run answered ${response.status}: ${text}`);
  const runId = String((JSON.parse(text) as { id: string }).id);
  for (let i = 0; awaiting && i < 300; i++) {
    const run = await get(target, `/v1/workflows/${workflowId}/runs/${runId}`);
    if (run.status === 'awaiting_approval') break;
    if (i === 299) throw new Error(`fixture: the run ${runId} did not reach its review (${String(run.status)})`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { path: { id: workflowId, run_id: runId, step_id: 'review' } };
}

/** The origin the contract suite's chatbots allow (the widget's operations are called from it). */
export const CONTRACT_ORIGIN = 'https://contract.test.example';

function newChatbotBody(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: `Contract ${unique()}`,
    model: 'sandbox-writer',
    instructions: 'Made by the contract tests.',
    allowed_origins: [CONTRACT_ORIGIN],
    ...extra,
  };
}

async function freshChatbot(target: FixtureTarget, extra: Record<string, unknown> = {}): Promise<Schemas['Chatbot']> {
  return post<Schemas['Chatbot']>(target, '/v1/chatbots', newChatbotBody(extra));
}

async function freshChatbotPath(target: FixtureTarget): Promise<RequestOverrides> {
  return { path: { id: String((await freshChatbot(target)).id) } };
}

/** A chatbot's conversation with one exchange (server-side), or the reply of a message that escalated it. */
async function freshConversation(
  target: FixtureTarget,
  content = 'Hello, where is my parcel?',
  extra: Record<string, unknown> = {},
): Promise<{ id: string; conversationId: string }> {
  const chatbot = await freshChatbot(target, extra);
  const response = await fetch(`${target.baseUrl}/v1/chatbots/${String(chatbot.id)}/messages`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${target.apiKey}`,
      'Content-Type': 'application/json',
      Accept: 'application/json',
    },
    body: JSON.stringify({ content }),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`fixture: a chatbot message answered ${response.status}: ${text}`);
  return {
    id: String(chatbot.id),
    conversationId: String((JSON.parse(text) as { conversation_id: string }).conversation_id),
  };
}

async function freshConversationPath(target: FixtureTarget): Promise<RequestOverrides> {
  const { id, conversationId } = await freshConversation(target);
  return { path: { id, conversation_id: conversationId } };
}

const embedKeys = new Map<string, Promise<string>>();
/** The headers of the widget's operations on the target: the embed key of a chatbot made once per target, and its allowed origin. */
export async function embedHeaders(target: FixtureTarget): Promise<Record<string, string>> {
  let key = embedKeys.get(target.baseUrl);
  if (!key) embedKeys.set(target.baseUrl, (key = freshChatbot(target).then((chatbot) => String(chatbot.embed.key))));
  return { 'X-Embed-Key': await key, Origin: CONTRACT_ORIGIN };
}

// createApiKey has none: key names need not be unique, so the spec's example succeeds as it is.
export const contractFixtures: Partial<Record<ImplementedOperationId, Fixture>> = {
  getApiKey: freshKey,
  rotateApiKey: freshKey,
  revokeApiKey: freshKey,
  // A session of the owner key's member, which the key may end (global-setup.ts signs it in).
  revokeSession: async (target) => {
    if (!target.sessions)
      throw new Error('revokeSession needs a session of the target, which only the suite’s own server has');
    return { path: { id: target.sessions.revocable.id } };
  },
  getDirectoryToken: freshDirectoryToken,
  rotateDirectoryToken: freshDirectoryToken,
  revokeDirectoryToken: freshDirectoryToken,
  createSsoConnection: async () => ({ body: newSsoConnectionBody() }),
  getSsoConnection: freshSsoConnection,
  updateSsoConnection: freshSsoConnection,
  deleteSsoConnection: freshSsoConnection,
  addMember: async () => ({ body: newMemberBody() }),
  getMember: freshMember,
  removeMember: freshMember,
  createWebhookEndpoint: async () => ({ body: newEndpointBody() }),
  getWebhookEndpoint: freshEndpoint,
  updateWebhookEndpoint: freshEndpoint,
  deleteWebhookEndpoint: freshEndpoint,
  rotateWebhookEndpointSecret: freshEndpoint,
  sendWebhookEndpointTest: freshEndpoint,
  getWebhookDelivery: async (target) => {
    const { path } = await freshEndpoint(target);
    const delivery = await fetch(`${target.baseUrl}/v1/webhooks/endpoints/${String(path!.id)}/test`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${target.apiKey}` },
    });
    if (delivery.status !== 202)
      throw new Error(`fixture: test delivery answered ${delivery.status}: ${await delivery.text()}`);
    return { path: { id: String(((await delivery.json()) as { id: string }).id) } };
  },
  createChatCompletion: async () => ({ body: sandboxCompletionBody() }),
  getChatThread: freshThread,
  deleteChatThread: freshThread,
  createResponse: async () => ({
    body: {
      ...(exampleRequest('createResponse').body as Record<string, unknown>),
      model: 'sandbox-writer',
      store: false,
    },
  }),
  getResponse: freshResponse,
  deleteResponse: freshResponse,
  listResponseInputItems: freshResponse,
  createProject: async () => ({ body: newProjectBody() }),
  createSpendLimit: async (target) => ({ body: await newSpendLimitBody(target) }),
  getSpendLimit: freshSpendLimit,
  updateSpendLimit: freshSpendLimit,
  deleteSpendLimit: freshSpendLimit,
  getProject: freshProject,
  updateProject: async (target) => {
    const example = exampleRequest('updateProject').body as Record<string, unknown>;
    return { ...(await freshProject(target)), body: { ...example, name: `${String(example.name)} ${unique()}` } };
  },
  deleteProject: freshProject,
  getVoice: freshVoice,
  updateVoice: freshVoice,
  deleteVoice: freshVoice,
  checkVoice: freshVoice,
  createComplianceRule: async () => ({ body: newComplianceRuleBody() }),
  getComplianceRule: freshComplianceRule,
  updateComplianceRule: async (target) => ({
    ...(await freshComplianceRule(target)),
    body: { ...(exampleRequest('updateComplianceRule').body as Record<string, unknown>), enabled: false },
  }),
  deleteComplianceRule: freshComplianceRule,
  createDocument: async () => ({ body: newDocumentBody() }),
  getDocument: freshDocumentPath,
  updateDocument: async (target) => ({
    ...(await freshDocumentPath(target)),
    body: { title: `Contract ${unique()}`, content: '# Updated\n\nBy the contract test.' },
  }),
  deleteDocument: freshDocumentPath,
  createDocumentEditToken: async (target) => ({ ...(await freshDocumentPath(target)), body: { ttl_seconds: 600 } }),
  publishDocument: freshDocumentPath,
  unpublishDocument: freshDocumentPath,
  listDocumentVersions: freshDocumentPath,
  // The sandbox model: the example's model needs a provider key the target may not have.
  runDocumentCommand: async (target) => ({
    ...(await freshDocumentPath(target)),
    body: { command: 'summarize', model: 'sandbox-writer', length: 'short' },
  }),
  getDocumentVersion: freshDocumentVersion,
  restoreDocumentVersion: freshDocumentVersion,
  getPublicDocument: async (target) => {
    const { path } = await freshDocumentPath(target);
    const published = await fetch(`${target.baseUrl}/v1/documents/${String(path!.id)}/publish`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${target.apiKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ visibility: 'public' }),
    });
    if (published.status !== 200)
      throw new Error(`fixture: publishing answered ${published.status}: ${await published.text()}`);
    return { path };
  },
  createKnowledgeBase: async () => ({
    body: { name: `Contract ${unique()}`, description: 'Made by the contract tests.' },
  }),
  getKnowledgeBase: freshKnowledgeBase,
  deleteKnowledgeBase: freshKnowledgeBase,
  listKnowledgeBaseSources: freshKnowledgeBase,
  // A text source: the example's URL does not resolve on the target's network.
  addKnowledgeBaseSource: async (target) => ({
    ...(await freshKnowledgeBase(target)),
    body: { type: 'text', title: 'Shipping', content: 'Orders ship within two working days.' },
  }),
  getKnowledgeBaseSource: freshKnowledgeSource,
  removeKnowledgeBaseSource: freshKnowledgeSource,
  searchKnowledgeBase: async (target) => ({
    ...(await freshKnowledgeBase(target)),
    body: { query: 'How long do refunds take?', top_k: 5 },
  }),
  createWorkflow: async () => ({ body: newWorkflowBody() }),
  getWorkflow: freshWorkflowPath,
  replaceWorkflow: async (target) => ({ ...(await freshWorkflowPath(target)), body: newWorkflowBody() }),
  deleteWorkflow: freshWorkflowPath,
  listWorkflowRuns: freshWorkflowPath,
  startWorkflowRun: async (target) => ({
    ...(await freshWorkflowPath(target)),
    body: { inputs: { topic: 'release notes' } },
  }),
  getWorkflowRun: (target) => freshRunPath(target),
  cancelWorkflowRun: (target) => freshRunPath(target),
  approveWorkflowStep: (target) => freshRunPath(target, true),
  rejectWorkflowStep: (target) => freshRunPath(target, true),
  createChatbot: async () => ({ body: newChatbotBody() }),
  getChatbot: freshChatbotPath,
  updateChatbot: freshChatbotPath,
  deleteChatbot: freshChatbotPath,
  rotateChatbotEmbedKey: freshChatbotPath,
  sendChatbotMessage: async (target) => ({
    ...(await freshChatbotPath(target)),
    body: exampleRequest('sendChatbotMessage').body,
  }),
  listChatbotConversations: freshChatbotPath,
  getChatbotConversation: freshConversationPath,
  escalateChatbotConversation: freshConversationPath,
  recordChatbotConversationCsat: freshConversationPath,
  getPublicTranscript: async (target) => {
    const { conversationId } = await freshConversation(target, 'I want a refund', {
      escalation: { mode: 'webhook', keywords: ['refund'] },
    });
    const events = await get(target, '/v1/events?type=chatbot.conversation.escalated&limit=100');
    const event = (events.data as Array<{ data: { conversation_id: string; transcript_url: string } }>).find(
      (e) => e.data.conversation_id === conversationId,
    );
    if (!event) throw new Error('fixture: the escalation event was not found');
    const link = new URL(event.data.transcript_url);
    return {
      path: { conversation_id: conversationId },
      query: {
        expires: Number(link.searchParams.get('expires')),
        signature: String(link.searchParams.get('signature')),
      },
    };
  },
  // The widget's: the embed key and origin come from embedHeaders.
  recordEmbedCsat: async (target) => {
    const visitor = `contract-${unique()}-visitor`;
    const response = await fetch(`${target.baseUrl}/v1/embed/messages`, {
      method: 'POST',
      headers: { ...(await embedHeaders(target)), 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify({ content: 'Hello there', visitor_id: visitor }),
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`fixture: a widget message answered ${response.status}: ${text}`);
    return {
      body: {
        conversation_id: (JSON.parse(text) as { conversation_id: string }).conversation_id,
        visitor_id: visitor,
        score: 5,
      },
    };
  },
  sendEmbedMessage: async () => ({
    body: { content: 'Hi, where is my order?', visitor_id: `contract-${unique()}-visitor` },
  }),
  getEvent: async (target) => ({ path: { id: await freshEvent(target) } }),
  replayWebhookEvents: async (target) => {
    const { path } = await freshEndpoint(target);
    return { body: { event_ids: [await freshEvent(target)], endpoint_id: String(path!.id) } };
  },
};

/** The request of the success case of an implemented operation on a server: the example with the fixture's parts. */
export async function successRequest(id: ImplementedOperationId, target: FixtureTarget): Promise<ExampleRequest> {
  const example = exampleRequest(id);
  const fixture = contractFixtures[id];
  if (!fixture) return example;
  const overrides = await fixture(target);
  return {
    ...example,
    path: { ...example.path, ...overrides.path },
    query: { ...example.query, ...overrides.query },
    ...('body' in overrides ? { body: overrides.body } : {}),
  };
}

// Cleanup. A workspace has at most 20 webhook endpoints, so endpoints left behind made the third run against one
// long-lived server (CONTRACT_BASE_URL) fail with webhook_endpoint_limit_reached.

/** The fixtures' endpoint URLs and member emails, also of the resources the tested operations created from them. */
const FIXTURE_ENDPOINT_URL = /^http:\/\/127\.0\.0\.1:9\/contract-/;
const FIXTURE_MEMBER_EMAIL = /^contract-.+@test\.example$/;
const FIXTURE_RULE_NAME = / contract-[0-9a-z]+$/;

async function remove(target: FixtureTarget, path: string): Promise<void> {
  const response = await fetch(target.baseUrl + path, {
    method: 'DELETE',
    headers: { Authorization: `Bearer ${target.apiKey}` },
  });
  await response.body?.cancel();
  // 404: the tested operation deleted it already (deleteWebhookEndpoint, removeMember).
  if (response.status >= 300 && response.status !== 404)
    throw new Error(`fixture cleanup: DELETE ${path} answered ${response.status}`);
}

/** Every item of a list operation, page by page. */
async function listAll(target: FixtureTarget, path: string): Promise<JsonObject[]> {
  const items: JsonObject[] = [];
  let cursor: string | null = null;
  do {
    const page: { data: JsonObject[]; next_cursor: string | null } = await get(
      target,
      `${path}?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    items.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor);
  return items;
}

/** Every item of a list operation, or none when the target does not serve it yet (501 not_implemented). */
async function listAllIfServed(target: FixtureTarget, path: string): Promise<JsonObject[]> {
  const probe = await fetch(`${target.baseUrl}${path}?limit=1`, {
    headers: { Authorization: `Bearer ${target.apiKey}`, Accept: 'application/json' },
  });
  await probe.body?.cancel();
  return probe.status === 501 ? [] : listAll(target, path);
}

/**
 * Removes what the fixtures created on the target: their keys and directory tokens (revoked) and threads, and every webhook endpoint,
 * member and compliance rule made from a fixture's body, including those of the operations under test and of earlier
 * runs that stopped early.
 */
export async function removeFixtureResources(target: FixtureTarget): Promise<void> {
  const endpoints = (await listAll(target, '/v1/webhooks/endpoints')).filter((e) =>
    FIXTURE_ENDPOINT_URL.test(String(e.url)),
  );
  const members = (await listAll(target, '/v1/members')).filter((m) => FIXTURE_MEMBER_EMAIL.test(String(m.email)));
  const rules = (await listAllIfServed(target, '/v1/compliance-rules')).filter((r) =>
    FIXTURE_RULE_NAME.test(String(r.name)),
  );
  const keys = createdByFixtures.filter(
    (path) =>
      path.startsWith('/v1/api-keys/') ||
      path.startsWith('/v1/directory-tokens/') ||
      path.startsWith('/v1/sso-connections/') ||
      path.startsWith('/v1/chat/threads/') ||
      path.startsWith('/v1/documents/') ||
      path.startsWith('/v1/knowledge-bases/') ||
      path.startsWith('/v1/chatbots/'),
  );
  createdByFixtures.length = 0;
  for (const path of [
    ...endpoints.map((e) => `/v1/webhooks/endpoints/${String(e.id)}`),
    ...members.map((m) => `/v1/members/${String(m.id)}`),
    ...rules.map((r) => `/v1/compliance-rules/${String(r.id)}`),
    ...keys,
  ]) {
    await remove(target, path);
  }
}
