// The one map from operationId to handler. The compiler checks it against the contract: every operation is either
// implemented here or listed in `notImplemented` (answered 501 not_implemented), never both, never neither.
import type { Handlers, OperationId } from '../generated/operations.ts';
import { projectHandlers } from './features/projects/projects.ts';
import { serviceHandlers } from './features/service/handlers.ts';
import { deliveryHandlers } from './features/webhooks/deliveries.ts';
import { endpointHandlers } from './features/webhooks/endpoints.ts';
import { eventHandlers } from './features/webhooks/events.ts';
import { apiKeyHandlers } from './features/workspace/api-keys.ts';
import { logHandlers } from './features/workspace/logs.ts';
import { memberHandlers } from './features/workspace/members.ts';
import { workspaceHandlers } from './features/workspace/workspace.ts';
import type { RequestContext } from './platform/context.ts';

/** The operations whose feature is not built yet. Each later issue removes its own. */
export const notImplemented = [
  // Models
  'listModels',
  'getModel',
  // Chat
  'createChatCompletion',
  'listChatThreads',
  'getChatThread',
  'deleteChatThread',
  // Documents
  'listDocuments',
  'createDocument',
  'getDocument',
  'updateDocument',
  'deleteDocument',
  'runDocumentCommand',
  'listDocumentVersions',
  'getDocumentVersion',
  'restoreDocumentVersion',
  'createDocumentEditToken',
  'publishDocument',
  'unpublishDocument',
  'getPublicDocument',
  // Voices
  'listVoices',
  'createVoice',
  'getVoice',
  'updateVoice',
  'deleteVoice',
  'checkVoice',
  // Knowledge bases
  'listKnowledgeBases',
  'createKnowledgeBase',
  'getKnowledgeBase',
  'deleteKnowledgeBase',
  'listKnowledgeBaseSources',
  'addKnowledgeBaseSource',
  'getKnowledgeBaseSource',
  'removeKnowledgeBaseSource',
  'searchKnowledgeBase',
  // Chatbots
  'listChatbots',
  'createChatbot',
  'getChatbot',
  'updateChatbot',
  'deleteChatbot',
  'rotateChatbotEmbedKey',
  'sendChatbotMessage',
  'listChatbotConversations',
  'getChatbotConversation',
  'escalateChatbotConversation',
  'recordChatbotConversationCsat',
  // Embed (public widget)
  'getEmbedConfig',
  'sendEmbedMessage',
  'recordEmbedCsat',
  // Workflows
  'listWorkflows',
  'createWorkflow',
  'validateWorkflow',
  'getWorkflow',
  'replaceWorkflow',
  'deleteWorkflow',
  'listWorkflowRuns',
  'startWorkflowRun',
  'getWorkflowRun',
  'cancelWorkflowRun',
  'approveWorkflowStep',
  'rejectWorkflowStep',
] as const satisfies readonly OperationId[];

type Implemented = Exclude<OperationId, (typeof notImplemented)[number]>;

export const handlers: Pick<Handlers<RequestContext>, Implemented> = {
  ...serviceHandlers,
  ...workspaceHandlers,
  ...apiKeyHandlers,
  ...memberHandlers,
  ...logHandlers,
  ...endpointHandlers,
  ...deliveryHandlers,
  ...eventHandlers,
  ...projectHandlers,
};
