// The single sign-on feature: connections of a workspace to identity providers, OpenID Connect (openid-client) and
// SAML 2.0 (node-saml), managed by owners through the API (connections.ts), and the browser's side of a sign-in
// (pages.ts) that ends with a member, found by email or made just in time, and a session.
import type { Feature } from '../../platform/feature.ts';
import { ssoConnectionHandlers } from './connections.ts';
import { pruneFlows } from './flows.ts';
import { sso } from './migrations/027_sso.ts';
import { ssoPages } from './pages.ts';
import { requireSsoForDomains } from './requirement.ts';

export const ssoFeature = {
  name: 'sso',
  handlers: ssoConnectionHandlers,
  migrations: { '027_sso': sso },
  pages: ssoPages,
  retention: pruneFlows,
  signInGuard: requireSsoForDomains,
} satisfies Feature;

// The public API: whether a person must sign in through a connection (the sessions feature refuses them otherwise).
export { requiredConnectionFor } from './requirement.ts';
export { ssoRequired } from './sign-in.ts';
