// The passages block: how a feature that answers from sources (the chatbots) hands its passages to a model in the
// system prompt. A real model reads it as text; the sandbox models read it by its lines (providers/sandbox/model.ts, docs/engine.md),
// so the format is the engine's, written here for every feature that grounds an answer.

export const PASSAGES_START = 'Knowledge passages:';
export const PASSAGES_END = 'End of passages.';

/** The block of the passages, numbered from 1 in the order given (the numbers an answer cites as `[n]`). */
export function passagesBlock(passages: readonly { title: string; text: string }[]): string[] {
  const entries = passages.map((passage, index) => `[${index + 1}] ${passage.title}\n${passage.text}`).join('\n\n');
  return [PASSAGES_START, ...(entries ? [entries] : []), PASSAGES_END];
}
