// The sign-ins under way: each kept from its start to the identity provider's answer, at most 10 minutes, and used
// once. The answer names its sign-in (OpenID Connect's `state`, SAML's `InResponseTo`); one that names none, a used
// one or an expired one is refused with a code of its own.
import type { Kysely, Selectable } from 'kysely';
import { iso } from '../../platform/clock.ts';
import { Problem } from '../../platform/problems.ts';
import type { Database } from '../../storage/schema.ts';
import type { SsoFlowsTable } from './schema.ts';

export const FLOW_TTL_MS = 10 * 60_000;

export type FlowRow = Selectable<SsoFlowsTable>;

export async function startFlow(
  db: Kysely<Database>,
  now: Date,
  flow: Pick<FlowRow, 'id' | 'workspace_id' | 'connection_id' | 'code_verifier' | 'nonce' | 'return_to'> & {
    saml_request_instant?: string | null;
  },
): Promise<void> {
  await db
    .insertInto('sso_flows')
    .values({
      saml_request_instant: null,
      ...flow,
      created_at: iso(now),
      expires_at: iso(new Date(now.getTime() + FLOW_TTL_MS)),
      used_at: null,
    })
    .execute();
}

/**
 * The sign-in the answer names, checked: of this connection, not used, not expired. Refusals name the sign-in's
 * `what` (`state`, `InResponseTo`).
 */
export async function findFlow(
  db: Kysely<Database>,
  connectionId: string,
  id: string | null,
  now: Date,
  what: string,
): Promise<FlowRow> {
  const flow = id
    ? await db
        .selectFrom('sso_flows')
        .selectAll()
        .where('id', '=', id)
        .where('connection_id', '=', connectionId)
        .executeTakeFirst()
    : undefined;
  if (!flow)
    throw new Problem(
      'sso_state_invalid',
      `The ${what} of this answer names no sign-in of this connection; start the sign-in again at the connection's start URL.`,
    );
  if (flow.used_at !== null)
    throw new Problem(
      'sso_response_replayed',
      `This answer of the identity provider was used already (its ${what} was consumed at ${flow.used_at}); each is accepted once. Start the sign-in again.`,
    );
  if (flow.expires_at <= iso(now))
    throw new Problem(
      'sso_state_expired',
      `The sign-in started at ${flow.created_at} and expired after ${FLOW_TTL_MS / 60_000} minutes; start it again.`,
    );
  return flow;
}

/** Marks the sign-in used; false when another request used it first (the same answer sent twice at once). */
export async function consumeFlow(db: Kysely<Database>, id: string, now: Date): Promise<boolean> {
  const result = await db
    .updateTable('sso_flows')
    .set({ used_at: iso(now) })
    .where('id', '=', id)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export function replayed(what: string): Problem {
  return new Problem(
    'sso_response_replayed',
    `This answer of the identity provider was used already (its ${what} is consumed); each is accepted once. Start the sign-in again.`,
  );
}

/** Expired sign-ins, used or not: after their 10 minutes nothing can use them and nothing needs to tell them apart. */
export async function pruneFlows(db: Kysely<Database>, now: Date): Promise<void> {
  await db
    .deleteFrom('sso_flows')
    .where('expires_at', '<', iso(new Date(now.getTime() - FLOW_TTL_MS)))
    .execute();
}
