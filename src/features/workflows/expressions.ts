// The expression and template language of workflow definitions, as the contract defines it (WorkflowDefinition):
//   - references: `inputs.<name>`, `steps.<id>.output…`, `steps.<id>.status`, `run.id`, `workflow.id`,
//     `workflow.version`, with `.field` and `[index]` (or `['key']`) paths;
//   - literals: 'text' (or "text", with \' \" \\ escapes), numbers, true, false, null;
//   - operators, loosest first: `??`, `||`, `&&`, `==` `!=`, `<` `<=` `>` `>=`, `!`; and parentheses;
//   - functions: contains, starts_with, length, lower, upper, json.
// Templates are text with `{{ expression }}` placeholders; `{{ '{{' }}` writes a literal `{{`.
//
// Why not Liquid (DESIGN.md names liquidjs): the contract's syntax is not Liquid's (`??`, `&&`, `!`, function calls
// with parentheses, `[index]` paths). A small parser of exactly this language checks a definition when it is saved,
// with the place of each error, and evaluates nothing but what the contract lists.
//
// Evaluation never throws on data: a path that does not exist is null, a comparison of values of different types is
// false, a function given the wrong type returns null. Only rendering more than MAX_RENDERED_CHARACTERS throws.

import { characterCount } from '../../platform/characters.ts';

export type Value = null | boolean | number | string | Value[] | { [key: string]: Value };

export type Expression =
  | { kind: 'literal'; value: Value }
  | { kind: 'reference'; root: ReferenceRoot; path: Array<string | number>; start: number; end: number }
  | { kind: 'not'; operand: Expression }
  | { kind: 'binary'; operator: BinaryOperator; left: Expression; right: Expression }
  | { kind: 'call'; name: FunctionName; args: Expression[]; start: number };

export type ReferenceRoot = 'inputs' | 'steps' | 'run' | 'workflow';
type BinaryOperator = '??' | '||' | '&&' | '==' | '!=' | '<' | '<=' | '>' | '>=';
type FunctionName = keyof typeof FUNCTIONS;

/** A syntax error, at `offset` (UTF-16 code units) in the expression or template text. */
export class ExpressionError extends Error {
  readonly offset: number;
  constructor(message: string, offset: number) {
    super(message);
    this.offset = offset;
  }
}

/** The most characters a rendered template may have. */
export const MAX_RENDERED_CHARACTERS = 1_000_000;
const MAX_DEPTH = 64;
const ROOTS: readonly ReferenceRoot[] = ['inputs', 'steps', 'run', 'workflow'];

// ----------------------------------------------------------------------------------------------------- tokens

type Token =
  | { type: 'number'; value: number; start: number }
  | { type: 'string'; value: string; start: number }
  | { type: 'name'; value: string; start: number }
  | { type: 'operator'; value: string; start: number }
  | { type: 'end'; start: number };

const OPERATORS = ['??', '||', '&&', '==', '!=', '<=', '>=', '<', '>', '!', '(', ')', '[', ']', '.', ','];

function tokenize(source: string, base: number): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const char = source[i]!;
    if (/\s/.test(char)) {
      i++;
      continue;
    }
    const start = base + i;
    // A number; `-` starts one only where an operand is expected (there is no subtraction).
    const number = /^-?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?/.exec(source.slice(i));
    const afterOperand = tokens.length > 0 && isOperand(tokens[tokens.length - 1]!);
    if (number && !((char === '.' || char === '-') && afterOperand)) {
      tokens.push({ type: 'number', value: Number(number[0]), start });
      i += number[0].length;
      continue;
    }
    if (char === "'" || char === '"') {
      let value = '';
      let j = i + 1;
      for (; j < source.length && source[j] !== char; j++) {
        if (source[j] === '\\' && j + 1 < source.length) value += source[++j];
        else value += source[j];
      }
      if (j >= source.length) throw new ExpressionError(`a text starting with ${char} is not closed`, start);
      tokens.push({ type: 'string', value, start });
      i = j + 1;
      continue;
    }
    const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(source.slice(i));
    if (name) {
      tokens.push({ type: 'name', value: name[0], start });
      i += name[0].length;
      continue;
    }
    const operator = OPERATORS.find((op) => source.startsWith(op, i));
    if (!operator) throw new ExpressionError(`unexpected character ${JSON.stringify(char)}`, start);
    tokens.push({ type: 'operator', value: operator, start });
    i += operator.length;
  }
  tokens.push({ type: 'end', start: base + source.length });
  return tokens;
}

/** Whether a `.` after this token is a path step rather than the start of a number. */
function isOperand(token: Token): boolean {
  return (
    token.type === 'name' ||
    token.type === 'string' ||
    (token.type === 'operator' && (token.value === ')' || token.value === ']'))
  );
}

// ----------------------------------------------------------------------------------------------------- parser

const LEVELS: BinaryOperator[][] = [['??'], ['||'], ['&&'], ['==', '!='], ['<', '<=', '>', '>=']];

/**
 * Parses an expression. `base` is the expression's offset in the text it came from (a template), so that error
 * offsets point into that text.
 */
export function parseExpression(source: string, base = 0): Expression {
  const tokens = tokenize(source, base);
  let at = 0;
  let depth = 0;
  const peek = () => tokens[at]!;
  const isOp = (value: string) => peek().type === 'operator' && (peek() as { value: string }).value === value;
  const expect = (value: string) => {
    if (!isOp(value)) throw new ExpressionError(`expected ${value}`, peek().start);
    at++;
  };

  const level = (index: number): Expression => {
    if (index === LEVELS.length) return unary();
    let left = level(index + 1);
    while (peek().type === 'operator' && LEVELS[index]!.includes((peek() as { value: BinaryOperator }).value)) {
      const operator = (tokens[at++] as { value: BinaryOperator }).value;
      left = { kind: 'binary', operator, left, right: level(index + 1) };
    }
    return left;
  };

  const unary = (): Expression => {
    if (++depth > MAX_DEPTH) throw new ExpressionError('the expression is nested too deeply', peek().start);
    try {
      if (isOp('!')) {
        at++;
        return { kind: 'not', operand: unary() };
      }
      return primary();
    } finally {
      depth--;
    }
  };

  const primary = (): Expression => {
    const token = tokens[at++]!;
    if (token.type === 'number' || token.type === 'string') return { kind: 'literal', value: token.value };
    if (token.type === 'operator' && token.value === '(') {
      const inner = level(0);
      expect(')');
      return inner;
    }
    if (token.type === 'name') {
      if (token.value === 'true' || token.value === 'false') return { kind: 'literal', value: token.value === 'true' };
      if (token.value === 'null') return { kind: 'literal', value: null };
      if (isOp('(')) {
        if (!(token.value in FUNCTIONS))
          throw new ExpressionError(
            `unknown function ${token.value}(); the functions are ${Object.keys(FUNCTIONS).join(', ')}`,
            token.start,
          );
        at++;
        const args: Expression[] = [];
        if (!isOp(')')) {
          do args.push(level(0));
          while (isOp(',') && ++at);
        }
        expect(')');
        const name = token.value as FunctionName;
        const arity = FUNCTIONS[name].length;
        if (args.length !== arity)
          throw new ExpressionError(
            `${name}() takes ${arity} argument${arity === 1 ? '' : 's'}, not ${args.length}`,
            token.start,
          );
        return { kind: 'call', name, args, start: token.start };
      }
      if (!ROOTS.includes(token.value as ReferenceRoot)) {
        throw new ExpressionError(
          `unknown name ${token.value}: a reference starts with inputs, steps, run or workflow; text is written in quotes`,
          token.start,
        );
      }
      const path: Array<string | number> = [];
      let end = token.start + token.value.length;
      for (;;) {
        if (isOp('.')) {
          at++;
          const field = tokens[at++]!;
          if (field.type !== 'name') throw new ExpressionError('expected a field name after .', field.start);
          path.push(field.value);
          end = field.start + field.value.length;
        } else if (isOp('[')) {
          at++;
          const key = tokens[at++]!;
          if (!(key.type === 'string' || (key.type === 'number' && Number.isInteger(key.value) && key.value >= 0))) {
            throw new ExpressionError('expected an index (a whole number) or a key in quotes inside [ ]', key.start);
          }
          path.push(key.value);
          end = peek().start + 1;
          expect(']');
        } else break;
      }
      return { kind: 'reference', root: token.value as ReferenceRoot, path, start: token.start, end };
    }
    if (token.type === 'end') throw new ExpressionError('the expression ends too early', token.start);
    throw new ExpressionError(`unexpected ${token.value}`, token.start);
  };

  const expression = level(0);
  if (peek().type !== 'end')
    throw new ExpressionError(`unexpected ${describe(peek())} after the expression`, peek().start);
  return expression;
}

function describe(token: Token): string {
  if (token.type === 'end') return 'end';
  return token.type === 'string' ? 'text' : String(token.value);
}

// ---------------------------------------------------------------------------------------------------- templates

export type TemplatePart = { text: string } | { expression: Expression; start: number; end: number };

/** The parts of a template: text, and placeholders with their expressions (offsets are the template's). */
export function parseTemplate(template: string): TemplatePart[] {
  const parts: TemplatePart[] = [];
  let text = '';
  let i = 0;
  while (i < template.length) {
    const open = template.indexOf('{{', i);
    if (open < 0) {
      text += template.slice(i);
      break;
    }
    text += template.slice(i, open);
    const close = closingBraces(template, open + 2);
    if (close < 0) throw new ExpressionError('a placeholder {{ is not closed by }}', open);
    const source = template.slice(open + 2, close);
    if (source.trim() === '') throw new ExpressionError('an empty placeholder {{ }}', open);
    if (text) parts.push({ text });
    text = '';
    parts.push({ expression: parseExpression(source, open + 2), start: open, end: close + 2 });
    i = close + 2;
  }
  if (text) parts.push({ text });
  return parts;
}

/** The offset of the `}}` that closes a placeholder, skipping quoted text (so `{{ '}}' }}` works); -1 if none. */
function closingBraces(template: string, from: number): number {
  let quote: string | null = null;
  for (let i = from; i < template.length; i++) {
    const char = template[i]!;
    if (quote) {
      if (char === '\\') i++;
      else if (char === quote) quote = null;
    } else if (char === "'" || char === '"') quote = char;
    else if (char === '}' && template[i + 1] === '}') return i;
  }
  return -1;
}

/** Every reference of an expression or template, in order (for checking them against the definition). */
export function referencesOf(parsed: Expression | TemplatePart[]): Array<Extract<Expression, { kind: 'reference' }>> {
  const found: Array<Extract<Expression, { kind: 'reference' }>> = [];
  const walk = (expression: Expression): void => {
    if (expression.kind === 'reference') found.push(expression);
    else if (expression.kind === 'not') walk(expression.operand);
    else if (expression.kind === 'binary') {
      walk(expression.left);
      walk(expression.right);
    } else if (expression.kind === 'call') expression.args.forEach(walk);
  };
  if (Array.isArray(parsed)) for (const part of parsed) 'expression' in part && walk(part.expression);
  else walk(parsed);
  return found;
}

// --------------------------------------------------------------------------------------------------- evaluation

export interface Scope {
  inputs: Record<string, Value>;
  steps: Record<string, { status: string; output: Value }>;
  run: { id: string };
  workflow: { id: string; version: number };
}

export function truthy(value: Value): boolean {
  return !(value === false || value === null || value === 0 || value === '');
}

function typeOf(value: Value): string {
  return value === null ? 'null' : Array.isArray(value) ? 'list' : typeof value;
}

function equal(a: Value, b: Value): boolean {
  if (typeOf(a) !== typeOf(b)) return false;
  if (a === null || typeof a !== 'object') return a === b;
  return JSON.stringify(a) === JSON.stringify(b);
}

/** A value as text in a template: text as it is, null as nothing, everything else as compact JSON. */
export function asText(value: Value): string {
  if (value === null) return '';
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}

const FUNCTIONS = {
  contains(haystack: Value, needle: Value): Value {
    if (typeof haystack === 'string') return needle === null ? false : haystack.includes(asText(needle));
    if (Array.isArray(haystack)) return haystack.some((item) => equal(item, needle));
    return false;
  },
  starts_with(text: Value, prefix: Value): Value {
    return typeof text === 'string' && typeof prefix === 'string' ? text.startsWith(prefix) : false;
  },
  length(value: Value): Value {
    if (typeof value === 'string') return characterCount(value);
    if (Array.isArray(value)) return value.length;
    return value === null ? 0 : null;
  },
  lower(text: Value): Value {
    return typeof text === 'string' ? text.toLowerCase() : null;
  },
  upper(text: Value): Value {
    return typeof text === 'string' ? text.toUpperCase() : null;
  },
  json(value: Value): Value {
    return JSON.stringify(value);
  },
};

function resolve(reference: Extract<Expression, { kind: 'reference' }>, scope: Scope): Value {
  let value: unknown = scope[reference.root];
  for (const key of reference.path) {
    if (value === null || typeof value !== 'object') return null;
    value = Array.isArray(value)
      ? typeof key === 'number'
        ? value[key]
        : undefined
      : Object.hasOwn(value, key)
        ? (value as Record<string, unknown>)[key]
        : undefined;
    if (value === undefined) return null;
  }
  return (value ?? null) as Value;
}

export function evaluate(expression: Expression, scope: Scope): Value {
  switch (expression.kind) {
    case 'literal':
      return expression.value;
    case 'reference':
      return resolve(expression, scope);
    case 'not':
      return !truthy(evaluate(expression.operand, scope));
    case 'call':
      return (FUNCTIONS[expression.name] as (...args: Value[]) => Value)(
        ...expression.args.map((arg) => evaluate(arg, scope)),
      );
    case 'binary': {
      const { operator } = expression;
      if (operator === '??') {
        const left = evaluate(expression.left, scope);
        return left === null ? evaluate(expression.right, scope) : left;
      }
      if (operator === '||')
        return truthy(evaluate(expression.left, scope)) || truthy(evaluate(expression.right, scope));
      if (operator === '&&')
        return truthy(evaluate(expression.left, scope)) && truthy(evaluate(expression.right, scope));
      const left = evaluate(expression.left, scope);
      const right = evaluate(expression.right, scope);
      if (operator === '==') return equal(left, right);
      if (operator === '!=') return !equal(left, right);
      // Ordering compares numbers with numbers and text with text; anything else is false.
      if (
        !(
          (typeof left === 'number' && typeof right === 'number') ||
          (typeof left === 'string' && typeof right === 'string')
        )
      )
        return false;
      if (operator === '<') return left < right;
      if (operator === '<=') return left <= right;
      if (operator === '>') return left > right;
      return left >= right;
    }
  }
}

/** Renders a template: one placeholder alone keeps its value's type; otherwise the result is text. */
export function render(parts: TemplatePart[], scope: Scope): Value {
  if (parts.length === 1 && 'expression' in parts[0]!) return evaluate(parts[0].expression, scope);
  let out = '';
  for (const part of parts) {
    out += 'text' in part ? part.text : asText(evaluate(part.expression, scope));
    if (out.length > MAX_RENDERED_CHARACTERS)
      throw new RangeError(
        `the template renders to more than ${MAX_RENDERED_CHARACTERS.toLocaleString('en')} characters`,
      );
  }
  return out;
}
