// Usage at a glance: the workspace's spend by day over the last 30 days, stacked by model (GET /v1/usage grouped by
// day and model), as a chart with a dated axis and a dollar axis, and the same figures in tables below it for those
// who do not see the chart; then the workspace's spend limits with what each scope has spent in its period.
import { useEffect, useState } from 'preact/hooks';
import { allows, type Schemas, unwrap } from './api.ts';
import type { Session } from './session.ts';
import { Empty, Loading, NotAllowed, ProblemMessage } from './ui.tsx';

const COLORS = ['#1d4ed8', '#d97706', '#059669', '#db2777', '#7c3aed', '#0891b2', '#65a30d', '#dc2626'];
const day = (date: Date) => date.toISOString().slice(0, 10);

// The chart's box and the margins that hold the axes' labels, in the SVG's units.
const WIDTH = 640;
const HEIGHT = 240;
const LEFT = 72;
const RIGHT = 8;
const TOP = 10;
const BOTTOM = 28;

/** "Nov 3" for 2026-11-03: the days are UTC dates, and shown as such. */
const shortDate = (date: string) =>
  new Date(`${date}T00:00:00Z`).toLocaleDateString('en', { month: 'short', day: 'numeric', timeZone: 'UTC' });

const dollars = (value: number, decimals: number) => `$${value.toFixed(decimals)}`;

/**
 * The dollar axis: a round step (1, 2 or 5 times a power of ten) that splits the highest day into at most four, its
 * ticks from 0, and as many decimals as the step needs (at least the cents).
 */
export function dollarScale(highest: number): { max: number; ticks: number[]; decimals: number } {
  const target = highest > 0 ? highest / 4 : 0.01;
  const power = 10 ** Math.floor(Math.log10(target));
  const step = [1, 2, 5, 10].map((factor) => factor * power).find((candidate) => candidate >= target)!;
  const count = Math.max(1, Math.ceil(highest / step - 1e-9));
  const decimals = Math.min(8, Math.max(2, -Math.floor(Math.log10(step))));
  const ticks = Array.from({ length: count + 1 }, (_, i) => Number((i * step).toFixed(decimals)));
  return { max: count * step, ticks, decimals };
}

const scopeNames = { workspace: 'Workspace', project: 'Project', api_key: 'API key' } as const;

/** The spend limits (GET /v1/spend-limits): each scope's spend in its period against its limit, and when it resets. */
function SpendLimits({ session }: { session: Session }) {
  const [limits, setLimits] = useState<Schemas['SpendLimit'][] | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    unwrap(session.client.GET('/v1/spend-limits', { params: { query: { limit: 100 } } })).then(
      (page) => setLimits((page as Schemas['SpendLimitList']).data),
      setError,
    );
  }, []);
  return (
    <section aria-labelledby="limits-title">
      <h2 id="limits-title">Spend limits</h2>
      <p class="muted">
        A call of a scope at its limit is refused (402 spend_limit_reached) until the period resets. Set limits with
        POST /v1/spend-limits.
      </p>
      <ProblemMessage error={error} />
      {!limits && !error ? <Loading what="the spend limits" /> : null}
      {limits && limits.length === 0 ? <Empty>No spend limits: calls are not capped.</Empty> : null}
      {limits && limits.length > 0 ? (
        <div class="table" tabIndex={0} role="region" aria-label="Spend limits">
          <table data-part="spend-limits">
            <caption>Spend limits and the spend of their current period</caption>
            <thead>
              <tr>
                <th scope="col">Scope</th>
                <th scope="col">Period</th>
                <th scope="col">Spent (USD)</th>
                <th scope="col">Limit (USD)</th>
                <th scope="col">Used</th>
                <th scope="col">Resets (UTC)</th>
              </tr>
            </thead>
            <tbody>
              {limits.map((limit) => {
                const used = limit.spent_usd / limit.amount_usd;
                const state =
                  used >= 1
                    ? 'reached'
                    : limit.soft_threshold !== null && used >= limit.soft_threshold
                      ? 'approaching'
                      : 'ok';
                return (
                  <tr key={limit.id} data-state={state}>
                    <th scope="row">
                      {scopeNames[limit.scope.type]} <code>{limit.scope.id}</code>
                    </th>
                    <td>{limit.period === 'day' ? 'Day' : 'Month'}</td>
                    <td>{limit.spent_usd.toFixed(6)}</td>
                    <td>{limit.amount_usd.toFixed(2)}</td>
                    <td>
                      {(used * 100).toFixed(0)} %
                      {state === 'reached'
                        ? ' (reached: calls refused)'
                        : state === 'approaching'
                          ? ' (past the warning)'
                          : ''}
                    </td>
                    <td>{limit.resets_at.slice(0, 16).replace('T', ' ')}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}

export function UsagePage({ session }: { session: Session }) {
  const [report, setReport] = useState<Schemas['UsageReport'] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const allowed = allows(session.role, 'getUsage');
  const end = new Date();
  const start = new Date(end.getTime() - 29 * 86_400_000);
  useEffect(() => {
    if (!allowed) return;
    unwrap(
      session.client.GET('/v1/usage', {
        params: { query: { start_date: day(start), end_date: day(end), group_by: ['day', 'model'] } },
      }),
    ).then((found) => setReport(found as Schemas['UsageReport']), setError);
  }, []);
  if (!allowed) {
    return (
      <section aria-labelledby="usage-title">
        <h1 id="usage-title">Usage</h1>
        <NotAllowed session={session} what="the usage" />
      </section>
    );
  }
  const days = Array.from({ length: 30 }, (_, i) => day(new Date(start.getTime() + i * 86_400_000)));
  const models = report ? [...new Set(report.data.map((bucket) => bucket.model ?? 'other'))] : [];
  const cost = (date: string, model: string) =>
    (report?.data ?? [])
      .filter((bucket) => bucket.date === date && (bucket.model ?? 'other') === model)
      .reduce((sum, bucket) => sum + bucket.cost_usd, 0);
  const totals = days.map((date) => models.reduce((sum, model) => sum + cost(date, model), 0));
  const scale = dollarScale(Math.max(...totals, 0));
  const plotWidth = WIDTH - LEFT - RIGHT;
  const plotHeight = HEIGHT - TOP - BOTTOM;
  const bar = plotWidth / days.length;
  const y = (value: number) => TOP + plotHeight - (value / scale.max) * plotHeight;
  return (
    <section aria-labelledby="usage-title">
      <h1 id="usage-title">Usage</h1>
      <p class="muted">
        Spend by day and model, {days[0]} to {days[days.length - 1]} (UTC).
      </p>
      <ProblemMessage error={error} />
      {!report && !error ? <Loading what="the usage" /> : null}
      {report && report.data.length === 0 ? <Empty>No model calls in the last 30 days.</Empty> : null}
      {report && report.data.length > 0 ? (
        <>
          <svg
            class="chart"
            viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
            role="img"
            aria-labelledby="usage-chart-title usage-chart-desc"
            data-part="usage-chart"
          >
            <title id="usage-chart-title">Spend per day in US dollars, stacked by model.</title>
            <desc id="usage-chart-desc">
              {`From ${days[0]} to ${days[days.length - 1]}; the highest day is ${dollars(Math.max(...totals), scale.decimals)}. The tables below have the figures.`}
            </desc>
            <g data-part="y-axis" class="axis">
              {scale.ticks.map((tick) => (
                <g key={tick}>
                  <line x1={LEFT} x2={WIDTH - RIGHT} y1={y(tick)} y2={y(tick)} class="grid" />
                  <text x={LEFT - 6} y={y(tick)} text-anchor="end" dominant-baseline="middle">
                    {dollars(tick, scale.decimals)}
                  </text>
                </g>
              ))}
            </g>
            {days.map((date, i) => {
              let top = y(0);
              return (
                <g key={date}>
                  {models.map((model, m) => {
                    const h = (cost(date, model) / scale.max) * plotHeight;
                    top -= h;
                    return h > 0 ? (
                      <rect
                        key={model}
                        x={LEFT + i * bar + 1}
                        y={top}
                        width={Math.max(bar - 2, 1)}
                        height={h}
                        fill={COLORS[m % COLORS.length]}
                      >
                        <title>{`${date} · ${model}: ${dollars(cost(date, model), 6)}`}</title>
                      </rect>
                    ) : null;
                  })}
                </g>
              );
            })}
            <g data-part="x-axis" class="axis">
              <line x1={LEFT} y1={y(0)} x2={WIDTH - RIGHT} y2={y(0)} stroke="currentColor" stroke-width="1" />
              {/* Every seventh day counted back from the last, which is always labelled: the labels never crowd. */}
              {days.map((date, i) =>
                (days.length - 1 - i) % 7 === 0 ? (
                  <g key={date}>
                    <line
                      x1={LEFT + (i + 0.5) * bar}
                      x2={LEFT + (i + 0.5) * bar}
                      y1={y(0)}
                      y2={y(0) + 4}
                      stroke="currentColor"
                    />
                    <text x={LEFT + (i + 0.5) * bar} y={y(0) + 18} text-anchor="middle">
                      {shortDate(date)}
                    </text>
                  </g>
                ) : null,
              )}
            </g>
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
          <div class="table" tabIndex={0} role="region" aria-label="Spend by day">
            <table data-part="usage-by-day">
              <caption>Spend by day (the chart's figures; days without calls left out)</caption>
              <thead>
                <tr>
                  <th scope="col">Date (UTC)</th>
                  {models.map((model) => (
                    <th key={model} scope="col">
                      {model} (USD)
                    </th>
                  ))}
                  <th scope="col">Total (USD)</th>
                </tr>
              </thead>
              <tbody>
                {days.map((date, i) =>
                  totals[i]! > 0 ? (
                    <tr key={date}>
                      <th scope="row">{date}</th>
                      {models.map((model) => (
                        <td key={model}>{cost(date, model).toFixed(6)}</td>
                      ))}
                      <td>{totals[i]!.toFixed(6)}</td>
                    </tr>
                  ) : null,
                )}
              </tbody>
            </table>
          </div>
        </>
      ) : null}
      <SpendLimits session={session} />
    </section>
  );
}
