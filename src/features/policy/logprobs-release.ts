// The log probabilities of a choice's text as the output policy releases the text (enforce.ts). A token goes out
// with the released text that completes it, so nothing of the text held back leaves early. Once a redaction has
// changed the text, the model's tokens no longer spell it (and would show what was redacted): the rest of the choice
// gets the tokens of the released text itself, certain and without alternatives, as text no model sampled.
import { certainLogprobs, type TokenLogprob } from '../engine/index.ts';

const bytesOf = (token: TokenLogprob) => token.bytes?.length ?? Buffer.byteLength(token.token);

export class LogprobsRelease {
  /** The model's text so far. */
  #written = '';
  /** How much of it was released unchanged: characters, and their UTF-8 bytes. */
  #releasedChars = 0;
  #releasedBytes = 0;
  /** The bytes of the tokens sent. */
  #sentBytes = 0;
  /** The model's tokens not sent yet. */
  #pending: TokenLogprob[] = [];
  /** Whether the released text is still the model's (no redaction has changed it). */
  #unchanged = true;

  /** The model wrote `text`, with the tokens that came with it. */
  write(text: string, tokens: readonly TokenLogprob[] = []): void {
    this.#written += text;
    if (this.#unchanged) this.#pending.push(...tokens);
  }

  /** The policy released `text` (the next part of the choice's output): the tokens that go out with it. */
  release(text: string): TokenLogprob[] {
    if (!this.#unchanged) return text === '' ? [] : certainLogprobs(text);
    const same = this.#sameAsWritten(text);
    this.#releasedChars += same;
    this.#releasedBytes += Buffer.byteLength(text.slice(0, same));
    const sent: TokenLogprob[] = [];
    while (this.#pending.length > 0 && this.#sentBytes + bytesOf(this.#pending[0]!) <= this.#releasedBytes) {
      const token = this.#pending.shift()!;
      this.#sentBytes += bytesOf(token);
      sent.push(token);
    }
    if (same === text.length) return sent;
    // Redacted from here: the model's tokens stop; what was released of its text without them gets certain ones.
    this.#unchanged = false;
    this.#pending = [];
    const unsent = Buffer.from(this.#written.slice(0, this.#releasedChars)).subarray(this.#sentBytes).toString();
    return [...sent, ...certainLogprobs(unsent + text.slice(same))];
  }

  /** How many characters from the start of `text` are the model's, next after what was released (whole characters). */
  #sameAsWritten(text: string): number {
    const at = this.#releasedChars;
    let same = 0;
    while (same < text.length && text.charCodeAt(same) === this.#written.charCodeAt(at + same)) same++;
    if (same < text.length && same > 0 && /[\uD800-\uDBFF]/.test(text.charAt(same - 1))) same--;
    return same;
  }

  /** The choice ended, its text all released: the model's tokens that no text completed. */
  end(): TokenLogprob[] {
    const rest = this.#pending;
    this.#pending = [];
    return rest;
  }
}
