// OpenID Connect through openid-client: the provider discovered from its issuer, the authorization code flow with
// PKCE, and the checks of the answer (state, nonce, the ID token's signature, issuer, audience and times), which
// openid-client makes. Every request to the provider goes through the SSRF guard's fetch.
import * as client from 'openid-client';
import type { Config } from '../../config.ts';
import { guardedFetch } from '../../platform/url-guard.ts';
import type { SsoConnectionRow } from './presenters.ts';

/** The scopes asked for: who the person is (`sub`), their email, and their name. */
export const OIDC_SCOPE = 'openid email profile';

export interface OidcClient {
  issuer: string;
  clientId: string;
  clientSecret: string;
}

/** Why a provider could not be used, in words for the owner (discovery) or the person signing in. */
export class OidcProviderError extends Error {}

/**
 * The provider's configuration from its discovery document. The client authenticates as the provider prefers:
 * client_secret_basic (the specification's default) unless it offers client_secret_post only.
 */
export async function discoverProvider(config: Config, settings: OidcClient): Promise<client.Configuration> {
  const allowPrivate = config.webhooksAllowLoopback;
  const options: client.DiscoveryRequestOptions = {
    [client.customFetch]: guardedFetch(allowPrivate) as client.CustomFetch,
    // http is for identity providers on the developer's machine, under the same development setting as webhooks.
    execute: allowPrivate ? [client.allowInsecureRequests] : [],
    timeout: 10,
  };
  let discovered: client.Configuration;
  try {
    discovered = await client.discovery(
      new URL(settings.issuer),
      settings.clientId,
      settings.clientSecret,
      client.ClientSecretBasic(settings.clientSecret),
      options,
    );
  } catch (error) {
    throw new OidcProviderError(describeDiscoveryError(error));
  }
  const metadata = discovered.serverMetadata();
  const methods = metadata.token_endpoint_auth_methods_supported;
  if (methods && !methods.includes('client_secret_basic') && methods.includes('client_secret_post')) {
    discovered = new client.Configuration(
      metadata,
      settings.clientId,
      settings.clientSecret,
      client.ClientSecretPost(settings.clientSecret),
    );
    discovered[client.customFetch] = options[client.customFetch]!;
    if (allowPrivate) client.allowInsecureRequests(discovered);
  }
  if (!metadata.authorization_endpoint || !metadata.token_endpoint || !metadata.jwks_uri)
    throw new OidcProviderError('names no authorization, token or JWKS endpoint');
  return discovered;
}

function describeDiscoveryError(error: unknown): string {
  const err = error as Error & { code?: string; cause?: unknown; response?: Response };
  if (err?.name === 'TimeoutError' || err?.name === 'AbortError') return 'did not answer within 10 seconds';
  if (err?.code === 'OAUTH_RESPONSE_IS_NOT_CONFORM' && err.response) return `answered ${err.response.status}`;
  if (err?.code === 'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED') return 'names another issuer than the one given';
  if (err?.code === 'OAUTH_HTTP_REQUEST_FORBIDDEN') return 'must use https';
  const cause = err?.cause as (Error & { code?: string }) | undefined;
  if (cause?.code === 'EADDRBLOCKED') return `is refused: ${cause.message}`;
  if (cause?.code === 'ECONNREFUSED' || cause?.code === 'ENOTFOUND') return 'could not be reached';
  return err?.message ? `could not be read (${err.message.slice(0, 200)})` : 'could not be read';
}

// Discovery answers are kept per connection version for an hour: a sign-in's start and callback would otherwise
// each read the discovery document again. A changed connection has a new `updated_at`, so a new entry.
const DISCOVERY_TTL_MS = 3_600_000;
const providers = new Map<string, { at: number; configuration: Promise<client.Configuration> }>();

export function providerOf(config: Config, connection: SsoConnectionRow): Promise<client.Configuration> {
  const key = `${connection.id}@${connection.updated_at}`;
  const cached = providers.get(key);
  if (cached && Date.now() - cached.at < DISCOVERY_TTL_MS) return cached.configuration;
  for (const [other, entry] of providers)
    if (other.startsWith(`${connection.id}@`) || Date.now() - entry.at >= DISCOVERY_TTL_MS) providers.delete(other);
  const configuration = discoverProvider(config, {
    issuer: connection.oidc_issuer!,
    clientId: connection.oidc_client_id!,
    clientSecret: connection.oidc_client_secret!,
  });
  providers.set(key, { at: Date.now(), configuration });
  // A failed discovery is not kept: the next sign-in tries again.
  configuration.catch(() => providers.delete(key));
  return configuration;
}

export interface OidcStart {
  url: URL;
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** The provider's authorization URL for a new sign-in, with its state, nonce and PKCE verifier to keep. */
export async function authorizationUrl(configuration: client.Configuration, redirectUri: string): Promise<OidcStart> {
  const codeVerifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(configuration, {
    redirect_uri: redirectUri,
    scope: OIDC_SCOPE,
    response_type: 'code',
    code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    state,
    nonce,
  });
  return { url, state, nonce, codeVerifier };
}

export interface OidcPerson {
  subject: string;
  email: string | null;
  /** False when the provider says the email is not verified; null when it does not say (Entra ID). */
  emailVerified: boolean | null;
  name: string | null;
}

/**
 * Redeems the callback's code and checks the answer: openid-client compares the state, sends the PKCE verifier, and
 * checks the ID token (signature, issuer, audience, times, nonce). The email comes from the ID token, or from the
 * UserInfo endpoint when the ID token does not carry it.
 */
export async function redeemCallback(
  configuration: client.Configuration,
  callbackUrl: URL,
  flow: { state: string; nonce: string; codeVerifier: string },
): Promise<OidcPerson> {
  const tokens = await client.authorizationCodeGrant(configuration, callbackUrl, {
    pkceCodeVerifier: flow.codeVerifier,
    expectedState: flow.state,
    expectedNonce: flow.nonce,
    idTokenExpected: true,
  });
  const claims = tokens.claims()!;
  let source: Record<string, unknown> = claims;
  if (typeof claims.email !== 'string' && configuration.serverMetadata().userinfo_endpoint)
    source = await client.fetchUserInfo(configuration, tokens.access_token, claims.sub);
  const email = typeof source.email === 'string' ? source.email : null;
  const verified = source.email_verified;
  const name = typeof source.name === 'string' ? source.name : null;
  return {
    subject: claims.sub,
    email,
    emailVerified:
      typeof verified === 'boolean' ? verified : verified === 'true' ? true : verified === 'false' ? false : null,
    name,
  };
}
