// The budget of the sign-in pages under /sso: every start writes a row of `sso_flows` and every answer of an identity
// provider costs a signature check or a call to the provider, so an anonymous client is held to a number of them a
// minute from its address. A sign-in takes two or three requests (a start by email, the connection's start, the
// callback or the assertion), so the budget lets dozens of people behind one address sign in each minute.
import type { NextFunction, Request, Response } from 'express';
import type { Platform } from '../../platform/context.ts';
import { clientIp } from '../../platform/logging.ts';
import { consumeBudget } from '../../platform/rate-limit.ts';

export const SSO_REQUESTS_PER_IP = { points: 120, duration: 60 } as const;

/** Counts the request against its client IP's budget; over it, `429 rate_limited` with Retry-After. */
export function ssoBudget(platform: Platform) {
  const limiter = platform.rateLimitStore.limiterFor('sso-ip', SSO_REQUESTS_PER_IP);
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const headers = await consumeBudget(limiter, clientIp(req), {
      points: SSO_REQUESTS_PER_IP.points,
      window: SSO_REQUESTS_PER_IP.duration,
      who: 'to the single sign-on pages from this address',
    });
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    next();
  };
}
