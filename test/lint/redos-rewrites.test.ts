// The linear rewrites of patterns that `npm run lint:redos` found super-linear give what the patterns they replace
// gave. Each case runs the old pattern and its replacement (a new pattern, or a function of src/) on many short random
// texts made of the pieces that pattern cares about, where the old one is still quick. The new patterns written here
// are copies of those in src/ (each names its file); the worst inputs, run through src/ itself at full size, are in the
// linear-time tests beside each feature's tests.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { matchKeyword } from '../../src/features/chatbots/intents.ts';
import { withoutCodeSpans, withoutFencedBlocks } from '../../src/features/documents/commands/cite.ts';
import { wholeFence } from '../../src/features/documents/commands/prompts.ts';
import { mask } from '../../src/features/documents/commands/translate-mask.ts';
import { headingsOf, withoutTags } from '../../src/features/documents/documents.ts';
import { connectedTopic, quotedPassage } from '../../src/features/engine/providers/sandbox/draft.ts';
import {
  closingStart,
  withoutAutolinks,
  withoutLinkDestinations,
} from '../../src/features/engine/providers/sandbox/task.ts';
import { quotedPhrases } from '../../src/features/engine/providers/sandbox/tools.ts';
import { opensWithAddress } from '../../src/features/engine/style/rewrite.ts';
import { atxHeading } from '../../src/features/knowledge/extract.ts';
import { fencedBlock } from '../../src/features/workflows/steps.ts';

/** Texts of up to `max` pieces, each one of `pieces`. */
const texts = (pieces: string[], max = 24) =>
  fc.array(fc.constantFrom(...pieces), { maxLength: max }).map((parts) => parts.join(''));

const RUNS = { numRuns: 2000 };

/** Every match of a global pattern: where it is and what it captured. */
const matches = (pattern: RegExp, text: string) =>
  [...text.matchAll(pattern)].map((m) => ({ index: m.index, groups: [...m] }));

function same<T>(pieces: string[], old: (text: string) => T, next: (text: string) => T, max?: number) {
  fc.assert(
    fc.property(texts(pieces, max), (text) => {
      expect(next(text)).toEqual(old(text));
    }),
    RUNS,
  );
}

const SPACES = [' ', '\t', '\n', '\r', '\u2028', '\u00a0'];
/** Emoji and their joiners, as the style patterns list them (a string: a class of them reads as misleading). */
const EMOJI = '\\p{Extended_Pictographic}\\u{FE0F}\\u{200D}\\p{Emoji_Modifier}';
const u = (source: string, flags = 'u') => new RegExp(source, flags);

describe('documents', () => {
  test('the references heading (cite.ts)', () => {
    const pieces = ['##', '#', ' ', '\t', '\r', '\n', 'References', 'Sources', 'x'];
    same(
      pieces,
      (t) => matches(/^##[ \t]+References[ \t]*#*[ \t]*\r?$/gim, t),
      (t) => matches(/^##[ \t]+References[ \t]*(?:#+[ \t]*)?\r?$/gim, t),
    );
    same(
      pieces,
      (t) => matches(/^#{1,6}[ \t]+(?:References|Sources|Bibliography|Works cited)[ \t]*#*[ \t]*$/gim, t),
      (t) => matches(/^#{1,6}[ \t]+(?:References|Sources|Bibliography|Works cited)[ \t]*(?:#+[ \t]*)?$/gim, t),
    );
  });

  test('code left out of the citation count (cite.ts)', () => {
    same(
      ['`', '~', '```', '~~~', '````', ' ', '\t', '\n', '\r', '\u2028', 'a'],
      (t) => t.replace(/^(`{3,}|~{3,})[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, ''),
      withoutFencedBlocks,
      40,
    );
    same(['`', '``', '```', 'a', ' ', '\n'], (t) => t.replace(/(`+)[^`]*?\1/g, ''), withoutCodeSpans, 40);
  });

  test('a fence around the whole answer (prompts.ts)', () => {
    same(
      ['```', '~~~', '`', '~', ' ', '\t', '\n', '\r', 'md', 'x-y', 'a', '\u00a0'],
      (t) => {
        const m = /^(`{3,}|~{3,})[ \t]*([\w-]*)[ \t]*\r?\n([\s\S]*?)\r?\n\1[ \t]*$/.exec(t.trim());
        return m ? { language: m[2], body: m[3] } : null;
      },
      (t) => wholeFence(t.trim()),
    );
  });

  test('what translation leaves alone (translate-mask.ts)', () => {
    const PROTECTED = new RegExp(
      [
        '(`+)(?!`)[\\s\\S]*?(?<!`)\\1(?!`)',
        '(?<=\\])\\((?:[^()\\s]|\\([^()\\s]*\\))*(?:\\s+(?:"[^"]*"|\'[^\']*\'))?\\s*\\)',
        '(?<=\\])\\[[^\\]\\n]*\\]',
        '<[A-Za-z/!?][^<>\\n]*>',
        'https?://[^\\s<>()\\[\\]]+',
        '^\\[[ xX]\\](?=\\s)',
        '⟨\\d+⟩|⟦\\d+⟧',
      ].join('|'),
      'g',
    );
    same(
      [
        '`',
        '``',
        '](',
        '(',
        ')',
        '[',
        ']',
        '"',
        "'",
        ' ',
        '\n',
        '<',
        '>',
        'a',
        '/',
        'https://x',
        '⟨1⟩',
        '⟦2⟧',
        '[ ]',
        '[x]',
      ],
      (t) => {
        const kept: string[] = [];
        return { text: t.replace(PROTECTED, (m) => `⟨${kept.push(m)}⟩`), kept };
      },
      mask,
      30,
    );
  });

  test('the title read from the rendered page (documents.ts)', () => {
    const pieces = ['<', '>', '<h1', '</h1>', '<h1>', 'a', ' ', '\n'];
    same(pieces, (t) => t.replace(/<[^>]*>/g, ''), withoutTags);
    same(pieces, (t) => [...t.matchAll(/<h1[^>]*>([\s\S]*?)<\/h1>/g)].map((m) => m[1]), headingsOf);
  });

  test("a source page's attributes and title (sources.ts)", () => {
    same(
      ['a', '-', ':', ' ', '=', '"', "'", '>', 'x'],
      (t) => matches(/([\w:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/g, t),
      (t) => matches(/(?<![\w:-])(?=([\w:-]+))\1\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/g, t),
    );
    same(
      ['/', 'a'],
      (t) => t.replace(/\/+$/, ''),
      (t) => t.replace(/(?<!\/)\/+$/, ''),
    );
  });
});

describe('sandbox models', () => {
  test("a draft's topic (sandbox-draft.ts)", () => {
    const trimmed = (t: string) => t.replace(/\s+/g, ' ').trim();
    same(
      ['"', '“', "'", '‘', '”', '’', 'a', ' ', '.', '!', ';'],
      (t) =>
        trimmed(t)
          .replace(/^["“'‘]+|["”'’]+$/g, '')
          .replace(/[\s.!?:;,]+$/, ''),
      (t) =>
        trimmed(t)
          .replace(/^["“'‘]+/, '')
          .replace(/(?<!["”'’])["”'’]+$/, '')
          .replace(/(?<![\s.!?:;,])[\s.!?:;,]+$/, ''),
    );
    same(
      [' about', ' on', ' to announce', 'about ', ' ', '\t', '\r', '\u2028', 'x', 'y'],
      (t) =>
        /\s(?:about|on|for|regarding|announcing|introducing|describing|covering|of|to announce|to introduce)\s+(.+)$/i.exec(
          t,
        )?.[1],
      connectedTopic,
    );
    same(['"', '“', '”', 'a', 'abcdef'], (t) => /["“]([^"”]{12,})["”]/.exec(t)?.[1], quotedPassage);
  });

  test('words, sentences and citations of a task (sandbox-task.ts)', () => {
    same(
      [' ', '\t', '\n', 'a'],
      (t) => t.replace(/\s*\n\s*/g, ' '),
      (t) => t.replace(/(?<!\s)\s*\n\s*/g, ' '),
    );
    same(['](', ']', '(', ')', 'a'], (t) => t.replace(/\]\([^)]*\)/g, ']'), withoutLinkDestinations);
    same(
      ['<', '>', 'a', 'B', ':', ' ', '+', '1'],
      (t) => t.replace(/<[a-z][a-z0-9+.-]*:[^>\s]*>/gi, ' '),
      withoutAutolinks,
    );
    same(
      ['.', ',', '!', 'a', ' '],
      (t) => t.replace(/[.,;:!?]+$/, ''),
      (t) => t.replace(/(?<![.,;:!?])[.,;:!?]+$/, ''),
    );
    same(
      ['\n', ' ', '\t', 'a'],
      (t) => /\n\s*$/.test(t),
      (t) => t.slice(t.trimEnd().length).includes('\n'),
    );
    same(
      [' ', '\t', '>', '-', '*', '1', '.', ')', '[ ]', '[x]', 'a'],
      (t) => /^([ \t]*(?:>[ \t]?)*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+(?:\[[ xX]\][ \t]+)?)?)(.*)$/.exec(t)?.slice(1),
      (t) => /^([ \t]*(?:>[ \t]?)*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+(?:\[[ xX]\][ \t]+)?)?)([\s\S]*)$/.exec(t)?.slice(1),
    );
    same(
      ['.', '!', '…', '"', '”', ')', ']', 'a', '\n'],
      (t) => /^(.*?)([.!?…]*["'”’)\]]*)$/su.exec(t)!.slice(1),
      (t) => [t.slice(0, closingStart(t)), t.slice(closingStart(t))],
    );
  });

  test("a tool call's quoted phrases (sandbox-tools.ts)", () => {
    same(
      ['"', '“', '”', 'a', ' '],
      (t) => [...t.matchAll(/"([^"]+)"|“([^”]+)”/g)].map((m) => [m[1] ?? m[2], m.index, m.index + m[0].length]),
      (t) => quotedPhrases(t).map((q) => [q.phrase, q.index, q.end]),
    );
    same(
      [' ', '\t', ',', 'and', 'or', 'x'],
      (t) => /^\s*,?\s*(?:(?:and|or)\s+)?$/i.test(t),
      (t) => /^\s*(?:,\s*)?(?:(?:and|or)\s+)?$/i.test(t),
    );
  });

  test("a sandbox answer's parts and cited sentences (sandbox.ts)", () => {
    same(
      [...SPACES, 'a', 'b'],
      (t) => t.match(/\s*\S+\s*/g),
      (t) => t.match(/(?:^\s*)?\S+\s*/g),
    );
    same(
      ['.', '!', '?', 'a', '\n'],
      (t) => /^(.*?)([.!?]*)$/s.exec(t)!.slice(1),
      (t) => {
        const stop = /(?<![.!?])[.!?]*$/.exec(t)!;
        return [t.slice(0, stop.index), stop[0]];
      },
    );
  });
});

describe('style', () => {
  test('measure.ts', () => {
    same(
      [' ', '\n', '😀', '\u{FE0F}', '"', ')', 'a', '.'],
      (t) => t.replace(u(`[\\s${EMOJI}"'”’)\\]]+$`), ''),
      (t) => t.replace(u(`(?<![\\s${EMOJI}"'”’)\\]])[\\s${EMOJI}"'”’)\\]]+$`), ''),
    );
    same(
      ['a', 'B', '.', '`', '_', '/', 'x'],
      (t) => /`[^`]+`|_\w|[a-z][A-Z]|[a-z]{2,}\.[a-z]{2,}|\w\/\w/.test(t),
      (t) => /`[^`]+`|_\w|[a-z][A-Z]|(?<![a-z])[a-z]{2,}\.[a-z]{2,}|\w\/\w/.test(t),
    );
  });

  test('rewrite.ts', () => {
    same(
      [' ', '\t', '😀', '\u200D', '\u{FE0F}', 'a'],
      (t) => t.replace(u(`[ \\t]*\\p{Extended_Pictographic}[${EMOJI}]*`, 'gu'), ''),
      (t) => t.replace(u(`(?<![ \\t])[ \\t]*\\p{Extended_Pictographic}[${EMOJI}]*`, 'gu'), ''),
    );
    same(
      [',', ';', ' ', '\t', 'and', 'but', '—', 'x'],
      (t) => matches(/(,\s+(and|but)\s+|;\s+|\s+[—–]\s+)/gi, t),
      (t) => matches(/(,\s+(and|but)\s+|;\s+|(?<!\s)\s+[—–]\s+)/gi, t),
    );
    same(
      ['é', 'a', 'K', 'ſ', ',', ' ', '—', '1', 'please', 'pleaſe', '_'],
      (t) => /^\W*\p{L}+,|^\W*please\b/iu.test(t),
      opensWithAddress,
    );
    same(
      [' ', '\t', '(', ')', 'a'],
      (t) => t.replace(/[ \t]*\([^()]*\)/g, ''),
      (t) => t.replace(/(?<![ \t])[ \t]*\([^()]*\)/g, ''),
    );
    same(
      ['.', '!', ')', '"', '’', 'a'],
      (t) => t.replace(/(?<!\))([.!?]+["'”’]*)$/, ' (yes, really)$1'),
      (t) => t.replace(/(?:(?<![.!?)])|(?<=\)[.!?]))([.!?]+["'”’]*)$/, ' (yes, really)$1'),
    );
    same(
      [' ', '\t', ',', '.', 'a', '\n'],
      (t) => t.replace(/[ \t]+([,.;:!?])/g, '$1').replace(/[ \t]+$/gm, ''),
      (t) => t.replace(/(?<![ \t])[ \t]+([,.;:!?])/g, '$1').replace(/(?<![ \t])[ \t]+$/gm, ''),
    );
  });

  test('sentences.ts', () => {
    const BOUNDARY_REST = '(?=\\s|$)|\\n[ \\t]*\\n\\s*|\\n(?=[ \\t]*(?:[-*•▪‣◦]|\\d{1,3}[.)])[ \\t])';
    same(
      ['.', '!', '…', '"', ')', ' ', '\t', '\n', '😀', '▪', '\u{FE0F}', 'a', '-', '1.'],
      (t) => matches(u(`[.!?…]+["'”’)\\]]*(?:[ \\t]*[${EMOJI}]+)*${BOUNDARY_REST}`, 'gu'), t),
      (t) => matches(u(`(?<![.!?…])[.!?…]+["'”’)\\]]*(?:[ \\t]*[${EMOJI}])*${BOUNDARY_REST}`, 'gu'), t),
      16,
    );
  });
});

describe('knowledge', () => {
  test('chunk.ts', () => {
    const pieces = ['.', '!', '"', '»', ' ', '\t', '\n', 'a', '。'];
    same(
      pieces,
      (t) => t.split(/(?<=[.!?…]["'”’»)\]]*)(?=\s)|(?<=[。！？])/u),
      (t) => t.split(/(?=\s)(?<=[.!?…]["'”’»)\]]*)|(?<=[。！？])/u),
    );
    same(
      pieces,
      (t) => matches(/(?:[.!?…]["'”’»)\]]*\s+|\n\s*)(?=\S)/gu, t),
      (t) => matches(/(?:[.!?…]["'”’»)\]]*\s+|\n(?<!\n[^\S\n]*\n)\s*)(?=\S)/gu, t),
    );
    same(
      pieces,
      (t) => matches(/\s+(?=\S)/gu, t),
      (t) => matches(/(?<!\s)\s+(?=\S)/gu, t),
    );
  });

  test('extract.ts', () => {
    same(
      [' ', '\t', '\r', '\n', 'a'],
      (t) => t.replace(/[^\S\n]+$/gm, ''),
      (t) => t.replace(/(?<![^\S\n])[^\S\n]+$/gm, ''),
    );
    same(
      [' ', '\n', 'a'],
      (t) => t.replace(/^\n+|\s+$/g, ''),
      (t) => t.replace(/^\n+/, '').trimEnd(),
    );
    same(
      ['\n', 'a'],
      (t) => t.replace(/\n+$/, '\n'),
      (t) => t.replace(/(?<!\n)\n+$/, '\n'),
    );
    same(
      [' ', '|', 'a', '\n'],
      (t) => t.replace(/\s*\|\s*$/, ''),
      (t) => t.replace(/(?<!\s)\s*\|\s*$/, ''),
    );
    fc.assert(
      fc.property(texts([' ', '\t', '\r', '\u2028', '#', 'a', 'b c'], 12), fc.integer({ min: 0, max: 4 }), (t, n) => {
        const line = `${' '.repeat(n)}${t}`;
        expect(atxHeading(line)).toEqual(/^ {0,3}#[^\S\n]+(.+?)(?:[^\S\n]+#+)?[^\S\n]*$/.exec(line)?.[1]);
      }),
      RUNS,
    );
  });

  test('knowledge-bases.ts', () => {
    same(
      ['=', 'a'],
      (t) => t.replace(/=+$/, ''),
      (t) => t.replace(/(?<!=)=+$/, ''),
    );
  });
});

describe('voices, workflows, the platform and chatbots', () => {
  test("a voice's sample sentences (voices/instructions.ts)", () => {
    same(
      ['.', '!', 'a', ' '],
      (t) => t.match(/[^.!?]+[.!?]+/g),
      (t) => t.match(/(?<![^.!?])[^.!?]+[.!?]+/g),
    );
  });

  test('a truncate step and the JSON of an answer (workflows/steps.ts)', () => {
    same(
      [' ', '\t', 'a', '\n'],
      (t) => t.replace(/\s+\S*$/, ''),
      (t) => t.replace(/(?<!\s)\s+\S*$/, ''),
    );
    same(
      ['```', '`', 'json', ' ', '\n', '{}', 'a'],
      (t) => /```(?:json)?\s*\n([\s\S]*?)```/.exec(t)?.[1] ?? null,
      fencedBlock,
    );
  });

  test("a directory user's address (directory/scim/users.ts)", () => {
    same(
      ['a', '.', '@', ' ', '"', 'b'],
      (t) => /^[^\s@"<>,;:()[\]\\]+@[^\s@"<>,;:()[\]\\]+\.[^\s@"<>,;:()[\]\\]+$/.test(t),
      (t) =>
        /^[^\s@"<>,;:()[\]\\]+@[^\s@"<>,;:()[\]\\][^\s@"<>,;:()[\]\\.]*\.[^\s@"<>,;:()[\]\\]*[^\s@"<>,;:()[\]\\]$/.test(
          t,
        ),
    );
  });

  test('If-None-Match (platform/assets.ts)', () => {
    same(
      [' ', '\t', ',', 'a'],
      (t) => t.split(/\s*,\s*/),
      (t) =>
        t.split(',').map((piece, i, all) => {
          const start = i > 0 ? piece.trimStart() : piece;
          return i < all.length - 1 ? start.trimEnd() : start;
        }),
    );
  });

  test('where a named person ends (chatbots/intents.ts)', () => {
    // classifyIntent makes the message's white space single spaces first: no line terminator reaches the pattern.
    const flags = 'iu';
    const words =
      '(?:[,;:!?()]|(?<!(?:^| )(?:mr|mrs|ms|dr|st))\\.| (?:and|or|but|so|about|regarding|concerning|re|because|as|since|if|who|that|which|to|with|for|instead|right now|now|today|asap|please|pls|immediately|directly|quickly)(?![\\p{L}\\p{N}]))';
    same(
      [' ', 'and', 'Mr', '.', ',', 'Anna', 'now'],
      (t) => t.replace(new RegExp(`${words}.*$`, flags), ''),
      (t) => t.replace(new RegExp(`${words}[\\s\\S]*$`, flags), ''),
    );
    // The keywords' patterns are built at run time: matchKeyword against the same search by plain code.
    fc.assert(
      fc.property(texts(['refund', 'Refunds', ' ', '  ', 'x'], 10), (t) => {
        const found = matchKeyword(t, ['refund']);
        expect(found !== null).toBe(/(?<![\p{L}\p{N}])refund(?:s|es|ed|ing)?(?![\p{L}\p{N}])/iu.test(t));
      }),
      RUNS,
    );
  });
});
