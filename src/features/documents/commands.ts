// The AI commands on a document's Markdown (outline, expand, summarize, rewrite, cite, translate), run here; one concept
// a file in commands/: the prompts and the cleaning of what the model wrote, where the output goes in the content,
// citations, translation and its masking. Pure: the caller reads the document, calls the engine through `generate`
// (once, or once per segment for a translation whose batch answer lost its markers), sums the usage of the calls and
// saves the new version.
import { Problem, validationFailed } from '../../platform/problems.ts';
import type { EngineMessage, sandbox } from '../engine/index.ts';
import { cite, referencesStart, withReferences } from './commands/cite.ts';
import { place, selectionOf, workRange } from './commands/placement.ts';
import { clean, expandMessages, outlineMessages, rewriteMessages, summarizeMessages } from './commands/prompts.ts';
import { translate } from './commands/translate.ts';
import type {
  CitationSource,
  CommandInput,
  CommandName,
  CommandOutcome,
  CommandRequest,
  Generate,
  Placement,
} from './commands/types.ts';

// The commands' API for the rest of the code: code outside commands/ imports from this file.
export { formatReference } from './commands/cite.ts';
export { place, selectionOf } from './commands/placement.ts';
export type {
  CitationSource,
  CitationStyle,
  CommandInput,
  CommandName,
  CommandOutcome,
  CommandRequest,
  Generate,
  Placement,
  Range,
} from './commands/types.ts';

/** The contract's default placement of each command (DocumentXxxCommand.yaml). */
export const defaultPlacements: Record<CommandName, Placement> = {
  outline: 'before',
  expand: 'replace',
  summarize: 'before',
  rewrite: 'replace',
  cite: 'replace',
  translate: 'replace',
};

/**
 * Runs a command on the document: one `generate` call (translate: one, plus one per segment the batch answer lost),
 * and the new content with the output placed. The whitespace at the edges of the selection stays where it is, around
 * the output. `sources` are cite's (from fetchCitationSources, numbered in request order); `now` dates their
 * references ("accessed"). Throws 422 problems for a selection out of range, nothing to work on, or no source.
 */
export async function runCommand(
  request: CommandRequest,
  input: CommandInput,
  generate: Generate,
  sources?: CitationSource[],
  now: Date = new Date(),
): Promise<CommandOutcome> {
  const { content } = input;
  let selected = selectionOf(content, request.selection);
  // Cite manages the closing References section itself: the text it works on stops where that section starts.
  const references = request.command === 'cite' ? referencesStart(content) : -1;
  if (references >= 0 && selected.end > references) {
    if (selected.start >= references) {
      throw validationFailed([
        { pointer: '/selection', detail: 'is inside the References section, which the cite command writes itself' },
      ]);
    }
    selected = { start: selected.start, end: references };
  }
  const range = workRange(content, selected, request.command === 'translate');
  const text = content.slice(range.start, range.end);
  if (text === '' && request.command !== 'outline') {
    throw validationFailed([
      {
        pointer: '/selection',
        detail: request.selection
          ? 'selects only whitespace'
          : `is the whole content, which is empty: there is nothing to ${request.command}`,
      },
    ]);
  }
  const placement = request.placement ?? defaultPlacements[request.command];
  const modelOutput = async (messages: EngineMessage[], task: sandbox.SandboxTask) => {
    const output = clean(await generate(messages, task), text);
    if (output === '')
      throw new Problem('upstream_error', `The model answered the ${request.command} command with no text.`);
    return output;
  };

  switch (request.command) {
    case 'outline': {
      const task: sandbox.SandboxTask = {
        kind: 'outline',
        text,
        depth: request.depth ?? 2,
        title: input.title,
        instruction: request.instruction,
      };
      return placed(await modelOutput(outlineMessages(request, input, text), task));
    }
    case 'expand':
      return placed(
        await modelOutput(expandMessages(request, input, text), {
          kind: 'expand',
          text,
          context: content,
          words: request.target_words,
        }),
      );
    case 'summarize': {
      const task: sandbox.SandboxTask = {
        kind: 'summarize',
        text,
        length: request.length ?? 'medium',
        format: request.format ?? 'paragraph',
      };
      return placed(await modelOutput(summarizeMessages(request, input, text), task));
    }
    case 'rewrite':
      return placed(
        await modelOutput(rewriteMessages(request, input, text), { kind: 'rewrite', text, tone: request.tone }),
      );
    case 'translate':
      return placed(await translate(text, request, generate));
    case 'cite': {
      const cited = await cite(
        request,
        input,
        text,
        sources ?? [],
        references >= 0 ? content.slice(references) : '',
        modelOutput,
        now,
      );
      const result = placed(cited.output);
      return { ...result, content: withReferences(result.content, cited.section) };
    }
  }

  function placed(output: string): CommandOutcome {
    // A summary or an outline of the whole content is its TL;DR or its plan: it goes under the level-1 heading the
    // content opens with (the document's own title), not above it.
    const under =
      placement === 'before' && !request.selection && (request.command === 'summarize' || request.command === 'outline')
        ? openingHeadingEnd(content, range.start)
        : null;
    const at = under === null ? range : { start: under, end: Math.max(under, range.end) };
    return { output, ...place(content, at, output, placement) };
  }
}

/**
 * The end of the level-1 heading (ATX `# …` or setext `…` over `===`) that starts at `start`, or null. Read line by
 * line: one pattern over both lines backtracks quadratically on a long line with no newline.
 */
function openingHeadingEnd(content: string, start: number): number | null {
  const lineEnd = (from: number) => {
    const end = content.indexOf('\n', from);
    return end === -1 ? content.length : end;
  };
  const firstEnd = lineEnd(start);
  const first = content.slice(start, firstEnd);
  if (/^ {0,3}#(?:[ \t]|$)/.test(first)) return firstEnd;
  if (firstEnd === content.length || !/\S/.test(first)) return null;
  const secondEnd = lineEnd(firstEnd + 1);
  return /^ {0,3}=+[ \t]*$/.test(content.slice(firstEnd + 1, secondEnd)) ? secondEnd : null;
}

// ---------------------------------------------------------------------------------------------------------------
