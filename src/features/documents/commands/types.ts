// The shapes a document command works with: the request (the contract's), the document's text, the engine call it
// is given, and what it produces. Offsets are UTF-16 code units (DocumentSelection), as JavaScript counts string length.

import type { components } from '../../../../generated/openapi.ts';
import type { EngineMessage, sandbox } from '../../engine/index.ts';

export type CommandRequest = components['schemas']['DocumentCommandRequest'];
export type CommandName = CommandRequest['command'];
export type Placement = 'replace' | 'before' | 'after';
export type CitationStyle = NonNullable<components['schemas']['DocumentCiteCommand']['style']>;

export interface Range {
  start: number;
  end: number;
}

export interface CommandInput {
  title: string;
  /** The content the command works on (Markdown). */
  content: string;
}

/** Calls the engine once with these messages and returns the text (the caller sums usage/cost). `task` says the same
 *  to the sandbox models, which read no prompt (`providerOptions.sandbox.task`, docs/engine.md). */
export type Generate = (messages: EngineMessage[], task?: sandbox.SandboxTask) => Promise<string>;

export interface CitationSource {
  /** The source's number in the request's `sources` (from 1). */
  n: number;
  /** Null for a knowledge base source. */
  url: string | null;
  title: string;
  /** Plain text the model may cite from; empty when the page could not be read. */
  excerpt: string;
  knowledgeBaseId?: string;
}

export interface CommandOutcome {
  /** What the command produced (Markdown). */
  output: string;
  /** The new content. */
  content: string;
  /** Where `output` sits in `content`. */
  outputRange: Range;
}

export type Of<C extends CommandName> = Extract<CommandRequest, { command: C }>;
