// What each detector finds (src/features/policy/match/detectors.ts): banned phrases on normalised text with word
// boundaries, RE2 regexes, look-alike characters, personal data (email, phone, Luhn-checked cards).
import { describe, expect, test } from 'vitest';
import { compilePolicy, PolicyRuleError } from '../../../src/features/policy/match.ts';
import { cpLength, personal, phrases, regex, spans } from './rules.ts';

describe('banned phrases', () => {
  test('case, dashes and whitespace runs: every spelling matches both the hyphenated and the spaced phrase', () => {
    for (const phrase of ['game-changer', 'game changer', 'Game – Changer']) {
      const policy = compilePolicy([phrases([phrase])]);
      for (const text of [
        'Game-Changer',
        'game  changer',
        'GAME–CHANGER',
        'game\nchanger',
        'game — changer',
        'game‐changer',
      ]) {
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
    expect(match).toEqual({
      start: 7,
      end: 18,
      matchedText: 'world class',
      what: 'the phrase "World-Class"',
      phrase: 'World-Class',
      ruleId: 'voice.banned_phrases',
      kind: 'banned_phrase',
      action: 'block',
    });
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
    for (const text of ['Straße', 'STRASSE', 'strasse', 'STRAẞE'])
      expect(spans(strasse.scan(`in der ${text}.`)), text).toEqual([[7, 7 + cpLength(text), text]]);
    expect(spans(compilePolicy([phrases(['Straße'])]).scan('Strasse und STRASSE'))).toEqual([
      [0, 7, 'Strasse'],
      [12, 19, 'STRASSE'],
    ]);
    // Not inside a word, and the two letters of ß are not split.
    expect(strasse.scan('Hauptstraße strassen straßenbahn')).toEqual([]);
    expect(compilePolicy([phrases(['stras'])]).scan('Straße')).toEqual([]);
    const istanbul = compilePolicy([phrases(['istanbul'])]);
    for (const text of ['İSTANBUL', 'İstanbul', 'istanbul', 'ISTANBUL'])
      expect(spans(istanbul.scan(`to ${text}!`)), text).toEqual([[3, 11, text]]);
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
    expect(spans(compilePolicy([regex('\\bACME-\\d{4,}\\b')]).scan('😀 see acme-12345, ACME-1'))).toEqual([
      [6, 16, 'acme-12345'],
    ]);
    expect(compilePolicy([regex('ACME-\\d+', 'block', { caseSensitive: true })]).scan('acme-12')).toEqual([]);
    // NFKC, but no separator folding: a hyphen is not a space.
    expect(spans(compilePolicy([regex('game changer')]).scan('game-changer ｇａｍｅ changer'))).toEqual([
      [13, 25, 'ｇａｍｅ changer'],
    ]);
    const [match] = compilePolicy([regex('x+y')]).scan('xxy');
    expect(match).toMatchObject({ what: 'a match of the regex /x+y/', kind: 'regex', ruleId: 'rul_regex' });
  });

  test('full-width forms, invisible characters inside a match and Unicode spaces: matched, covering the original', () => {
    const policy = compilePolicy([regex('\\bACME-\\d{4}\\b')]);
    for (const text of [
      'ＡＣＭＥ－１２３４',
      'ａｃｍｅ-1234',
      'AC\u200bME-1234',
      'ACME\u00ad-1234',
      'A\u200cC\u200dM\u2060E-12\ufeff34',
      'ACME-１２３４',
    ]) {
      expect(spans(policy.scan(`😀 ref ${text}.`)), JSON.stringify(text)).toEqual([[6, 6 + cpLength(text), text]]);
    }
    // Invisible characters at the edges are not part of the match.
    expect(spans(policy.scan('\u200bACME-1234\u200b'))).toEqual([[1, 10, 'ACME-1234']]);
    expect(
      spans(compilePolicy([regex('no smoking')]).scan('No\u00a0smoking, no\u202fsmoking, no\u3000smoking')),
    ).toEqual([
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
    expect(policy.apply('see AC\u200bME-1234\u200b and ＡＣＭＥ－１２３４.').text).toBe(
      'see <ticket>\u200b and <ticket>.',
    );
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
      expect(() => compilePolicy([regex(empty)]), empty).toThrow(
        /rul_regex: the pattern .* can match the empty string/,
      );
    }
    expect(() => compilePolicy([regex('')])).toThrow(/needs a pattern/);
    const error = (() => {
      try {
        compilePolicy([phrases(['fine']), regex('(')]);
      } catch (e) {
        return e as PolicyRuleError;
      }
    })();
    expect(error).toMatchObject({
      name: 'PolicyRuleError',
      ruleId: 'rul_regex',
      reason: expect.stringContaining('not valid RE2 syntax'),
    });
  });
});

describe('look-alike characters (the UTS #39 skeleton)', () => {
  // Cyrillic о, Greek ο, dotless ı, Cyrillic Е, and Cyrillic о, і and е together.
  const forbidden = [
    'f\u043Erbiddenword',
    'f\u03BFrbiddenword',
    'forb\u0131ddenword',
    'FORBIDD\u0415NWORD',
    'f\u043Erb\u0456dd\u0435nw\u043Erd',
  ];

  test('banned phrases match on the skeleton as well as the text, covering the original characters', () => {
    const policy = compilePolicy([phrases(['forbiddenword'])]);
    for (const text of forbidden)
      expect(spans(policy.scan(`😀 say ${text}!`)), text).toEqual([[6, 6 + cpLength(text), text]]);
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
    for (const text of [
      'S\u0415CRET-1234',
      'SECRET\u20111234',
      'SECRET\u20131234',
      '\u0405\u0415\u0421RET\u20101234',
      'S\u0415CR\u0415T\u22121234',
    ]) {
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
    expect(policy.apply('mail j\u0430ne@\u0435xample.com or call 555\u2011123\u20114567.').text).toBe(
      'mail [redacted] or call [redacted].',
    );
  });

  test('a look-alike base with a combining mark matches the precomposed letter', () => {
    // Cyrillic о and U+0302 have no precomposed form; their skeleton is ô.
    expect(spans(compilePolicy([regex('\\br\u00F4le\\b')]).scan('a r\u043E\u0302le'))).toEqual([
      [2, 7, 'r\u043E\u0302le'],
    ]);
    expect(spans(compilePolicy([phrases(['r\u00F4le'])]).scan('a r\u043E\u0302le'))).toEqual([
      [2, 7, 'r\u043E\u0302le'],
    ]);
  });
});

describe('personal data', () => {
  const policy = compilePolicy([personal(['email', 'phone', 'payment_card'])]);
  const found = (text: string) => policy.scan(text).map((m) => [m.matchedText, m.what]);

  test('email addresses', () => {
    expect(found('Write to Jane.Doe+news@mail.example.co.uk, please.')).toEqual([
      ['Jane.Doe+news@mail.example.co.uk', 'an email address'],
    ]);
    expect(found('user@localhost and @handle and a@b.c')).toEqual([]);
  });

  test('phone numbers, international and national; not years, prices, order numbers, dates or addresses', () => {
    // Greedy candidates that run into a neighbouring number are tried span by span.
    expect(found('Call 555-123-4567 2 times')).toEqual([['555-123-4567', 'a phone number']]);
    expect(found('Ref 1234567 555-123-4567')).toEqual([['555-123-4567', 'a phone number']]);
    for (const phone of [
      '+1 (555) 123-4567',
      '+44 20 7946 0958',
      '+4915112345678',
      '(555) 123-4567',
      '555-123-4567',
      '555.123.4567',
      '030 1234567',
      '1-800-555-1234',
    ]) {
      expect(found(`Call ${phone}.`), phone).toEqual([[phone, 'a phone number']]);
    }
    for (const text of [
      '2026',
      'in 2026.',
      '$1,299.00',
      'costs $1 299 000',
      'Order 12345',
      'Order 1234567',
      '2019-2026',
      '1000-2000 words',
      '2026-11-24',
      '24.11.2026',
      '192.168.1.1',
      '12345.67',
      'v1.2.3.4.5.6.7',
      '978-3-16-148410-0',
      '50%',
    ]) {
      expect(found(text), text).toEqual([]);
    }
  });

  test('payment cards: 13–19 digits with single space or hyphen separators, Luhn-valid, not part of a longer number', () => {
    for (const card of [
      '4111 1111 1111 1111',
      '4111-1111-1111-1111',
      '4111111111111111',
      '378282246310005',
      '6011 0009 9013 9424',
    ]) {
      expect(found(`card ${card} ok`), card).toEqual([[card, 'a payment card number']]);
    }
    for (const text of [
      '4111 1111 1111 1112',
      '4111  1111 1111 1111',
      '41111111111111110000',
      '4111 1111 1111 1111 5',
      '1 4111 1111 1111 1111',
    ]) {
      expect(
        found(text).filter(([, what]) => what === 'a payment card number'),
        text,
      ).toEqual([]);
    }
  });

  test('invisible characters, no-break spaces and full-width digits do not hide personal data', () => {
    expect(found('mail foo\u200b@bar.com, or ＪＡＮＥ＠ＥＸＡＭＰＬＥ．ＣＯＭ.')).toEqual([
      ['foo\u200b@bar.com', 'an email address'],
      ['ＪＡＮＥ＠ＥＸＡＭＰＬＥ．ＣＯＭ', 'an email address'],
    ]);
    for (const card of [
      '4111\u00a01111\u00a01111\u00a01111',
      '4111\u202f1111\u20071111\u20091111',
      '4111\u200b1111\u00ad1111\ufeff1111',
      '４１１１ １１１１ １１１１ １１１１',
      '4111-1111-\u200b1111-1111',
    ]) {
      expect(found(`card ${card} ok`), JSON.stringify(card)).toEqual([[card, 'a payment card number']]);
    }
    for (const phone of [
      '+44\u00a020\u00a07946\u00a00958',
      '555-123-\u200b4567',
      '（555） 123-4567',
      '５５５-１２３-４５６７',
    ]) {
      expect(found(`Call ${phone}.`), JSON.stringify(phone)).toEqual([[phone, 'a phone number']]);
    }
    const [card] = policy.scan('pay 4111\u00a01111\u00a01111\u00a01111 now');
    expect(card).toMatchObject({ start: 4, end: 23 });
    expect(policy.apply('pay 4111\u00a01111\u00a01111\u00a01111 now, mail foo\u200b@bar.com.').text).toBe(
      'pay [redacted] now, mail [redacted].',
    );
    // Still not: years, prices, a bad checksum, two separators, a digit after an invisible character.
    for (const text of [
      '２０２６',
      'in\u00a02026.',
      '＄1,299.00',
      '$1,299.00',
      '$1\u00a0299\u00a0000',
      '4111\u00a01111\u00a01111\u00a01112',
      '4111\u00a0\u00a01111 1111 1111',
      '4111 1111 1111 1111\u200b5',
      '4111 1111 1111 1111\u00a05',
      'user\u200b@localhost',
    ]) {
      expect(found(text), JSON.stringify(text)).toEqual([]);
    }
  });

  test('an unknown type or no type is a PolicyRuleError', () => {
    expect(() => compilePolicy([personal(['email', 'passport' as never])])).toThrow(
      /rul_pii: unknown personal data type "passport"/,
    );
    expect(() => compilePolicy([personal([])])).toThrow(PolicyRuleError);
  });
});
