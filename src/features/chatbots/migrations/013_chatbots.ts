// Chatbots, the knowledge bases they answer from (a table of their own, so that deleting a knowledge base or a voice
// a chatbot uses can be refused), their conversations and the conversations' messages.
import type { Kysely, Migration } from 'kysely';

export const chatbots: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('chatbots')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('project_id', 'text', (c) => c.references('projects.id').onDelete('set null'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('description', 'text')
      .addColumn('model', 'text', (c) => c.notNull())
      .addColumn('instructions', 'text', (c) => c.notNull())
      .addColumn('greeting', 'text', (c) => c.notNull())
      .addColumn('temperature', 'double precision', (c) => c.notNull())
      .addColumn('voice_id', 'text')
      /** JSON: the contract's ChatbotEscalationSettings. */
      .addColumn('escalation', 'text', (c) => c.notNull())
      /** JSON: the contract's ChatbotWidget. */
      .addColumn('widget', 'text', (c) => c.notNull())
      /** JSON array of origins. */
      .addColumn('allowed_origins', 'text', (c) => c.notNull())
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('embed_key', 'text', (c) => c.notNull().unique())
      .addColumn('previous_embed_key', 'text', (c) => c.unique())
      .addColumn('previous_key_expires_at', 'text')
      .addColumn('metadata', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('chatbots_workspace').on('chatbots').columns(['workspace_id', 'id']).execute();
    await db.schema.createIndex('chatbots_voice').on('chatbots').column('voice_id').execute();
    await db.schema
      .createTable('chatbot_knowledge_bases')
      .addColumn('chatbot_id', 'text', (c) => c.notNull().references('chatbots.id').onDelete('cascade'))
      .addColumn('knowledge_base_id', 'text', (c) => c.notNull().references('knowledge_bases.id'))
      .addColumn('position', 'integer', (c) => c.notNull())
      .addPrimaryKeyConstraint('chatbot_knowledge_bases_pk', ['chatbot_id', 'knowledge_base_id'])
      .execute();
    await db.schema
      .createIndex('chatbot_knowledge_bases_base')
      .on('chatbot_knowledge_bases')
      .column('knowledge_base_id')
      .execute();
    await db.schema
      .createTable('chatbot_conversations')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('chatbot_id', 'text', (c) => c.notNull().references('chatbots.id').onDelete('cascade'))
      .addColumn('workspace_id', 'text', (c) => c.notNull())
      .addColumn('channel', 'text', (c) => c.notNull())
      .addColumn('visitor_id', 'text')
      .addColumn('visitor_external_id', 'text')
      .addColumn('visitor_name', 'text')
      .addColumn('visitor_email', 'text')
      .addColumn('visitor_locale', 'text')
      .addColumn('visitor_metadata', 'text', (c) => c.notNull())
      .addColumn('page_url', 'text')
      .addColumn('started_at', 'text', (c) => c.notNull())
      .addColumn('last_message_at', 'text', (c) => c.notNull())
      .addColumn('message_count', 'integer', (c) => c.notNull())
      .addColumn('intent', 'text', (c) => c.notNull())
      .addColumn('escalation_status', 'text', (c) => c.notNull())
      .addColumn('escalation_source', 'text')
      .addColumn('escalation_reason', 'text')
      .addColumn('escalation_note', 'text')
      .addColumn('escalated_at', 'text')
      .addColumn('csat_score', 'integer')
      .addColumn('csat_comment', 'text')
      .addColumn('csat_source', 'text')
      .addColumn('rated_at', 'text')
      .addColumn('cost_usd', 'double precision', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('chatbot_conversations_chatbot')
      .on('chatbot_conversations')
      .columns(['chatbot_id', 'id'])
      .execute();
    await db.schema
      .createTable('chatbot_messages')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('conversation_id', 'text', (c) =>
        c.notNull().references('chatbot_conversations.id').onDelete('cascade'),
      )
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('content', 'text', (c) => c.notNull())
      /** JSON array of the contract's ChatbotCitation. */
      .addColumn('citations', 'text', (c) => c.notNull())
      .addColumn('confidence', 'double precision')
      .addColumn('intent', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('chatbot_messages_conversation')
      .on('chatbot_messages')
      .columns(['conversation_id', 'id'])
      .execute();
  },
};
