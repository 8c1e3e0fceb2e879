// The event table: each change that subscribers hear about is recorded here in the transaction of the change,
// with the next per-workspace `sequence`. Delivering events to webhook endpoints is the webhooks feature's job.
import type { Transaction } from 'kysely';
import type { components } from '../../generated/openapi.ts';
import type { Database } from '../storage/schema.ts';
import { iso } from './clock.ts';
import { newId } from './ids.ts';

export type EventType = components['schemas']['EventType'];

export async function recordEvent(trx: Transaction<Database>, workspaceId: string, type: EventType, data: object, now: Date): Promise<string> {
  // The row lock of this update orders concurrent events of one workspace (PostgreSQL); SQLite has one writer.
  const { event_sequence } = await trx
    .updateTable('workspaces')
    .set((eb) => ({ event_sequence: eb('event_sequence', '+', 1) }))
    .where('id', '=', workspaceId)
    .returning('event_sequence')
    .executeTakeFirstOrThrow();
  const id = newId('evt', now);
  await trx
    .insertInto('events')
    .values({ id, workspace_id: workspaceId, type, sequence: event_sequence, data: JSON.stringify(data), created_at: iso(now) })
    .execute();
  return id;
}
