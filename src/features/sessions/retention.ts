// What the sessions feature keeps only for a while: a session 30 days after it ended or expired (the list shows only
// usable ones; the audit log keeps sign-ins and sign-outs), a sign-in link a day after it expired.
import type { Kysely } from 'kysely';
import { iso } from '../../platform/clock.ts';
import type { Database } from '../../storage/schema.ts';

const KEEP_ENDED_SESSIONS_MS = 30 * 24 * 3_600_000;
const KEEP_EXPIRED_LINKS_MS = 24 * 3_600_000;

export async function deleteOldSessions(db: Kysely<Database>, now: Date): Promise<void> {
  const before = iso(new Date(now.getTime() - KEEP_ENDED_SESSIONS_MS));
  await db
    .deleteFrom('sessions')
    .where((eb) => eb.or([eb('ended_at', '<', before), eb('expires_at', '<', before)]))
    .execute();
  await db
    .deleteFrom('sign_in_links')
    .where('expires_at', '<', iso(new Date(now.getTime() - KEEP_EXPIRED_LINKS_MS)))
    .execute();
}
