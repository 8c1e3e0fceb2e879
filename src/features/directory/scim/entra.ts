// Microsoft Entra ID's SCIM client, in the versions without its `aadOptscim062020` fix, sends booleans as the strings
// "True" and "False" (`{"op": "Replace", "path": "active", "value": "False"}`), which RFC 7643 types as a boolean and
// SCIMMY rightly refuses. The strings are read as the booleans they mean before SCIMMY sees them; any other string
// stays for SCIMMY to refuse. (Entra's capitalised "Replace" and "Add" SCIMMY reads itself.)

const BOOLEAN_ATTRIBUTES = new Set(['active', 'primary']);

function asBoolean(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const lower = value.toLowerCase();
  return lower === 'true' ? true : lower === 'false' ? false : value;
}

/** The object with its boolean attributes' "True"/"False" strings as booleans, at any depth. */
function normaliseBooleans(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normaliseBooleans);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    out[key] = BOOLEAN_ATTRIBUTES.has(key.toLowerCase()) ? asBoolean(inner) : normaliseBooleans(inner);
  }
  return out;
}

/** A User or Group body (POST, PUT) as RFC 7643 types it. */
export function normaliseResource(body: unknown): unknown {
  return normaliseBooleans(body);
}

/** A PatchOp body: an operation whose path ends at a boolean attribute gets a boolean value. */
export function normalisePatch(body: unknown): unknown {
  if (body === null || typeof body !== 'object' || !Array.isArray((body as { Operations?: unknown }).Operations))
    return body;
  const patch = body as { Operations: unknown[] };
  return {
    ...patch,
    Operations: patch.Operations.map((operation) => {
      if (operation === null || typeof operation !== 'object') return operation;
      const { path, value } = operation as { path?: unknown; value?: unknown };
      const last = typeof path === 'string' ? path.split('.').at(-1)!.toLowerCase() : undefined;
      return {
        ...operation,
        value: last !== undefined && BOOLEAN_ATTRIBUTES.has(last) ? asBoolean(value) : normaliseBooleans(value),
      };
    }),
  };
}
