// Provisional intent rules (to be replaced by the full rule set).
import type { components } from '../../../generated/openapi.ts';

export type Intent = components['schemas']['ChatbotIntent'];
export const INTENTS: readonly Intent[] = ['product_question', 'pricing', 'order_status', 'billing', 'technical_support', 'account', 'complaint', 'feedback', 'sales_lead', 'human_handoff', 'greeting', 'other'];

export interface Classification {
  intent: Intent;
  confidence: number;
  asksForPerson: boolean;
  requestedAgent: string | null;
}

const PATTERNS: Array<[Intent, RegExp]> = [
  ['human_handoff', /\b(talk|speak|chat)\s+(to|with)\b|\b(human|real person|agent|representative)\b/],
  ['complaint', /\b(complain|terrible|awful|unacceptable|angry)\b/],
  ['billing', /\b(invoice|refund|payment|charged?|bill)\b/],
  ['order_status', /\b(order|delivery|deliver|shipping|ship|tracking|parcel)\b/],
  ['pricing', /\b(price|cost|how much|cheap|expensive)\b/],
  ['technical_support', /\b(broken|error|does not work|doesn't work|bug|crash)\b/],
  ['account', /\b(login|log in|password|account|sign in)\b/],
  ['sales_lead', /\b(quote|demo|bulk|wholesale)\b/],
  ['feedback', /\b(suggest|feedback|love|great)\b/],
];

export function classifyIntent(message: string): Classification {
  const text = message.toLowerCase();
  const words = text.match(/[\p{L}\p{N}']+/gu) ?? [];
  if (words.length <= 6 && words.every((w) => /^(hi|hello|hey|hallo|hola|bonjour|thanks|thank|you|good|morning|there)$/.test(w)) && words.length > 0) {
    return { intent: 'greeting', confidence: 0.9, asksForPerson: false, requestedAgent: null };
  }
  const handoff = /\b(?:talk|speak|chat)\s+(?:to|with)\s+(.+?)(?:\s+please)?[.!?]*$/.exec(text);
  for (const [intent, pattern] of PATTERNS) {
    if (pattern.test(text)) {
      if (intent === 'human_handoff') {
        const named = handoff?.[1]?.trim() ?? null;
        const generic = named === null || /^(a |an |some )?(human|person|real person|agent|someone|somebody|representative)$/.test(named);
        return { intent, confidence: 0.9, asksForPerson: true, requestedAgent: generic ? null : named.slice(0, 200) };
      }
      return { intent, confidence: 0.7, asksForPerson: false, requestedAgent: null };
    }
  }
  return { intent: 'product_question', confidence: 0.3, asksForPerson: false, requestedAgent: null };
}

export function matchKeyword(message: string, keywords: readonly string[]): string | null {
  const text = message.toLowerCase();
  return keywords.find((keyword) => new RegExp(`(^|[^\\p{L}\\p{N}])${keyword.toLowerCase().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`, 'u').test(text)) ?? null;
}
