// sandbox-writer's draft: what it writes to a message that is not a document task, a grounded question or a tool
// result. The message says what to write (an announcement, an email, a blog intro, a headline, a social post, a
// product description, a summary, a rewrite, an answer) and what about; the draft is that kind's template around the
// message's own topic, so a demo reads like a first draft, with [placeholders] where only the team knows the facts.
// Deterministic, and written once in docs/engine.md ("Drafts"): change the doc with the code.
import { type SandboxTask, TONES, type Tone, taskText } from './task.ts';
import { keyTerms } from './words.ts';

export type DraftKind =
  | 'summary'
  | 'rewrite'
  | 'headline'
  | 'email'
  | 'announcement'
  | 'blog'
  | 'social'
  | 'description'
  | 'answer'
  | 'greeting'
  | 'draft';

interface KindRule {
  kind: DraftKind;
  /** The words that name it as the message's first word, an imperative ("Announce …", "Summarize: …"). */
  verb?: RegExp;
  /** The words that name it anywhere else ("an email about …", "a tagline for …"). */
  noun?: RegExp;
}

// The kinds, by the words that name them. When several are named, the first named in the message counts.
const KINDS: KindRule[] = [
  { kind: 'summary', verb: /^(?:summari[sz]e|recap|condense)$/, noun: /\b(?:summary|summaries|tl;?dr|recap)\b/ },
  {
    kind: 'rewrite',
    verb: /^(?:rewrite|rephrase|reword|paraphrase|polish|proofread|edit|improve|simplify|shorten|tighten)$/,
    noun: /\brewrite\b/,
  },
  { kind: 'headline', noun: /\b(?:headlines?|taglines?|slogans?|subject lines?|titles?)\b/ },
  { kind: 'email', verb: /^e-?mail$/, noun: /\b(?:e-?mails?|newsletters?|letters?)\b/ },
  {
    kind: 'announcement',
    verb: /^(?:announce|launch|introduce|unveil)$/,
    noun: /\b(?:announcements?|launch(?:es)?|press releases?|release notes?)\b/,
  },
  { kind: 'blog', noun: /\b(?:blog posts?|blogs?|articles?|intros?|introductions?|opening paragraphs?)\b/ },
  { kind: 'social', verb: /^tweet$/, noun: /\b(?:tweets?|posts?|social media posts?|linkedin posts?)\b/ },
  { kind: 'description', verb: /^describe$/, noun: /\b(?:descriptions?|product pages?)\b/ },
];

/** The words that lead into the topic after a kind's name: "an email *about* …", "a tagline *for* …". */
const CONNECTOR =
  /\s(?:about|on|for|regarding|announcing|introducing|describing|covering|of|to announce|to introduce)\s+/gi;
const LINE_TERMINATOR = /[\n\r\u2028\u2029]/g;

/**
 * The topic after the first connector that has one: what
 * `/\s(?:about|…|to introduce)\s+(.+)$/i.exec(text)?.[1]` captures, in linear time. `.` stops at a line terminator,
 * so the topic runs from the connector's spaces (all but the last, when they end the text) to the end with none in
 * it; the pattern would look for such an end from every connector, quadratic in a text of connectors before a line
 * terminator.
 */
export function connectedTopic(text: string): string | undefined {
  let lastBreak = -1;
  for (const found of text.matchAll(LINE_TERMINATOR)) lastBreak = found.index;
  CONNECTOR.lastIndex = 0;
  for (let found = CONNECTOR.exec(text); found; found = CONNECTOR.exec(text)) {
    const wordEnd = found.index + found[0].trimEnd().length;
    const start = Math.min(found.index + found[0].length, text.length - 1);
    if (start > wordEnd && start > lastBreak) return text.slice(start);
    CONNECTOR.lastIndex = found.index + 1;
  }
  return undefined;
}
/** Politeness and the writing verbs that may come before a kind's name. */
const LEAD =
  /^(?:(?:please|kindly|ok|okay)[,!]?\s+)*(?:(?:can|could|would|will) you\s+|i (?:need|want|would like)\s+|help me\s+|let's\s+)?/i;
const WRITING_VERB = /^(?:write|draft|create|compose|prepare|make|give me|suggest|come up with|generate)\s+/i;
const GREETING = /^(?:hello|hi|hey|good (?:morning|afternoon|evening)|greetings)\b/i;
const GREETING_WORDS = new Set(['hello', 'greetings', 'morning', 'afternoon', 'evening', 'there', 'everyone']);

export interface DraftRequest {
  kind: DraftKind;
  /** What the draft is about, as the message words it ("our spring sale on coffee roasts"); may be empty. */
  topic: string;
  /** The text to summarize or rewrite: what follows the message's first colon or line, or a quoted passage. */
  text: string;
  /** The instruction: the first sentence of the message's first line, without the text. */
  instruction: string;
  /** The sentences after the instruction on its line ("Spring roasts ship Monday."), which the draft uses. */
  details: string;
}

const capitalise = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);
const trimTopic = (text: string) =>
  text
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^["“'‘]+/, '')
    .replace(/(?<!["”'’])["”'’]+$/, '')
    .replace(/(?<![\s.!?:;,])[\s.!?:;,]+$/, '');
/** The topic without its leading determiner: "our spring sale" → "spring sale" (for headlines and hashtags). */
const phraseOf = (topic: string) =>
  topic.replace(/^(?:our|the|a|an|your|my|their|this|these|that|those|its)\s+/i, '') || topic;

/**
 * The first passage of at least 12 characters in "…" or “…” (closed by " or ”): what
 * `/["“]([^"”]{12,})["”]/.exec(line)?.[1]` captures, in linear time (the pattern would search to the end of the line
 * from every opening quote when no closing one follows). From each opening quote, the passage runs to the next
 * closing one, which is looked up again only once the search has passed it.
 */
export function quotedPassage(line: string): string | undefined {
  let close = -1;
  for (let at = 0; at < line.length; at++) {
    if (line[at] !== '"' && line[at] !== '“') continue;
    if (close <= at) {
      close = at + 1;
      while (close < line.length && line[close] !== '"' && line[close] !== '”') close++;
      if (close === line.length) return undefined;
    }
    if (close - at - 1 >= 12) return line.slice(at + 1, close);
  }
  return undefined;
}

/** Reads what the message asks for: its kind, its topic and the text it gives to work on. */
export function readRequest(message: string): DraftRequest {
  const trimmed = message.trim();
  const lines = trimmed.split('\n');
  const firstLine = lines[0]!.trim();
  // The text a summary or a rewrite works on: after the first colon (when the words before it are an instruction of
  // at most 12 words), else after the first line, else a quoted passage.
  const colon = /^([^:\n]{1,120}?):\s+([\s\S]+)$/.exec(trimmed);
  const quoted = quotedPassage(firstLine);
  let instruction = firstLine;
  let text = '';
  if (colon && colon[1]!.trim().split(/\s+/).length <= 12) {
    instruction = colon[1]!.trim();
    text = colon[2]!.trim();
  } else if (lines.length > 1 && lines.slice(1).join('\n').trim() !== '') {
    text = lines.slice(1).join('\n').trim();
  } else if (quoted) {
    text = quoted.trim();
  }
  // The first sentence says what to write; the sentences after it are details for the draft.
  const [head = '', ...more] = instruction.split(/(?<=[.!?])\s+(?=[\p{Lu}\p{N}"“])/u);
  instruction = head;
  const details = more.join(' ');
  const led = instruction.replace(LEAD, '');
  const firstWord = (/^[\p{L}-]+/u.exec(led)?.[0] ?? '').toLowerCase();
  const lower = led.toLowerCase();

  // The kind named first; then a question, a greeting, or a draft.
  let found: { rule: KindRule; at: number; end: number; asVerb: boolean } | null = null;
  for (const rule of KINDS) {
    if (rule.verb?.test(firstWord)) {
      if (!found || found.at > 0) found = { rule, at: 0, end: firstWord.length, asVerb: true };
      continue;
    }
    const match = rule.noun?.exec(lower);
    if (match && (!found || match.index < found.at))
      found = { rule, at: match.index, end: match.index + match[0].length, asVerb: false };
  }
  const terms = keyTerms(trimmed);
  const greetingOnly = GREETING.test(led) && terms.every((term) => GREETING_WORDS.has(term) || GREETING.test(term));
  if (terms.length === 0 || greetingOnly) return { kind: 'greeting', topic: '', text, instruction, details };

  if (found) {
    const rest = led.slice(found.end);
    // "Announce our sale on coffee" is about all that follows the verb; "a tagline for our roasts", what follows
    // the connector after the name (or nothing, when the message only names the kind: "Write an email").
    const connected = connectedTopic(` ${rest.trim()}`);
    const topic = found.asVerb ? rest : (connected ?? '');
    const named = found.asVerb || connected !== undefined || WRITING_VERB.test(led);
    if (named) return { kind: found.rule.kind, topic: trimTopic(topic), text, instruction, details };
  }
  if (/\?\s*$/.test(instruction)) return { kind: 'answer', topic: trimTopic(instruction), text, instruction, details };
  const afterVerb = led.replace(WRITING_VERB, '');
  const connected = afterVerb !== led ? connectedTopic(` ${afterVerb}`) : undefined;
  return { kind: 'draft', topic: trimTopic(connected ?? afterVerb), text, instruction, details };
}

/** The summary's length and format the instruction asks for ("a short summary", "in bullet points"). */
function summaryTask(request: DraftRequest): SandboxTask {
  const words = request.instruction.toLowerCase();
  const length = /\b(?:short|brief|one sentence|tl;?dr)\b/.test(words)
    ? 'short'
    : /\b(?:long|detailed|full)\b/.test(words)
      ? 'long'
      : 'medium';
  const format = /\b(?:bullets?|bullet points|key points|list)\b/.test(words) ? 'bullets' : 'paragraph';
  return { kind: 'summarize', text: request.text, length, format };
}

function rewriteTask(request: DraftRequest): SandboxTask {
  const words: string[] = request.instruction.toLowerCase().match(/\p{L}+/gu) ?? [];
  const tone = TONES.find((candidate) => words.includes(candidate)) as Tone | undefined;
  return { kind: 'rewrite', text: request.text, ...(tone ? { tone } : {}) };
}

const pick = <T>(items: readonly T[], variant: number) =>
  items[((variant % items.length) + items.length) % items.length]!;

/** The draft for a message. `variant` (the choice and the seed) picks among each kind's openings. */
export function draftText(message: string, variant: number): string {
  const request = readRequest(message);
  const t = request.topic || '[topic]';
  const p = request.topic ? phraseOf(request.topic) : '[topic]';
  const T = capitalise(t);
  // The message's own details, where the template would otherwise leave a placeholder.
  const d = request.details;
  switch (request.kind) {
    case 'greeting':
      return `${GREETING.test(message.trim()) ? 'Hello! ' : ''}Tell me what to write and what it is about (an announcement, an email, a blog intro, a headline, a social post, a summary or a rewrite), and I will draft it.`;
    case 'summary':
      return request.text
        ? taskText(summaryTask(request), null)
        : 'Send me the text to summarize after a colon ("Summarize: …"), and I will summarize it.';
    case 'rewrite':
      return request.text
        ? taskText(rewriteTask(request), null)
        : 'Send me the text to rewrite after a colon ("Rewrite: …"), and I will rewrite it.';
    case 'headline': {
      const options = [
        `Meet ${t}.`,
        `${capitalise(p)}, done right.`,
        `Don't miss ${t}.`,
        `Why everyone is talking about ${t}.`,
        `${capitalise(p)}: everything you need to know.`,
      ];
      return [0, 1, 2].map((i) => `${i + 1}. ${pick(options, variant + i)}`).join('\n');
    }
    case 'email':
      return [
        `Subject: ${T}`,
        'Hi [first name],',
        `${pick([`We wanted to let you know about ${t}.`, `Here's a quick note about ${t}.`, `We have news to share: ${t}.`], variant)} ${d || '[One or two sentences on what it means for you.]'}`,
        "You'll find the details at [link]. If you have any questions, just reply to this email.",
        'Best regards,\n[Your name]',
      ].join('\n\n');
    case 'announcement':
      return [
        pick([`Introducing ${t}!`, `It's here: ${t}.`, `Big news: we're launching ${t}.`], variant),
        d
          ? `We're excited to share it with you. ${d} Find every detail at [link].`
          : "We're excited to share it with you. Find every detail at [link], from [date].",
        "Questions? Reply to this message: we'd love to hear what you think.",
      ].join('\n\n');
    case 'blog':
      return `# ${T}\n\n${pick([`If you've ever wondered about ${t}, you're not alone.`, `Everyone has a view on ${t}, and for good reason.`, `${T} comes up in almost every conversation we have with customers.`], variant)}${d ? ` ${d}` : ''} In this post we look at what it is, why it matters and how to get the most out of it, with examples you can use today.`;
    case 'social': {
      const tag = p === '[topic]' ? '' : ` #${(p.match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, 3).map(capitalise).join('')}`;
      return `${pick([`Say hello to ${t}!`, `${T}: it's here.`, `You asked, we listened: ${t}.`], variant)} ${d || "We think you'll love it."} Learn more at [link].${tag}`;
    }
    case 'description':
      return `${pick(['Meet', 'Discover', 'Say hello to'], variant)} ${t}: made for [who it is for], and built to [what it does]. ${d || '[One detail that sets it apart: a material, a number or a result.]'} Available now at [link].`;
    case 'answer':
      return `${pick(['Thanks for asking.', 'Good question.', 'Happy to help.'], variant)} [Answer “${t}?” in one or two sentences.] If you need anything else, just reply and we'll help.`;
    case 'draft':
      return `${pick([`Here's a first draft about ${t}.`, `A first take on ${t}.`, `Here's a draft on ${t} to build on.`], variant)} The short version: ${d || '[the one thing your reader should know].'} The longer one: [a detail or an example that makes it concrete].`;
  }
}
