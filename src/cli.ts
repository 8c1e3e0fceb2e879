#!/usr/bin/env node
// The operator's command-line tool: create workspaces and API keys, apply migrations. It reads DATABASE_URL like the
// server (src/config.ts), prints JSON on stdout, problems on stderr; exit code 0 done, 1 failed, 2 bad usage.
// `npm run -s cli -- …` or, inside the project, `npx content-service …` (both run on the pinned Node 24).
// A command loads what it uses when it runs (dynamic imports), never the server: `help` loads nothing, and the
// migrations come from src/features/migrations.ts, not from the features.
import { type ParseArgsConfig, parseArgs } from 'node:util';
import type { Kysely } from 'kysely';
import type { Config } from './config.ts';
import type { Database } from './storage/schema.ts';

export const USAGE = `Usage: content-service <command> [options]

Commands:
  workspace create --name <name> --region eu|us [--owner-email <email>]
      Creates a workspace with an owner API key. Given an email, also its first owner member, on whose behalf
      the key acts (its user_id); without one the key is a service key, which belongs to no person.
      Prints {"workspace": …, "api_key": …}; the key's secret is shown only this once.

  key create --workspace <ws_id> --role owner|admin|editor|viewer [--name <name>] [--expires-at <RFC 3339>]
             [--user-email <email>]
      Creates an API key in a workspace and prints it with its secret (shown only this once). With
      --user-email the key acts on behalf of that member of the workspace (its role may not be above theirs);
      without it the key is a service key. The workspace's audit log records it as api_key.created by the
      actor "system".

  login-link --email <email> [--workspace <ws_id>] [--return-to <path>]
      Prints a one-time sign-in link for a member (it works once, for 15 minutes): opened in a browser, it signs
      them in and lands on the dashboard, or on --return-to, a path of the server (/approvals/…). Without
      --workspace, the one workspace the person is a member of. Prints {"url": …, "expires_at": …,
      "workspace_id": …, "user_id": …}.

  migrate
      Applies the pending database migrations; prints {"applied": [names]}.

  help, --help, -h
      Shows this text.

Every command works on the database of DATABASE_URL (default sqlite:./data/content-service.db), as the server
does, and applies pending migrations first. Other settings (REGION, PUBLIC_BASE_URL, EU_BASE_URL, US_BASE_URL)
are read as the server reads them; README.md has the table.

Exit codes: 0 done, 1 failed (the reason is on stderr), 2 bad usage.
`;

/** A mistake in the command line: exit code 2 with the usage text. */
export class UsageError extends Error {}

// The limits of the API's own fields (Workspace.name, ApiKeyCreateRequest.name), so that what the CLI writes the
// API can show.
const MAX_NAME_LENGTH = 100;
const EMAIL = /^[^\s@]{1,64}@[^\s@]+\.[^\s@]+$/;

type Options = NonNullable<ParseArgsConfig['options']>;

/** parseArgs in strict mode; its complaints (unknown option, missing value, stray argument) are usage errors. */
function parse<T extends Options>(args: string[], options: T) {
  try {
    return parseArgs({
      args,
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function required(value: string | undefined, option: string): string {
  if (value === undefined) throw new UsageError(`--${option} is required`);
  return value;
}

function name(value: string, option: string): string {
  const trimmed = value.trim();
  if (trimmed.length < 1 || trimmed.length > MAX_NAME_LENGTH)
    throw new UsageError(`--${option} must be 1 to ${MAX_NAME_LENGTH} characters`);
  return trimmed;
}

function oneOf<T extends string>(value: string, allowed: readonly T[], option: string): T {
  if (!(allowed as readonly string[]).includes(value))
    throw new UsageError(`--${option} must be one of ${allowed.join(', ')}, got ${value}`);
  return value as T;
}

type Work = (db: Kysely<Database>, config: Config, applied: string[]) => Promise<unknown>;

interface Command {
  /** Checks the arguments (throwing UsageError) and returns the work to do on the database. */
  prepare(args: string[]): Promise<Work | 'help'>;
}

const commands: Record<string, Command> = {
  'workspace create': {
    async prepare(args) {
      const values = parse(args, {
        name: { type: 'string' },
        region: { type: 'string' },
        'owner-email': { type: 'string' },
      });
      if (values.help) return 'help';
      const workspaceName = name(required(values.name, 'name'), 'name');
      const { REGIONS } = await import('./config.ts');
      const region = oneOf(required(values.region, 'region'), REGIONS, 'region');
      const ownerEmail = values['owner-email'];
      if (ownerEmail !== undefined && (!EMAIL.test(ownerEmail) || ownerEmail.length > 254))
        throw new UsageError(`--owner-email is not an email address: ${ownerEmail}`);
      return async (db, config) => {
        const { createWorkspace, presentApiKey, presentWorkspace } = await import('./features/workspace/index.ts');
        const { withServedAddresses } = await import('./platform/served-addresses.ts');
        const created = await createWorkspace(db, {
          name: workspaceName,
          region,
          ...(ownerEmail ? { ownerEmail } : {}),
        });
        return {
          // The address the servers recorded, not this shell's defaults: the tool often runs without their variables.
          workspace: presentWorkspace(created.workspace, await withServedAddresses(db, config)),
          api_key: { ...presentApiKey(created.apiKey, new Date()), secret: created.secret },
        };
      };
    },
  },

  'key create': {
    async prepare(args) {
      const values = parse(args, {
        workspace: { type: 'string' },
        role: { type: 'string' },
        name: { type: 'string' },
        'expires-at': { type: 'string' },
        'user-email': { type: 'string' },
      });
      if (values.help) return 'help';
      const workspaceId = required(values.workspace, 'workspace');
      const { ROLES } = await import('./platform/context.ts');
      const role = oneOf(required(values.role, 'role'), ROLES, 'role');
      const keyName = values.name === undefined ? `${role} key (CLI)` : name(values.name, 'name');
      let expiresAt: string | null = null;
      if (values['expires-at'] !== undefined) {
        const raw = values['expires-at'];
        const { isDateTime, parseInstant } = await import('./platform/instant.ts');
        const { iso } = await import('./platform/clock.ts');
        if (!isDateTime(raw))
          throw new UsageError(`--expires-at must be an RFC 3339 date-time such as 2027-05-31T00:00:00Z, got ${raw}`);
        const at = parseInstant(raw);
        if (at.getTime() <= Date.now()) throw new UsageError(`--expires-at must be in the future, got ${raw}`);
        expiresAt = iso(at);
      }
      const userEmail = values['user-email']?.toLowerCase();
      if (userEmail !== undefined && (!EMAIL.test(userEmail) || userEmail.length > 254))
        throw new UsageError(`--user-email is not an email address: ${userEmail}`);
      return async (db) => {
        const { insertApiKey, keyOwner, presentApiKey } = await import('./features/workspace/index.ts');
        const { bySystem, recordAudit } = await import('./platform/audit.ts');
        const now = new Date();
        const { key, secret } = await db.transaction().execute(async (trx) => {
          const workspace = await trx
            .selectFrom('workspaces')
            .select('id')
            .where('id', '=', workspaceId)
            .executeTakeFirst();
          if (!workspace) throw new Error(`there is no workspace ${workspaceId} in this database`);
          let userId: string | null = null;
          if (userEmail !== undefined) {
            const member = await trx
              .selectFrom('members')
              .innerJoin('users', 'users.id', 'members.user_id')
              .select('members.user_id')
              .where('members.workspace_id', '=', workspaceId)
              .where('users.email', '=', userEmail)
              .executeTakeFirst();
            if (!member) throw new Error(`${userEmail} is not a member of workspace ${workspaceId}`);
            // The API's rule: the key's role may not be above the member's.
            userId = await keyOwner(trx, workspaceId, member.user_id, role);
          }
          const created = await insertApiKey(trx, {
            workspaceId,
            name: keyName,
            role,
            expiresAt,
            createdBy: null,
            userId,
            now,
          });
          // The operator is not an API key: the audit log names the service itself, and `via` says how.
          await recordAudit(trx, bySystem(workspaceId, 'cli', now), {
            action: 'api_key.created',
            target: { type: 'api_key', id: created.key.id, display_name: keyName },
            details: { name: keyName, role, expires_at: expiresAt },
          });
          return created;
        });
        return { ...presentApiKey(key, now), secret };
      };
    },
  },

  'login-link': {
    async prepare(args) {
      const values = parse(args, {
        email: { type: 'string' },
        workspace: { type: 'string' },
        'return-to': { type: 'string' },
      });
      if (values.help) return 'help';
      const email = required(values.email, 'email').toLowerCase();
      if (!EMAIL.test(email) || email.length > 254) throw new UsageError(`--email is not an email address: ${email}`);
      const returnTo = values['return-to'];
      if (returnTo !== undefined && (!returnTo.startsWith('/') || returnTo.startsWith('//')))
        throw new UsageError(`--return-to must be a path of the server, starting with one /, got ${returnTo}`);
      return async (db, config) => {
        const { createSignInLink, localPath } = await import('./features/sessions/index.ts');
        const { withServedAddresses } = await import('./platform/served-addresses.ts');
        let query = db
          .selectFrom('members')
          .innerJoin('users', 'users.id', 'members.user_id')
          .innerJoin('workspaces', 'workspaces.id', 'members.workspace_id')
          .select(['members.workspace_id', 'workspaces.region'])
          .where((eb) => eb(eb.fn('lower', ['users.email']), '=', email));
        if (values.workspace !== undefined) query = query.where('members.workspace_id', '=', values.workspace);
        const memberships = await query.execute();
        if (memberships.length === 0)
          throw new Error(
            `${email} is not a member of ${values.workspace ?? 'any workspace'} in this database; add them first (POST /v1/members)`,
          );
        if (memberships.length > 1)
          throw new Error(
            `${email} is a member of ${memberships.length} workspaces; name one with --workspace (${memberships.map((m) => m.workspace_id).join(', ')})`,
          );
        const { workspace_id: workspaceId, region } = memberships[0]!;
        // The address the servers recorded, not this shell's defaults: the tool often runs without their variables.
        const baseUrl = (await withServedAddresses(db, config)).regionBaseUrls[region];
        const landing = returnTo === undefined ? null : localPath(returnTo, baseUrl);
        if (returnTo !== undefined && landing === null)
          throw new Error(`--return-to must be a path of ${baseUrl}, got ${returnTo}`);
        const link = await createSignInLink(db, { workspaceId, email, returnTo: landing, baseUrl, now: new Date() });
        if (!link) throw new Error(`${email} is not a member of ${workspaceId}`);
        return { url: link.url, expires_at: link.expiresAt, workspace_id: workspaceId, user_id: link.userId };
      };
    },
  },

  migrate: {
    async prepare(args) {
      if (parse(args, {}).help) return 'help';
      return async (_db, _config, applied) => ({ applied });
    },
  },
};

// pg's connection failures are AggregateErrors with an empty message; their parts say what went wrong.
function describe(error: unknown): string {
  if (error instanceof AggregateError && !error.message) return error.errors.map(describe).join('; ');
  if (error instanceof Error) return error.message || (error as { code?: string }).code || error.name;
  return String(error);
}

/** Runs one command line; returns the exit code. Output goes to the given streams (the tests read them). */
export async function run(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  out: NodeJS.WritableStream = process.stdout,
  err: NodeJS.WritableStream = process.stderr,
): Promise<number> {
  const [first, second] = argv;
  if (first === undefined || first === 'help' || first === '--help' || first === '-h') {
    if (first === undefined) {
      err.write(`content-service: a command is needed\n\n${USAGE}`);
      return 2;
    }
    out.write(USAGE);
    return 0;
  }
  const commandName = commands[first] ? first : `${first} ${second ?? ''}`.trim();
  const command = commands[commandName];
  let work: Work | 'help';
  try {
    if (!command) {
      const subcommands = Object.keys(commands).filter((c) => c.startsWith(`${first} `));
      throw new UsageError(
        subcommands.length > 0
          ? `unknown command: ${commandName} (${first} has: ${subcommands.join(', ')})`
          : `unknown command: ${first}`,
      );
    }
    work = await command.prepare(argv.slice(commandName.split(' ').length));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    err.write(`content-service: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  if (work === 'help') {
    out.write(USAGE);
    return 0;
  }

  const { ConfigError, loadConfig } = await import('./config.ts');
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    err.write(`content-service: configuration: ${error.message}\n`);
    return 1;
  }
  const { migrate, openStorage } = await import('./storage/database.ts');
  const { featureMigrations } = await import('./features/migrations.ts');
  const storage = openStorage(config.databaseUrl);
  try {
    const applied = await migrate(storage.db, featureMigrations);
    const result = await work(storage.db, config, applied);
    out.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } catch (error) {
    err.write(`content-service: ${describe(error)}\n`);
    return 1;
  } finally {
    await storage.close();
  }
}

if (import.meta.main) {
  // Before the command's modules load (platform/compile-cache.ts).
  (await import('./platform/compile-cache.ts')).enableCompileCache();
  run(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`content-service: ${(error as Error).stack ?? String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
