// GET /v1/usage: the usage records of the workspace summed over a range of UTC days, grouped by any of day, model,
// feature and API key. The sums are computed by the database; money is summed as recorded per call.
import { sql } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import type { Handlers } from '../../../generated/operations.ts';
import { iso } from '../../platform/clock.ts';
import type { RequestContext } from '../../platform/context.ts';
import { validationFailed } from '../../platform/problems.ts';

type Dimension = components['schemas']['UsageDimension'];
type Bucket = components['schemas']['UsageBucket'];

const DAY_MS = 86_400_000;
const MAX_DAYS = 366;
const MAX_BUCKETS = 10_000;

const columns = { day: 'day', model: 'model', feature: 'feature', api_key: 'api_key_id' } as const satisfies Record<
  Dimension,
  string
>;

function roundUsd(value: number): number {
  return Math.round(value * 1e11) / 1e11;
}

export const usageHandlers = {
  async getUsage(request, context) {
    const query = request.query;
    const endDate = query.end_date ?? iso(context.now).slice(0, 10);
    const startDate = query.start_date ?? iso(new Date(Date.parse(endDate) - 29 * DAY_MS)).slice(0, 10);
    const days = (Date.parse(endDate) - Date.parse(startDate)) / DAY_MS + 1;
    if (days < 1)
      throw validationFailed([{ pointer: 'query/start_date', detail: `must not be after end_date (${endDate})` }]);
    if (days > MAX_DAYS)
      throw validationFailed([
        { pointer: 'query/start_date', detail: `the range is ${days} days; at most ${MAX_DAYS}` },
      ]);
    const groupBy = [...new Set<Dimension>(query.group_by ?? ['day', 'model'])];
    const grouped = groupBy.map((dimension) => columns[dimension]);

    let rows = context.platform.db
      .selectFrom('usage_records')
      .where('workspace_id', '=', context.caller.workspace.id)
      .where('day', '>=', startDate)
      .where('day', '<=', endDate);
    if (query.model !== undefined) rows = rows.where('model', '=', query.model);
    if (query.feature !== undefined) rows = rows.where('feature', '=', query.feature);
    if (query.api_key_id !== undefined) rows = rows.where('api_key_id', '=', query.api_key_id);
    if (query.project_id !== undefined) rows = rows.where('project_id', '=', query.project_id);
    const sums = [
      sql<string | number>`count(*)`.as('requests'),
      sql<string | number>`sum(input_tokens)`.as('input_tokens'),
      sql<string | number>`sum(cached_input_tokens)`.as('cached_input_tokens'),
      sql<string | number>`sum(output_tokens)`.as('output_tokens'),
      sql<string | number>`sum(cost_usd)`.as('cost_usd'),
    ];
    const found = await rows
      .select([...grouped, ...sums])
      .$if(grouped.length > 0, (q) => q.groupBy(grouped))
      .limit(MAX_BUCKETS + 1)
      .execute();
    if (found.length > MAX_BUCKETS) {
      throw validationFailed([
        {
          pointer: 'query/group_by',
          detail: `the report would have more than ${MAX_BUCKETS} buckets; narrow the range or group by fewer dimensions`,
        },
      ]);
    }
    const totals = {
      requests: 0,
      input_tokens: 0,
      cached_input_tokens: 0,
      output_tokens: 0,
      total_tokens: 0,
      cost_usd: 0,
    };
    const data: Bucket[] = found.map((row) => {
      const r = row as Record<string, string | number | null>;
      const counts = {
        requests: Number(r.requests),
        input_tokens: Number(r.input_tokens),
        cached_input_tokens: Number(r.cached_input_tokens),
        output_tokens: Number(r.output_tokens),
        total_tokens: Number(r.input_tokens) + Number(r.output_tokens),
        cost_usd: roundUsd(Number(r.cost_usd)),
      };
      for (const key of Object.keys(totals) as (keyof typeof totals)[]) totals[key] += counts[key];
      return {
        date: groupBy.includes('day') ? (r.day as string) : null,
        model: groupBy.includes('model') ? (r.model as string) : null,
        feature: groupBy.includes('feature') ? (r.feature as Bucket['feature']) : null,
        api_key_id: groupBy.includes('api_key') ? (r.api_key_id as string | null) : null,
        ...counts,
      };
    });
    // A range without usage answers one all-zero total and no buckets (count(*) of no rows is one row of zeros).
    const buckets = data.filter((bucket) => bucket.requests > 0);
    buckets.sort(
      (a, b) =>
        (a.date ?? '').localeCompare(b.date ?? '') ||
        b.cost_usd - a.cost_usd ||
        (a.model ?? '').localeCompare(b.model ?? ''),
    );
    totals.cost_usd = roundUsd(totals.cost_usd);
    return {
      status: 200,
      contentType: 'application/json',
      body: {
        object: 'usage_report',
        start_date: startDate,
        end_date: endDate,
        group_by: groupBy,
        data: buckets,
        totals,
      },
    };
  },
} satisfies Pick<Handlers<RequestContext>, 'getUsage'>;
