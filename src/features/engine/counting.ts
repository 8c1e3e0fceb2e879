// Tokens as the engine counts them (o200k_base), for the features that size their own text with them: the knowledge
// feature's chunks, the chat feature's checks of token inputs. The engine's index.ts exports this file as `tokens`.
export { countTokensEach, decodeTokenIdsEach } from './text-pool.ts';
export { countTokens, truncateTokens } from './tokens.ts';
