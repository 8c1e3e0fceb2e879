// The discovery endpoints (RFC 7644 §4): ServiceProviderConfig, ResourceTypes and Schemas, as SCIMMY describes its
// configuration and declared resources, with locations under the workspace's base URL.
import type { ReadParameters } from './query.ts';
import { listResponse } from './query.ts';
import { SCIMMY, scimError } from './scimmy.ts';

export function serviceProviderConfig(base: string) {
  return new SCIMMY.Schemas.ServiceProviderConfig(SCIMMY.Config.get(), `${base}/ServiceProviderConfig`);
}

function resourceTypes(base: string) {
  return Object.values(SCIMMY.Resources.declared()).map(
    (resource) => new SCIMMY.Schemas.ResourceType(resource.describe(), `${base}/ResourceTypes`),
  );
}

function schemas(base: string) {
  return SCIMMY.Schemas.declared().map((schema) => schema.describe(`${base}/Schemas`));
}

const ALL: ReadParameters = { startIndex: 1, count: Number.MAX_SAFE_INTEGER };

export function listResourceTypes(base: string) {
  return listResponse(resourceTypes(base), ALL);
}

export function readResourceType(base: string, id: string) {
  const found = resourceTypes(base).find((type) => (type as unknown as { id: string }).id === id);
  if (!found) throw scimError(404, null, `No resource type ${id}.`);
  return found;
}

export function listSchemas(base: string) {
  return listResponse(schemas(base), ALL);
}

export function readSchema(base: string, id: string) {
  const found = schemas(base).find((schema) => (schema as { id: string }).id === id);
  if (!found) throw scimError(404, null, `No schema ${id}.`);
  return found;
}
