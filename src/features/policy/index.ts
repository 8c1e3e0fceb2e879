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

// The public API: what other features and the entry points use (docs/server.md, "Dependency rules").
export { enforcePolicyOnTexts, outputPolicy } from './enforce.ts'; // workflows check a step's outputs like a generation's
export { compilePolicy, PolicyRuleError } from './match.ts'; // voices compile their banned phrases as a rule on save
export { policyMiddleware } from './middleware.ts'; // registered on the engine by src/services.ts
export { bannedPhrasesRule } from './voice-rule.ts';
