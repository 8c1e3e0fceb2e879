// `npm run dashboard`: the dashboard on its own, calling DASHBOARD_API (default: the mock of `npm run mock`,
// http://127.0.0.1:4010), served at http://127.0.0.1:DASHBOARD_PORT (5174). Sign in with any key against the mock.
import { startStandaloneDashboard } from '../src/features/dashboard/index.ts';

const apiBase = process.env.DASHBOARD_API ?? 'http://127.0.0.1:4010';
const dashboard = await startStandaloneDashboard({ apiBase, port: Number(process.env.DASHBOARD_PORT ?? 5174) });
console.log(`Dashboard at ${dashboard.url}, calling ${apiBase}. Ctrl-C stops it.`);
process.once('SIGINT', () => void dashboard.close().then(() => process.exit(0)));
process.once('SIGTERM', () => void dashboard.close().then(() => process.exit(0)));
