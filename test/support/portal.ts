// The docs portal's navigation, in the order scripts/build-docs.ts writes it: the references, then the guides.
export const PORTAL_NAVIGATION = [
  'index.html',
  'asyncapi.html',
  'scim-reference.html',
  'chat.html',
  'tools.html',
  'embeddings-and-responses.html',
  'receiving-webhooks.html',
  'voices.html',
  'documents.html',
  'chatbots.html',
  'workflows.html',
  'scim.html',
  'sign-in.html',
  'single-sign-on.html',
  'operate.html',
  'changelog.html',
];

/** The navigation's links as a page shows them: every page but itself. */
export function navigationOf(page: string): string[] {
  return PORTAL_NAVIGATION.filter((href) => href !== page);
}
