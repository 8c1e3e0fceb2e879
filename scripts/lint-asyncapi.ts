// Validates asyncapi/asyncapi.yaml with the official AsyncAPI parser (the AsyncAPI validator of `npm run lint`).
// Any error, warning or information fails, unless accepted below; hints are printed only.
import { fromFile, Parser } from '@asyncapi/parser';

const severities = ['error', 'warning', 'information', 'hint'];
// Diagnostics we accept, and why (the same rules are off in .spectral.yaml).
const accepted: Record<string, string> = {
  'asyncapi-latest-version': 'the contract is AsyncAPI 3.0 by decision (DESIGN.md)',
};
const parser = new Parser();
const parsed = await fromFile(parser, 'asyncapi/asyncapi.yaml').parse();
const document = parsed.document;
const diagnostics = parsed.diagnostics.filter((d) => !(String(d.code) in accepted));
for (const d of diagnostics) {
  console.log(`${severities[d.severity]} ${d.code} ${d.path.join('.')}: ${d.message}`);
}
const failing = diagnostics.filter((d) => d.severity < 3);
if (!document || failing.length > 0) {
  console.error(`asyncapi/asyncapi.yaml: ${failing.length} problem(s).`);
  process.exit(1);
}
console.log(
  `asyncapi/asyncapi.yaml: valid AsyncAPI ${document.version()}, ${document.allMessages().length} messages, no problems.`,
);
