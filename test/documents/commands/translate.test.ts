// Translation that keeps the Markdown structure: one batch call, one call per segment when the batch loses its
// markers (src/features/documents/commands/translate.ts).
import { describe, expect, test } from 'vitest';
import { runCommand } from '../../../src/features/documents/commands.ts';
import { input, recorder } from './support.ts';

describe('translate keeps the Markdown structure', () => {
  const source = [
    '# Spring sale',
    '',
    'Every plan is **20% off** until Sunday: [the offer](https://example.com/offer "Offer") and `npm i sale`.',
    'A second line  ',
    'after a hard break.',
    '',
    '> Quoted once',
    '> and continued',
    '',
    '- [ ] Buy *now*',
    '  - Nested item',
    '1. First step',
    '',
    '| Plan | Price |',
    '|------|------:|',
    '| Basic plan | 10 |',
    '| Pro \\| team | 20 |',
    '',
    '```js',
    "const greeting = 'hello';",
    '```',
    '',
    '    indented code stays',
    '',
    '<div>raw html stays</div>',
    '',
    'Setext heading',
    '--------------',
    '',
    'Visit https://example.org/path today ⟦9⟧.',
  ].join('\n');
  const upper = [
    '# SPRING SALE',
    '',
    'EVERY PLAN IS **20% OFF** UNTIL SUNDAY: [THE OFFER](https://example.com/offer "Offer") AND `npm i sale`.',
    'A SECOND LINE  ',
    'AFTER A HARD BREAK.',
    '',
    '> QUOTED ONCE',
    '> AND CONTINUED',
    '',
    '- [ ] BUY *NOW*',
    '  - NESTED ITEM',
    '1. FIRST STEP',
    '',
    '| PLAN | PRICE |',
    '|------|------:|',
    '| BASIC PLAN | 10 |',
    '| PRO \\| TEAM | 20 |',
    '',
    '```js',
    "const greeting = 'hello';",
    '```',
    '',
    '    indented code stays',
    '',
    '<div>raw html stays</div>',
    '',
    'SETEXT HEADING',
    '--------------',
    '',
    'VISIT https://example.org/path TODAY ⟦9⟧.',
  ].join('\n');
  const upperLines = (text: string) =>
    text
      .split('\n')
      .map((line) => line.toUpperCase())
      .join('\n');

  test('one call with numbered segments; code, URLs and structure untouched', async () => {
    const r = recorder((messages) => upperLines(messages[1]!.content as string));
    const result = await runCommand({ command: 'translate', target_language: 'fr' }, input(source), r.generate);
    expect(r.calls).toHaveLength(1);
    const batch = r.user();
    expect(batch.split('\n')[0]).toBe('⟦1⟧ Spring sale');
    expect(batch).toContain(
      '⟦2⟧ Every plan is **20% off** until Sunday: [the offer]⟨1⟩ and ⟨2⟩.\nA second line\nafter a hard break.',
    );
    expect(batch).not.toContain('greeting');
    expect(batch).not.toContain('raw html');
    expect(batch).not.toContain('https://');
    expect(result.output).toBe(upper);
    expect(result.content).toBe(upper);
    expect(result.outputRange).toEqual({ start: 0, end: upper.length });
  });

  test('an answer without the same markers: one call per segment, same result', async () => {
    const r = recorder((messages) =>
      (messages[1]!.content as string).includes('⟦1⟧')
        ? upperLines((messages[1]!.content as string).replace('⟦3⟧', ''))
        : (messages[1]!.content as string).toUpperCase(),
    );
    const result = await runCommand({ command: 'translate', target_language: 'fr' }, input(source), r.generate);
    const segments = (r.user(0).match(/⟦\d+⟧/g) ?? []).length;
    expect(r.calls).toHaveLength(1 + segments);
    expect(r.calls.slice(1).map((call) => call[1]!.content)).toContain('Quoted once\nand continued');
    expect(r.system(1)).toContain('translation of the user');
    expect(result.output).toBe(upper);
  });

  test('a segment whose translation loses a placeholder is asked again, then kept as it was', async () => {
    const r = recorder((messages) => (messages[1]!.content as string).replace(/⟨\d+⟩/g, '').toUpperCase());
    const result = await runCommand(
      { command: 'translate', target_language: 'fr' },
      input('Run `npm test` now.\n\nPlain words.'),
      r.generate,
    );
    expect(r.calls).toHaveLength(2);
    expect(r.user(1)).toBe('Run ⟨1⟩ now.');
    expect(result.output).toBe('Run `npm test` now.\n\nPLAIN WORDS.');
  });

  test('a translation with another number of lines becomes one line; a selection keeps the text around it', async () => {
    const content = 'Intro.\n\n> First line\n> second line\n\nOutro.';
    const r = recorder(() => '⟦1⟧ Erste Zeile und zweite Zeile');
    const start = content.indexOf('>');
    const result = await runCommand(
      { command: 'translate', target_language: 'de', selection: { start, end: content.indexOf('Outro') } },
      input(content),
      r.generate,
    );
    expect(result.output).toBe('> Erste Zeile und zweite Zeile');
    expect(result.content).toBe('Intro.\n\n> Erste Zeile und zweite Zeile\n\nOutro.');
  });

  test('nothing but code: no call, the text as it is', async () => {
    const r = recorder();
    const code = '```sh\nnpm test\n```';
    expect((await runCommand({ command: 'translate', target_language: 'fr' }, input(code), r.generate)).content).toBe(
      code,
    );
    expect(r.calls).toHaveLength(0);
  });
});
