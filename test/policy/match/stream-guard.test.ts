// The StreamGuard (src/features/policy/match/stream-guard.ts), which must release exactly what `apply` gives for the
// whole text, however the text is chunked.
import { describe, expect, test } from 'vitest';
import type { Policy, PolicyMatch } from '../../../src/features/policy/match.ts';
import { compilePolicy, StreamGuard } from '../../../src/features/policy/match.ts';
import { cpLength, personal, phrases, regex } from './rules.ts';

/** Feeds the chunks; returns what was released and the block, checking that nothing follows a block. */
function stream(
  policy: Policy,
  chunks: string[],
): { released: string; blocked: PolicyMatch | null; releases: string[] } {
  const guard = new StreamGuard(policy);
  const releases: string[] = [];
  for (const chunk of chunks) {
    const { release, blocked } = guard.push(chunk);
    if (blocked) {
      expect(release).toBe('');
      expect(guard.push('more')).toEqual({ release: '', blocked });
      return { released: releases.join(''), blocked, releases };
    }
    releases.push(release);
  }
  const { release, blocked } = guard.end();
  releases.push(release);
  return { released: releases.join(''), blocked, releases };
}

/** A seeded PRNG (mulberry32): the same chunkings on every run. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Random chunks of 1 to `max` UTF-16 units: a chunk may split a surrogate pair, as a careless producer might. */
function chunk(text: string, random: () => number, max: number): string[] {
  const chunks: string[] = [];
  for (let at = 0; at < text.length; ) {
    const size = 1 + Math.floor(random() * max);
    chunks.push(text.slice(at, at + size));
    at += size;
  }
  return chunks;
}

/** How many chunkings each property below streams a text in. */
const CHUNKINGS = 40;

/**
 * `CHUNKINGS` chunkings of `text`, the same on every run: the k-th of chunks of 1 to a size that grows evenly with k
 * from 1 to `widest`, so that every span of sizes is streamed, from one UTF-16 unit per delta (the first chunking: a
 * release point after every unit) to deltas longer than the policies' holdbacks but the unbounded one.
 */
function chunkings(text: string, seed: number, widest: number): string[][] {
  const random = prng(seed);
  return Array.from({ length: CHUNKINGS }, (_, k) =>
    chunk(text, random, 1 + Math.floor((k * widest) / (CHUNKINGS - 1))),
  );
}

describe('StreamGuard', () => {
  test('a phrase delivered one code point per delta is blocked before any of it is released', () => {
    const policy = compilePolicy([phrases(['world-class'])]);
    const text =
      'Our beans are roasted every Tuesday in Leeds and they are simply world–class, you will taste it at once.';
    const { released, blocked } = stream(policy, Array.from(text));
    expect(blocked).toEqual(policy.apply(text).blocked);
    expect(blocked).toMatchObject({ start: 65, matchedText: 'world–class' });
    expect(text.startsWith(released)).toBe(true);
    expect(released.length).toBeGreaterThan(0);
    expect(released.length).toBeLessThanOrEqual(65);
  });

  test('releases as early as the holdback allows, and everything at the end', () => {
    const policy = compilePolicy([phrases(['game-changer'])]);
    const guard = new StreamGuard(policy);
    const text = 'xyz '.repeat(250);
    let released = '';
    for (let at = 0; at < text.length; at += 10) {
      released += guard.push(text.slice(at, at + 10)).release;
      expect(released.length).toBe(Math.max(0, at + 10 - policy.holdback));
    }
    expect(released + guard.end().release).toBe(text);
    // No rule: nothing is held.
    expect(new StreamGuard(compilePolicy([])).push('abc')).toEqual({ release: 'abc', blocked: null });
  });

  test('a phrase in progress is held even beyond the holdback: a long whitespace run cannot smuggle it out', () => {
    const policy = compilePolicy([phrases(['game changer'])]);
    const text = `It is a game${' '.repeat(200)}changer, truly.`;
    const { released, blocked } = stream(policy, Array.from(text));
    expect(blocked).toMatchObject({ start: 8, matchedText: `game${' '.repeat(200)}changer` });
    expect(released).toBe('It is a ');
  });

  test('invisible characters do not count towards the holdback: a match with many of them inside is still caught', () => {
    const policy = compilePolicy([regex('ACME-\\d{4}'), personal(['payment_card'], 'redact')]);
    const hidden = `AC${'\u200b'.repeat(300)}ME-12\u2060\u2060\u206034`;
    const text = `ticket ${hidden} today, and more text after it to go past the holdback.`;
    const { released, blocked } = stream(policy, Array.from(text));
    expect(blocked).toEqual(policy.apply(text).blocked);
    expect(blocked).toMatchObject({ start: 7, end: 7 + cpLength(hidden), matchedText: hidden });
    expect(released).toBe('ticket ');
    // The holdback counts code points of the regex view: invisible characters before it are released.
    const guard = new StreamGuard(compilePolicy([regex('ACME-\\d{4}')]));
    expect(guard.push(`ab${'\u200b'.repeat(50)}cdefghijkl`).release).toBe(`ab${'\u200b'.repeat(50)}`);
  });

  test('a card number with no-break spaces, one code point per delta, is redacted whole', () => {
    const policy = compilePolicy([personal(['payment_card', 'email']), phrases(['strasse'], 'redact')]);
    const text = `${'x '.repeat(30)}pay 4111\u00a01111\u202f1111\u00a01111 at the Straße, foo\u200b@bar.com ${'y '.repeat(200)}`;
    const expected = policy.apply(text).text;
    expect(expected).toBe(`${'x '.repeat(30)}pay [redacted] at the [redacted], [redacted] ${'y '.repeat(200)}`);
    expect(stream(policy, Array.from(text)).released).toBe(expected);
  });

  test('a redaction is never split across releases, and a word boundary across a release point is respected', () => {
    const policy = compilePolicy([phrases(['art'], 'redact'), personal(['email'])]);
    const text = `${'x'.repeat(400)}art ${'y'.repeat(400)} mail jane@example.com now ${'z'.repeat(400)}`;
    for (const size of [1, 7, 50, 333]) {
      const { released, releases } = stream(
        policy,
        chunk(text, () => (size - 1) / size, size),
      );
      expect(released).toBe(policy.apply(text).text);
      expect(releases.some((r) => r.includes('[redacted]') && r.includes('jane'))).toBe(false);
    }
    expect(policy.apply(text).text).toContain('mail [redacted] now');
  });

  // Long enough for many release points (a few times the holdback), with near misses: a card followed by a digit, a
  // phone number followed by a decimal, a phrase hit that hides an overlapping regex candidate ('two 11').
  const filler = (n: number) => 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(n);
  const texts = [
    `Honestly, this roast is a GAME  changer for mornings; artisanal art, smart-art and ART. 😀 Call +44 20 7946 0958 or (555) 123-4567. ${filler(1)}zero one two 11 22 33, then xart and art. ${filler(1)}Call 555-123-4567 2 times, not 555-123-4567.8 nor 4111 1111 1111 1111 5.`,
    `👩‍👩‍👧 Write to jane.doe@example.com or pay with 4111 1111 1111 1111 today; order 2026 ships soon. Not a card: 4111 1111 1111 1112. ${filler(2)}Ref 1234567 555-123-4567 and 378282246310005. the end`,
    `ﬁne dining at the café\u0301 — see ACME-1234 and acme-98765, xart, ACME-12, world–class, world class, world-class-ish, Ｗｏｒｌｄ Ｃｌａｓｓ. ${filler(2)}one two 3 one two three 44 55 66 77 ACME-12345.`,
    `Long: game${' '.repeat(70)}-${' '.repeat(5)}changer. Also 378282246310005 and 2019-2026 and $1,299.00 and İSTANBUL, ıi. ${filler(2)}The end`,
    `${filler(6)} art`,
    // Near misses first (so a block policy reaches them): each needs its last characters to be ruled out.
    `Not 555-123-4567.8, not 4111 1111 1111 1111 5, not 4111-1111-1111-1111-2, not 1-800-555-1234x. ${filler(3)}A long card: 6011 0009 9013 9424 124. The end`,
    // The normalised view: full-width forms, invisible characters inside matches (and around them), no-break spaces,
    // ß and İ; and near misses that only a dropped character or the one after it rules out.
    `Ｆｕｌｌ ａｃｍｅ－１２３４ and A\u200bCME-98\u200b765; hidden ac\u200bme-1234, acme\u00ad-\u200b1234\u200b, ACME-1234\u200b5 and ＡＣＭＥ－１２３４５. ${filler(1)}Then A\u200b\u200b\u200bCME-9876. Pay 4111\u00a01111\u00a01111\u00a01111 or ４１１１ １１１１ １１１１ １１１１, not 4111\u00a01111\u00a01111\u00a01111\u200b5; call +44\u00a020\u00a07946\u00a00958 or 555-123-\u200b4567. ${filler(1)}Die STRASSE, die Straße, Hauptstraße; İSTANBUL, İstanbul, ıstanbul; mail foo\u200b@bar.com. ${filler(1)}ﬁ\u200bne dining, GAME\u200b-\u00a0CHANGER, \u200b\u200b\u200b the end`,
  ];
  const policies: Record<string, Policy> = {
    'redact everything': compilePolicy([
      phrases(['game-changer', 'art', 'world class', 'fine dining', 'café', 'one two', 'strasse'], 'redact', {
        replacement: '<voice>',
      }),
      regex('\\bACME-\\d{4}\\b', 'redact', { replacement: '<ticket>' }),
      regex('\\w{1,8} \\d{1,4}', 'redact', { id: 'rul_words' }),
      personal(['phone', 'payment_card']),
    ]),
    'block phrases, redact the rest': compilePolicy([
      phrases(['game-changer', 'world-class', 'istanbul']),
      regex('acme-\\d{4,6}', 'redact'),
      personal(['phone', 'payment_card']),
    ]),
    'block only': compilePolicy([
      phrases(['ship', 'the end']),
      regex('ACME-\\d{5}'),
      personal(['phone', 'payment_card'], 'block'),
    ]),
    'redact on the normalised views': compilePolicy([
      regex('ACME-\\d{4}\\b', 'redact', { caseSensitive: true, id: 'rul_exact', replacement: '<ACME>' }),
      phrases(['strasse', 'istanbul', 'fine dining', 'game changer'], 'redact', { replacement: '<voice>' }),
      personal(['phone', 'payment_card']),
    ]),
  };

  test('the fixtures are long compared with the holdbacks', () => {
    for (const policy of Object.values(policies)) expect(policy.holdback).toBeLessThan(40);
    expect(Math.min(...texts.map(cpLength))).toBeGreaterThan(7 * 39);
  });

  test(`${CHUNKINGS} chunkings with emails and an unbounded regex (holdback 347) equal apply`, () => {
    const policy = compilePolicy([personal(['email']), regex('\\bACME-\\d+', 'redact'), phrases(['art'], 'redact')]);
    const text = `${texts.join(' mail jane.doe@example.com ')} last: ops@acme.example.org`;
    const expected = policy.apply(text).text;
    // Emails (2 in the last fixture: a join and foo<ZWSP>@bar.com), tickets (7 in the last fixture, all full-width or
    // with invisible characters inside), 'art'.
    expect(expected.match(/\[redacted\]/g)).toHaveLength(7 + 2 + (4 + 7) + 5);
    for (const [run, chunks] of chunkings(text, 7, 60).entries())
      expect(stream(policy, chunks).released, `run ${run}`).toBe(expected);
  });

  test('a surrogate pair split between deltas is released whole', () => {
    expect(stream(compilePolicy([]), ['a\uD83D', '\uDE00b']).released).toBe('a😀b');
    const guard = new StreamGuard(compilePolicy([]));
    expect(guard.push('a\uD83D').release).toBe('a');
    expect(guard.push('\uDE00b').release).toBe('😀b');
  });

  test('a look-alike phrase delivered one code point per delta is blocked before any of it is released', () => {
    const policy = compilePolicy([phrases(['forbiddenword'])]);
    const text = `${filler(1)}and then f\u043Erbiddenword, which goes on for a while after it.`;
    const { released, blocked } = stream(policy, Array.from(text));
    expect(blocked).toEqual(policy.apply(text).blocked);
    expect(blocked).toMatchObject({ matchedText: 'f\u043Erbiddenword' });
    expect(released.length).toBeGreaterThan(0);
    expect(cpLength(released)).toBeLessThanOrEqual(blocked!.start);
  });

  test('the holdback counts on the skeleton too, which is shorter where a look-alike and its mark compose', () => {
    // Cyrillic о and a combining circumflex are two code points of the regex view and one (ô) of its skeleton.
    const policy = compilePolicy([regex('x(?:\u00F4{5}y)?', 'redact')]);
    const text = `ab x${'\u043E\u0302'.repeat(5)}y cd`;
    expect(policy.apply(text).text).toBe('ab [redacted] cd');
    expect(stream(policy, Array.from(text)).released).toBe('ab [redacted] cd');
  });

  test(`look-alikes: ${CHUNKINGS} chunkings equal apply, for phrases, regexes and personal data on the skeleton`, () => {
    const text = `Say f\u043Erbiddenword or f\u03BFrbiddenword, forb\u0131ddenword; not forbiddenwords. ${filler(1)}Ref S\u0415CRET-1234, SECRET\u20115678 and SECRET\u20139012, not SECRET\u20143456. ${filler(1)}Call 555\u2011123\u20114567; a r\u043E\u0302le and a r\u00F4le, a modern modem, a m\u043Edem; pay with P\u0430yPal or PayPal. ${filler(1)}The end`;
    const lookAlikePolicies = [
      // A phrase written with a look-alike (P<Cyrillic а>yPal) also matches plain ASCII text.
      compilePolicy([
        phrases(['forbiddenword', 'modem', 'P\u0430yPal'], 'redact', { replacement: '<voice>' }),
        regex('SECRET-\\d{4}', 'redact', { replacement: '<secret>' }),
        regex('\\br\u00F4le\\b', 'redact', { id: 'rul_role' }),
        personal(['phone']),
      ]),
      compilePolicy([phrases(['forbiddenword']), regex('SECRET-\\d{4}', 'redact')]),
      compilePolicy([regex('SECRET-\\d{4}'), phrases(['paypal'], 'redact')]),
    ];
    expect(lookAlikePolicies[0]!.apply(text).text).toBe(
      `Say <voice> or <voice>, <voice>; not forbiddenwords. ${filler(1)}Ref <secret>, <secret> and <secret>, not SECRET\u20143456. ${filler(1)}Call [redacted]; a [redacted] and a [redacted], a modern <voice>, a <voice>; pay with <voice> or <voice>. ${filler(1)}The end`,
    );
    lookAlikePolicies.forEach((policy, p) => {
      const expected = policy.apply(text);
      for (const [run, chunks] of chunkings(text, 2000 + p, 40).entries()) {
        const { released, blocked } = stream(policy, chunks);
        expect(blocked, `policy ${p}, run ${run}: ${JSON.stringify(chunks)}`).toEqual(expected.blocked);
        if (!blocked) expect(released, `policy ${p}, run ${run}: ${JSON.stringify(chunks)}`).toBe(expected.text);
        else expect(cpLength(released)).toBeLessThanOrEqual(blocked.start);
      }
    });
    expect(lookAlikePolicies.slice(1).map((policy) => policy.apply(text).blocked?.matchedText)).toEqual([
      'f\u043Erbiddenword',
      'S\u0415CRET-1234',
    ]);
  });

  describe.each(Object.entries(policies))(`${CHUNKINGS} chunkings equal apply on the whole text: %s`, (_, policy) => {
    test.each(texts.map((text, i) => [i, text] as const))('text %i', (i, text) => {
      const expected = policy.apply(text);
      const blockOnly = policy.rules.every((r) => r.action === 'block');
      for (const [run, chunks] of chunkings(text, 1000 + i, 40).entries()) {
        const { released, blocked } = stream(policy, chunks);
        expect(blocked, `run ${run}: ${JSON.stringify(chunks)}`).toEqual(expected.blocked);
        if (!blocked) {
          expect(released, `run ${run}: ${JSON.stringify(chunks)}`).toBe(expected.text);
        } else if (blockOnly) {
          // Nothing of the blocked match (or after it) was released: only text before its start.
          expect(text.startsWith(released)).toBe(true);
          expect(cpLength(released)).toBeLessThanOrEqual(blocked.start);
        } else {
          expect(
            compilePolicy(policy.rules.filter((r) => r.action === 'redact'))
              .apply(text)
              .text.startsWith(released),
            `run ${run}`,
          ).toBe(true);
          expect(released).not.toContain(blocked.matchedText);
        }
      }
    });
  });

  test('the fixtures exercise both outcomes', () => {
    const outcomes = Object.values(policies).flatMap((policy) => texts.map((text) => policy.apply(text)));
    expect(outcomes.some((o) => o.blocked)).toBe(true);
    expect(outcomes.some((o) => !o.blocked && o.redactions.length > 2)).toBe(true);
  });

  test('push after end() throws; a StreamGuard needs a compiled policy', () => {
    const guard = new StreamGuard(compilePolicy([]));
    guard.end();
    expect(() => guard.push('x')).toThrow(/after end/);
    expect(
      () =>
        new StreamGuard({
          rules: [],
          holdback: 0,
          scan: () => [],
          apply: (text) => ({ text, blocked: null, redactions: [] }),
        }),
    ).toThrow(TypeError);
  });
});
