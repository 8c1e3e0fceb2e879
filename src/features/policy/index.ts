// The policy feature: the workspace's compliance rules (/v1/compliance-rules) and the output policy that the engine
// applies to every generation (enforce.ts), with the voice's banned phrases.
import type { Feature } from '../../platform/feature.ts';
import { complianceRules } from './migrations/010_compliance_rules.ts';
import { ruleHandlers } from './rules.ts';
import './schema.ts';

export const policyFeature = {
  name: 'policy',
  handlers: ruleHandlers,
  migrations: { '010_compliance_rules': complianceRules },
} satisfies Feature;
