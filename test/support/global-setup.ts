// The contract suite's targets, started once for the whole run:
//   - the Prism mock of the contract, and a real server (startTestServer: loopback, fresh SQLite, owner key, webhook
//     URLs on loopback allowed for the webhook fixtures, an SMTP server on loopback that takes the sign-in links'
//     emails, and sessions of the owner signed in with links, for the operations of the current session);
//   - or, when CONTRACT_BASE_URL is set, only that running server (with the owner key CONTRACT_API_KEY).
import type { TestProject } from 'vitest/node';
import { createSignInLink } from '../../src/features/sessions/index.ts';
import { hasChromium, missingChromium } from './chromium.ts';
import { type RunningMock, startPrism } from './prism.ts';
import { startTestServer, type TestServer } from './server.ts';
import { type SmtpSink, startSmtpSink } from './smtp-sink.ts';

/** One target of the table-driven contract suite. */
export interface ContractTarget {
  /** 'mock' answers from the spec's examples; 'server' is the implementation (501 for what is not built yet). */
  name: 'mock' | 'server';
  baseUrl: string;
  /** A bearer key of the target: anything for the mock, an owner key of the workspace for a server. */
  apiKey: string;
  /** Sessions of the key's member on the server started here (none on the mock or an external server). */
  sessions?: ContractSessions;
}

/** A session cookie and its CSRF token. */
export interface ContractSession {
  cookie: string;
  csrfToken: string;
  id: string;
}

/** A session each for the operations that end one, so that one ending does not spoil the others. */
export interface ContractSessions {
  current: ContractSession;
  signOut: ContractSession;
  revocable: ContractSession;
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** Every target of the table-driven suite, in the order they run. */
    contractTargets: ContractTarget[];
  }
}

let mock: RunningMock | undefined;
let server: TestServer | undefined;
let smtp: SmtpSink | undefined;

/** The owner signed in with a sign-in link, as a browser would: the link's POST, then GET /v1/session. */
async function ownerSession(started: TestServer): Promise<ContractSession> {
  const link = await createSignInLink(started.platform.db, {
    workspaceId: started.workspaceId,
    email: 'owner@test.example',
    returnTo: null,
    baseUrl: started.url,
    now: new Date(),
  });
  const signedIn = await fetch(`${started.url}/sign-in/link`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: new URL(link!.url).searchParams.get('token')! }).toString(),
  });
  const cookie = (signedIn.headers.get('set-cookie') ?? '').split(';')[0]!;
  const current = (await (await fetch(`${started.url}/v1/session`, { headers: { Cookie: cookie } })).json()) as {
    id: string;
    csrf_token: string;
  };
  return { cookie, csrfToken: current.csrf_token, id: current.id };
}

export async function setup(project: TestProject): Promise<void> {
  // Once for the run, rather than once per browser test file (REQUIRE_CHROMIUM=1 makes it an error instead).
  if (!hasChromium)
    console.warn(
      `\nThe browser tests (docs portal, dashboard, widget, editor, approval page, CORS) are skipped: ${missingChromium}.\n`,
    );
  const external = process.env.CONTRACT_BASE_URL;
  if (external) {
    const target: ContractTarget = {
      name: 'server',
      baseUrl: external.replace(/\/$/, ''),
      apiKey: process.env.CONTRACT_API_KEY ?? 'cs_test_contract_suite_key',
    };
    project.provide('contractTargets', [target]);
    return;
  }
  // Takes the sign-in links' emails and drops them.
  smtp = await startSmtpSink();
  const [startedMock, startedServer] = await Promise.allSettled([
    startPrism(),
    startTestServer({ env: { WEBHOOKS_ALLOW_LOOPBACK: 'true', SMTP_URL: smtp.url } }),
  ]);
  if (startedMock.status === 'rejected' || startedServer.status === 'rejected') {
    // Stop whichever did start before failing the run.
    if (startedMock.status === 'fulfilled') await startedMock.value.stop();
    if (startedServer.status === 'fulfilled') await startedServer.value.close();
    throw startedMock.status === 'rejected' ? startedMock.reason : (startedServer as PromiseRejectedResult).reason;
  }
  mock = startedMock.value;
  server = startedServer.value;
  console.log(`Prism mock up at ${mock.baseUrl} after ${mock.startupMs} ms; server up at ${server.url}`);
  project.provide('contractTargets', [
    { name: 'mock', baseUrl: mock.baseUrl, apiKey: process.env.CONTRACT_API_KEY ?? 'cs_test_contract_suite_key' },
    {
      name: 'server',
      baseUrl: server.url,
      apiKey: server.ownerKey,
      sessions: {
        current: await ownerSession(server),
        signOut: await ownerSession(server),
        revocable: await ownerSession(server),
      },
    },
  ]);
}

export async function teardown(): Promise<void> {
  await smtp?.close();
  try {
    await mock?.stop();
  } finally {
    try {
      // Throws when a response of the run broke the contract (the server validates its own answers).
      await server?.close();
    } catch (error) {
      // Vitest only logs an error of a global teardown ("error during close") and still exits 0: fail the run here.
      process.exitCode = 1;
      console.error(
        `\nThe contract suite's server failed at teardown; the run fails:\n${String((error as Error)?.stack ?? error)}\n`,
      );
      // biome-ignore lint/correctness/noUnsafeFinally: the server's failure is the one to report, even when stopping the mock failed too
      throw error;
    }
  }
}
