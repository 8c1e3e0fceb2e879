// Webhook endpoints, their deliveries and attempts; the indexes the delivery worker and the event list need.
import { type Kysely, type Migration, sql } from 'kysely';

export const webhooks: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.createIndex('events_workspace_id').on('events').columns(['workspace_id', 'id']).execute();
    await db.schema.createIndex('events_created').on('events').column('created_at').execute();

    await db.schema
      .createTable('webhook_endpoints')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('url', 'text', (c) => c.notNull())
      .addColumn('description', 'text')
      .addColumn('event_types', 'text', (c) => c.notNull())
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('metadata', 'text', (c) => c.notNull())
      .addColumn('secret', 'text', (c) => c.notNull())
      .addColumn('previous_secret', 'text')
      .addColumn('previous_secret_expires_at', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('webhook_endpoints_workspace')
      .on('webhook_endpoints')
      .columns(['workspace_id', 'id'])
      .execute();

    await db.schema
      .createTable('webhook_deliveries')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('endpoint_id', 'text', (c) => c.notNull())
      .addColumn('event_id', 'text', (c) => c.notNull())
      .addColumn('event_type', 'text', (c) => c.notNull())
      .addColumn('sequence', 'integer', (c) => c.notNull())
      .addColumn('ordered', 'integer', (c) => c.notNull())
      .addColumn('manual', 'integer', (c) => c.notNull())
      .addColumn('test', 'integer', (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('attempt_count', 'integer', (c) => c.notNull())
      .addColumn('next_attempt_at', 'text')
      .addColumn('last_attempt_at', 'text')
      .addColumn('last_response_status_code', 'integer')
      .addColumn('delivered_at', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('leased_until', 'text')
      .addColumn('lease_token', 'text')
      .execute();
    await db.schema
      .createIndex('webhook_deliveries_workspace')
      .on('webhook_deliveries')
      .columns(['workspace_id', 'id'])
      .execute();
    await db.schema
      .createIndex('webhook_deliveries_endpoint')
      .on('webhook_deliveries')
      .columns(['endpoint_id', 'id'])
      .execute();
    await db.schema.createIndex('webhook_deliveries_event').on('webhook_deliveries').column('event_id').execute();
    await db.schema.createIndex('webhook_deliveries_created').on('webhook_deliveries').column('created_at').execute();
    // The worker's two hot lookups stay small however long the history: what is due, and each endpoint's queue head.
    await db.schema
      .createIndex('webhook_deliveries_due')
      .on('webhook_deliveries')
      .column('next_attempt_at')
      .where(sql.ref('status'), '=', 'pending')
      .execute();
    await db.schema
      .createIndex('webhook_deliveries_queue')
      .on('webhook_deliveries')
      .columns(['endpoint_id', 'sequence'])
      .where((eb) => eb.and([eb(sql.ref('status'), '=', 'pending'), eb(sql.ref('ordered'), '=', 1)]))
      .execute();

    await db.schema
      .createTable('webhook_attempts')
      .addColumn('delivery_id', 'text', (c) => c.notNull().references('webhook_deliveries.id').onDelete('cascade'))
      .addColumn('number', 'integer', (c) => c.notNull())
      .addColumn('workspace_id', 'text', (c) => c.notNull())
      .addColumn('trigger', 'text', (c) => c.notNull())
      .addColumn('started_at', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('response_status_code', 'integer')
      .addColumn('response_body', 'text')
      .addColumn('duration_ms', 'integer', (c) => c.notNull())
      .addColumn('error', 'text')
      .addPrimaryKeyConstraint('webhook_attempts_pk', ['delivery_id', 'number'])
      .execute();
  },
};
