// The output policy as the engine applies it to every generation: the banned phrases of the voice in use and the
// workspace's enabled compliance rules (those of the whole workspace and those of the request's project). Each
// choice's text goes through a StreamGuard, which holds back only as much text as a match could still span: what
// is released has been checked, and nothing of a blocking match is ever released. A block ends the generation with
// `policy_violation`; the blocked output goes to the audit log (never to the caller) and `audit.policy.violation`
// is emitted. Text that is handed out whole without a generation (what a workflow builds from its steps' outputs)
// goes through `enforcePolicyOnTexts`, with the same outcome.
//
// Tool-call arguments are model output too: each call's arguments have an ArgumentsGuard of their own (per choice
// and call), which checks each JSON string as the text it decodes to, so a block ends the generation as it does for
// text, and a redaction keeps arguments that were valid JSON valid JSON.
import type { Kysely, Selectable } from 'kysely';
import type { Logger } from 'pino';
import { type AuditOrigin, recordAudit } from '../../platform/audit.ts';
import { iso } from '../../platform/clock.ts';
import { Problem } from '../../platform/problems.ts';
import { preparedQuery } from '../../storage/prepared-query.ts';
import type { Database } from '../../storage/schema.ts';
import type { GenerationEvent } from '../engine/index.ts';
import { recordEvent } from '../webhooks/index.ts';
import { ArgumentsGuard } from './arguments-guard.ts';
import { LogprobsRelease } from './logprobs-release.ts';
import { compilePolicy, type Policy, type PolicyMatch, type PolicyRule, StreamGuard } from './match.ts';
import { ruleOf } from './rules.ts';
import type { ComplianceRulesTable } from './schema.ts';
import { bannedPhrasesRule, VOICE_RULE_ID } from './voice-rule.ts';

/** How much of a blocked output the audit entry keeps. */
const KEPT_OUTPUT_CHARS = 4000;

export interface PolicyScope {
  workspaceId: string;
  projectId: string | null;
  voice: { id: string; name: string; banned_phrases: string[] } | null;
}

const enabledRules = preparedQuery<{ workspaceId: string; projectId: string | null }, Selectable<ComplianceRulesTable>>(
  (db, { workspaceId, projectId }) =>
    db
      .selectFrom('compliance_rules')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('enabled', '=', 1)
      .where((eb) =>
        projectId !== null
          ? eb.or([eb('project_id', 'is', null), eb('project_id', '=', projectId)])
          : eb('project_id', 'is', null),
      )
      .orderBy('id'),
);

/** The policy of a generation, or null when no rule applies (the text then streams untouched). */
export async function outputPolicy(db: Kysely<Database>, scope: PolicyScope): Promise<Policy | null> {
  const rows = await enabledRules(db, { workspaceId: scope.workspaceId, projectId: scope.projectId });
  const rules: PolicyRule[] = rows.map(ruleOf);
  if (scope.voice && scope.voice.banned_phrases.length > 0)
    rules.unshift(bannedPhrasesRule(scope.voice.name, scope.voice.banned_phrases));
  return rules.length === 0 ? null : compilePolicy(rules);
}

/** The blocked output as the audit log keeps it: with the matches of the policy's redact rules redacted. */
function auditedOutput(policy: Policy): (output: string) => string {
  const redactRules = policy.rules.filter((rule) => rule.action === 'redact');
  const redactor = redactRules.length > 0 ? compilePolicy(redactRules) : null;
  return (output) => (redactor ? redactor.apply(output).text : output);
}

export interface Violation {
  match: PolicyMatch;
  rule: PolicyRule;
  /** The blocked output, with the matches of the redact rules redacted (the audit log keeps no more than a caller would have seen). */
  output: string;
}

interface CallGuard {
  guard: ArgumentsGuard;
  /** The arguments as the model wrote them, and as released (redacted). */
  written: string;
  released: string;
  name: string;
}

/** The events with every choice's text and tool-call arguments checked; a blocking match calls `onBlock` and throws what it returns. */
export async function* enforcePolicy(
  events: AsyncGenerator<GenerationEvent>,
  policy: Policy,
  onBlock: (violation: Violation) => Promise<Problem>,
): AsyncGenerator<GenerationEvent> {
  const audited = auditedOutput(policy);
  const calls = new Map<string, CallGuard>();
  const callOf = (choice: number, index: number) => calls.get(`${choice}/${index}`);
  const blockCall = async (call: CallGuard, match: PolicyMatch) => {
    const rule = policy.rules.find((r) => r.id === match.ruleId)!;
    return onBlock({ match, rule, output: audited(`${call.name}(${call.written})`) });
  };
  /** The rest of a call's arguments once it is complete, and the whole arguments checked once more. */
  const endCall = async (call: CallGuard): Promise<string> => {
    const { release, blocked } = call.guard.end();
    if (blocked) throw await blockCall(call, blocked);
    const whole = policy.apply(call.written);
    if (whole.blocked) throw await blockCall(call, whole.blocked);
    call.released += release;
    return release;
  };
  const guards = new Map<number, StreamGuard>();
  const outputs = new Map<number, string>();
  const guardOf = (choice: number) => guards.get(choice) ?? guards.set(choice, new StreamGuard(policy)).get(choice)!;
  const block = async (choice: number, match: PolicyMatch) => {
    const rule = policy.rules.find((r) => r.id === match.ruleId)!;
    const output = outputs.get(choice) ?? '';
    return onBlock({ match, rule, output: audited(output) });
  };
  const ended = new Set<number>();
  /** Per choice whose request asked for log probabilities: its tokens, sent with the text that completes them. */
  const logprobs = new Map<number, LogprobsRelease>();
  /** The released text of a choice as a text event, with the tokens it completes when they were asked for. */
  const released = (choice: number, text: string): GenerationEvent => {
    const tokens = logprobs.get(choice)?.release(text);
    return { type: 'text', choice, text, ...(tokens ? { logprobs: tokens } : {}) };
  };
  /** The rest of a choice's text, once its answer is complete: the guard's held text, and the whole answer checked once more. */
  async function* finish(choice: number): AsyncGenerator<GenerationEvent> {
    ended.add(choice);
    const { release, blocked } = guardOf(choice).end();
    if (blocked) throw await block(choice, blocked);
    // The whole answer once more: a regular expression without a length bound can match more than the guard held
    // back. Such a match is blocked here, late for a stream (its start may have been sent) but in time for a
    // complete answer, which is only returned after this.
    const whole = policy.apply(outputs.get(choice) ?? '');
    if (whole.blocked) throw await block(choice, whole.blocked);
    if (release) yield released(choice, release);
  }
  for await (const event of events) {
    if (event.type === 'model') {
      // With fallback models: which model answers, before any output.
      yield event;
    } else if (event.type === 'tool-call-start') {
      calls.set(`${event.choice}/${event.index}`, {
        guard: new ArgumentsGuard(policy),
        written: '',
        released: '',
        name: event.name,
      });
      yield event;
    } else if (event.type === 'tool-call-delta') {
      const call = callOf(event.choice, event.index)!;
      call.written += event.argumentsDelta;
      const { release, blocked } = call.guard.push(event.argumentsDelta);
      if (blocked) throw await blockCall(call, blocked);
      call.released += release;
      if (release) yield { ...event, argumentsDelta: release };
    } else if (event.type === 'tool-call') {
      const call = callOf(event.choice, event.index)!;
      const rest = await endCall(call);
      if (rest) yield { type: 'tool-call-delta', choice: event.choice, index: event.index, argumentsDelta: rest };
      calls.delete(`${event.choice}/${event.index}`);
      yield { ...event, arguments: call.released };
    } else if (event.type === 'text') {
      outputs.set(event.choice, (outputs.get(event.choice) ?? '') + event.text);
      if (event.logprobs) {
        if (!logprobs.has(event.choice)) logprobs.set(event.choice, new LogprobsRelease());
        logprobs.get(event.choice)!.write(event.text, event.logprobs);
      }
      const { release, blocked } = guardOf(event.choice).push(event.text);
      if (blocked) throw await block(event.choice, blocked);
      if (release) yield released(event.choice, release);
    } else if (event.type === 'finish') {
      const tokens = logprobs.get(event.choice);
      tokens?.write('', event.logprobs);
      yield* finish(event.choice);
      const rest = tokens?.end() ?? event.logprobs ?? [];
      yield {
        type: 'finish',
        choice: event.choice,
        finishReason: event.finishReason,
        ...(rest.length > 0 ? { logprobs: rest } : {}),
      };
    } else {
      // The usage event comes after every call ended: a choice whose provider sent no finish is completed here.
      for (const choice of guards.keys()) if (!ended.has(choice)) yield* finish(choice);
      // A tool call the provider never completed is still checked (nothing of it is handed out as a call).
      for (const call of calls.values()) await endCall(call);
      yield event;
    }
  }
}

/**
 * Complete texts checked at once, each returned with the redact rules applied. A blocking match in any of them is
 * recorded as a generation's is (recordViolation) and its problem thrown: nothing of the texts is handed out.
 */
export async function enforcePolicyOnTexts(
  db: Kysely<Database>,
  logger: Logger,
  policy: Policy,
  texts: readonly string[],
  facts: ViolationFacts,
): Promise<string[]> {
  const results = texts.map((text) => policy.apply(text));
  const first = results.findIndex((result) => result.blocked !== null);
  if (first >= 0) {
    const match = results[first]!.blocked!;
    const rule = policy.rules.find((r) => r.id === match.ruleId)!;
    throw await recordViolation(db, logger, { match, rule, output: auditedOutput(policy)(texts[first]!) }, facts);
  }
  return results.map((result) => result.text);
}

/** Who asked for a blocked output, and what made it (`model` is null for text that no model wrote). */
export interface ViolationFacts {
  origin: AuditOrigin;
  userId: string | null;
  projectId: string | null;
  voiceId: string | null;
  feature: string;
  model: string | null;
  blockedAt: Date;
}

/** Writes the violation (audit entry with the blocked output, event) and returns the problem for the caller. */
export async function recordViolation(
  db: Kysely<Database>,
  logger: Logger,
  violation: Violation,
  facts: ViolationFacts,
): Promise<Problem> {
  const { match, rule, output } = violation;
  const fromVoice = rule.id === VOICE_RULE_ID;
  const reason = `The output contained ${match.what}, which ${rule.label} does not allow.`.slice(0, 1000);
  const now = facts.blockedAt;
  const origin = { ...facts.origin, now };
  try {
    await db.transaction().execute(async (trx) => {
      await recordAudit(trx, origin, {
        action: 'policy.violation',
        target: fromVoice
          ? { type: 'voice', id: facts.voiceId!, display_name: null }
          : { type: 'compliance_rule', id: rule.id, display_name: null },
        // An audit detail holds at most 500 characters, the blocked output 4,000 (the contract's AuditLogEntry).
        details: {
          rule_id: rule.id,
          reason: reason.slice(0, 500),
          feature: facts.feature,
          model: facts.model,
          blocked_output: output.slice(0, KEPT_OUTPUT_CHARS),
          matched_text: match.matchedText.slice(0, 200),
        },
      });
      await recordEvent(
        trx,
        origin.workspaceId,
        'audit.policy.violation',
        {
          rule_id: rule.id,
          project_id: facts.projectId,
          user_id: facts.userId,
          blocked_at: iso(now),
          reason,
          voice_id: fromVoice ? facts.voiceId : null,
        },
        now,
      );
    });
  } catch (error) {
    // The output stays withheld and the caller still learns why; the log keeps what could not be recorded.
    logger.error(
      { err: error, rule_id: rule.id, workspace_id: origin.workspaceId },
      'a policy violation could not be recorded',
    );
  }
  return new Problem('policy_violation', `${reason} The output was withheld; the audit log keeps it.`, {
    extra: { rule_id: rule.id },
  });
}
