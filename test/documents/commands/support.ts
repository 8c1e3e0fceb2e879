// What the document command tests share: a generate that records its calls, the real sandbox models behind one,
// the problem a call throws.
import { generateText, type ModelMessage } from 'ai';
import type { Generate } from '../../../src/features/documents/commands/types.ts';
import type { EngineMessage } from '../../../src/features/engine/generation.ts';
import { sandboxModel } from '../../../src/features/engine/providers/sandbox/model.ts';
import { taskOption } from '../../../src/features/engine/providers/sandbox/task.ts';
import { Problem } from '../../../src/platform/problems.ts';
/** A generate that records the messages of each call and answers with `answer(messages)`. */
export function recorder(answer: (messages: EngineMessage[]) => string = () => 'Answer.') {
  const calls: EngineMessage[][] = [];
  const generate: Generate = async (messages) => {
    calls.push(messages);
    return answer(messages);
  };
  // Document commands send text messages only.
  return {
    calls,
    generate,
    system: (i = 0) => calls[i]![0]!.content as string,
    user: (i = 0) => calls[i]![1]!.content as string,
  };
}

/** The problem a call throws, for its code, field errors and message. */
export async function problemOf(run: () => unknown): Promise<Problem> {
  try {
    await run();
  } catch (error) {
    if (error instanceof Problem) return error;
    throw error;
  }
  throw new Error('expected a problem');
}

/** The real sandbox model behind the engine's provider interface (the AI SDK drives it, as the engine would), given
 *  the command's task the way the command handler gives it (`providerOptions.sandbox.task`). */
export function sandbox(id: 'sandbox-echo' | 'sandbox-writer'): Generate {
  return async (messages, task) => {
    const instructions = messages
      .filter((m) => m.role === 'system')
      .map((m) => m.content)
      .join('\n');
    const rest = messages.filter((m) => m.role !== 'system') as ModelMessage[];
    const providerOptions = task ? { sandbox: { task: taskOption(task) } } : undefined;
    return (
      await generateText({ model: sandboxModel(id), instructions, messages: rest, providerOptions, maxRetries: 0 })
    ).text;
  };
}

export const input = (content: string, title = 'Spring sale') => ({ title, content });
