// The `input` of an embeddings request in OpenAI's four forms (a text, texts, token ids, arrays of token ids): the
// texts or the ids of each input, and where each input is in the request for a problem that names it.
import type { components } from '../../../generated/openapi.ts';
import { validationFailed } from '../../platform/problems.ts';

type Input = components['schemas']['EmbeddingRequest']['input'];

export type EmbeddingInputs = (
  | { texts: string[]; ids?: undefined }
  /** Token ids of cl100k_base, an array for each input: an input of ids is that many tokens. */
  | { texts?: undefined; ids: number[][] }
) & {
  /** The place of input `index` in the request (`/input` for a single input). */
  pointer: (index: number) => string;
};

const forms = {
  string: 'a string, as /input/0 is',
  number: 'a token id, as /input/0 is',
  array: 'an array of token ids, as /input/0 is',
} as const;

const formOf = (item: string | number | number[]) =>
  typeof item === 'string' ? 'string' : typeof item === 'number' ? 'number' : 'array';

/** The inputs of `input`; an array that mixes forms is refused at the first item of another form than its first. */
export function embeddingInputs(input: Input): EmbeddingInputs {
  if (typeof input === 'string') return { texts: [input], pointer: () => '/input' };
  const form = formOf(input[0]!);
  const other = input.findIndex((item) => formOf(item) !== form);
  if (other >= 0) throw validationFailed([{ pointer: `/input/${other}`, detail: `must be ${forms[form]}` }]);
  if (form === 'string') return { texts: input as string[], pointer: (index) => `/input/${index}` };
  // An array of ids is one input; an array of arrays, one input each.
  if (form === 'number') return { ids: [input as number[]], pointer: () => '/input' };
  return { ids: input as number[][], pointer: (index) => `/input/${index}` };
}
