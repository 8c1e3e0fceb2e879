// The SCIM 2.0 service provider of every workspace, at /scim/v2/{workspace_id}: mounted beside the contract's routes
// (a feature's pages), so that the API's contract validator, problem documents and rate limit do not apply. SCIM's
// schemas are checked by SCIMMY instead, and every answer is SCIM's (application/scim+json, SCIM errors).
import express, { type ErrorRequestHandler, type NextFunction, type Request, type Response, Router } from 'express';
import type { Platform } from '../../../platform/context.ts';
import { authenticateDirectory } from './authenticate.ts';
import type { ScimContext } from './context.ts';
import { listResourceTypes, listSchemas, readResourceType, readSchema, serviceProviderConfig } from './discovery.ts';
import { createGroup, deleteGroup, listGroups, patchGroup, readGroup, replaceGroup } from './groups.ts';
import { readParameters } from './query.ts';
import { SCIM_MEDIA_TYPE, sendScim, sendScimError } from './respond.ts';
import { MAX_PAYLOAD_BYTES, SCIMError, scimError } from './scimmy.ts';
import { createUser, deleteUser, listUsers, patchUser, readUser, replaceUser } from './users.ts';

function scimContextOf(res: Response): ScimContext {
  return res.locals.scim as ScimContext;
}

const param = (req: Request, name: string) => String(req.params[name]);

export function scimRouter(platform: Platform): Router {
  const scim = Router({ mergeParams: true });

  scim.get('/ServiceProviderConfig', (_req, res) => sendScim(res, 200, serviceProviderConfig(scimContextOf(res).base)));
  scim.get('/ResourceTypes', (_req, res) => sendScim(res, 200, listResourceTypes(scimContextOf(res).base)));
  scim.get('/ResourceTypes/:id', (req, res) =>
    sendScim(res, 200, readResourceType(scimContextOf(res).base, param(req, 'id'))),
  );
  scim.get('/Schemas', (_req, res) => sendScim(res, 200, listSchemas(scimContextOf(res).base)));
  scim.get('/Schemas/:id', (req, res) => sendScim(res, 200, readSchema(scimContextOf(res).base, param(req, 'id'))));

  scim.get('/Users', async (req, res) =>
    sendScim(res, 200, await listUsers(scimContextOf(res), readParameters(req.query, true))),
  );
  scim.post('/Users', async (req, res) => created(res, 'Users', await createUser(scimContextOf(res), req.body)));
  scim.get('/Users/:id', async (req, res) =>
    sendScim(
      res,
      200,
      await readUser(scimContextOf(res), param(req, 'id'), readParameters(req.query, false).attributes),
    ),
  );
  scim.put('/Users/:id', async (req, res) =>
    sendScim(res, 200, await replaceUser(scimContextOf(res), param(req, 'id'), req.body)),
  );
  scim.patch('/Users/:id', async (req, res) =>
    sendScim(res, 200, await patchUser(scimContextOf(res), param(req, 'id'), req.body)),
  );
  scim.delete('/Users/:id', async (req, res) => {
    await deleteUser(scimContextOf(res), param(req, 'id'));
    res.status(204).end();
  });

  scim.get('/Groups', async (req, res) =>
    sendScim(res, 200, await listGroups(scimContextOf(res), readParameters(req.query, true))),
  );
  scim.post('/Groups', async (req, res) => created(res, 'Groups', await createGroup(scimContextOf(res), req.body)));
  scim.get('/Groups/:id', async (req, res) =>
    sendScim(
      res,
      200,
      await readGroup(scimContextOf(res), param(req, 'id'), readParameters(req.query, false).attributes),
    ),
  );
  scim.put('/Groups/:id', async (req, res) =>
    sendScim(res, 200, await replaceGroup(scimContextOf(res), param(req, 'id'), req.body)),
  );
  scim.patch('/Groups/:id', async (req, res) =>
    sendScim(res, 200, await patchGroup(scimContextOf(res), param(req, 'id'), req.body)),
  );
  scim.delete('/Groups/:id', async (req, res) => {
    await deleteGroup(scimContextOf(res), param(req, 'id'));
    res.status(204).end();
  });

  scim.post('/Bulk', () => {
    throw scimError(501, null, 'Bulk operations are not supported (ServiceProviderConfig: bulk.supported false).');
  });

  const router = Router();
  router.use(
    '/scim/v2/:workspaceId',
    authenticate(platform),
    express.json({ type: [SCIM_MEDIA_TYPE, 'application/json'], limit: MAX_PAYLOAD_BYTES, strict: false }),
    scim,
  );
  router.use('/scim', () => {
    throw scimError(404, null, 'No SCIM endpoint here; the base URL is /scim/v2/{workspace_id}.');
  });
  router.use('/scim', scimErrors(platform));
  return router;
}

/** 201 with the new resource and its Location (RFC 7644 §3.3). */
function created(res: Response, endpoint: string, resource: unknown): void {
  const { id } = resource as { id: string };
  res.setHeader('Location', `${scimContextOf(res).base}/${endpoint}/${id}`);
  sendScim(res, 201, resource);
}

/** The directory token (authenticate.ts), before the body is read: an unauthenticated caller learns nothing of it. */
function authenticate(platform: Platform) {
  return async function authenticateScim(req: Request, res: Response, next: NextFunction): Promise<void> {
    const now = platform.clock.now();
    const workspaceId = param(req, 'workspaceId');
    const token = await authenticateDirectory(platform.db, req, workspaceId, now);
    const workspace = await platform.db
      .selectFrom('workspaces')
      .select(['region'])
      .where('id', '=', workspaceId)
      .executeTakeFirstOrThrow();
    const regionBaseUrl = platform.config.regionBaseUrls[workspace.region];
    if (workspace.region !== platform.config.region) {
      throw scimError(421, null, `This workspace is served in the ${workspace.region} region, at ${regionBaseUrl}.`);
    }
    const requestId = res.getHeader('X-Request-Id');
    const context: ScimContext = {
      db: platform.db,
      workspaceId,
      directory: token.directory,
      token,
      base: `${regionBaseUrl.replace(/\/$/, '')}/scim/v2/${workspaceId}`,
      now,
      origin: {
        workspaceId,
        actor: { type: 'system', via: 'scim' },
        request: { ip: req.ip ?? '', userAgent: req.get('user-agent') ?? null, requestId: String(requestId ?? '') },
        now,
      },
    };
    res.locals.scim = context;
    next();
  };
}

function isUniqueViolation(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return code === '23505' || (typeof message === 'string' && message.includes('UNIQUE constraint failed'));
}

/** Every failure as a SCIM error: SCIMMY's and ours as they are, the body parser's by status, anything else 500. */
function scimErrors(platform: Platform): ErrorRequestHandler {
  return function scimErrors(error, _req, res, _next) {
    if (error instanceof SCIMError) return sendScimError(res, error);
    const parser = error as { type?: string; status?: number };
    if (parser.type === 'entity.parse.failed')
      return sendScimError(res, scimError(400, 'invalidSyntax', 'The body is not well-formed JSON.'));
    if (parser.type === 'entity.too.large')
      return sendScimError(res, scimError(413, null, `The body is over ${MAX_PAYLOAD_BYTES} bytes.`));
    if (typeof parser.status === 'number' && parser.status >= 400 && parser.status < 500)
      return sendScimError(res, scimError(parser.status, null, 'The request could not be read.'));
    // Two requests creating the same userName or group name at once: the unique index lets one through.
    if (isUniqueViolation(error))
      return sendScimError(res, scimError(409, 'uniqueness', 'Another request created this resource meanwhile.'));
    platform.logger.error({ err: error }, 'SCIM request failed');
    return sendScimError(res, scimError(500, null, 'The request failed on our side; retry later.'));
  };
}
