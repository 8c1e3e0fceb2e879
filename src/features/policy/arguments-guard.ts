// The output policy on a tool call's arguments, as the client will read them: a JSON string is checked as the text
// it decodes to (`"forbidden\tphrase"` and `"\u0066orbidden"` are the banned words a client gets back), so each
// string goes out once it is complete; the text between strings (numbers, literals, punctuation) is checked as
// written once the next string starts. A redaction re-encodes the string it is in (and writes one outside a string as
// a string of its own), so arguments that were valid JSON stay valid JSON.
import type { Policy, PolicyMatch } from './match.ts';

/** A JSON string's content as a client decodes it; what cannot be decoded (an unfinished escape) is read as written. */
function decoded(raw: string): string {
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    // An unfinished escape at the end (arguments cut at max_tokens), or an escape JSON does not have.
    const cut = raw.replace(/\\(u[0-9a-fA-F]{0,3})?$/, '');
    try {
      return JSON.parse(`"${cut}"`) as string;
    } catch {
      return raw;
    }
  }
}

export class ArgumentsGuard {
  readonly #policy: Policy;
  #inString = false;
  #escaped = false;
  /** What has arrived and is not yet released: the text since the last string, or the current string's content. */
  #pending = '';
  #blocked: PolicyMatch | null = null;

  constructor(policy: Policy) {
    this.#policy = policy;
  }

  push(delta: string): { release: string; blocked: PolicyMatch | null } {
    if (this.#blocked) return { release: '', blocked: this.#blocked };
    let release = '';
    for (const char of delta) {
      if (!this.#inString) {
        if (char === '"') {
          release += this.#outside(this.#pending);
          if (this.#blocked) return { release: '', blocked: this.#blocked };
          this.#pending = '';
          this.#inString = true;
        } else this.#pending += char;
        continue;
      }
      if (this.#escaped) this.#escaped = false;
      else if (char === '\\') this.#escaped = true;
      else if (char === '"') {
        release += this.#string(this.#pending, true);
        if (this.#blocked) return { release: '', blocked: this.#blocked };
        this.#pending = '';
        this.#inString = false;
        continue;
      }
      this.#pending += char;
    }
    return { release, blocked: null };
  }

  /** The rest, once the call is complete (an unfinished string is checked and written unfinished). */
  end(): { release: string; blocked: PolicyMatch | null } {
    if (this.#blocked) return { release: '', blocked: this.#blocked };
    const release = this.#inString ? this.#string(this.#pending, false) : this.#outside(this.#pending);
    this.#pending = '';
    return this.#blocked ? { release: '', blocked: this.#blocked } : { release, blocked: null };
  }

  /** A string's content: as written when the policy leaves its decoded text alone, else the redacted text re-encoded. */
  #string(raw: string, closed: boolean): string {
    const result = this.#policy.apply(decoded(raw));
    if (result.blocked) {
      this.#blocked = result.blocked;
      return '';
    }
    const body = result.redactions.length === 0 ? raw : JSON.stringify(result.text).slice(1, -1);
    return `"${body}${closed ? '"' : ''}`;
  }

  /** Text between strings, each redaction written as a JSON string. */
  #outside(text: string): string {
    if (text === '') return '';
    const result = this.#policy.apply(text);
    if (result.blocked) {
      this.#blocked = result.blocked;
      return '';
    }
    if (result.redactions.length === 0) return text;
    // A match's offsets count code points.
    const cps = [...text];
    let out = '';
    let at = 0;
    for (const match of result.redactions) {
      out += cps.slice(at, match.start).join('') + JSON.stringify(this.#replacement(match));
      at = match.end;
    }
    return out + cps.slice(at).join('');
  }

  #replacement(match: PolicyMatch): string {
    return this.#policy.rules.find((rule) => rule.id === match.ruleId)?.replacement ?? '[redacted]';
  }
}
