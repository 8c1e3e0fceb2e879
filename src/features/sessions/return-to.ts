// Where a person lands after signing in: a path of this server, never another site (an open redirect would let a
// link of ours send a person anywhere, with our name on it).

/** The longest `return_to` taken (the contract's bound). */
export const RETURN_TO_MAX = 2000;

/**
 * `returnTo` as a path of this server (`/approvals/run_…?expires=…`), or null when it is not one: it must begin with
 * one `/` (not `//` or `/\`, which browsers read as another host), hold no control character or backslash, and stay
 * on `base`'s origin once resolved.
 */
export function localPath(returnTo: string | null | undefined, base: string): string | null {
  if (!returnTo || returnTo.length > RETURN_TO_MAX) return null;
  if (!returnTo.startsWith('/') || returnTo.startsWith('//')) return null;
  if (/[\\\u0000-\u001f\u007f]/.test(returnTo)) return null;
  let url: URL;
  try {
    url = new URL(returnTo, base);
  } catch {
    return null;
  }
  if (url.origin !== new URL(base).origin) return null;
  return `${url.pathname}${url.search}${url.hash}`;
}
