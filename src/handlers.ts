// The operations without a handler (answered 501), and the compiler's check against the contract: every operation is
// implemented by a registered feature or listed in `notImplemented`, never both, never neither. Only the feature list's
// type is imported: the app binds the handlers of `Platform.features`, which the entry point hands down.
import type { OperationId } from '../generated/operations.ts';
import type { features } from './features/index.ts';

/** The operations of the contract that no feature implements; each would answer 501. Empty: every one is built. */
export const notImplemented = [] as const satisfies readonly OperationId[];

type NotBuilt = (typeof notImplemented)[number];
/** The operations the registered features implement (the keys of their `handlers`). */
type ImplementedBy<F> = F extends { handlers: infer H } ? keyof H & OperationId : never;
type Implemented = ImplementedBy<(typeof features)[number]>;

// The compiler's check, naming the operation at fault: every operation is implemented by a feature or listed in
// `notImplemented` ("Property 'x' is missing": neither), never both ("Property 'x' is missing": both).
({}) satisfies Record<Exclude<OperationId, Implemented | NotBuilt>, never>;
({}) satisfies Record<Extract<Implemented, NotBuilt>, never>;
