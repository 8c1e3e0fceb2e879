// What a workflow hands out that no model wrote as it stands: a transform step's output, the run's outputs and the
// content an approval step shows are built from step outputs and inputs by templates and functions, so text that
// passed the output policy piece by piece (`forbidden`, `word`) can break it once joined or changed (`upper()`).
// They are checked as a generate step's text is (src/features/policy/enforce.ts), against the rules of the
// workspace and of the workflow's project: a redact rule rewrites every text of the value (object keys too), a block
// rule withholds the whole value (the violation is recorded, audit entry and `audit.policy.violation`, and
// `policy_violation` is thrown).
import { bySystem } from '../../platform/audit.ts';
import type { Platform } from '../../platform/context.ts';
import { enforcePolicyOnTexts, outputPolicy } from '../policy/index.ts';
import type { Value } from './expressions.ts';
import type { RunRow } from './store.ts';

export interface PolicyContext {
  platform: Platform;
  run: RunRow;
  /** The workflow's project, whose compliance rules apply too. */
  projectId: string | null;
}

/** The value with the output policy applied; throws `policy_violation` (recorded) when a block rule matches. */
export async function withOutputPolicy(value: Value, { platform, run, projectId }: PolicyContext): Promise<Value> {
  const texts: string[] = [];
  visit(value, (text) => (texts.push(text), text));
  if (texts.length === 0) return value;
  const policy = await outputPolicy(platform.db, { workspaceId: run.workspace_id, projectId, voice: null });
  if (!policy) return value;
  const now = platform.clock.now();
  const checked = await enforcePolicyOnTexts(platform.db, platform.logger, policy, texts, {
    origin: bySystem(run.workspace_id, `workflow run ${run.id}`, now),
    userId: run.user_id,
    projectId,
    voiceId: null,
    feature: 'workflows',
    model: null,
    blockedAt: now,
  });
  let next = 0;
  return visit(value, () => checked[next++]!);
}

/** The value with each of its texts (strings and object keys, in one fixed order) replaced by `replace`'s answer. */
function visit(value: Value, replace: (text: string) => string): Value {
  if (typeof value === 'string') return replace(value);
  if (Array.isArray(value)) return value.map((item) => visit(item, replace));
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [replace(key), visit(item, replace)]));
  return value;
}
