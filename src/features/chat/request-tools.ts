// The checks both API surfaces make of a request's tools that their schemas cannot say: unique names, and a
// `tool_choice` that names one of them. Each wire says where its names are (`/tools/0/function/name`, `/tools/0/name`).
import { validationFailed } from '../../platform/problems.ts';

/** The tools' names, each unique; `pointerOf` places the name of the tool at an index. */
export function checkToolNames(names: readonly string[], pointerOf: (index: number) => string): Set<string> {
  const seen = new Set<string>();
  names.forEach((name, i) => {
    if (seen.has(name))
      throw validationFailed([
        { pointer: pointerOf(i), detail: `${name} names another tool too; tool names must be unique` },
      ]);
    seen.add(name);
  });
  return seen;
}

/** A tool choice that names a function names one of the tools. */
export function checkChosenTool(chosen: string, names: ReadonlySet<string>, pointer: string): void {
  if (!names.has(chosen)) throw validationFailed([{ pointer, detail: `${chosen} is not one of the tools` }]);
}
