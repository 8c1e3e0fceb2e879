// Validates asyncapi/asyncapi.yaml with the official AsyncAPI parser (the AsyncAPI validator of `npm run lint`).
// Any diagnostic at error, warning or information level fails; hints are printed only.
import { Parser, fromFile } from '@asyncapi/parser';

const severities = ['error', 'warning', 'information', 'hint'];
const parser = new Parser();
const { document, diagnostics } = await fromFile(parser, 'asyncapi/asyncapi.yaml').parse();
for (const d of diagnostics) {
  console.log(`${severities[d.severity]} ${d.code} ${d.path.join('.')}: ${d.message}`);
}
const failing = diagnostics.filter((d) => d.severity < 3);
if (!document || failing.length > 0) {
  console.error(`asyncapi/asyncapi.yaml: ${failing.length} problem(s).`);
  process.exit(1);
}
console.log(`asyncapi/asyncapi.yaml: valid AsyncAPI ${document.version()}, ${document.allMessages().length} messages, no problems.`);
