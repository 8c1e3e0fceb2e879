// The dashboard's access to the API: the generated typed client with the key the person signed in with, the role
// checks from the contract's operation table, and problem documents as errors the pages show.
import {
  type ContentServiceClient,
  type components,
  createContentServiceClient,
} from '../../../../generated/client.ts';
import { type OperationId, operationTable } from '../../../../generated/operations.ts';

export type Schemas = components['schemas'];
export type Role = Schemas['Role'];
export type Problem = Schemas['Problem'];

const rank: Record<Role, number> = { viewer: 0, editor: 1, admin: 2, owner: 3 };

/** Where the API is: this page's origin, or the base the page names (the dashboard run against the mock). */
export const apiBase =
  document.querySelector<HTMLMetaElement>('meta[name="api-base"]')?.content || window.location.origin;

/** The key lives for this browser tab's session only (sessionStorage), never in the URL or in lasting storage. */
const STORAGE = 'content-service-dashboard-key';
export const savedKey = () => sessionStorage.getItem(STORAGE);
export const saveKey = (key: string | null) =>
  key ? sessionStorage.setItem(STORAGE, key) : sessionStorage.removeItem(STORAGE);

export function clientFor(key: string): ContentServiceClient {
  return createContentServiceClient({ apiKey: key, baseUrl: apiBase, maxRetries: 1 });
}

/**
 * A client of a person signed in: no key, the browser's session cookie (same origin), and the session's CSRF token
 * on every request, which the API demands of a request that changes something.
 */
export function sessionClient(csrfToken: string): ContentServiceClient {
  return createContentServiceClient({ baseUrl: apiBase, maxRetries: 1, headers: { 'X-CSRF-Token': csrfToken } });
}

/** Whether a key of this role may call the operation (the contract's minimum role). */
export function allows(role: Role, operation: OperationId): boolean {
  return rank[role] >= rank[operationTable[operation].minimumRole as Role];
}

/** An answer that is not a success: its problem document (or a stand-in for a network failure). */
export class ApiError extends Error {
  readonly problem: Problem;
  constructor(problem: Problem) {
    super(problem.detail ?? problem.title);
    this.problem = problem;
  }
}

/** The data of an openapi-fetch answer, or an ApiError with the problem document. */
export async function unwrap<T>(answer: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  let result: { data?: T; error?: unknown; response: Response };
  try {
    result = await answer;
  } catch (error) {
    throw new ApiError({
      type: 'about:blank',
      title: 'The API could not be reached',
      status: 0,
      detail: (error as Error).message,
      code: 'internal_error',
      request_id: '',
      instance: '',
    } as unknown as Problem);
  }
  if (result.error !== undefined || !result.response.ok) {
    const body = result.error as Partial<Problem> | undefined;
    throw new ApiError({
      title: body?.title ?? `The API answered ${result.response.status}`,
      detail: body?.detail ?? '',
      status: result.response.status,
      code: body?.code ?? 'internal_error',
      errors: body?.errors,
    } as Problem);
  }
  return result.data as T;
}
