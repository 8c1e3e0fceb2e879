// The output policy matcher (src/features/policy/match.ts): banned phrases on normalised text with word boundaries,
// RE2 regexes, personal data (email, phone, Luhn-checked cards), code-point offsets, block and redact, and the
// StreamGuard, which must release exactly what `apply` gives for the whole text, however the text is chunked.
import { describe, expect, test } from 'vitest';
import { compilePolicy, normalizeForMatching, PolicyRuleError, StreamGuard, type Policy, type PolicyMatch, type PolicyRule } from '../../src/features/policy/match.ts';

const phrases = (list: string[], action: PolicyRule['action'] = 'block', extra: Partial<PolicyRule> = {}): PolicyRule => ({
  id: 'voice.banned_phrases',
  kind: 'banned_phrase',
  phrases: list,
  action,
  label: 'the banned phrases of the voice Northwind',
  ...extra,
});
const regex = (pattern: string, action: PolicyRule['action'] = 'block', extra: Partial<PolicyRule> = {}): PolicyRule => ({ id: 'rul_regex', kind: 'regex', pattern, action, label: 'the rule "tickets"', ...extra });
const personal = (types: PolicyRule['types'], action: PolicyRule['action'] = 'redact', extra: Partial<PolicyRule> = {}): PolicyRule => ({ id: 'rul_pii', kind: 'personal_data', types, action, label: 'the rule "pii"', ...extra });

/** [start, end, matchedText] of each match, for compact expectations. */
const spans = (matches: PolicyMatch[]) => matches.map((m) => [m.start, m.end, m.matchedText]);
const cpLength = (s: string) => Array.from(s).length;

describe('normalizeForMatching', () => {
  test('NFKC, lower case, separator runs as one space, and a map back to original code points', () => {
    expect(normalizeForMatching('ﬁne')).toEqual({ normalized: 'fine', map: [0, 0, 1, 2] });
    expect(normalizeForMatching('ＧＡＭＥ')).toEqual({ normalized: 'game', map: [0, 1, 2, 3] });
    expect(normalizeForMatching('a - –\n b')).toEqual({ normalized: 'a b', map: [0, 1, 7] });
    // An emoji is one code point (two UTF-16 units): offsets after it shift by one, not two.
    expect(normalizeForMatching('😀A')).toEqual({ normalized: '😀a', map: [0, 1] });
    // Invisible characters are dropped; a combining mark composes with its base and maps to it.
    expect(normalizeForMatching('ba\u00ADd cafe\u0301')).toEqual({ normalized: 'bad café', map: [0, 1, 3, 4, 5, 6, 7, 8] });
  });

  test('Turkish dotted and dotless I do not crash, and each normalised code point maps into the original', () => {
    const text = 'İSTANBUL ıi İ';
    const { normalized, map } = normalizeForMatching(text);
    // Case folding: İ is i (no combining dot left over); dotless ı stays itself.
    expect(normalized).toBe('istanbul ıi i');
    expect(map).toHaveLength(Array.from(normalized).length);
    for (const i of map) expect(i).toBeLessThan(cpLength(text));
  });

  test('full case folding: ß and ẞ are ss, and both code points map to the one they came from', () => {
    expect(normalizeForMatching('Straße')).toEqual({ normalized: 'strasse', map: [0, 1, 2, 3, 4, 4, 5] });
    expect(normalizeForMatching('STRAẞE').normalized).toBe('strasse');
    expect(normalizeForMatching('ΣΟΦΟΣ σοφος').normalized).toBe('σοφοσ σοφοσ');
  });
});

describe('banned phrases', () => {
  test('case, dashes and whitespace runs: every spelling matches both the hyphenated and the spaced phrase', () => {
    for (const phrase of ['game-changer', 'game changer', 'Game – Changer']) {
      const policy = compilePolicy([phrases([phrase])]);
      for (const text of ['Game-Changer', 'game  changer', 'GAME–CHANGER', 'game\nchanger', 'game — changer', 'game‐changer']) {
        expect(spans(policy.scan(`A ${text}!`)), `${phrase} in ${text}`).toEqual([[2, 2 + cpLength(text), text]]);
      }
      expect(policy.scan('gamechanger game, changer')).toEqual([]);
    }
  });

  test('word boundaries: no match inside a word, a match next to punctuation', () => {
    const policy = compilePolicy([phrases(['art', 'artisanal'])]);
    expect(spans(policy.scan('Artisanal, smart art-deco; ART.'))).toEqual([
      [0, 9, 'Artisanal'],
      [17, 20, 'art'],
      [27, 30, 'ART'],
    ]);
    expect(policy.scan('artisan smartest partisanal')).toEqual([]);
    // A phrase that starts or ends with punctuation needs no boundary on that side.
    expect(spans(compilePolicy([phrases(['#1'])]).scan('We are #1!'))).toEqual([[7, 9, '#1']]);
  });

  test('the longest phrase at a position wins, and a match names the phrase as configured', () => {
    const policy = compilePolicy([phrases(['world', 'World-Class'])]);
    const [match] = policy.scan('simply world class coffee');
    expect(match).toEqual({ start: 7, end: 18, matchedText: 'world class', what: 'the phrase "World-Class"', phrase: 'World-Class', ruleId: 'voice.banned_phrases', kind: 'banned_phrase', action: 'block' });
  });

  test('Unicode: NFKC forms, full-width letters, emoji before a match, combining marks, invisible characters', () => {
    const policy = compilePolicy([phrases(['fine dining', 'café', 'game changer'])]);
    expect(spans(policy.scan('😀😀 ﬁne  DINING'))).toEqual([[3, 14, 'ﬁne  DINING']]);
    expect(spans(policy.scan('ＧＡＭＥ ＣＨＡＮＧＥＲ'))).toEqual([[0, 12, 'ＧＡＭＥ ＣＨＡＮＧＥＲ']]);
    expect(spans(policy.scan('👩‍👩‍👧 a cafe\u0301.'))).toEqual([[8, 13, 'cafe\u0301']]);
    expect(spans(policy.scan('game\u200B changer'))).toEqual([[0, 13, 'game\u200B changer']]);
    expect(policy.scan('café\u0301s')).toEqual([]);
    expect(() => compilePolicy([phrases(['İstanbul'])]).scan('İSTANBUL ıstanbul')).not.toThrow();
    expect(spans(compilePolicy([phrases(['İstanbul'])]).scan('in İSTANBUL'))).toEqual([[3, 11, 'İSTANBUL']]);
  });

  test('case folding: ß matches ss and İ matches i, both ways, with offsets of the original', () => {
    const strasse = compilePolicy([phrases(['strasse'])]);
    for (const text of ['Straße', 'STRASSE', 'strasse', 'STRAẞE']) expect(spans(strasse.scan(`in der ${text}.`)), text).toEqual([[7, 7 + cpLength(text), text]]);
    expect(spans(compilePolicy([phrases(['Straße'])]).scan('Strasse und STRASSE'))).toEqual([
      [0, 7, 'Strasse'],
      [12, 19, 'STRASSE'],
    ]);
    // Not inside a word, and the two letters of ß are not split.
    expect(strasse.scan('Hauptstraße strassen straßenbahn')).toEqual([]);
    expect(compilePolicy([phrases(['stras'])]).scan('Straße')).toEqual([]);
    const istanbul = compilePolicy([phrases(['istanbul'])]);
    for (const text of ['İSTANBUL', 'İstanbul', 'istanbul', 'ISTANBUL']) expect(spans(istanbul.scan(`to ${text}!`)), text).toEqual([[3, 11, text]]);
    expect(spans(compilePolicy([phrases(['İstanbul'])]).scan('istanbul'))).toEqual([[0, 8, 'istanbul']]);
    // Dotless ı is a look-alike of i (its UTS #39 skeleton), and a word boundary still applies.
    expect(spans(istanbul.scan('ıstanbul İstanbullu'))).toEqual([[0, 8, 'ıstanbul']]);
    // The old neighbours: 'art' inside 'artisanal' still does not match.
    expect(compilePolicy([phrases(['art'])]).scan('artisanal ＡＲＴＩＳＡＮ')).toEqual([]);
  });

  test('a phrase that normalises to nothing, or a rule without phrases, is a PolicyRuleError naming the rule', () => {
    expect(() => compilePolicy([phrases(['ok', ' – \u200B '])])).toThrow(PolicyRuleError);
    expect(() => compilePolicy([phrases(['ok', ' – '])])).toThrow(/voice\.banned_phrases.*empty once normalised/);
    expect(() => compilePolicy([phrases([])])).toThrow(/at least one phrase/);
  });

  test('200 phrases over 20,000 characters scan (no timing assertion: the scan is a trie walk)', () => {
    const list = Array.from({ length: 200 }, (_, i) => `phrase number ${i} here`);
    const words = ['phrase', 'number', 'here', 'text', 'of', 'the', 'output', '7'];
    let text = '';
    for (let i = 0; text.length < 20_000; i++) text += `${words[(i * 7) % words.length]} `;
    text += 'phrase number 42 here';
    const matches = compilePolicy([phrases(list)]).scan(text);
    expect(matches.at(-1)).toMatchObject({ matchedText: 'phrase number 42 here', end: cpLength(text) });
  });
});

describe('regex rules', () => {
  test('case-insensitive unless caseSensitive, on the regex view, offsets in code points', () => {
    expect(spans(compilePolicy([regex('\\bACME-\\d{4,}\\b')]).scan('😀 see acme-12345, ACME-1'))).toEqual([[6, 16, 'acme-12345']]);
    expect(compilePolicy([regex('ACME-\\d+', 'block', { caseSensitive: true })]).scan('acme-12')).toEqual([]);
    // NFKC, but no separator folding: a hyphen is not a space.
    expect(spans(compilePolicy([regex('game changer')]).scan('game-changer ｇａｍｅ changer'))).toEqual([[13, 25, 'ｇａｍｅ changer']]);
    const [match] = compilePolicy([regex('x+y')]).scan('xxy');
    expect(match).toMatchObject({ what: 'a match of the regex /x+y/', kind: 'regex', ruleId: 'rul_regex' });
  });

  test('full-width forms, invisible characters inside a match and Unicode spaces: matched, covering the original', () => {
    const policy = compilePolicy([regex('\\bACME-\\d{4}\\b')]);
    for (const text of ['ＡＣＭＥ－１２３４', 'ａｃｍｅ-1234', 'AC\u200bME-1234', 'ACME\u00ad-1234', 'A\u200cC\u200dM\u2060E-12\ufeff34', 'ACME-１２３４']) {
      expect(spans(policy.scan(`😀 ref ${text}.`)), JSON.stringify(text)).toEqual([[6, 6 + cpLength(text), text]]);
    }
    // Invisible characters at the edges are not part of the match.
    expect(spans(policy.scan('\u200bACME-1234\u200b'))).toEqual([[1, 10, 'ACME-1234']]);
    expect(spans(compilePolicy([regex('no smoking')]).scan('No\u00a0smoking, no\u202fsmoking, no\u3000smoking'))).toEqual([
      [0, 10, 'No\u00a0smoking'],
      [12, 22, 'no\u202fsmoking'],
      [24, 34, 'no\u3000smoking'],
    ]);
    // Still not: a longer number, a space for the hyphen, a word around it.
    expect(policy.scan('ＡＣＭＥ－１２３４５ ACME 1234 XACME-1234 ACME-1234\u200b5')).toEqual([]);
    // caseSensitive keeps case, but NFKC and invisible characters apply.
    const exact = compilePolicy([regex('ACME-\\d{4}', 'block', { caseSensitive: true })]);
    expect(spans(exact.scan('ＡＣＭＥ－１２３４ AC\u200bME-4321'))).toEqual([
      [0, 9, 'ＡＣＭＥ－１２３４'],
      [10, 20, 'AC\u200bME-4321'],
    ]);
    expect(exact.scan('ａｃｍｅ－１２３４ ac\u200bme-1234')).toEqual([]);
  });

  test('redact replaces the original span, invisible characters inside it included', () => {
    const policy = compilePolicy([regex('\\bACME-\\d{4}\\b', 'redact', { replacement: '<ticket>' })]);
    expect(policy.apply('see AC\u200bME-1234\u200b and ＡＣＭＥ－１２３４.').text).toBe('see <ticket>\u200b and <ticket>.');
  });

  test('a catastrophic-backtracking pattern runs in linear time', () => {
    const policy = compilePolicy([regex('(a+)+$')]);
    expect(policy.scan('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!')).toEqual([]);
    expect(policy.scan(`${'a'.repeat(50_000)}!`)).toEqual([]);
    expect(spans(policy.scan('baaa'))).toEqual([[1, 4, 'aaa']]);
  });

  test('bad syntax, a pattern that can match the empty string, or no pattern: PolicyRuleError naming the rule', () => {
    for (const bad of ['a(', '(?<=a)b', '\\1', 'a{2000}', 'a++']) {
      expect(() => compilePolicy([regex(bad)]), bad).toThrow(PolicyRuleError);
      expect(() => compilePolicy([regex(bad)]), bad).toThrow(/rule rul_regex: the pattern .* is not valid RE2 syntax/);
    }
    for (const empty of ['a*', 'x?', '(?:)', 'a|', '\\b', '^$', '\\bfoo|\\b', '(?:ab)*c?']) {
      expect(() => compilePolicy([regex(empty)]), empty).toThrow(/rul_regex: the pattern .* can match the empty string/);
    }
    expect(() => compilePolicy([regex('')])).toThrow(/needs a pattern/);
    const error = (() => {
      try {
        compilePolicy([phrases(['fine']), regex('(')]);
      } catch (e) {
        return e as PolicyRuleError;
      }
    })();
    expect(error).toMatchObject({ name: 'PolicyRuleError', ruleId: 'rul_regex', reason: expect.stringContaining('not valid RE2 syntax') });
  });
});

describe('look-alike characters (the UTS #39 skeleton)', () => {
  // Cyrillic о, Greek ο, dotless ı, Cyrillic Е, and Cyrillic о, і and е together.
  const forbidden = ['f\u043Erbiddenword', 'f\u03BFrbiddenword', 'forb\u0131ddenword', 'FORBIDD\u0415NWORD', 'f\u043Erb\u0456dd\u0435nw\u043Erd'];

  test('banned phrases match on the skeleton as well as the text, covering the original characters', () => {
    const policy = compilePolicy([phrases(['forbiddenword'])]);
    for (const text of forbidden) expect(spans(policy.scan(`😀 say ${text}!`)), text).toEqual([[6, 6 + cpLength(text), text]]);
    // Word boundaries hold on the skeleton too.
    expect(policy.scan('f\u043Erbiddenwords xf\u043Erbiddenword')).toEqual([]);
    // Redaction replaces exactly the original characters, invisible ones inside included.
    const redact = compilePolicy([phrases(['forbiddenword', 'world class'], 'redact', { replacement: '***' })]);
    expect(redact.apply('a f\u043Erb\u200Bidd\u0435nword, w\u03BFrld\u2011class b').text).toBe('a ***, *** b');
  });

  test('ASCII is matched as written: "modern" does not trip "modem", nor "l00k" "look", "a11" "all" or "burn" "bum"', () => {
    const policy = compilePolicy([phrases(['modem', 'look', 'all', 'bum'])]);
    expect(policy.scan('A modern l00k at a11 of it: burn, Ill, rnodem.')).toEqual([]);
    // Nor once a look-alike is near: only the characters outside ASCII are folded.
    expect(policy.scan('A m\u043Edern l\u043E0k.')).toEqual([]);
    expect(spans(policy.scan('A m\u043Edem, a b\u03C5m.'))).toEqual([
      [2, 7, 'm\u043Edem'],
      [11, 14, 'b\u03C5m'],
    ]);
  });

  test('capital look-alikes are caught too, also those whose lower case has no prototype (Cyrillic В, Н, Т, М, К)', () => {
    const policy = compilePolicy([phrases(['scam', 'bet', 'hot', 'test', 'kill', 'poker'])]);
    for (const [text, phrase] of [
      ['\u0405\u0421\u0410\u041C', 'scam'],
      ['SCA\u041C', 'scam'],
      ['\u0412et', 'bet'],
      ['B\u0415\u0422', 'bet'],
      ['\u041Dot', 'hot'],
      ['\u0422est', 'test'],
      ['\u041Aill', 'kill'],
      ['\u0420\u041E\u041A\u0415R', 'poker'],
    ] as const) {
      expect(spans(policy.scan(`so ${text} now`)), `${text} for ${phrase}`).toEqual([[3, 3 + cpLength(text), text]]);
    }
  });

  test('a phrase written with look-alikes matches its plain spelling too', () => {
    expect(spans(compilePolicy([phrases(['P\u0430yP\u0430l'])]).scan('Pay with PayPal.'))).toEqual([[9, 15, 'PayPal']]);
  });

  test('regex rules run on the text and on its skeleton: Cyrillic Е, U+2011 and U+2013 are caught, an em dash is not', () => {
    const policy = compilePolicy([regex('SECRET-[0-9]{4}')]);
    for (const text of ['S\u0415CRET-1234', 'SECRET\u20111234', 'SECRET\u20131234', '\u0405\u0415\u0421RET\u20101234', 'S\u0415CR\u0415T\u22121234']) {
      expect(spans(policy.scan(`😀 ref ${text}.`)), JSON.stringify(text)).toEqual([[6, 6 + cpLength(text), text]]);
    }
    // confusables.txt has no hyphen look-alike in the em dash (U+2014) or the horizontal bar (U+2015).
    expect(policy.scan('SECRET\u20141234 SECRET\u20151234')).toEqual([]);
    // Case is kept: Cyrillic Е is a capital E, е a small one.
    const exact = compilePolicy([regex('SECRET-[0-9]{4}', 'block', { caseSensitive: true })]);
    expect(spans(exact.scan('S\u0415CRET\u20131234'))).toEqual([[0, 11, 'S\u0415CRET\u20131234']]);
    expect(exact.scan('s\u0435cret-1234 S\u0435CRET-1234')).toEqual([]);
    // Redaction covers exactly the original characters.
    const redact = compilePolicy([regex('SECRET-[0-9]{4}', 'redact', { replacement: '<secret>' })]);
    expect(redact.apply('a S\u0415CRET\u20131234, b SECRET\u20111234.').text).toBe('a <secret>, b <secret>.');
    // The text as written is still searched: a rule for Cyrillic words matches them.
    expect(spans(compilePolicy([regex('пароль')]).scan('мой пароль'))).toEqual([[4, 10, 'пароль']]);
  });

  test('personal data with look-alikes inside is redacted whole', () => {
    const policy = compilePolicy([personal(['email', 'phone'])]);
    expect(policy.apply('mail j\u0430ne@\u0435xample.com or call 555\u2011123\u20114567.').text).toBe('mail [redacted] or call [redacted].');
  });

  test('a look-alike base with a combining mark matches the precomposed letter', () => {
    // Cyrillic о and U+0302 have no precomposed form; their skeleton is ô.
    expect(spans(compilePolicy([regex('\\br\u00F4le\\b')]).scan('a r\u043E\u0302le'))).toEqual([[2, 7, 'r\u043E\u0302le']]);
    expect(spans(compilePolicy([phrases(['r\u00F4le'])]).scan('a r\u043E\u0302le'))).toEqual([[2, 7, 'r\u043E\u0302le']]);
  });
});

describe('personal data', () => {
  const policy = compilePolicy([personal(['email', 'phone', 'payment_card'])]);
  const found = (text: string) => policy.scan(text).map((m) => [m.matchedText, m.what]);

  test('email addresses', () => {
    expect(found('Write to Jane.Doe+news@mail.example.co.uk, please.')).toEqual([['Jane.Doe+news@mail.example.co.uk', 'an email address']]);
    expect(found('user@localhost and @handle and a@b.c')).toEqual([]);
  });

  test('phone numbers, international and national; not years, prices, order numbers, dates or addresses', () => {
    // Greedy candidates that run into a neighbouring number are tried span by span.
    expect(found('Call 555-123-4567 2 times')).toEqual([['555-123-4567', 'a phone number']]);
    expect(found('Ref 1234567 555-123-4567')).toEqual([['555-123-4567', 'a phone number']]);
    for (const phone of ['+1 (555) 123-4567', '+44 20 7946 0958', '+4915112345678', '(555) 123-4567', '555-123-4567', '555.123.4567', '030 1234567', '1-800-555-1234']) {
      expect(found(`Call ${phone}.`), phone).toEqual([[phone, 'a phone number']]);
    }
    for (const text of ['2026', 'in 2026.', '$1,299.00', 'costs $1 299 000', 'Order 12345', 'Order 1234567', '2019-2026', '1000-2000 words', '2026-11-24', '24.11.2026', '192.168.1.1', '12345.67', 'v1.2.3.4.5.6.7', '978-3-16-148410-0', '50%']) {
      expect(found(text), text).toEqual([]);
    }
  });

  test('payment cards: 13–19 digits with single space or hyphen separators, Luhn-valid, not part of a longer number', () => {
    for (const card of ['4111 1111 1111 1111', '4111-1111-1111-1111', '4111111111111111', '378282246310005', '6011 0009 9013 9424']) {
      expect(found(`card ${card} ok`), card).toEqual([[card, 'a payment card number']]);
    }
    for (const text of ['4111 1111 1111 1112', '4111  1111 1111 1111', '41111111111111110000', '4111 1111 1111 1111 5', '1 4111 1111 1111 1111']) {
      expect(found(text).filter(([, what]) => what === 'a payment card number'), text).toEqual([]);
    }
  });

  test('invisible characters, no-break spaces and full-width digits do not hide personal data', () => {
    expect(found('mail foo\u200b@bar.com, or ＪＡＮＥ＠ＥＸＡＭＰＬＥ．ＣＯＭ.')).toEqual([
      ['foo\u200b@bar.com', 'an email address'],
      ['ＪＡＮＥ＠ＥＸＡＭＰＬＥ．ＣＯＭ', 'an email address'],
    ]);
    for (const card of ['4111\u00a01111\u00a01111\u00a01111', '4111\u202f1111\u20071111\u20091111', '4111\u200b1111\u00ad1111\ufeff1111', '４１１１ １１１１ １１１１ １１１１', '4111-1111-\u200b1111-1111']) {
      expect(found(`card ${card} ok`), JSON.stringify(card)).toEqual([[card, 'a payment card number']]);
    }
    for (const phone of ['+44\u00a020\u00a07946\u00a00958', '555-123-\u200b4567', '（555） 123-4567', '５５５-１２３-４５６７']) {
      expect(found(`Call ${phone}.`), JSON.stringify(phone)).toEqual([[phone, 'a phone number']]);
    }
    const [card] = policy.scan('pay 4111\u00a01111\u00a01111\u00a01111 now');
    expect(card).toMatchObject({ start: 4, end: 23 });
    expect(policy.apply('pay 4111\u00a01111\u00a01111\u00a01111 now, mail foo\u200b@bar.com.').text).toBe('pay [redacted] now, mail [redacted].');
    // Still not: years, prices, a bad checksum, two separators, a digit after an invisible character.
    for (const text of ['２０２６', 'in\u00a02026.', '＄1,299.00', '$1,299.00', '$1\u00a0299\u00a0000', '4111\u00a01111\u00a01111\u00a01112', '4111\u00a0\u00a01111 1111 1111', '4111 1111 1111 1111\u200b5', '4111 1111 1111 1111\u00a05', 'user\u200b@localhost']) {
      expect(found(text), JSON.stringify(text)).toEqual([]);
    }
  });

  test('an unknown type or no type is a PolicyRuleError', () => {
    expect(() => compilePolicy([personal(['email', 'passport' as never])])).toThrow(/rul_pii: unknown personal data type "passport"/);
    expect(() => compilePolicy([personal([])])).toThrow(PolicyRuleError);
  });
});

describe('scan and apply', () => {
  test('scan: sorted by start then longer first, overlaps removed (earlier, then longer, kept)', () => {
    const policy = compilePolicy([phrases(['beta gamma'], 'redact'), regex('alpha beta', 'redact', { id: 'r1' }), regex('gamma delta', 'redact', { id: 'r2' }), regex('delta', 'redact', { id: 'r3' })]);
    expect(policy.scan('alpha beta gamma delta').map((m) => [m.ruleId, m.start, m.end])).toEqual([
      ['r1', 0, 10],
      ['r2', 11, 22],
    ]);
  });

  test('apply redacts right to left with each rule’s replacement (default [redacted]), offsets of the original', () => {
    const policy = compilePolicy([personal(['email', 'payment_card']), phrases(['world-class'], 'redact', { replacement: '***' })]);
    const text = '😀 Write to jane.doe@example.com or pay with 4111 1111 1111 1111; world–class!';
    const result = policy.apply(text);
    expect(result.text).toBe('😀 Write to [redacted] or pay with [redacted]; ***!');
    expect(result.blocked).toBeNull();
    expect(result.redactions.map((m) => [m.start, m.matchedText])).toEqual([
      [11, 'jane.doe@example.com'],
      [44, '4111 1111 1111 1111'],
      [65, 'world–class'],
    ]);
    expect(compilePolicy([]).apply(text)).toEqual({ text, blocked: null, redactions: [] });
  });

  test('apply: any match of a block rule blocks (the first one), even one overlapping a redaction', () => {
    const policy = compilePolicy([regex('secret \\w+', 'redact'), phrases(['project falcon', 'launch date'])]);
    const result = policy.apply('The secret project falcon has a launch date.');
    expect(result.blocked).toMatchObject({ matchedText: 'project falcon', start: 11, action: 'block', ruleId: 'voice.banned_phrases' });
    expect(result.redactions).toEqual([]);
  });
});

describe('holdback', () => {
  test('per kind, and the maximum over the rules', () => {
    expect(compilePolicy([]).holdback).toBe(0);
    expect(compilePolicy([phrases(['game-changer', 'art'])]).holdback).toBe(2 * 12 + 8);
    expect(compilePolicy([personal(['payment_card'])]).holdback).toBe(19 + 18 + 2);
    expect(compilePolicy([personal(['phone'])]).holdback).toBe(37);
    expect(compilePolicy([personal(['email'])]).holdback).toBe(347);
    // A bounded regex: its longest match plus one (an assertion after it reads one more); unbounded: 256.
    expect(compilePolicy([regex('ACME-\\d{4}')]).holdback).toBe(10);
    expect(compilePolicy([regex('\\bACME-(?:\\d{4}|[a-z]{2,6})\\b')]).holdback).toBe(12);
    expect(compilePolicy([regex('\\bACME-\\d+')]).holdback).toBe(256);
    expect(compilePolicy([regex('ACME-\\d{4}'), phrases(['x'])]).holdback).toBe(10);
  });
});

/** Feeds the chunks; returns what was released and the block, checking that nothing follows a block. */
function stream(policy: Policy, chunks: string[]): { released: string; blocked: PolicyMatch | null; releases: string[] } {
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

describe('StreamGuard', () => {
  test('a phrase delivered one code point per delta is blocked before any of it is released', () => {
    const policy = compilePolicy([phrases(['world-class'])]);
    const text = 'Our beans are roasted every Tuesday in Leeds and they are simply world–class, you will taste it at once.';
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
      const { released, releases } = stream(policy, chunk(text, () => (size - 1) / size, size));
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
      phrases(['game-changer', 'art', 'world class', 'fine dining', 'café', 'one two', 'strasse'], 'redact', { replacement: '<voice>' }),
      regex('\\bACME-\\d{4}\\b', 'redact', { replacement: '<ticket>' }),
      regex('\\w{1,8} \\d{1,4}', 'redact', { id: 'rul_words' }),
      personal(['phone', 'payment_card']),
    ]),
    'block phrases, redact the rest': compilePolicy([phrases(['game-changer', 'world-class', 'istanbul']), regex('acme-\\d{4,6}', 'redact'), personal(['phone', 'payment_card'])]),
    'block only': compilePolicy([phrases(['ship', 'the end']), regex('ACME-\\d{5}'), personal(['phone', 'payment_card'], 'block')]),
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

  // Its 200 streams are all computation: on a loaded two-core machine they can outlast the default timeout.
  test('200 random chunkings with emails and an unbounded regex (holdback 347) equal apply', { timeout: 120_000 }, () => {
    const policy = compilePolicy([personal(['email']), regex('\\bACME-\\d+', 'redact'), phrases(['art'], 'redact')]);
    const text = `${texts.join(' mail jane.doe@example.com ')} last: ops@acme.example.org`;
    const expected = policy.apply(text).text;
    // Emails (2 in the last fixture: a join and foo<ZWSP>@bar.com), tickets (7 in the last fixture, all full-width or
    // with invisible characters inside), 'art'.
    expect(expected.match(/\[redacted\]/g)).toHaveLength(7 + 2 + (4 + 7) + 5);
    const random = prng(7);
    for (let run = 0; run < 200; run++) {
      const chunks = chunk(text, random, 1 + Math.floor(random() * 60));
      expect(stream(policy, chunks).released, `run ${run}`).toBe(expected);
    }
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

  test('look-alikes: 200 random chunkings equal apply, for phrases, regexes and personal data on the skeleton', () => {
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
      const random = prng(2000 + p);
      for (let run = 0; run < 200; run++) {
        const chunks = chunk(text, random, 1 + Math.floor(random() * 40));
        const { released, blocked } = stream(policy, chunks);
        expect(blocked, `policy ${p}, run ${run}: ${JSON.stringify(chunks)}`).toEqual(expected.blocked);
        if (!blocked) expect(released, `policy ${p}, run ${run}: ${JSON.stringify(chunks)}`).toBe(expected.text);
        else expect(cpLength(released)).toBeLessThanOrEqual(blocked.start);
      }
    });
    expect(lookAlikePolicies.slice(1).map((policy) => policy.apply(text).blocked?.matchedText)).toEqual(['f\u043Erbiddenword', 'S\u0415CRET-1234']);
  });

  describe.each(Object.entries(policies))('200 random chunkings equal apply on the whole text: %s', (_, policy) => {
    test.each(texts.map((text, i) => [i, text] as const))('text %i', (i, text) => {
      const expected = policy.apply(text);
      const blockOnly = policy.rules.every((r) => r.action === 'block');
      const random = prng(1000 + i);
      for (let run = 0; run < 200; run++) {
        const chunks = chunk(text, random, 1 + Math.floor(random() * 40));
        const { released, blocked } = stream(policy, chunks);
        expect(blocked, `run ${run}: ${JSON.stringify(chunks)}`).toEqual(expected.blocked);
        if (!blocked) {
          expect(released, `run ${run}: ${JSON.stringify(chunks)}`).toBe(expected.text);
        } else if (blockOnly) {
          // Nothing of the blocked match (or after it) was released: only text before its start.
          expect(text.startsWith(released)).toBe(true);
          expect(cpLength(released)).toBeLessThanOrEqual(blocked.start);
        } else {
          expect(compilePolicy(policy.rules.filter((r) => r.action === 'redact')).apply(text).text.startsWith(released), `run ${run}`).toBe(true);
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
    expect(() => new StreamGuard({ rules: [], holdback: 0, scan: () => [], apply: (text) => ({ text, blocked: null, redactions: [] }) })).toThrow(TypeError);
  });
});
