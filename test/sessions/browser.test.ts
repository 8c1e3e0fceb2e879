// People signed in, in headless Chromium (Debian's, or CHROMIUM_PATH), against a real server with a real SMTP server on
// loopback (smtp-server): a printed sign-in link signs the owner in and the dashboard works with the session (the
// person, the members a directory manages, the sessions page, signing out); an approver who opens an approval link
// without a session is sent to sign in (a link by email) and back, and approves with no key; a viewer's session
// cannot approve.
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { components } from '../../generated/openapi.ts';
import { createDirectoryToken, SCIM_JSON, USER_SCHEMA } from '../directory/support.ts';
import { hasChromium, launchChromium } from '../support/chromium.ts';
import { type Answer, startTestServer, type TestServer } from '../support/server.ts';
import { addMember, signInLink } from './support.ts';

async function waitForRun(
  server: TestServer,
  path: string,
  done: (run: components['schemas']['WorkflowRun']) => boolean,
): Promise<Answer['body']> {
  for (let waited = 0, delay = 25; waited < 20_000; waited += delay, delay = Math.min(delay * 1.3, 500)) {
    const run = (await server.call('GET', path)).body;
    if (done(run)) return run;
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
  throw new Error(`${path} did not get there in time`);
}

describe.skipIf(!hasChromium)('signing in, in a browser', () => {
  let server: TestServer;
  let browser: Browser;
  let smtp: SMTPServer;
  const mails: Array<{ to: string[]; data: string }> = [];

  beforeAll(async () => {
    smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onData(stream, session, callback) {
        const parts: Buffer[] = [];
        stream.on('data', (part: Buffer) => parts.push(part));
        stream.on('end', () => {
          mails.push({
            to: session.envelope.rcptTo.map((to) => to.address),
            data: Buffer.concat(parts).toString('utf8'),
          });
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
    const port = (smtp.server.address() as AddressInfo).port;
    server = await startTestServer({ env: { SMTP_URL: `smtp://127.0.0.1:${port}` } });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await new Promise<void>((resolve) => (smtp ? smtp.close(() => resolve()) : resolve()));
  });

  async function newPage(): Promise<{ page: Page; problems: string[] }> {
    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    const problems: string[] = [];
    page.on('console', (message) => message.type() === 'error' && problems.push(message.text()));
    page.on('pageerror', (error) => problems.push(error.message));
    return { page, problems };
  }

  /** The sign-in link of the latest email to `to` (quoted-printable soft breaks undone). */
  async function mailedLink(to: string): Promise<string> {
    await expect.poll(() => mails.filter((mail) => mail.to.includes(to)).length).toBeGreaterThan(0);
    const mail = mails.filter((item) => item.to.includes(to)).at(-1)!;
    const text = mail.data.replace(/=\r?\n/g, '').replace(/=3D/g, '=');
    return /(http:\/\/\S+\/sign-in\/link\?token=cs_link_[0-9A-Za-z]{40})/.exec(text)![1]!;
  }

  test('a printed sign-in link signs the owner in, and the dashboard works with the session', async () => {
    // A member a directory provisioned, shown as such on the members page.
    const token = await createDirectoryToken(server, 'okta');
    const provisioned = await fetch(`${token.scim_base_url}/Users`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token.secret}`, 'Content-Type': SCIM_JSON },
      body: JSON.stringify({
        schemas: [USER_SCHEMA],
        userName: 'dir@test.example',
        emails: [{ primary: true, value: 'dir@test.example', type: 'work' }],
        active: true,
      }),
    });
    expect(provisioned.status).toBe(201);

    const { page, problems } = await newPage();
    await page.goto(await signInLink(server, 'owner@test.example'));
    expect(await page.locator('[data-part="email"]').innerText()).toBe('owner@test.example');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Dashboard' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/dashboard');
    expect(await page.locator('[data-part="person"]').innerText()).toBe('owner@test.example');
    expect(await page.locator('[data-part="role"]').innerText()).toBe('owner');
    const cookies = await page.context().cookies();
    expect(cookies.find((cookie) => cookie.name === 'cs_session')).toMatchObject({ httpOnly: true, sameSite: 'Lax' });
    // No key anywhere in the page's storage.
    expect(await page.evaluate(() => sessionStorage.length + localStorage.length)).toBe(0);

    // A change through the session (CSRF token sent by the dashboard's client).
    await page.goto(`${server.url}/dashboard#/members`);
    await page.getByLabel('Email').fill('new@test.example');
    await page.getByRole('button', { name: 'Add member' }).click();
    await page.getByRole('cell', { name: 'new@test.example', exact: true }).waitFor();
    await page.locator('[data-part="scim-source"]').first().waitFor();
    expect(await page.locator('[data-part="scim-source"]').first().innerText()).toBe('okta directory');
    const row = page.getByRole('row').filter({ hasText: 'dir@test.example' });
    expect(await row.getByRole('button', { name: /Remove/ }).count()).toBe(0);

    // The sessions page lists this browser; signing out there ends the session.
    await page.goto(`${server.url}/dashboard#/sessions`);
    await page.locator('[data-part="sign-out-current"]').click();
    await page.getByRole('button', { name: 'Email me a sign-in link' }).waitFor();
    const cookie = (await page.context().cookies()).find((item) => item.name === 'cs_session');
    const answer = await server.call('GET', '/v1/session', {
      key: null,
      headers: cookie ? { Cookie: `cs_session=${cookie.value}` } : {},
    });
    expect(answer.status).toBe(401);
    expect(
      problems.filter((problem) => !/401/.test(problem)),
      problems.join('\n'),
    ).toEqual([]);
    await page.context().close();
  });

  async function waitingRun(approverRole: 'admin' | 'editor') {
    const workflow = await server.call('POST', '/v1/workflows', {
      body: {
        name: 'Newsletter',
        steps: [
          { id: 'draft', type: 'generate', model: 'sandbox-writer', prompt: 'Write the November newsletter.' },
          {
            id: 'review',
            type: 'approval',
            instructions: 'Check the dates.',
            show: '{{ steps.draft.output.text }}',
            approver_role: approverRole,
          },
        ],
      },
    });
    expect(workflow.status, workflow.text).toBe(201);
    const run = await server.call('POST', `/v1/workflows/${workflow.body.id}/runs`, { body: {} });
    const path = `/v1/workflows/${workflow.body.id}/runs/${run.body.id}`;
    const waiting = await waitForRun(server, path, (current) => current.status === 'awaiting_approval');
    const events = await server.call('GET', '/v1/events?type=workflow.run.approval_required&limit=100');
    const eventUrl = events.body.data.find(
      (event: components['schemas']['WorkflowRunApprovalRequiredEvent']) => event.data.run_id === run.body.id,
    ).data.approval_url as string;
    // The run carries the same link while it waits.
    expect(waiting.approval_url).toBe(eventUrl);
    return { path, url: eventUrl };
  }

  test('an approver opens the link, is sent to sign in and back, and approves with no key', async () => {
    await addMember(server, 'ada@test.example', 'admin');
    const { path, url } = await waitingRun('admin');
    const { page, problems } = await newPage();
    await page.goto(url);
    await page.getByRole('link', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Email me a sign-in link' }).waitFor();
    expect(await page.locator('[data-part="return-notice"]').count()).toBe(1);
    await page.getByLabel('Email', { exact: true }).fill('ada@test.example');
    await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
    await page.locator('[data-part="link-sent"]').waitFor();

    await page.goto(await mailedLink('ada@test.example'));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('[data-part="signed-in"]:not([hidden])').waitFor();
    expect(page.url()).toBe(url);
    expect(await page.locator('[data-part="signed-in"]').innerText()).toBe('Signed in as ada@test.example (admin).');
    expect(await page.locator('[data-part="key-field"]').isHidden()).toBe(true);
    await page.getByLabel('Comment (optional)').fill('Dates checked.');
    await page.getByRole('button', { name: 'Approve' }).click();
    await expect.poll(() => page.locator('[data-part="state"]').innerText()).toBe('Approved. The run goes on.');
    const done = await waitForRun(server, path, (run) => run.status === 'success' || run.status === 'failure');
    expect(done.status).toBe('success');
    expect(done.approval_url).toBeNull();
    // Decided by the session's own key, which belongs to Ada.
    const audit = await server.call('GET', '/v1/audit-logs?action=workflow_step.approved&limit=1');
    expect(audit.body.data[0].actor.api_key_name).toBe('ada@test.example, signed in (link)');
    expect(done.steps[1].approval.decided_by_key_id).toBe(audit.body.data[0].actor.api_key_id);
    await page.reload();
    expect(await page.locator('[data-part="state"]').innerText()).toMatch(
      /^Approved at .* by ada@test\.example: “Dates checked\.”$/,
    );
    expect(
      problems.filter((problem) => !/401/.test(problem)),
      problems.join('\n'),
    ).toEqual([]);
    await page.context().close();
  });

  test("a viewer's session cannot approve", async () => {
    await addMember(server, 'vic@test.example', 'viewer');
    const { path, url } = await waitingRun('editor');
    const { page } = await newPage();
    await page.goto(await signInLink(server, 'vic@test.example', url.replace(server.url, '')));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('[data-part="signed-in"]:not([hidden])').waitFor();
    await page.getByRole('button', { name: 'Approve' }).click();
    await expect
      .poll(() => page.locator('[data-part="error"]').innerText())
      .toMatch(/^Your role does not allow this operation: .*editor role or higher; your role is viewer\.$/);
    expect((await server.call('GET', path)).body.status).toBe('awaiting_approval');
    // In the dashboard, a page the role may not see speaks of the person's role, not of a key.
    await page.goto(`${server.url}/dashboard`);
    await page.getByRole('link', { name: 'API keys' }).click();
    expect(await page.locator('[data-part="not-allowed"]').innerText()).toBe(
      "Your role (viewer) cannot see the workspace's API keys; an admin or owner can.",
    );
    await page.context().close();
  });
});
