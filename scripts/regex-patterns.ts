// The regular expressions of src/, found with the TypeScript compiler rather than a text search: a regex literal, and
// `new RegExp(…)` / `RegExp(…)` whose pattern and flags the compiler can work out without running the code (string
// literals, templates and `+` of such, constants declared with `const` in any module, a regex literal's `.source`,
// `Object.keys` of an object literal and `.join` of an array literal). A pattern a helper function builds from its
// parameters (`const w = (...alternatives: string[]) => new RegExp(…)`) is worked out again at each call whose
// arguments are such values, and reported at that call. A pattern built from anything else (a parameter, a value read
// at run time) is "dynamic": it is reported with the text of its expression, since no checker can see what it will be.
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

export interface StaticPattern {
  kind: 'static';
  file: string;
  line: number;
  source: string;
  flags: string;
}

export interface DynamicPattern {
  kind: 'dynamic';
  file: string;
  line: number;
  /** The source text of the `new RegExp(…)` call, whitespace collapsed. */
  expression: string;
  /** The name of the function (or constant) the call is in: what the allow-list names it by. */
  within: string;
}

export type FoundPattern = StaticPattern | DynamicPattern;

/** Every .ts / .tsx file under `dir`. */
export function sourceFiles(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...sourceFiles(path));
    else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts')) found.push(path);
  }
  return found;
}

type Value = string | readonly Value[] | { regex: true; source: string; flags: string } | { object: string[] };

const unknown = Symbol('unknown');
type Evaluated = Value | typeof unknown;

function isRegexValue(value: Evaluated): value is { regex: true; source: string; flags: string } {
  return typeof value === 'object' && value !== null && 'regex' in value;
}

/** The parts of a regex literal's text: `/source/flags`. */
function splitRegexLiteral(text: string): { source: string; flags: string } {
  const slash = text.lastIndexOf('/');
  return { source: text.slice(1, slash), flags: text.slice(slash + 1) };
}

/**
 * The value of an expression when the compiler alone can tell it; `unknown` otherwise. `seen` holds the expressions
 * being evaluated, which stops a constant that refers to itself.
 */
interface Context {
  checker: ts.TypeChecker;
  seen: Set<ts.Node>;
  /** The values of a helper function's parameters, while its body is read for one call. */
  bindings: Map<ts.Symbol, Value>;
}

function evaluate(node: ts.Expression, ctx: Context): Evaluated {
  if (ctx.seen.has(node)) return unknown;
  ctx.seen.add(node);
  try {
    return evaluateNode(node, ctx);
  } finally {
    ctx.seen.delete(node);
  }
}

function evaluateNode(node: ts.Expression, ctx: Context): Evaluated {
  if (ts.isStringLiteralLike(node)) return node.text;
  if (ts.isRegularExpressionLiteral(node)) return { regex: true, ...splitRegexLiteral(node.text) };
  if (
    ts.isParenthesizedExpression(node) ||
    ts.isAsExpression(node) ||
    ts.isSatisfiesExpression(node) ||
    ts.isNonNullExpression(node)
  )
    return evaluate(node.expression, ctx);
  if (ts.isTemplateExpression(node)) {
    let text = node.head.text;
    for (const span of node.templateSpans) {
      const value = evaluate(span.expression, ctx);
      if (typeof value !== 'string') return unknown;
      text += value + span.literal.text;
    }
    return text;
  }
  if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken) {
    const left = evaluate(node.left, ctx);
    const right = evaluate(node.right, ctx);
    return typeof left === 'string' && typeof right === 'string' ? left + right : unknown;
  }
  if (ts.isArrayLiteralExpression(node)) {
    const items: Value[] = [];
    for (const element of node.elements) {
      if (ts.isSpreadElement(element)) {
        const spread = evaluate(element.expression, ctx);
        if (!Array.isArray(spread)) return unknown;
        items.push(...(spread as Value[]));
      } else {
        const value = evaluate(element, ctx);
        if (value === unknown) return unknown;
        items.push(value);
      }
    }
    return items;
  }
  if (ts.isObjectLiteralExpression(node)) {
    const keys: string[] = [];
    for (const property of node.properties) {
      if (!ts.isPropertyAssignment(property) && !ts.isShorthandPropertyAssignment(property)) return unknown;
      const name = property.name;
      if (ts.isIdentifier(name) || ts.isStringLiteral(name) || ts.isNumericLiteral(name)) keys.push(name.text);
      else return unknown;
    }
    return { object: keys };
  }
  if (ts.isIdentifier(node)) return evaluateConstant(node, ctx);
  if (ts.isPropertyAccessExpression(node)) {
    const target = evaluate(node.expression, ctx);
    if (isRegexValue(target)) {
      if (node.name.text === 'source') return target.source;
      if (node.name.text === 'flags') return target.flags;
    }
    // A constant read through a namespace import (`A.NAME`).
    return evaluateConstant(node, ctx);
  }
  if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
    const method = node.expression.name.text;
    const receiver = node.expression.expression;
    if (method === 'join') {
      const list = evaluate(receiver, ctx);
      const separator = node.arguments[0] ? evaluate(node.arguments[0], ctx) : ',';
      if (Array.isArray(list) && typeof separator === 'string' && list.every((item) => typeof item === 'string'))
        return list.join(separator);
      return unknown;
    }
    if (method === 'keys' && ts.isIdentifier(receiver) && receiver.text === 'Object' && node.arguments[0]) {
      const object = evaluate(node.arguments[0], ctx);
      if (typeof object === 'object' && object !== null && 'object' in object) return object.object;
    }
  }
  return unknown;
}

/** The value of the `const` a name (or a namespace's member) refers to, in this module or one it imports. */
function evaluateConstant(node: ts.Identifier | ts.PropertyAccessExpression, ctx: Context): Evaluated {
  const symbol = symbolOf(node, ctx.checker);
  const bound = symbol && ctx.bindings.get(symbol);
  if (bound !== undefined) return bound;
  const declaration = symbol?.valueDeclaration;
  if (
    declaration &&
    ts.isVariableDeclaration(declaration) &&
    declaration.initializer &&
    ts.isVariableDeclarationList(declaration.parent) &&
    declaration.parent.flags & ts.NodeFlags.Const
  )
    return evaluate(declaration.initializer, ctx);
  return unknown;
}

function symbolOf(node: ts.Node, checker: ts.TypeChecker): ts.Symbol | undefined {
  const symbol = checker.getSymbolAtLocation(node);
  return symbol && symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
}

/** The function a call calls, when it is declared in src/ as a function or a `const` arrow or function expression. */
type Callable = ts.FunctionDeclaration | ts.ArrowFunction | ts.FunctionExpression;

function calledFunction(call: ts.CallExpression, checker: ts.TypeChecker): Callable | undefined {
  const declaration = symbolOf(call.expression, checker)?.valueDeclaration;
  if (!declaration) return undefined;
  if (ts.isFunctionDeclaration(declaration)) return declaration;
  if (
    ts.isVariableDeclaration(declaration) &&
    declaration.initializer &&
    (ts.isArrowFunction(declaration.initializer) || ts.isFunctionExpression(declaration.initializer))
  )
    return declaration.initializer;
  return undefined;
}

/** The parameters of `fn` bound to the arguments of `call` that can be worked out; a rest parameter to an array. */
function bind(fn: Callable, call: ts.CallExpression, ctx: Context): Map<ts.Symbol, Value> {
  const values: Evaluated[] = [];
  for (const argument of call.arguments) {
    if (ts.isSpreadElement(argument)) {
      const spread = evaluate(argument.expression, ctx);
      if (!Array.isArray(spread)) return new Map();
      values.push(...(spread as Value[]));
    } else values.push(evaluate(argument, ctx));
  }
  const bindings = new Map<ts.Symbol, Value>();
  fn.parameters.forEach((parameter, i) => {
    const symbol = ts.isIdentifier(parameter.name) ? ctx.checker.getSymbolAtLocation(parameter.name) : undefined;
    if (!symbol) return;
    const value = parameter.dotDotDotToken ? values.slice(i) : values[i];
    if (value !== undefined && value !== unknown && (!Array.isArray(value) || !value.includes(unknown)))
      bindings.set(symbol, value as Value);
  });
  return bindings;
}

/** The name of the function or method a node is in (an arrow function's, its constant's), else `(module)`. */
function enclosingName(node: ts.Node): string {
  for (let at = node.parent; at; at = at.parent) {
    if ((ts.isFunctionDeclaration(at) || ts.isMethodDeclaration(at)) && at.name && ts.isIdentifier(at.name))
      return at.name.text;
    if (
      (ts.isArrowFunction(at) || ts.isFunctionExpression(at)) &&
      (ts.isVariableDeclaration(at.parent) || ts.isPropertyAssignment(at.parent)) &&
      ts.isIdentifier(at.parent.name)
    )
      return at.parent.name.text;
  }
  return '(module)';
}

function isRegExpConstructor(node: ts.Node): node is ts.NewExpression | ts.CallExpression {
  return (
    (ts.isNewExpression(node) || ts.isCallExpression(node)) &&
    ts.isIdentifier(node.expression) &&
    node.expression.text === 'RegExp'
  );
}

/** The regular expressions of `files` (absolute paths), each with its place relative to `root`. */
export function findPatterns(files: string[], root: string): FoundPattern[] {
  const program = ts.createProgram(files, {
    target: ts.ScriptTarget.ES2024,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    allowImportingTsExtensions: true,
    jsx: ts.JsxEmit.ReactJSX,
    noEmit: true,
    noResolve: true,
    noLib: true,
    skipLibCheck: true,
    types: [],
  });
  const checker = program.getTypeChecker();
  const found: FoundPattern[] = [];
  for (const file of files) {
    const sourceFile = program.getSourceFile(file);
    if (!sourceFile) continue;
    const place = (node: ts.Node) => ({
      file: relative(root, file),
      line: sourceFile.getLineAndCharacterOfPosition(node.getStart(sourceFile)).line + 1,
    });
    /** The pattern a `RegExp(…)` builds, given the bindings of the function it is read in. */
    const built = (node: ts.NewExpression | ts.CallExpression, bindings: Map<ts.Symbol, Value>) => {
      const ctx: Context = { checker, seen: new Set(), bindings };
      const [patternArgument, flagsArgument] = node.arguments ?? [];
      const pattern = patternArgument ? evaluate(patternArgument, ctx) : unknown;
      const flagsValue = flagsArgument ? evaluate(flagsArgument, ctx) : undefined;
      const source = isRegexValue(pattern) ? pattern.source : pattern;
      const flags = flagsValue === undefined ? (isRegexValue(pattern) ? pattern.flags : '') : flagsValue;
      return typeof source === 'string' && typeof flags === 'string' ? { source, flags } : undefined;
    };
    /**
     * The patterns the body of the function `call` calls builds from its arguments (and those of the helpers it
     * calls in turn, a few deep), reported at `at`, the call in this file.
     */
    const throughCall = (call: ts.CallExpression, bindings: Map<ts.Symbol, Value>, at: ts.Node, depth: number) => {
      const fn = calledFunction(call, checker);
      if (!fn?.body || depth > 3) return;
      const inner = bind(fn, call, { checker, seen: new Set(), bindings });
      if (inner.size === 0) return;
      const walk = (node: ts.Node): void => {
        if (isRegExpConstructor(node)) {
          const pattern = built(node, inner);
          if (pattern) found.push({ kind: 'static', ...place(at), ...pattern });
        } else if (ts.isCallExpression(node)) throughCall(node, inner, at, depth + 1);
        ts.forEachChild(node, walk);
      };
      walk(fn.body);
    };
    const visit = (node: ts.Node): void => {
      if (ts.isRegularExpressionLiteral(node)) {
        found.push({ kind: 'static', ...place(node), ...splitRegexLiteral(node.text) });
      } else if (isRegExpConstructor(node)) {
        // A regex literal handed to RegExp is found as a literal too; what it becomes here is what runs.
        const pattern = built(node, new Map());
        if (pattern) found.push({ kind: 'static', ...place(node), ...pattern });
        else
          found.push({
            kind: 'dynamic',
            ...place(node),
            expression: node.getText(sourceFile).replace(/\s+/g, ' '),
            within: enclosingName(node),
          });
      } else if (ts.isCallExpression(node)) throughCall(node, new Map(), node, 0);
      ts.forEachChild(node, visit);
    };
    visit(sourceFile);
  }
  return found;
}
