// Citations with a references section we build, never the model's (src/features/documents/commands/cite.ts).
import { describe, expect, test } from 'vitest';
import { formatReference } from '../../../src/features/documents/commands/cite.ts';
import type { CitationSource } from '../../../src/features/documents/commands/types.ts';
import { runCommand } from '../../../src/features/documents/commands.ts';
import { input, problemOf, recorder } from './support.ts';

describe('cite builds the references itself', () => {
  const now = new Date('2026-03-14T22:30:00Z');
  const text = 'Retail sales rose in spring. Most shoppers buy online.';
  const sources: CitationSource[] = [
    {
      n: 1,
      url: 'https://www.example.org/reports/retail-2026',
      title: 'Retail report 2026',
      excerpt: 'Retail sales rose 4% in spring.',
    },
    {
      n: 2,
      url: 'https://stats.example.com/online',
      title: 'Online *shopping* [stats]',
      excerpt: 'Most shoppers now buy online.',
    },
    { n: 3, url: 'https://blog.example.net/', title: 'blog.example.net', excerpt: '' },
  ];
  const cite = (style: 'apa' | 'ieee', answer: string, content = text, list = sources) => {
    const r = recorder(() => answer);
    return {
      r,
      run: runCommand(
        { command: 'cite', sources: list.map((s) => s.url!), style },
        input(content),
        r.generate,
        list,
        now,
      ),
    };
  };

  test('APA: only the sources the model cited, with the URL and the date accessed', async () => {
    const { run } = cite('apa', 'Retail sales rose in spring [1]. Most shoppers buy online [1][2].');
    const result = await run;
    expect(result.output).toBe('Retail sales rose in spring [1]. Most shoppers buy online [1][2].');
    expect(result.outputRange).toEqual({ start: 0, end: result.output.length });
    expect(result.content).toBe(
      [
        result.output,
        '',
        '## References',
        '',
        '- [1] *Retail report 2026*. (n.d.). example.org. Retrieved 2026-03-14, from <https://www.example.org/reports/retail-2026>',
        '- [2] *Online \\*shopping\\* \\[stats\\]*. (n.d.). stats.example.com. Retrieved 2026-03-14, from <https://stats.example.com/online>',
      ].join('\n'),
    );
  });

  test('IEEE: every source when the model used no marker; a source once however often it is given', async () => {
    const twice = [...sources, { ...sources[0]!, n: 4 }];
    const { run } = cite('ieee', text, text, twice);
    const result = await run;
    expect(result.content.split('## References\n\n')[1]).toBe(
      [
        '- [1] "Retail report 2026," example.org. [Online]. Available: <https://www.example.org/reports/retail-2026> (accessed 2026-03-14).',
        '- [2] "Online \\*shopping\\* \\[stats\\]," stats.example.com. [Online]. Available: <https://stats.example.com/online> (accessed 2026-03-14).',
        '- [3] "blog.example.net," blog.example.net. [Online]. Available: <https://blog.example.net/> (accessed 2026-03-14).',
      ].join('\n'),
    );
  });

  test('a document that ends with a References section: it is merged, never a second one', async () => {
    const content = `# Report\n\n${text} Prices fell [1].\n\n## References\n\n- [1] Old report. <https://blog.example.net>\n`;
    const { r, run } = cite(
      'apa',
      `# Report\n\n${text.replace('online.', 'online [3].')} Prices fell [1].\n\n## References\n\n- made up`,
      content,
    );
    const result = await run;
    // The model sees the text without the section, and the old source keeps its number; the new ones come after it.
    expect(r.user()).not.toContain('Old report');
    expect(r.user()).toContain('[1] blog.example.net\nURL: https://blog.example.net/');
    expect(r.user()).toContain('[2] Retail report 2026');
    expect(r.user()).toContain('[3] Online *shopping* [stats]');
    expect(result.output).toBe(`# Report\n\n${text.replace('online.', 'online [3].')} Prices fell [1].`);
    expect(result.content.match(/## References/g)).toHaveLength(1);
    expect(result.content).toBe(
      `${result.output}\n\n## References\n\n- [1] Old report. <https://blog.example.net>\n` +
        '- [3] *Online \\*shopping\\* \\[stats\\]*. (n.d.). stats.example.com. Retrieved 2026-03-14, from <https://stats.example.com/online>\n',
    );
    expect(result.content.slice(result.outputRange.start, result.outputRange.end)).toBe(result.output);
  });

  test('the reference styles of a page with no author or date', () => {
    const source = sources[0]!;
    const entries = (['apa', 'mla', 'chicago', 'harvard', 'ieee'] as const).map((style) =>
      formatReference(source, 7, style, '2026-03-14'),
    );
    expect(entries).toEqual([
      '- [7] *Retail report 2026*. (n.d.). example.org. Retrieved 2026-03-14, from <https://www.example.org/reports/retail-2026>',
      '- [7] "Retail report 2026." *example.org*, <https://www.example.org/reports/retail-2026>. Accessed 2026-03-14.',
      '- [7] "Retail report 2026." example.org. Accessed 2026-03-14. <https://www.example.org/reports/retail-2026>.',
      '- [7] *Retail report 2026* (n.d.) example.org. Available at: <https://www.example.org/reports/retail-2026> (Accessed: 2026-03-14).',
      '- [7] "Retail report 2026," example.org. [Online]. Available: <https://www.example.org/reports/retail-2026> (accessed 2026-03-14).',
    ]);
  });

  test('no source at all is a 422 at /sources', async () => {
    const r = recorder();
    expect(
      await problemOf(() =>
        runCommand({ command: 'cite', sources: ['https://a.example'] }, input(text), r.generate, []),
      ),
    ).toMatchObject({ code: 'validation_failed', errors: [{ pointer: '/sources' }] });
  });
});
