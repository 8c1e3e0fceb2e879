// SCIMMY, configured once for the process: its configuration and declared resource types are module-wide state, the
// same for every workspace. Only the schemas, PatchOp, filters and messages are used; requests are routed and stored
// here (router.ts), so that nothing of one workspace's request (the base URL of its locations above all) lives in
// SCIMMY's shared state while another's runs.
import SCIMMY from 'scimmy';

/** The most resources one list answers (`count` above it is lowered to it), as ServiceProviderConfig says. */
export const MAX_RESULTS = 200;
/** The largest body a SCIM request may send. */
export const MAX_PAYLOAD_BYTES = 1_048_576;

SCIMMY.Config.set({
  documentationUri: 'https://docs.content-service.example/scim.html',
  patch: true,
  filter: { supported: true, maxResults: MAX_RESULTS },
  bulk: { supported: false, maxOperations: 0, maxPayloadSize: MAX_PAYLOAD_BYTES },
  changePassword: false,
  sort: false,
  etag: false,
  authenticationSchemes: [
    {
      type: 'oauthbearertoken',
      name: 'OAuth Bearer Token',
      description:
        "A directory token of the workspace (POST /v1/directory-tokens), as 'Authorization: Bearer <token>'.",
      specUri: 'https://datatracker.ietf.org/doc/html/rfc6750',
      documentationUri: 'https://docs.content-service.example/scim.html',
      primary: true,
    },
  ],
});
SCIMMY.Resources.declare(SCIMMY.Resources.User.extend(SCIMMY.Schemas.EnterpriseUser, false));
SCIMMY.Resources.declare(SCIMMY.Resources.Group);

export { SCIMMY };
export const SCIMError = SCIMMY.Types.Error;
export type SCIMError = InstanceType<typeof SCIMMY.Types.Error>;

/** A SCIM error (RFC 7644 §3.12) with its `scimType` where the RFC names one. */
export function scimError(status: number, scimType: string | null, detail: string): SCIMError {
  return new SCIMMY.Types.Error(status, scimType as never, detail);
}
