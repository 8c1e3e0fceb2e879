// Single sign-on: connections to identity providers, their email domains, and the sign-ins under way.
import type { Kysely, Migration } from 'kysely';

export const sso: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('sso_connections')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('protocol', 'text', (c) => c.notNull())
      .addColumn('default_role', 'text', (c) => c.notNull())
      .addColumn('required', 'integer', (c) => c.notNull())
      .addColumn('oidc_issuer', 'text')
      .addColumn('oidc_client_id', 'text')
      .addColumn('oidc_client_secret', 'text')
      .addColumn('saml_idp_entity_id', 'text')
      .addColumn('saml_idp_sso_url', 'text')
      .addColumn('saml_idp_metadata_url', 'text')
      .addColumn('saml_idp_certificates', 'text')
      .addColumn('created_by_api_key_id', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('sso_connections_workspace')
      .on('sso_connections')
      .columns(['workspace_id', 'id'])
      .execute();

    await db.schema
      .createTable('sso_domains')
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('domain', 'text', (c) => c.notNull())
      .addColumn('connection_id', 'text', (c) => c.notNull().references('sso_connections.id').onDelete('cascade'))
      .addPrimaryKeyConstraint('sso_domains_pk', ['workspace_id', 'domain'])
      .execute();
    await db.schema.createIndex('sso_domains_connection').on('sso_domains').column('connection_id').execute();

    await db.schema
      .createTable('sso_flows')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('connection_id', 'text', (c) => c.notNull().references('sso_connections.id').onDelete('cascade'))
      .addColumn('code_verifier', 'text')
      .addColumn('nonce', 'text')
      .addColumn('return_to', 'text')
      .addColumn('saml_request_instant', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .addColumn('used_at', 'text')
      .execute();
    await db.schema.createIndex('sso_flows_expires').on('sso_flows').column('expires_at').execute();
  },
};
