// The chatbots feature's tables, merged into the platform's Database interface (see src/features/projects/schema.ts).
declare module '../../storage/schema.ts' {
  interface Database {
    chatbots: ChatbotsTable;
    chatbot_knowledge_bases: ChatbotKnowledgeBasesTable;
    chatbot_conversations: ChatbotConversationsTable;
    chatbot_messages: ChatbotMessagesTable;
  }
}

export interface ChatbotsTable {
  id: string;
  workspace_id: string;
  project_id: string | null;
  name: string;
  description: string | null;
  model: string;
  instructions: string;
  greeting: string;
  temperature: number;
  voice_id: string | null;
  /** JSON: ChatbotEscalationSettings. */
  escalation: string;
  /** JSON: ChatbotWidget. */
  widget: string;
  /** JSON array. */
  allowed_origins: string;
  /** 0 or 1. */
  enabled: number;
  embed_key: string;
  previous_embed_key: string | null;
  previous_key_expires_at: string | null;
  metadata: string;
  created_at: string;
  updated_at: string;
}

export interface ChatbotKnowledgeBasesTable {
  chatbot_id: string;
  knowledge_base_id: string;
  /** The order the chatbot lists them in. */
  position: number;
}

export interface ChatbotConversationsTable {
  id: string;
  chatbot_id: string;
  workspace_id: string;
  channel: 'embed' | 'api';
  visitor_id: string | null;
  visitor_external_id: string | null;
  visitor_name: string | null;
  visitor_email: string | null;
  visitor_locale: string | null;
  visitor_metadata: string;
  page_url: string | null;
  started_at: string;
  last_message_at: string;
  message_count: number;
  intent: string;
  escalation_status: 'none' | 'escalated';
  escalation_source: 'automatic' | 'manual' | null;
  escalation_reason: string | null;
  escalation_note: string | null;
  escalated_at: string | null;
  csat_score: number | null;
  csat_comment: string | null;
  csat_source: 'embed' | 'api' | null;
  rated_at: string | null;
  cost_usd: number;
}

export interface ChatbotMessagesTable {
  id: string;
  conversation_id: string;
  role: 'visitor' | 'assistant';
  content: string;
  /** JSON array of ChatbotCitation. */
  citations: string;
  confidence: number | null;
  /** The intent of a visitor message; null for the chatbot's. */
  intent: string | null;
  created_at: string;
}
