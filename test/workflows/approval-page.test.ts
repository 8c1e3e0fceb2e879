// The approval page in headless Chromium (Debian's, or CHROMIUM_PATH): the event's approval_url shows the step's
// instructions and content (its Markdown rendered, HTML in it escaped, no javascript: link); a key below the approver role is refused with the problem's detail and the run still
// waits; an admin key approves with a comment and the run goes on; the page then shows the decision. A tampered or
// expired link shows nothing of the run.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { components } from '../../generated/openapi.ts';
import { approvalUrl } from '../../src/features/workflows/approvals.ts';
import { hasChromium, launchChromium } from '../support/chromium.ts';
import { type Answer, startTestServer, type TestServer } from '../support/server.ts';

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

describe.skipIf(!hasChromium)('the approval page', () => {
  let server: TestServer;
  let browser: Browser;
  beforeAll(async () => {
    server = await startTestServer();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  async function waitingRun(role: 'editor' | 'admin') {
    const workflow = await server.call('POST', '/v1/workflows', {
      body: {
        name: 'Press release',
        steps: [
          { id: 'draft', type: 'generate', model: 'sandbox-writer', prompt: 'Announce our <b>spring</b> sale.' },
          {
            id: 'legal',
            type: 'approval',
            instructions: 'Check the claims.',
            show: '# Draft\n\n{{ steps.draft.output.text }}\n\n**Checked** by [the team](javascript:alert(1)) and [legal](https://example.com/legal).',
            approver_role: role,
          },
        ],
      },
    });
    const run = await server.call('POST', `/v1/workflows/${workflow.body.id}/runs`, { body: {} });
    const path = `/v1/workflows/${workflow.body.id}/runs/${run.body.id}`;
    const waiting = await waitForRun(server, path, (current) => current.status === 'awaiting_approval');
    const events = await server.call('GET', '/v1/events?type=workflow.run.approval_required&limit=100');
    const url = events.body.data.find(
      (event: components['schemas']['WorkflowRunApprovalRequiredEvent']) => event.data.run_id === run.body.id,
    ).data.approval_url as string;
    return { path, waiting, url: url.replace(/^https?:\/\/[^/]+/, server.url) };
  }

  test('shows the review; a key below the role is refused; an admin approves and the run goes on', async () => {
    const { path, waiting, url } = await waitingRun('admin');
    const page = await browser.newPage();
    const failed: string[] = [];
    page.on('requestfailed', (request) => failed.push(request.url()));
    page.on('console', (message) => message.type() === 'error' && failed.push(message.text()));
    const response = await page.goto(url);
    expect(response!.status()).toBe(200);
    expect(response!.headers()['content-security-policy']).toContain("script-src 'self'");
    expect(await page.locator('h1').innerText()).toBe('Press release');
    expect(await page.locator('[data-part="instructions"]').innerText()).toBe('Check the claims.');
    // The content is Markdown, rendered: its heading under the page's own, emphasis, a link; HTML in it is shown as
    // text, never run, and a javascript: link is no link.
    const content = page.locator('[data-part="content"]');
    expect(await page.locator('h1').count()).toBe(1);
    expect(await content.locator('h3').innerText()).toBe('Draft');
    expect(await content.locator('strong').innerText()).toBe('Checked');
    expect(await content.locator('b').count()).toBe(0);
    expect(await content.innerText()).toContain('<b>spring</b>');
    expect(await content.innerText()).not.toMatch(/^#|\*\*/m);
    expect(
      await content
        .locator('a')
        .evaluateAll((links) =>
          links.map((link) => [link.textContent, link.getAttribute('href'), link.getAttribute('rel')]),
        ),
    ).toEqual([['legal', 'https://example.com/legal', 'nofollow noopener noreferrer']]);
    expect(waiting.steps[1].approval.content).toContain('# Draft\n\n');

    const editor = await server.createKey('editor');
    await page.getByLabel('API key (admin role or higher)').fill(editor.secret);
    await page.getByRole('button', { name: 'Approve' }).click();
    await expect
      .poll(() => page.locator('[data-part="error"]').innerText())
      .toMatch(/^Your role does not allow this operation: .*admin role or higher; the key's role is editor\.$/);
    expect((await server.call('GET', path)).body.status).toBe('awaiting_approval');

    const admin = await server.createKey('admin');
    await page.getByLabel('API key (admin role or higher)').fill(admin.secret);
    await page.getByLabel('Comment (optional)').fill('Claims checked.');
    await page.getByRole('button', { name: 'Approve' }).click();
    await expect.poll(() => page.locator('[data-part="state"]').innerText()).toBe('Approved. The run goes on.');
    const done = await waitForRun(server, path, (run) => run.status === 'success' || run.status === 'failure');
    expect(done.status).toBe('success');
    expect(done.steps[1].approval).toMatchObject({
      decision: 'approve',
      comment: 'Claims checked.',
      decided_by_key_id: admin.id,
    });

    await page.reload();
    expect(await page.locator('[data-part="state"]').innerText()).toMatch(
      new RegExp(`^Approved at .* by ${admin.id}: “Claims checked.”$`),
    );
    expect(await page.locator('form').count()).toBe(0);
    expect(
      failed.filter((entry) => !/401|403/.test(entry)),
      failed.join('\n'),
    ).toEqual([]);
    await page.close();
  });

  test('rejects from the page; a tampered or expired link shows nothing of the run', async () => {
    const { path, url } = await waitingRun('editor');
    const page = await browser.newPage();
    await page.goto(url);
    await page.getByLabel('API key (editor role or higher)').fill(server.ownerKey);
    await page.getByRole('button', { name: 'Reject' }).click();
    await expect.poll(() => page.locator('[data-part="state"]').innerText()).toBe('Rejected.');
    expect((await waitForRun(server, path, (run) => run.status === 'failure')).error.code).toBe('approval_rejected');

    // The signature's first character changed to another one (always: replacing it with a fixed 'A' left it as it
    // was whenever it began with 'A').
    const tampered = url.replace(/signature=(.)/, (_, first: string) => `signature=${first === 'A' ? 'B' : 'A'}`);
    expect(tampered).not.toBe(url);
    const refused = await page.goto(tampered);
    expect(refused!.status()).toBe(403);
    expect(await page.locator('body').innerText()).not.toContain('Press release');
    const [, runId, stepId] = /\/approvals\/([^/]+)\/([^?]+)/.exec(url)!;
    const expired = (
      await approvalUrl(server.platform, { region: 'eu' }, runId!, stepId!, new Date(Date.now() - 1000))
    ).replace(/^https?:\/\/[^/]+/, server.url);
    expect((await page.goto(expired))!.status()).toBe(403);
    await page.close();
  });
});
