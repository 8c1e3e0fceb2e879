// Usage at a glance: the workspace's spend by day over the last 30 days, stacked by model (GET /v1/usage grouped by
// day and model), as a chart with the same figures in a table beside it for those who do not see the chart.
import { useEffect, useState } from 'preact/hooks';
import { allows, unwrap, type Schemas } from './api.ts';
import type { Session } from './session.ts';
import { Empty, Loading, ProblemMessage } from './ui.tsx';

const COLORS = ['#1d4ed8', '#d97706', '#059669', '#db2777', '#7c3aed', '#0891b2', '#65a30d', '#dc2626'];
const day = (date: Date) => date.toISOString().slice(0, 10);

export function UsagePage({ session }: { session: Session }) {
  const [report, setReport] = useState<Schemas['UsageReport'] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const allowed = allows(session.role, 'getUsage');
  const end = new Date();
  const start = new Date(end.getTime() - 29 * 86_400_000);
  useEffect(() => {
    if (!allowed) return;
    unwrap(session.client.GET('/v1/usage', { params: { query: { start_date: day(start), end_date: day(end), group_by: ['day', 'model'] } } })).then((found) => setReport(found as Schemas['UsageReport']), setError);
  }, []);
  if (!allowed) {
    return (
      <section aria-labelledby="usage-title">
        <h1 id="usage-title">Usage</h1>
        <p data-part="not-allowed">A {session.role} key cannot see the usage; sign in with an admin or owner key.</p>
      </section>
    );
  }
  const days = Array.from({ length: 30 }, (_, i) => day(new Date(start.getTime() + i * 86_400_000)));
  const models = report ? [...new Set(report.data.map((bucket) => bucket.model ?? 'other'))] : [];
  const cost = (date: string, model: string) => (report?.data ?? []).filter((bucket) => bucket.date === date && (bucket.model ?? 'other') === model).reduce((sum, bucket) => sum + bucket.cost_usd, 0);
  const totals = days.map((date) => models.reduce((sum, model) => sum + cost(date, model), 0));
  const top = Math.max(...totals, 0.000001);
  const width = 600;
  const height = 180;
  const bar = width / days.length;
  return (
    <section aria-labelledby="usage-title">
      <h1 id="usage-title">Usage</h1>
      <p class="muted">
        Spend by day and model, {days[0]} to {days[days.length - 1]}.
      </p>
      <ProblemMessage error={error} />
      {!report && !error ? <Loading what="the usage" /> : null}
      {report && report.data.length === 0 ? <Empty>No model calls in the last 30 days.</Empty> : null}
      {report && report.data.length > 0 ? (
        <>
          <svg class="chart" viewBox={`0 0 ${width} ${height + 20}`} role="img" aria-labelledby="usage-chart-title" data-part="usage-chart">
            <title id="usage-chart-title">Spend per day, stacked by model; the table below has the figures.</title>
            {days.map((date, i) => {
              let y = height;
              return (
                <g key={date}>
                  {models.map((model, m) => {
                    const h = (cost(date, model) / top) * height;
                    y -= h;
                    return h > 0 ? <rect key={model} x={i * bar + 2} y={y} width={bar - 4} height={h} fill={COLORS[m % COLORS.length]} /> : null;
                  })}
                </g>
              );
            })}
            <line x1="0" y1={height} x2={width} y2={height} stroke="currentColor" stroke-width="1" />
          </svg>
          <ul class="legend">
            {models.map((model, m) => (
              <li key={model}>
                <span class="swatch" style={`background:${COLORS[m % COLORS.length]}`} aria-hidden="true" /> {model}
              </li>
            ))}
          </ul>
          <div class="table" tabIndex={0} role="region" aria-label="Usage by model">
            <table data-part="usage">
              <caption>Usage by model over the period (total ${report.totals.cost_usd.toFixed(4)})</caption>
              <thead>
                <tr>
                  <th scope="col">Model</th>
                  <th scope="col">Requests</th>
                  <th scope="col">Tokens</th>
                  <th scope="col">Cost (USD)</th>
                </tr>
              </thead>
              <tbody>
                {models.map((model) => {
                  const buckets = report.data.filter((bucket) => (bucket.model ?? 'other') === model);
                  return (
                    <tr key={model}>
                      <td>{model}</td>
                      <td>{buckets.reduce((sum, bucket) => sum + bucket.requests, 0)}</td>
                      <td>{buckets.reduce((sum, bucket) => sum + bucket.total_tokens, 0)}</td>
                      <td>{buckets.reduce((sum, bucket) => sum + bucket.cost_usd, 0).toFixed(6)}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        </>
      ) : null}
    </section>
  );
}
