// The dashboard: the first frontend written against the contract, served at /dashboard (pages.ts) and built from
// app/ with the generated typed client. It implements no operation of its own: everything it shows and changes goes
// through the public API with the key a person signs in with.
import type { Feature } from '../../platform/feature.ts';
import { dashboardPages } from './pages.ts';

export const dashboardFeature = {
  name: 'dashboard',
  handlers: {},
  pages: dashboardPages,
} satisfies Feature;

// The public API: what other features and the entry points use (docs/server.md, "Dependency rules").
export { startStandaloneDashboard } from './standalone.ts'; // npm run dashboard: the dashboard in front of another server
