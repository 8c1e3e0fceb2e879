// The browser's side of single sign-on, outside the contract (a feature's pages): the start of a sign-in (by
// connection, or by the email's domain), the OpenID Connect callback, and SAML's assertion consumer service and our
// metadata. Each request counts against its client IP's budget (budget.ts). A refusal is a problem document with an
// `sso_…` code, like the API's, or for a browser the same refusal as a page (refusal-page.ts).
import express, { type Request, type Response, Router } from 'express';
import type { Platform } from '../../platform/context.ts';
import { Problem } from '../../platform/problems.ts';
import { localPath } from '../sessions/index.ts';
import { ssoBudget } from './budget.ts';
import { consumeFlow, FLOW_TTL_MS, findFlow, replayed, startFlow } from './flows.ts';
import { authorizationUrl, providerOf, redeemCallback } from './oidc.ts';
import { connectionUrls, type SsoConnectionRow } from './presenters.ts';
import { refusalPage } from './refusal-page.ts';
import {
  assertionRecipients,
  describeSamlError,
  outlineResponse,
  personOf,
  SamlResponseError,
  samlOf,
} from './saml.ts';
import { completeSignIn, domainOf } from './sign-in.ts';

/** The cookie that ties an OpenID Connect callback to the browser that started the sign-in. */
const STATE_COOKIE = 'cs_sso_state';

async function connectionOf(platform: Platform, id: string) {
  const connection = await platform.db
    .selectFrom('sso_connections')
    .innerJoin('workspaces', 'workspaces.id', 'sso_connections.workspace_id')
    .selectAll('sso_connections')
    .select('workspaces.region')
    .where('sso_connections.id', '=', id)
    .executeTakeFirst();
  if (!connection) throw new Problem('not_found', `No single sign-on connection ${id}.`);
  return connection;
}

function urlsOf(platform: Platform, connection: SsoConnectionRow & { region: string }) {
  const base = platform.config.regionBaseUrls[connection.region as keyof typeof platform.config.regionBaseUrls];
  return connectionUrls(base, connection.id);
}

/** Where to land after signing in: a path of this service only, never another site (no open redirect). */
function returnToOf(platform: Platform, value: unknown): string | null {
  return localPath(typeof value === 'string' ? value : null, platform.config.publicBaseUrl);
}

function cookieOf(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

function secure(platform: Platform): boolean {
  return platform.config.publicBaseUrl.startsWith('https:');
}

export function ssoPages(platform: Platform): Router {
  const router = Router();
  router.use('/sso', ssoBudget(platform));

  // The start by email: the connection of the email's domain in the workspace (a sign-in page asks for the email).
  router.get('/sso/start', async (req, res) => {
    const workspaceId = typeof req.query.workspace_id === 'string' ? req.query.workspace_id : '';
    const email = typeof req.query.email === 'string' ? req.query.email.trim().toLowerCase() : '';
    const errors = [
      ...(workspaceId ? [] : [{ pointer: 'query/workspace_id', detail: 'is required' }]),
      ...(email.includes('@') ? [] : [{ pointer: 'query/email', detail: 'must be an email address' }]),
    ];
    if (errors.length > 0)
      throw new Problem('validation_failed', 'A sign-in by email needs the workspace and the email.', { errors });
    const returnTo = returnToOf(platform, req.query.return_to);
    const match = await platform.db
      .selectFrom('sso_domains')
      .select('connection_id')
      .where('workspace_id', '=', workspaceId)
      .where('domain', '=', domainOf(email))
      .executeTakeFirst();
    if (!match)
      throw new Problem('not_found', `The workspace has no single sign-on connection for ${domainOf(email)}.`);
    const connection = await connectionOf(platform, match.connection_id);
    const start = new URL(urlsOf(platform, connection).start);
    if (returnTo) start.searchParams.set('return_to', returnTo);
    res.redirect(302, start.href);
  });

  router.get('/sso/:id/start', async (req, res) => {
    const connection = await connectionOf(platform, String(req.params.id));
    const returnTo = returnToOf(platform, req.query.return_to);
    const now = platform.clock.now();
    const urls = urlsOf(platform, connection);
    if (connection.protocol === 'oidc') {
      const provider = await providerOf(platform.config, connection).catch((error: Error) => {
        throw new Problem(
          'sso_identity_provider_error',
          `The OpenID provider ${connection.oidc_issuer} ${error.message}; try again later.`,
        );
      });
      const start = await authorizationUrl(provider, urls.oidcCallback);
      await startFlow(platform.db, now, {
        id: start.state,
        workspace_id: connection.workspace_id,
        connection_id: connection.id,
        code_verifier: start.codeVerifier,
        nonce: start.nonce,
        return_to: returnTo,
      });
      res.cookie(STATE_COOKIE, start.state, {
        httpOnly: true,
        // Lax: the provider's redirect back is a top-level navigation, which carries it.
        sameSite: 'lax',
        secure: secure(platform),
        path: '/sso/',
        maxAge: FLOW_TTL_MS,
      });
      res.redirect(302, start.url.href);
      return;
    }
    const saml = samlOf(
      connection,
      urls,
      {
        // node-saml records each AuthnRequest's id here: the sign-in under way.
        saveAsync: async (id, instant) => {
          await startFlow(platform.db, now, {
            id,
            workspace_id: connection.workspace_id,
            connection_id: connection.id,
            code_verifier: null,
            nonce: null,
            return_to: returnTo,
            saml_request_instant: instant,
          });
          return { value: instant, createdAt: now.getTime() };
        },
        getAsync: async () => null,
        removeAsync: async () => null,
      },
      FLOW_TTL_MS,
    );
    res.redirect(302, await saml.getAuthorizeUrlAsync('', undefined, {}));
  });

  router.get('/sso/:id/callback', async (req, res) => {
    const connection = await connectionOf(platform, String(req.params.id));
    if (connection.protocol !== 'oidc') throw new Problem('not_found', `${connection.id} is a SAML connection.`);
    const now = platform.clock.now();
    const state = typeof req.query.state === 'string' ? req.query.state : null;
    const flow = await findFlow(platform.db, connection.id, state, now, 'state');
    // The callback must come back to the browser that started the sign-in: another browser's would sign a victim in
    // as the person whose code it carries.
    if (cookieOf(req, STATE_COOKIE) !== flow.id)
      throw new Problem(
        'sso_state_invalid',
        'This sign-in was started in another browser (or its cookie was blocked); start the sign-in again here.',
      );
    if (!(await consumeFlow(platform.db, flow.id, now))) throw replayed('state');
    res.clearCookie(STATE_COOKIE, { path: '/sso/' });
    if (typeof req.query.error === 'string') {
      const description = typeof req.query.error_description === 'string' ? `: ${req.query.error_description}` : '';
      throw new Problem(
        'sso_identity_provider_error',
        `The identity provider refused the sign-in (${req.query.error.slice(0, 100)}${description.slice(0, 300)}).`,
      );
    }
    const urls = urlsOf(platform, connection);
    const callbackUrl = new URL(urls.oidcCallback);
    callbackUrl.search = new URL(req.originalUrl, 'http://callback.invalid').search;
    const provider = await providerOf(platform.config, connection).catch((error: Error) => {
      throw new Problem(
        'sso_identity_provider_error',
        `The OpenID provider ${connection.oidc_issuer} ${error.message}.`,
      );
    });
    const person = await redeemCallback(provider, callbackUrl, {
      state: flow.id,
      nonce: flow.nonce!,
      codeVerifier: flow.code_verifier!,
    }).catch((error: unknown) => {
      throw oidcRefusal(error);
    });
    await completeSignIn(platform, res, connection, person, flow.return_to, now);
  });

  router.get('/sso/:id/saml/metadata', async (req, res) => {
    const connection = await connectionOf(platform, String(req.params.id));
    if (connection.protocol !== 'saml')
      throw new Problem('not_found', `${connection.id} is an OpenID Connect connection.`);
    const saml = samlOf(connection, urlsOf(platform, connection), unusedRequests, FLOW_TTL_MS);
    res.type('application/samlmetadata+xml').send(saml.generateServiceProviderMetadata(null, null));
  });

  router.post(
    '/sso/:id/saml/acs',
    express.urlencoded({ extended: false, limit: '1mb', parameterLimit: 10 }),
    async (req: Request, res: Response) => {
      const connection = await connectionOf(platform, String(req.params.id));
      if (connection.protocol !== 'saml')
        throw new Problem('not_found', `${connection.id} is an OpenID Connect connection.`);
      const now = platform.clock.now();
      const samlResponse = typeof req.body?.SAMLResponse === 'string' ? req.body.SAMLResponse : '';
      if (samlResponse === '')
        throw new Problem('sso_response_invalid', 'The request carries no SAMLResponse (HTTP-POST binding).');
      let outline: ReturnType<typeof outlineResponse>;
      try {
        outline = outlineResponse(samlResponse);
      } catch (error) {
        if (error instanceof SamlResponseError) throw new Problem('sso_response_invalid', error.message);
        throw error;
      }
      if (outline.inResponseTo === null)
        throw new Problem(
          'sso_state_invalid',
          "The SAML response answers no sign-in of this service (no InResponseTo): sign-ins start at the connection's start URL, not at the identity provider.",
        );
      const flow = await findFlow(platform.db, connection.id, outline.inResponseTo, now, 'InResponseTo');
      const urls = urlsOf(platform, connection);
      if (outline.destination !== null && outline.destination !== urls.acs)
        throw new Problem(
          'sso_response_invalid',
          `The SAML response is for ${outline.destination.slice(0, 300)}, not this connection's ACS URL ${urls.acs}.`,
        );
      if (outline.encrypted)
        throw new Problem(
          'sso_response_invalid',
          'The assertion is encrypted; this service does not decrypt assertions. Turn assertion encryption off at the identity provider (the connection uses https).',
        );
      if (outline.assertions !== 1)
        throw new Problem('sso_response_invalid', 'A SAML response must carry exactly one assertion.');
      if (!outline.assertionSigned)
        throw new Problem(
          'sso_assertion_unsigned',
          'The assertion is not signed; the connection requires assertions signed by the identity provider (sign the assertion, or the assertion and the response).',
        );
      const saml = samlOf(
        connection,
        urls,
        {
          saveAsync: async () => null,
          getAsync: async (id) => (id === flow.id ? flow.saml_request_instant : null),
          // The sign-in is consumed below, once, whatever node-saml decided.
          removeAsync: async () => null,
        },
        FLOW_TTL_MS,
      );
      let profile: Record<string, unknown> | null;
      try {
        profile = (await saml.validatePostResponseAsync({ SAMLResponse: samlResponse })).profile;
      } catch (error) {
        await consumeFlow(platform.db, flow.id, now);
        const { identityProvider, detail } = describeSamlError(error);
        throw new Problem(identityProvider ? 'sso_identity_provider_error' : 'sso_response_invalid', detail);
      }
      if (!(await consumeFlow(platform.db, flow.id, now))) throw replayed('InResponseTo');
      if (!profile) throw new Problem('sso_response_invalid', 'The SAML response carries no assertion.');
      const assertionXml = (profile as { getAssertionXml?: () => string }).getAssertionXml?.() ?? '';
      const recipients = assertionRecipients(assertionXml);
      if (!recipients.includes(urls.acs))
        throw new Problem(
          'sso_response_invalid',
          `The assertion's recipient is ${recipients.join(', ').slice(0, 300) || 'not named'}, not this connection's ACS URL ${urls.acs}.`,
        );
      await completeSignIn(platform, res, connection, personOf(profile), flow.return_to, now);
    },
  );

  // Every address under /sso is this feature's: one it does not serve is refused here, as a page for a browser.
  router.use('/sso', (req) => {
    throw new Problem(
      'not_found',
      `This server has no single sign-on page ${req.method} ${req.originalUrl.slice(0, 200)}.`,
    );
  });
  router.use('/sso', refusalPage);
  return router;
}

/** For the SP metadata, which starts no sign-in. */
const unusedRequests = {
  saveAsync: async () => null,
  getAsync: async () => null,
  removeAsync: async () => null,
};

function oidcRefusal(error: unknown): Problem {
  if (error instanceof Problem) return error;
  const err = error as Error & { code?: string; error?: string; error_description?: string; cause?: unknown };
  // The provider's error at the token endpoint (invalid_grant: a code used twice, or for another client).
  if (err?.name === 'ResponseBodyError')
    return new Problem(
      'sso_response_invalid',
      `The identity provider refused to redeem the code (${err.error ?? 'error'}${err.error_description ? `: ${err.error_description}` : ''}).`,
    );
  if (err?.name === 'AuthorizationResponseError')
    return new Problem(
      'sso_identity_provider_error',
      `The identity provider refused the sign-in (${err.error ?? 'error'}${err.error_description ? `: ${err.error_description}` : ''}).`,
    );
  if (typeof err?.code === 'string' && err.code.startsWith('OAUTH_'))
    return new Problem('sso_response_invalid', `The identity provider's answer failed a check: ${err.message}.`);
  if (err?.name === 'TimeoutError' || err?.name === 'AbortError' || err?.cause)
    return new Problem('sso_identity_provider_error', 'The identity provider could not be reached to redeem the code.');
  throw error;
}
