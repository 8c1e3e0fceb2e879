// Single sign-on connections: an owner creates, reads, lists, updates and deletes them; each change is audited. The
// provider is checked when it is given: an OpenID provider's discovery document is read, SAML metadata is read and
// parsed, so that a connection that exists can be signed in through.
import type { Kysely, Transaction } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import type { Handlers } from '../../../generated/operations.ts';
import { byRequest, recordAudit } from '../../platform/audit.ts';
import { iso } from '../../platform/clock.ts';
import type { RequestContext } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { pageRequest, paginate, toPage } from '../../platform/pagination.ts';
import { notFound, Problem, validationFailed } from '../../platform/problems.ts';
import { checkPublicUrl, fetchGuarded, UrlNotAllowedError } from '../../platform/url-guard.ts';
import type { Database } from '../../storage/schema.ts';
import { IdpMetadataError, parseIdpMetadata } from './idp-metadata.ts';
import { discoverProvider, OidcProviderError } from './oidc.ts';
import { presentSsoConnection, type SsoConnectionRow } from './presenters.ts';

type Schemas = components['schemas'];
const METADATA_MAX_BYTES = 1_000_000;

function connectionsOf(db: Kysely<Database> | Transaction<Database>, workspaceId: string) {
  return db.selectFrom('sso_connections').selectAll().where('workspace_id', '=', workspaceId);
}

async function domainsOf(db: Kysely<Database> | Transaction<Database>, connectionIds: string[]) {
  const byConnection = new Map<string, string[]>(connectionIds.map((id) => [id, []]));
  if (connectionIds.length === 0) return byConnection;
  const rows = await db
    .selectFrom('sso_domains')
    .select(['connection_id', 'domain'])
    .where('connection_id', 'in', connectionIds)
    .orderBy('domain')
    .execute();
  for (const row of rows) byConnection.get(row.connection_id)?.push(row.domain);
  return byConnection;
}

async function present(context: RequestContext, row: SsoConnectionRow, domains?: string[]) {
  const base = context.platform.config.regionBaseUrls[context.caller.workspace.region];
  return presentSsoConnection(row, domains ?? (await domainsOf(context.platform.db, [row.id])).get(row.id)!, base);
}

async function findConnection(context: RequestContext, id: string): Promise<SsoConnectionRow> {
  const row = await connectionsOf(context.platform.db, context.caller.workspace.id)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!row) throw notFound('single sign-on connection', id);
  return row;
}

/** The OpenID provider's settings after its discovery document was read with them. */
async function checkedOidc(context: RequestContext, settings: Schemas['SsoOidcInput']) {
  const { config } = context.platform;
  const refuse = (detail: string) =>
    new Problem('sso_discovery_failed', `The discovery document of the issuer ${settings.issuer} ${detail}.`, {
      errors: [{ pointer: '/oidc/issuer', detail: `its discovery document ${detail}` }],
    });
  await checkPublicUrl(settings.issuer, {
    allowLoopback: config.webhooksAllowLoopback,
    allowHttp: config.webhooksAllowLoopback,
    production: config.production,
    pointer: '/oidc/issuer',
    code: 'sso_discovery_failed',
    what: 'issuer',
  });
  try {
    await discoverProvider(config, {
      issuer: settings.issuer,
      clientId: settings.client_id,
      clientSecret: settings.client_secret,
    });
  } catch (error) {
    if (error instanceof OidcProviderError) throw refuse(error.message);
    throw error;
  }
  return settings;
}

/** The SAML identity provider as its metadata describes it, read from the XML or the URL given. */
async function checkedSaml(context: RequestContext, input: Schemas['SsoSamlMetadataInput']) {
  const { config } = context.platform;
  const pointer = input.idp_metadata_url !== undefined ? '/saml/idp_metadata_url' : '/saml/idp_metadata_xml';
  const refuse = (detail: string) =>
    new Problem('sso_metadata_invalid', `The identity provider's metadata ${detail}.`, {
      errors: [{ pointer, detail }],
    });
  let xml = input.idp_metadata_xml;
  if (input.idp_metadata_url !== undefined) {
    await checkPublicUrl(input.idp_metadata_url, {
      allowLoopback: config.webhooksAllowLoopback,
      allowHttp: config.webhooksAllowLoopback,
      production: config.production,
      pointer,
      code: 'sso_metadata_invalid',
      what: 'metadata URL',
    });
    try {
      const answer = await fetchGuarded(input.idp_metadata_url, {
        allowPrivateNetworks: config.webhooksAllowLoopback,
        timeoutMs: 10_000,
        maxBytes: METADATA_MAX_BYTES,
        headers: { accept: 'application/samlmetadata+xml, application/xml, text/xml' },
      });
      if (answer.status !== 200) throw refuse(`URL answered ${answer.status}`);
      if (answer.truncated) throw refuse(`is larger than ${METADATA_MAX_BYTES} bytes`);
      xml = new TextDecoder().decode(answer.bytes);
    } catch (error) {
      if (error instanceof Problem) throw error;
      if (error instanceof UrlNotAllowedError) throw refuse(`URL is refused: ${error.message}`);
      throw refuse('URL could not be read');
    }
  }
  try {
    return { metadata: parseIdpMetadata(xml ?? ''), url: input.idp_metadata_url ?? null };
  } catch (error) {
    if (error instanceof IdpMetadataError) throw refuse(error.message);
    throw error;
  }
}

/** Refuses a domain that another connection of the workspace has. */
async function claimDomains(
  trx: Transaction<Database>,
  workspaceId: string,
  connectionId: string,
  domains: string[],
): Promise<void> {
  if (domains.length > 0) {
    const taken = await trx
      .selectFrom('sso_domains')
      .select(['domain', 'connection_id'])
      .where('workspace_id', '=', workspaceId)
      .where('domain', 'in', domains)
      .where('connection_id', '!=', connectionId)
      .executeTakeFirst();
    if (taken)
      throw new Problem(
        'sso_domain_taken',
        `${taken.domain} is a domain of the connection ${taken.connection_id}; remove it there first.`,
      );
  }
  await trx.deleteFrom('sso_domains').where('connection_id', '=', connectionId).execute();
  if (domains.length > 0)
    await trx
      .insertInto('sso_domains')
      .values(domains.map((domain) => ({ workspace_id: workspaceId, domain, connection_id: connectionId })))
      .execute();
}

function requireDomainsForRequired(required: boolean, domains: string[]): void {
  if (required && domains.length === 0)
    throw validationFailed([{ pointer: '/required', detail: 'needs at least one domain in domains' }]);
}

export const ssoConnectionHandlers = {
  async listSsoConnections(request, context) {
    const page = pageRequest(request.query);
    const rows = await paginate(
      connectionsOf(context.platform.db, context.caller.workspace.id),
      { id: 'id' },
      page,
    ).execute();
    const domains = await domainsOf(
      context.platform.db,
      rows.map((row) => row.id),
    );
    const base = context.platform.config.regionBaseUrls[context.caller.workspace.region];
    const { body, headers } = toPage(
      rows,
      page,
      (row) => ({ id: row.id }),
      (row) => presentSsoConnection(row, domains.get(row.id) ?? [], base),
      context.url,
    );
    return { status: 200, contentType: 'application/json', body, headers };
  },

  async createSsoConnection(request, context) {
    const body = request.body;
    const domains = [...new Set(body.domains ?? [])].sort();
    const required = body.required ?? false;
    const protocol = body.protocol;
    const other = protocol === 'oidc' ? 'saml' : 'oidc';
    const errors = [
      ...(body[protocol] === undefined
        ? [{ pointer: `/${protocol}`, detail: `is required for a ${protocol} connection` }]
        : []),
      ...(body[other] !== undefined
        ? [{ pointer: `/${other}`, detail: `is not a setting of a ${protocol} connection` }]
        : []),
    ];
    if (errors.length > 0) throw validationFailed(errors);
    requireDomainsForRequired(required, domains);
    const oidc = body.oidc ? await checkedOidc(context, body.oidc) : null;
    const saml = body.saml ? await checkedSaml(context, body.saml) : null;
    const now = iso(context.now);
    const row: SsoConnectionRow = {
      id: newId('sso', context.now),
      workspace_id: context.caller.workspace.id,
      name: body.name,
      protocol,
      default_role: body.default_role ?? 'viewer',
      required: required ? 1 : 0,
      oidc_issuer: oidc?.issuer ?? null,
      oidc_client_id: oidc?.client_id ?? null,
      oidc_client_secret: oidc?.client_secret ?? null,
      saml_idp_entity_id: saml?.metadata.entityId ?? null,
      saml_idp_sso_url: saml?.metadata.ssoUrl ?? null,
      saml_idp_metadata_url: saml?.url ?? null,
      saml_idp_certificates: saml ? JSON.stringify(saml.metadata.certificates) : null,
      created_by_api_key_id: context.caller.apiKey.id,
      created_at: now,
      updated_at: now,
    };
    await context.platform.db.transaction().execute(async (trx) => {
      await trx.insertInto('sso_connections').values(row).execute();
      await claimDomains(trx, row.workspace_id, row.id, domains);
      await recordAudit(trx, byRequest(context), {
        action: 'sso_connection.created',
        target: { type: 'sso_connection', id: row.id, display_name: row.name },
        details: { protocol, default_role: row.default_role, domains: domains.join(','), required },
      });
    });
    return {
      status: 201,
      contentType: 'application/json',
      headers: { Location: `/v1/sso-connections/${row.id}` },
      body: await present(context, row, domains),
    };
  },

  async getSsoConnection(request, context) {
    const row = await findConnection(context, request.path.id);
    return { status: 200, contentType: 'application/json', body: await present(context, row) };
  },

  async updateSsoConnection(request, context) {
    const current = await findConnection(context, request.path.id);
    const body = request.body;
    const other = current.protocol === 'oidc' ? 'saml' : 'oidc';
    if (body[other] !== undefined)
      throw validationFailed([
        { pointer: `/${other}`, detail: `is not a setting of a ${current.protocol} connection` },
      ]);
    const currentDomains = (await domainsOf(context.platform.db, [current.id])).get(current.id)!;
    const domains = body.domains !== undefined ? [...new Set(body.domains)].sort() : currentDomains;
    const required = body.required ?? current.required === 1;
    requireDomainsForRequired(required, domains);
    const changes: Partial<SsoConnectionRow> = {};
    if (body.name !== undefined) changes.name = body.name;
    if (body.default_role !== undefined) changes.default_role = body.default_role;
    if (body.required !== undefined) changes.required = body.required ? 1 : 0;
    if (body.oidc) {
      const merged = {
        issuer: body.oidc.issuer ?? current.oidc_issuer!,
        client_id: body.oidc.client_id ?? current.oidc_client_id!,
        client_secret: body.oidc.client_secret ?? current.oidc_client_secret!,
      };
      await checkedOidc(context, merged);
      changes.oidc_issuer = merged.issuer;
      changes.oidc_client_id = merged.client_id;
      changes.oidc_client_secret = merged.client_secret;
    }
    if (body.saml) {
      const saml = await checkedSaml(context, body.saml);
      changes.saml_idp_entity_id = saml.metadata.entityId;
      changes.saml_idp_sso_url = saml.metadata.ssoUrl;
      changes.saml_idp_metadata_url = saml.url;
      changes.saml_idp_certificates = JSON.stringify(saml.metadata.certificates);
    }
    // Which fields changed, for the audit entry: the names only, never a secret's value.
    const changed = [
      ...Object.keys(body).filter((field) => field !== 'oidc' && field !== 'saml'),
      ...Object.keys(body.oidc ?? {}).map((field) => `oidc.${field}`),
      ...(body.saml ? ['saml.metadata'] : []),
    ];
    const updated = await context.platform.db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable('sso_connections')
        .set({ ...changes, updated_at: iso(context.now) })
        .where('id', '=', current.id)
        .where('workspace_id', '=', current.workspace_id)
        .returningAll()
        .executeTakeFirst();
      if (!row) throw notFound('single sign-on connection', current.id);
      if (body.domains !== undefined) await claimDomains(trx, row.workspace_id, row.id, domains);
      await recordAudit(trx, byRequest(context), {
        action: 'sso_connection.updated',
        target: { type: 'sso_connection', id: row.id, display_name: row.name },
        details: { changed: changed.join(',') },
      });
      return row;
    });
    return { status: 200, contentType: 'application/json', body: await present(context, updated, domains) };
  },

  async deleteSsoConnection(request, context) {
    const current = await findConnection(context, request.path.id);
    await context.platform.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('sso_flows').where('connection_id', '=', current.id).execute();
      await trx.deleteFrom('sso_domains').where('connection_id', '=', current.id).execute();
      const deleted = await trx
        .deleteFrom('sso_connections')
        .where('id', '=', current.id)
        .where('workspace_id', '=', current.workspace_id)
        .executeTakeFirst();
      // Deleted by a concurrent request: the answer is the same.
      if (Number(deleted.numDeletedRows) === 0) return;
      await recordAudit(trx, byRequest(context), {
        action: 'sso_connection.deleted',
        target: { type: 'sso_connection', id: current.id, display_name: current.name },
        details: { protocol: current.protocol },
      });
    });
    return { status: 204 };
  },
} satisfies Pick<
  Handlers<RequestContext>,
  'listSsoConnections' | 'createSsoConnection' | 'getSsoConnection' | 'updateSsoConnection' | 'deleteSsoConnection'
>;
