// Queries of the model-call path built and compiled once, then run with each call's values. Kysely's building and
// compiling of a small query costs several times what SQLite spends running it, and every model call runs the same
// few (the spend limits of its caller, its usage row). The database's own statement cache then prepares each text once.
import type { Compilable, CompiledQuery, Kysely } from 'kysely';
import type { Database } from './schema.ts';

/** Stands for a value while the query is built; replaced in the compiled query's parameters. */
const PLACEHOLDER = '\u0000value:';

/**
 * A query whose shape depends only on which of its values are null: `build` gets a placeholder for every value that is
 * not null (null for the others) and may use the placeholders only as values (compared, inserted), never transformed
 * or in the query's shape. Compiled once per database and per set of null values; `runner`, a transaction of that
 * database, runs it inside the transaction.
 */
export function preparedQuery<V extends Record<string, unknown>, R>(
  build: (db: Kysely<Database>, values: { [K in keyof V]: V[K] }) => Compilable<R>,
) {
  const compiledFor = new WeakMap<Kysely<Database>, Map<string, CompiledQuery<R>>>();
  return async (db: Kysely<Database>, values: V, runner: Kysely<Database> = db): Promise<R[]> => {
    let byShape = compiledFor.get(db);
    if (!byShape) compiledFor.set(db, (byShape = new Map()));
    const keys = Object.keys(values);
    const shape = keys.map((key) => (values[key] == null ? '0' : '1')).join('');
    let compiled = byShape.get(shape);
    if (!compiled) {
      const placeholders = Object.fromEntries(
        keys.map((key) => [key, values[key] == null ? values[key] : PLACEHOLDER + key]),
      ) as { [K in keyof V]: V[K] };
      compiled = build(db, placeholders).compile();
      byShape.set(shape, compiled);
    }
    const parameters = compiled.parameters.map((parameter) =>
      typeof parameter === 'string' && parameter.startsWith(PLACEHOLDER)
        ? values[parameter.slice(PLACEHOLDER.length)]
        : parameter,
    );
    return (await runner.executeQuery<R>({ ...compiled, parameters })).rows;
  };
}
