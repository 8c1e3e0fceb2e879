// The regular expressions of src/ that `npm run lint:redos` (scripts/lint-redos.ts) lets pass although recheck finds
// them vulnerable, each with the bound of its input and why that bound makes it safe; and the patterns built at run
// time, which no checker sees, each with what it is built from. This is the only place such a pattern is excused.
import type { AllowedDynamic, AllowedVulnerable } from './lint-redos.ts';

export const allowedVulnerable: AllowedVulnerable[] = [];

export const allowedDynamic: AllowedDynamic[] = [];
