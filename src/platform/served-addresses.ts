// The address each region's servers are reached at, as the last server to start said (PUBLIC_BASE_URL, or
// http://localhost:<the port it listens on>). The command-line tool reads it: run in another shell, without the
// server's PORT or PUBLIC_BASE_URL, it would otherwise name its own default address as a workspace's `base_url`.
import type { Kysely } from 'kysely';
import type { Config, Region } from '../config.ts';
import type { Database } from '../storage/schema.ts';

/** Records where this server is reached, for its region. */
export async function recordServedAddress(db: Kysely<Database>, region: Region, baseUrl: string, now: Date) {
  const updated_at = now.toISOString();
  await db
    .insertInto('served_addresses')
    .values({ region, base_url: baseUrl, updated_at })
    .onConflict((conflict) => conflict.column('region').doUpdateSet({ base_url: baseUrl, updated_at }))
    .execute();
}

/**
 * The configuration with the region base URLs the servers recorded, where the environment names none of its own
 * (PUBLIC_BASE_URL for the configured region, EU_BASE_URL, US_BASE_URL): what the environment says wins.
 */
export async function withServedAddresses(db: Kysely<Database>, config: Config): Promise<Config> {
  const env = config.environment;
  const explicit: Record<Region, boolean> = {
    eu: Boolean(env.EU_BASE_URL) || (config.region === 'eu' && Boolean(env.PUBLIC_BASE_URL)),
    us: Boolean(env.US_BASE_URL) || (config.region === 'us' && Boolean(env.PUBLIC_BASE_URL)),
  };
  const rows = await db.selectFrom('served_addresses').select(['region', 'base_url']).execute();
  const regionBaseUrls = { ...config.regionBaseUrls };
  for (const row of rows) if (!explicit[row.region as Region]) regionBaseUrls[row.region as Region] = row.base_url;
  return { ...config, regionBaseUrls };
}
