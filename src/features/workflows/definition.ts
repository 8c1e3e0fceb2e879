// The whole-definition checks of a workflow (the contract's WorkflowDefinition, "Validation"), after the schema's:
// unique step ids; `depends_on` naming existing steps without a cycle; templates and expressions that parse and
// reference declared inputs and the steps a step depends on (directly or through others); defaults of their input's
// type; outputs referencing existing steps; and the workspace's models, voices, knowledge bases and project (asked of
// `resources`, which the caller loads). Each problem has a JSON Pointer into the definition and says where in a
// template it is. Also the warnings, the normalised definition (every `depends_on` explicit, every step default
// filled in) and the JSON Schema of the inputs.
import type { components } from '../../../generated/openapi.ts';
import { escapePointer } from '../../platform/problems.ts';
import {
  type Expression,
  ExpressionError,
  parseExpression,
  parseTemplate,
  referencesOf,
  type TemplatePart,
} from './expressions.ts';

type Schemas = components['schemas'];
export type Definition = Schemas['WorkflowDefinition'];
type Step = Definition['steps'][number];
type InputDefinition = Schemas['WorkflowInputDefinition'];

export interface Issue {
  pointer: string;
  detail: string;
}

/** What the checks ask of the workspace; each answers whether the id is usable there (undefined: not checked). */
export interface Resources {
  model?(id: string): boolean;
  voice?(id: string): boolean;
  knowledgeBase?(id: string): boolean;
  project?(id: string): boolean;
}

export interface Checked {
  errors: Issue[];
  warnings: Issue[];
  /** The definition as it will run; null when there are errors. */
  normalized: Definition | null;
}

const RETRY_DEFAULT = {
  max_attempts: 3,
  initial_ms: 1000,
  multiplier: 2,
  max_ms: 30_000,
  retry_on: ['timeout', 'rate_limited', 'provider_error'],
};
const TIMEOUT_DEFAULT = 120_000;

/** The template fields of each step type. */
const TEMPLATE_FIELDS: Record<Step['type'], string[]> = {
  generate: ['system', 'prompt'],
  transform: ['value'],
  document_command: ['document_id'],
  knowledge_search: ['query'],
  approval: ['show'],
};

/** Line and column (1-based) of an offset in a text, for error details. */
function place(text: string, offset: number): string {
  const before = text.slice(0, offset).split('\n');
  return before.length === 1
    ? `column ${offset + 1}`
    : `line ${before.length}, column ${before[before.length - 1]!.length + 1}`;
}

function typeMatches(type: InputDefinition['type'], value: unknown): boolean {
  switch (type ?? 'string') {
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number';
    case 'integer':
      return Number.isInteger(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'array':
      return Array.isArray(value);
    case 'object':
      return value !== null && typeof value === 'object' && !Array.isArray(value);
  }
}

/** Each step's dependencies as they will run: `depends_on`, or the step before it. */
function dependencies(steps: Step[]): string[][] {
  return steps.map((step, index) => step.depends_on ?? (index === 0 ? [] : [steps[index - 1]!.id]));
}

export function checkDefinition(definition: Definition, resources: Resources = {}): Checked {
  const check = new DefinitionCheck(definition);
  const { steps } = definition;
  check.uniqueIds();
  const depends = check.dependencies();
  // What each step may reference: the steps it depends on, directly or through others.
  const upstream = steps.map((_, index) => ancestors(index, depends, check.indexOf));
  steps.forEach((step, index) => {
    check.stepReferences(step, index, upstream[index]!);
    check.stepFields(step, index, resources);
  });
  for (const [name, output] of Object.entries(definition.outputs ?? {}))
    check.template(output, `/outputs/${escapePointer(name)}`, 'any');
  check.inputs();
  check.unusedOutputs();
  if (definition.project_id && resources.project && !resources.project(definition.project_id))
    check.errors.push({
      pointer: '/project_id',
      detail: `${definition.project_id} is not a project of this workspace`,
    });

  const { errors, warnings } = check;
  const order = (issue: Issue) => issue.pointer;
  return {
    errors: errors.sort((a, b) => comparePointers(order(a), order(b))).slice(0, 100),
    warnings: warnings.slice(0, 100),
    normalized: errors.length > 0 ? null : normalize(definition, depends),
  };
}

/** The checks of one definition, each adding what it finds to `errors` and `warnings`. */
class DefinitionCheck {
  readonly errors: Issue[] = [];
  readonly warnings: Issue[] = [];
  /** Each step's index by its id (the first, for an id used twice). */
  readonly indexOf = new Map<string, number>();
  readonly #definition: Definition;
  readonly #inputs: NonNullable<Definition['inputs']>;
  readonly #usedInputs = new Set<string>();
  readonly #usedSteps = new Set<string>();

  constructor(definition: Definition) {
    this.#definition = definition;
    this.#inputs = definition.inputs ?? {};
  }

  uniqueIds(): void {
    this.#definition.steps.forEach((step, index) => {
      const first = this.indexOf.get(step.id);
      if (first !== undefined)
        this.errors.push({
          pointer: `/steps/${index}/id`,
          detail: `is also the id of step ${first} (/steps/${first}); step ids must be unique`,
        });
      else this.indexOf.set(step.id, index);
    });
  }

  /** Each step's dependencies, checked: existing steps, not the step itself, no cycle. */
  dependencies(): string[][] {
    const steps = this.#definition.steps;
    const depends = dependencies(steps);
    depends.forEach((list, index) => {
      list.forEach((id, k) => {
        if (!this.indexOf.has(id))
          this.errors.push({ pointer: `/steps/${index}/depends_on/${k}`, detail: `names no step: ${id}` });
        else if (id === steps[index]!.id)
          this.errors.push({ pointer: `/steps/${index}/depends_on/${k}`, detail: 'names the step itself' });
      });
    });
    const cycle = findCycle(steps, depends, this.indexOf);
    if (cycle) {
      const from = this.indexOf.get(cycle[0]!)!;
      const edge = depends[from]!.indexOf(cycle[1]!);
      // Omitted depends_on (the step before) has no entry to point at: the step's depends_on then.
      this.errors.push({
        pointer: steps[from]!.depends_on ? `/steps/${from}/depends_on/${edge}` : `/steps/${from}`,
        detail: `dependency cycle: ${cycle.join(' → ')}`,
      });
    }
    return depends;
  }

  /** The references of an expression or template: defined inputs, steps it depends on, `run.id`, `workflow.*`. */
  references(parsed: Expression | TemplatePart[], pointer: string, allowed: Set<string> | 'any', text: string): void {
    const errors = this.errors;
    for (const reference of referencesOf(parsed)) {
      const [first, second] = reference.path;
      const where = ` (${place(text, reference.start)})`;
      if (reference.root === 'inputs') {
        if (typeof first !== 'string') errors.push({ pointer, detail: `name an input: inputs.<name>${where}` });
        else if (!Object.hasOwn(this.#inputs, first))
          errors.push({ pointer, detail: `references input \`${first}\`, which is not defined${where}` });
        else this.#usedInputs.add(first);
      } else if (reference.root === 'steps') {
        if (typeof first !== 'string')
          errors.push({ pointer, detail: `name a step: steps.<id>.output or steps.<id>.status${where}` });
        else if (!this.indexOf.has(first))
          errors.push({ pointer, detail: `references step \`${first}\`, which is not defined${where}` });
        else if (allowed !== 'any' && !allowed.has(first))
          errors.push({
            pointer,
            detail: `references step \`${first}\`, which this step does not depend on: add it to depends_on${where}`,
          });
        else if (second !== 'output' && second !== 'status')
          errors.push({
            pointer,
            detail: `a step has output and status: steps.${first}.output or steps.${first}.status${where}`,
          });
        else this.#usedSteps.add(first);
      } else if (
        reference.root === 'run'
          ? !(first === 'id' && reference.path.length === 1)
          : !((first === 'id' || first === 'version') && reference.path.length === 1)
      ) {
        errors.push({
          pointer,
          detail: `${reference.root === 'run' ? 'run has only run.id' : 'workflow has only workflow.id and workflow.version'}${where}`,
        });
      }
    }
  }

  template(text: string | undefined, pointer: string, allowed: Set<string> | 'any'): void {
    if (text === undefined) return;
    try {
      this.references(parseTemplate(text), pointer, allowed, text);
    } catch (error) {
      if (!(error instanceof ExpressionError)) throw error;
      this.errors.push({ pointer, detail: `${place(text, error.offset)}: ${error.message}` });
    }
  }

  /** A step's templates and its `when`, referencing only what it may. */
  stepReferences(step: Step, index: number, allowed: Set<string>): void {
    for (const field of TEMPLATE_FIELDS[step.type])
      this.template(
        (step as Record<string, unknown>)[field] as string | undefined,
        `/steps/${index}/${field}`,
        allowed,
      );
    if (step.type === 'document_command')
      this.template(step.options?.instructions, `/steps/${index}/options/instructions`, allowed);
    if (step.when === undefined) return;
    try {
      const parsed = parseExpression(step.when);
      this.references(parsed, `/steps/${index}/when`, allowed, step.when);
      if (parsed.kind === 'literal')
        this.warnings.push({
          pointer: `/steps/${index}/when`,
          detail: `is always ${parsed.value === null || parsed.value === false || parsed.value === 0 || parsed.value === '' ? 'false: the step never runs' : 'true'}`,
        });
    } catch (error) {
      if (!(error instanceof ExpressionError)) throw error;
      this.errors.push({
        pointer: `/steps/${index}/when`,
        detail: `${place(step.when, error.offset)}: ${error.message}`,
      });
    }
  }

  /** A step's fields that name the workspace's resources, and its settings that cannot work as given. */
  stepFields(step: Step, index: number, resources: Resources): void {
    if (step.type === 'generate') {
      if (resources.model && !resources.model(step.model))
        this.errors.push({
          pointer: `/steps/${index}/model`,
          detail: `${step.model} is not a chat model of the catalogue in this workspace's region`,
        });
      if (step.voice_id && resources.voice && !resources.voice(step.voice_id))
        this.errors.push({
          pointer: `/steps/${index}/voice_id`,
          detail: `${step.voice_id} is not a ready voice of this workspace`,
        });
    }
    if (
      step.type === 'knowledge_search' &&
      resources.knowledgeBase &&
      !resources.knowledgeBase(step.knowledge_base_id)
    ) {
      this.errors.push({
        pointer: `/steps/${index}/knowledge_base_id`,
        detail: `${step.knowledge_base_id} is not a knowledge base of this workspace`,
      });
    }
    if (step.type === 'approval' && step.on_timeout === 'approve')
      this.warnings.push({
        pointer: `/steps/${index}/on_timeout`,
        detail: 'approve: the step is approved when nobody decides in time',
      });
    if (
      'retry' in step &&
      step.retry &&
      step.retry.max_ms !== undefined &&
      step.retry.max_ms < (step.retry.initial_ms ?? RETRY_DEFAULT.initial_ms)
    ) {
      this.errors.push({ pointer: `/steps/${index}/retry/max_ms`, detail: 'must be at least initial_ms' });
    }
  }

  /** The inputs: their enums and defaults of their type, and each used by a step or an output. */
  inputs(): void {
    const { errors, warnings } = this;
    for (const [name, input] of Object.entries(this.#inputs)) {
      const pointer = `/inputs/${escapePointer(name)}`;
      const type = input.type ?? 'string';
      if (input.enum && !['string', 'number', 'integer'].includes(type))
        errors.push({
          pointer: `${pointer}/enum`,
          detail: `applies to string, number and integer inputs, not ${type}`,
        });
      if (input.enum)
        input.enum.forEach((item, k) => {
          if (!typeMatches(type, item))
            errors.push({ pointer: `${pointer}/enum/${k}`, detail: `is not of the input's type, ${type}` });
        });
      if (input.default !== undefined && input.default !== null) {
        if (!typeMatches(type, input.default))
          errors.push({ pointer: `${pointer}/default`, detail: `is not of the input's type, ${type}` });
        else if (input.enum && !input.enum.includes(input.default as string | number))
          errors.push({ pointer: `${pointer}/default`, detail: 'is not one of the enum values' });
      }
      if (input.required && input.default !== undefined)
        warnings.push({ pointer: `${pointer}/default`, detail: 'is never used: the input is required' });
      if (!this.#usedInputs.has(name))
        warnings.push({ pointer, detail: `input \`${name}\` is not used by any step or output` });
    }
  }

  /** The steps that work for others (generate, transform, search) whose output nothing uses. */
  unusedOutputs(): void {
    this.#definition.steps.forEach((step, index) => {
      const worksForOthers = step.type === 'generate' || step.type === 'transform' || step.type === 'knowledge_search';
      if (worksForOthers && !this.#usedSteps.has(step.id))
        this.warnings.push({
          pointer: `/steps/${index}`,
          detail: `the output of step \`${step.id}\` is not used by any step or output`,
        });
    });
  }
}

/** Document order: numeric segments as numbers. */
function comparePointers(a: string, b: string): number {
  const sa = a.split('/');
  const sb = b.split('/');
  for (let i = 0; i < Math.min(sa.length, sb.length); i++) {
    if (sa[i] === sb[i]) continue;
    const na = Number(sa[i]);
    const nb = Number(sb[i]);
    return Number.isInteger(na) && Number.isInteger(nb) ? na - nb : sa[i]!.localeCompare(sb[i]!);
  }
  return sa.length - sb.length;
}

/** A cycle of `depends_on`, as step ids from a step back to it; null when there is none. */
function findCycle(steps: Step[], depends: string[][], indexOf: Map<string, number>): string[] | null {
  const state = new Map<number, 'visiting' | 'done'>();
  const trail: number[] = [];
  const visit = (index: number): string[] | null => {
    if (state.get(index) === 'done') return null;
    if (state.get(index) === 'visiting') return [...trail.slice(trail.indexOf(index)), index].map((i) => steps[i]!.id);
    state.set(index, 'visiting');
    trail.push(index);
    for (const id of depends[index]!) {
      const next = indexOf.get(id);
      if (next === undefined || next === index) continue;
      const found = visit(next);
      if (found) return found;
    }
    trail.pop();
    state.set(index, 'done');
    return null;
  };
  for (let index = 0; index < steps.length; index++) {
    const found = visit(index);
    if (found) return found;
  }
  return null;
}

/** The steps a step depends on, directly or through others. */
function ancestors(index: number, depends: string[][], indexOf: Map<string, number>): Set<string> {
  const found = new Set<string>();
  const queue = [...depends[index]!];
  while (queue.length > 0) {
    const id = queue.shift()!;
    const at = indexOf.get(id);
    if (found.has(id) || at === undefined || at === index) continue;
    found.add(id);
    queue.push(...depends[at]!);
  }
  return found;
}

/** Every `depends_on` explicit and every default of a step filled in (`inputs` as written). */
function normalize(definition: Definition, depends: string[][]): Definition {
  // biome-ignore lint/suspicious/useIterableCallbackReturn: the switch covers every step type (the compiler checks it), so every path returns
  const steps = definition.steps.map((step, index): Step => {
    const common = { ...step, depends_on: depends[index]! };
    switch (step.type) {
      case 'generate':
        return {
          temperature: 1,
          response_format: 'text',
          timeout_ms: TIMEOUT_DEFAULT,
          ...common,
          retry: { ...RETRY_DEFAULT, ...step.retry },
        } as Step;
      case 'transform':
        return {
          ...(step.function === 'split' || step.function === 'join' ? { separator: '\n' } : {}),
          timeout_ms: TIMEOUT_DEFAULT,
          ...common,
          retry: { ...RETRY_DEFAULT, ...step.retry },
        } as Step;
      case 'knowledge_search':
        return {
          top_k: 5,
          min_score: 0,
          timeout_ms: TIMEOUT_DEFAULT,
          ...common,
          retry: { ...RETRY_DEFAULT, ...step.retry },
        } as Step;
      case 'document_command':
        return {
          apply: false,
          timeout_ms: TIMEOUT_DEFAULT,
          ...common,
          retry: { ...RETRY_DEFAULT, ...step.retry },
        } as Step;
      case 'approval':
        return {
          approver_role: 'editor',
          timeout_ms: 604_800_000,
          on_timeout: 'fail',
          on_reject: 'fail',
          ...common,
        } as Step;
    }
  });
  return { ...definition, steps };
}

/** The JSON Schema (2020-12) of a run's `inputs`, from the definition's inputs (the workflow's `input_schema`). */
export function inputSchema(definition: Definition): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  for (const [name, input] of Object.entries(definition.inputs ?? {})) {
    const type = input.type ?? 'string';
    const schema: Record<string, unknown> = { type: input.required ? type : [type, 'null'] };
    if (input.description) schema.description = input.description;
    if (input.enum) schema.enum = input.required ? input.enum : [...input.enum, null];
    if (input.default !== undefined) schema.default = input.default;
    if (type === 'string') schema.maxLength = input.max_length ?? 100_000;
    if (type === 'array') schema.maxItems = input.max_items ?? 1000;
    if ((type === 'number' || type === 'integer') && input.minimum !== undefined) schema.minimum = input.minimum;
    if ((type === 'number' || type === 'integer') && input.maximum !== undefined) schema.maximum = input.maximum;
    properties[name] = schema;
    if (input.required) required.push(name);
  }
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    additionalProperties: false,
    required,
    properties,
  };
}
