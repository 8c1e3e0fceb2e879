// Answers in SCIM's media type (RFC 7644 §3.1): every body, errors included, is `application/scim+json`.
import type { Response } from 'express';
import { type SCIMError, SCIMMY } from './scimmy.ts';

export const SCIM_MEDIA_TYPE = 'application/scim+json';

export function sendScim(res: Response, status: number, body: unknown): void {
  res.status(status).type(SCIM_MEDIA_TYPE).send(JSON.stringify(body));
}

/** An error as SCIM writes it: `{schemas: [Error], status: "404", scimType?, detail}`. */
export function sendScimError(res: Response, error: SCIMError): void {
  sendScim(res, error.status, new SCIMMY.Messages.Error(error));
}
