// The regular expressions of src/, found with the TypeScript compiler rather than a text search: a regex literal, and
// `new RegExp(…)` / `RegExp(…)` whose pattern and flags the compiler can work out without running the code (string
// literals, templates and `+` of such, constants declared with `const` in any module, a regex literal's `.source`,
// `Object.keys` of an object literal and `.join` of an array literal). A pattern built from anything else (a
// parameter, a value read at run time) is "dynamic": it is reported with the text of its expression, since no
// checker can see what it will be.
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
function evaluate(node: ts.Expression, checker: ts.TypeChecker, seen: Set<ts.Node> = new Set()): Evaluated {
  if (seen.has(node)) return unknown;
  seen.add(node);
  try {
    return evaluateNode(node, checker, seen);
  } finally {
    seen.delete(node);
  }
}

function evaluateNode(node: ts.Expression, checker: ts.TypeChecker, seen: Set<ts.Node>): Evaluated {
  if (ts.isStringLiteralLike(node)) return node.text;
  if (ts.isRegularExpressionLiteral(node)) return { regex: true, ...splitRegexLiteral(node.text) };
  if (
    ts.isParenthesizedExpression(node) ||
    ts.isAsExpression(node) ||
    ts.isSatisfiesExpression(node) ||
    ts.isNonNullExpression(node)
  )
    return evaluate(node.expression, checker, seen);
  if (ts.isTemplateExpression(node)) {
    let text = node.head.text;
    for (const span of node.templateSpans) {
      const value = evaluate(span.expression, checker, seen);
      if (typeof value !== 'string') return unknown;
      text += value + span.literal.text;
    }
    return text;
  }
  if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken) {
    const left = evaluate(node.left, checker, seen);
    const right = evaluate(node.right, checker, seen);
    return typeof left === 'string' && typeof right === 'string' ? left + right : unknown;
  }
  if (ts.isArrayLiteralExpression(node)) {
    const items: Value[] = [];
    for (const element of node.elements) {
      if (ts.isSpreadElement(element)) {
        const spread = evaluate(element.expression, checker, seen);
        if (!Array.isArray(spread)) return unknown;
        items.push(...(spread as Value[]));
      } else {
        const value = evaluate(element, checker, seen);
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
  if (ts.isIdentifier(node)) return evaluateConstant(node, checker, seen);
  if (ts.isPropertyAccessExpression(node)) {
    const target = evaluate(node.expression, checker, seen);
    if (isRegexValue(target)) {
      if (node.name.text === 'source') return target.source;
      if (node.name.text === 'flags') return target.flags;
    }
    // A constant read through a namespace import (`A.NAME`).
    return evaluateConstant(node, checker, seen);
  }
  if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
    const method = node.expression.name.text;
    const receiver = node.expression.expression;
    if (method === 'join') {
      const list = evaluate(receiver, checker, seen);
      const separator = node.arguments[0] ? evaluate(node.arguments[0], checker, seen) : ',';
      if (Array.isArray(list) && typeof separator === 'string' && list.every((item) => typeof item === 'string'))
        return list.join(separator);
      return unknown;
    }
    if (method === 'keys' && ts.isIdentifier(receiver) && receiver.text === 'Object' && node.arguments[0]) {
      const object = evaluate(node.arguments[0], checker, seen);
      if (typeof object === 'object' && object !== null && 'object' in object) return object.object;
    }
  }
  return unknown;
}

/** The value of the `const` a name (or a namespace's member) refers to, in this module or one it imports. */
function evaluateConstant(
  node: ts.Identifier | ts.PropertyAccessExpression,
  checker: ts.TypeChecker,
  seen: Set<ts.Node>,
): Evaluated {
  let symbol = checker.getSymbolAtLocation(node);
  if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
  const declaration = symbol?.valueDeclaration;
  if (
    declaration &&
    ts.isVariableDeclaration(declaration) &&
    declaration.initializer &&
    ts.isVariableDeclarationList(declaration.parent) &&
    declaration.parent.flags & ts.NodeFlags.Const
  )
    return evaluate(declaration.initializer, checker, seen);
  return unknown;
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
    const visit = (node: ts.Node): void => {
      if (ts.isRegularExpressionLiteral(node)) {
        found.push({ kind: 'static', ...place(node), ...splitRegexLiteral(node.text) });
      } else if (isRegExpConstructor(node)) {
        const [patternArgument, flagsArgument] = node.arguments ?? [];
        const pattern = patternArgument ? evaluate(patternArgument, checker) : unknown;
        const flagsValue = flagsArgument ? evaluate(flagsArgument, checker) : undefined;
        const source = isRegexValue(pattern) ? pattern.source : pattern;
        const flags = flagsValue === undefined ? (isRegexValue(pattern) ? pattern.flags : '') : flagsValue;
        if (typeof source === 'string' && typeof flags === 'string') {
          found.push({ kind: 'static', ...place(node), source, flags });
          // A regex literal handed to RegExp is found as a literal too; what it becomes here is what runs.
        } else {
          found.push({
            kind: 'dynamic',
            ...place(node),
            expression: node.getText(sourceFile).replace(/\s+/g, ' '),
          });
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(sourceFile);
  }
  return found;
}
