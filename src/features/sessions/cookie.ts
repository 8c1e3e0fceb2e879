// The session cookie: `__Host-cs_session` (Secure, Path=/, no Domain: only this origin over HTTPS may set or read
// it), or `cs_session` without Secure where the server is reached over plain HTTP on a loopback address (local
// development). HttpOnly (no script reads it) and SameSite=Lax (another site's form or fetch does not carry it).
import type { Request, Response } from 'express';
import type { Config } from '../../config.ts';

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Whether the cookie can be Secure: everywhere but plain HTTP on loopback. */
export function secureCookie(config: Pick<Config, 'publicBaseUrl'>): boolean {
  const url = new URL(config.publicBaseUrl);
  return !(url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname));
}

export function cookieName(config: Pick<Config, 'publicBaseUrl'>): string {
  return secureCookie(config) ? '__Host-cs_session' : 'cs_session';
}

export function setSessionCookie(
  res: Response,
  config: Pick<Config, 'publicBaseUrl'>,
  secret: string,
  expiresAt: Date,
): void {
  res.cookie(cookieName(config), secret, {
    httpOnly: true,
    secure: secureCookie(config),
    sameSite: 'lax',
    path: '/',
    expires: expiresAt,
  });
}

export function clearSessionCookie(res: Response, config: Pick<Config, 'publicBaseUrl'>): void {
  res.clearCookie(cookieName(config), { httpOnly: true, secure: secureCookie(config), sameSite: 'lax', path: '/' });
}

const COOKIE_VALUE = /^[0-9A-Za-z_]{1,100}$/;

/** The session secret the request's Cookie header carries, or undefined. */
export function sessionSecret(req: Request, config: Pick<Config, 'publicBaseUrl'>): string | undefined {
  const header = req.get('cookie');
  if (!header) return undefined;
  const name = cookieName(config);
  for (const part of header.split(';')) {
    const index = part.indexOf('=');
    if (index < 0 || part.slice(0, index).trim() !== name) continue;
    const value = part.slice(index + 1).trim();
    return COOKIE_VALUE.test(value) ? value : undefined;
  }
  return undefined;
}

/** The Set-Cookie header that clears the session cookie (signing out). */
export function clearSessionCookieHeader(config: Pick<Config, 'publicBaseUrl'>): string {
  return `${cookieName(config)}=; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Lax${secureCookie(config) ? '; Secure' : ''}`;
}

/**
 * Whether the request carries a session cookie (valid or not): pages ask the API who is signed in only then, so that
 * a browser without one does not log a refused request.
 */
export function hasSessionCookie(req: Request, config: Pick<Config, 'publicBaseUrl'>): boolean {
  return sessionSecret(req, config) !== undefined;
}

/**
 * Whether a request comes from another site's page: `Sec-Fetch-Site` other than `same-origin` where the browser sends
 * it (every current one does), else an `Origin` other than this server's. `Origin: null` is what a browser sends for
 * a POST from a page of ours with `Referrer-Policy: no-referrer`, so it is not taken for another site (a browser
 * recent enough to send `null` from another site's sandbox also sends `Sec-Fetch-Site`).
 */
export function fromAnotherSite(req: Request, config: Pick<Config, 'publicBaseUrl'>): boolean {
  const site = req.get('sec-fetch-site');
  if (site !== undefined) return site !== 'same-origin';
  const origin = req.get('origin');
  return origin !== undefined && origin !== 'null' && origin !== new URL(config.publicBaseUrl).origin;
}
