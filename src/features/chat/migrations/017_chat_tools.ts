// Saved chat messages keep tool calls and tool results: an assistant message's calls (JSON, OpenAI's
// `tool_calls` array) and the call a `tool` message answers. Older rows have neither (null).
import type { Kysely, Migration } from 'kysely';

export const chatTools: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('chat_messages').addColumn('tool_calls', 'text').execute();
    await db.schema.alterTable('chat_messages').addColumn('tool_call_id', 'text').execute();
  },
};
