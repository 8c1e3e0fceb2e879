// Reading SCIM bodies through SCIMMY's schemas, and applying a PatchOp, with SCIMMY's refusals as SCIM errors.
import { normalisePatch } from './entra.ts';
import { SCIMError, SCIMMY, scimError } from './scimmy.ts';

export type ScimObject = Record<string, unknown>;
type SchemaClass = typeof SCIMMY.Schemas.User | typeof SCIMMY.Schemas.Group;

/** SCIMMY's own refusals are SCIM errors already; a TypeError is its word for a value the schema does not take. */
function asScimError(error: unknown): unknown {
  if (error instanceof SCIMError) return error;
  if (error instanceof TypeError) return scimError(400, 'invalidValue', error.message);
  return error;
}

function plain(value: unknown): ScimObject {
  return JSON.parse(JSON.stringify(value)) as ScimObject;
}

/**
 * A User or Group sent by a directory, as the schema reads it: unknown attributes and read-only ones (id, meta,
 * groups) dropped, required ones checked, values of the wrong type refused (400 invalidValue).
 */
export function readResource(schema: SchemaClass, body: unknown): ScimObject {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw scimError(400, 'invalidSyntax', 'The body must be a single SCIM resource (a JSON object).');
  try {
    const { schemas: _, meta: __, id: ___, ...attributes } = plain(new schema(body as ScimObject, 'in'));
    return attributes;
  } catch (error) {
    throw asScimError(error);
  }
}

/** The resource as it is after the PatchOp's operations (RFC 7644 §3.5.2), in Okta's, Entra's or any RFC form. */
export async function applyPatch(schema: SchemaClass, current: ScimObject, body: unknown): Promise<ScimObject> {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw scimError(400, 'invalidSyntax', 'The body must be a PatchOp message (a JSON object).');
  try {
    const patch = new SCIMMY.Messages.PatchOp(
      normalisePatch(body) as ConstructorParameters<typeof SCIMMY.Messages.PatchOp>[0],
    );
    const source = new schema(current, 'out');
    const patched = await patch.apply(source as never, async (target: unknown) => target as ScimObject);
    return patched === undefined ? current : plain(patched);
  } catch (error) {
    throw asScimError(error);
  }
}
