// The channel that wakes delivery workers: a transaction that creates deliveries (or makes some due) calls
// `notifyOnCommit(trx, DELIVERIES_CHANNEL)` (`pg_notify` on commit on PostgreSQL, an in-process signal on SQLite).
// A file of its own, so that recording an event (record-event.ts, which every feature calls) does not load the
// delivery worker.
export const DELIVERIES_CHANNEL = 'webhook_deliveries';
