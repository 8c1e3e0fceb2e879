// The chat feature's tables, declared beside the feature and merged into the platform's Database interface.
declare module '../../storage/schema.ts' {
  interface Database {
    chat_threads: ChatThreadsTable;
    chat_messages: ChatMessagesTable;
  }
}

export interface ChatThreadsTable {
  id: string;
  workspace_id: string;
  title: string;
  /** The model and voice of the latest completion saved to the thread. */
  model: string;
  voice_id: string | null;
  message_count: number;
  /** JSON object. */
  metadata: string;
  created_at: string;
  updated_at: string;
}

export interface ChatMessagesTable {
  id: string;
  thread_id: string;
  workspace_id: string;
  /** 0, 1, 2… in the thread: the order of the conversation (ids of one request share an instant). */
  position: number;
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content: string | null;
  refusal: string | null;
  name: string | null;
  /** Assistant messages: the model, the request's usage (JSON of ChatCompletionUsage), cost and finish reason. */
  model: string | null;
  usage: string | null;
  cost_usd: number | null;
  finish_reason: 'stop' | 'length' | 'content_filter' | 'tool_calls' | null;
  /** Assistant messages that called tools: JSON of OpenAI's `tool_calls` array; otherwise null. */
  tool_calls: string | null;
  /** Tool messages: the call they answer; otherwise null. */
  tool_call_id: string | null;
  created_at: string;
}

declare module '../../storage/schema.ts' {
  interface Database {
    chat_responses: ChatResponsesTable;
  }
}

/** A stored response of the Responses API; its input and output items are messages of its thread. */
export interface ChatResponsesTable {
  id: string;
  thread_id: string;
  workspace_id: string;
  previous_response_id: string | null;
  model: string;
  status: 'completed' | 'incomplete';
  /** Positions in the thread: its first input message, its first output message, its last output message. */
  input_position: number;
  output_position: number;
  last_position: number;
  /** JSON: the response object's fields that are not its output items (Response, without `output`). */
  body: string;
  created_at: string;
}
