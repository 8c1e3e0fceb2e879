// The limits feature: spend limits on a workspace, a project or an API key (limits.ts), enforced on every model call
// by engine middleware (middleware.ts, registered in src/services.ts).

import { iso } from '../../platform/clock.ts';
import type { Feature } from '../../platform/feature.ts';
import { limitHandlers } from './limits.ts';
import { spendLimits } from './migrations/021_spend_limits.ts';

export const limitsFeature = {
  name: 'limits',
  handlers: limitHandlers,
  migrations: { '021_spend_limits': spendLimits },
  // Reservations are released when their call is recorded; those of a process that died mid-call only expire.
  async retention(db, now) {
    await db.deleteFrom('spend_reservations').where('expires_at', '<=', iso(now)).execute();
  },
} satisfies Feature;

// The public API: what other features and the entry points use (docs/server.md, "Dependency rules").
export { spendLimitMiddleware } from './middleware.ts'; // registered on the engine by src/services.ts
