// Bodies sent as `application/yaml` (RFC 9512; the workflow operations take their definition in YAML or JSON). The
// body is parsed into the same JSON value a JSON body would give, before the contract's validator, so that both are
// checked alike. What YAML could do beyond JSON is refused: more than one document, custom tags, duplicate keys, more
// than 100 aliases (a "billion laughs" body). The positions of the parsed nodes are kept, so that an error about a
// field can say where it is in the text (`yamlPosition`).
import express, { type NextFunction, type Request, type Response } from 'express';
import { type Document, isCollection, LineCounter, parseAllDocuments } from 'yaml';
import { verifyText } from './body-encoding.ts';
import { locals } from './context.ts';
import { MAX_JSON_DEPTH, valueNestsDeeperThan } from './json-depth.ts';
import { Problem, type ProblemFieldError } from './problems.ts';

const YAML_TYPES = ['application/yaml', 'application/x-yaml', 'text/yaml'];

export interface YamlBody {
  document: Document;
  lines: LineCounter;
}

/** Line and column (1-based) of the node at a JSON Pointer of the body; undefined when it is not there. */
export function yamlPosition(body: YamlBody, pointer: string): { line: number; column: number } | undefined {
  const path =
    pointer === ''
      ? []
      : pointer
          .slice(1)
          .split('/')
          .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'));
  let node: unknown = body.document.contents;
  for (const segment of path) {
    if (!isCollection(node)) break;
    // A missing member: point at the object that lacks it.
    const child: unknown = node.get(
      /^\d+$/.test(segment) && node.constructor.name === 'YAMLSeq' ? Number(segment) : segment,
      true,
    );
    if (child === undefined) break;
    node = child;
  }
  const range = (node as { range?: [number, number, number] } | null)?.range;
  if (!range) return undefined;
  const { line, col } = body.lines.linePos(range[0]);
  return { line, column: col };
}

/** The field errors with the place of each in the YAML text added to its detail: "… (line 3, column 5)". */
export function withYamlPositions(body: YamlBody, errors: ProblemFieldError[]): ProblemFieldError[] {
  return errors.map((error) => {
    if (!error.pointer.startsWith('/') && error.pointer !== '') return error;
    const at = yamlPosition(body, error.pointer);
    return at ? { ...error, detail: `${error.detail} (line ${at.line}, column ${at.column})`.slice(0, 1000) } : error;
  });
}

export function yamlBody(limitBytes: number) {
  const text = express.text({ type: YAML_TYPES, limit: limitBytes, verify: verifyText });
  return (req: Request, res: Response, next: NextFunction) => {
    if (!req.is(YAML_TYPES)) return next();
    text(req, res, (error?: unknown) => {
      if (error) return next(error);
      const source = typeof req.body === 'string' ? req.body : '';
      const lines = new LineCounter();
      const documents = parseAllDocuments(source, {
        lineCounter: lines,
        uniqueKeys: true,
        prettyErrors: false,
        strict: true,
      });
      const list = Array.isArray(documents) ? documents : [];
      const where = (offset: number) => {
        const { line, col } = lines.linePos(offset);
        return `line ${line}, column ${col}`;
      };
      if (list.length !== 1)
        return next(
          new Problem(
            'invalid_json',
            list.length === 0
              ? 'The body is empty: send one YAML document.'
              : `The body holds ${list.length} YAML documents; send one.`,
          ),
        );
      const document = list[0]!;
      const first = document.errors[0];
      if (first)
        return next(
          new Problem(
            'invalid_json',
            `The body is not valid YAML: ${first.message.split('\n')[0]} (${where(first.pos[0])}).`,
          ),
        );
      const tag = document.warnings.find((warning) => warning.code === 'TAG_RESOLVE_FAILED');
      if (tag)
        return next(
          new Problem(
            'invalid_json',
            `The body uses a YAML tag this API does not accept (${where(tag.pos[0])}); write plain values.`,
          ),
        );
      try {
        req.body = document.toJS({ maxAliasCount: 100 });
      } catch (cause) {
        return next(new Problem('invalid_json', `The body is not usable YAML: ${(cause as Error).message}.`));
      }
      if (valueNestsDeeperThan(req.body, MAX_JSON_DEPTH))
        return next(
          new Problem(
            'invalid_json',
            `The body nests sequences and mappings deeper than ${MAX_JSON_DEPTH} levels, the most this API reads.`,
          ),
        );
      locals(res).yamlBody = { document, lines };
      next();
    });
  };
}
