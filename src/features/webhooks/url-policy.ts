// The webhook URL policy (DESIGN.md): an endpoint's URL passes the platform's SSRF guard (url-guard.ts) when it is set
// (422 invalid_webhook_url), and every attempt connects through its guarded lookup, so a name that later resolves to
// a private address (DNS rebinding) is refused at connect time (`address_blocked`).
import { checkPublicUrl } from '../../platform/url-guard.ts';

/** A webhook endpoint's URL: https (http too with the development setting that allows loopback). */
export async function checkWebhookUrl(
  raw: string,
  config: { webhooksAllowLoopback: boolean; production: boolean },
  pointer = '/url',
): Promise<void> {
  const allowLoopback = config.webhooksAllowLoopback;
  await checkPublicUrl(raw, {
    allowLoopback,
    production: config.production,
    allowHttp: allowLoopback,
    pointer,
    code: 'invalid_webhook_url',
    what: 'webhook URL',
  });
}
