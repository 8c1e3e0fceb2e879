// The text of a knowledge-base source (src/features/knowledge/extract.ts), from files the tests make: a real two-page
// PDF (pdf-lib), a real .docx with a heading and lists (docx), an HTML page with navigation and script noise,
// Markdown, CSV, Latin-1 and BOM-prefixed text; the errors a file can cause (unsupported_content, unreadable_file,
// empty_content); and the links htmlToMarkdown gives the crawler.
import { randomBytes } from 'node:crypto';
import { Document, HeadingLevel, Packer, Paragraph, TextRun } from 'docx';
import { PDFDocument, PDFHexString, StandardFonts } from 'pdf-lib';
import { describe, expect, test } from 'vitest';
import { chunkText } from '../../src/features/knowledge/chunk.ts';
import {
  csvToText,
  ExtractionError,
  extractText,
  htmlToMarkdown,
  normaliseText,
} from '../../src/features/knowledge/extract.ts';
import {
  chunkTextOffLoop,
  extractTextOffLoop,
  htmlToMarkdownOffLoop,
  OFF_LOOP_BYTES,
} from '../../src/features/knowledge/extract-pool.ts';

const PDF = 'application/pdf';
const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const utf8 = (text: string) => new TextEncoder().encode(text);
const latin1 = (text: string) => Uint8Array.from(text, (char) => char.charCodeAt(0));

/** A real PDF, one page per string (its lines drawn one under the other), with `title` in its metadata. */
async function makePdf(
  pages: string[],
  options: { title?: string; encrypted?: boolean; objectStreams?: boolean } = {},
): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  if (options.title) pdf.setTitle(options.title);
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (const text of pages) {
    const page = pdf.addPage();
    text.split('\n').forEach((line, i) => {
      page.drawText(line, { x: 50, y: 700 - i * 20, size: 12, font });
    });
  }
  if (options.encrypted) {
    // The standard security handler with a user password that is not empty: readers ask for the password.
    const encrypt = pdf.context.obj({
      Filter: 'Standard',
      V: 1,
      R: 2,
      Length: 40,
      O: PDFHexString.of('11'.repeat(32)),
      U: PDFHexString.of('22'.repeat(32)),
      P: -4,
    });
    pdf.context.trailerInfo.Encrypt = pdf.context.register(encrypt);
    pdf.context.trailerInfo.ID = pdf.context.obj([PDFHexString.of('33'.repeat(16)), PDFHexString.of('33'.repeat(16))]);
  }
  return pdf.save({ useObjectStreams: options.objectStreams ?? !options.encrypted });
}

/** A real .docx: a title, a heading, a paragraph with bold, a bulleted list, a second heading and paragraph. */
async function makeDocx(): Promise<Uint8Array> {
  const document = new Document({
    title: 'Core properties title',
    sections: [
      {
        children: [
          new Paragraph({ text: 'Wholesale terms', heading: HeadingLevel.HEADING_1 }),
          new Paragraph({
            children: [
              new TextRun('We deliver on '),
              new TextRun({ text: 'Tuesdays', bold: true }),
              new TextRun(' and Fridays.'),
            ],
          }),
          new Paragraph({ text: 'Whole beans', bullet: { level: 0 } }),
          new Paragraph({ text: 'Paper filters', bullet: { level: 0 } }),
          new Paragraph({ text: 'Payment', heading: HeadingLevel.HEADING_2 }),
          new Paragraph({ text: 'Invoices are due within 30 days.' }),
        ],
      },
    ],
  });
  return new Uint8Array(await Packer.toBuffer(document));
}

/** The ExtractionError a call throws. */
async function extractionError(run: () => Promise<unknown>): Promise<ExtractionError> {
  try {
    await run();
  } catch (error) {
    if (error instanceof ExtractionError) return error;
    throw error;
  }
  throw new Error('expected an ExtractionError');
}

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Wholesale FAQ</title>
  <script>var tracking = 'SCRIPT-NOISE';</script>
  <style>body { color: STYLE-NOISE; }</style>
</head>
<body>
  <nav><a href="/">Home</a> <a href="/shop">Shop</a> <a href="/blog">NAV-NOISE Blog</a></nav>
  <main>
    <article>
      <h1>Wholesale FAQ</h1>
      <p>We sell freshly roasted <a href="/beans#single-origin">single-origin beans</a> to cafés and restaurants across the
      region, with deliveries on Tuesdays and Fridays from our roastery in the old harbour district.</p>
      <h2>Ordering</h2>
      <ul><li>The minimum order is 5 kg of beans.</li><li>Orders placed before noon leave the same day.</li></ul>
      <h2>Payment</h2>
      <p>Invoices are due within 30 days of delivery. We accept bank transfers and card payments, and accounts with
      more than three late invoices move to payment in advance.</p>
      <table><tr><th>Size</th><th>Price</th></tr><tr><td>1 kg</td><td>20 EUR</td></tr></table>
      <script>document.write('MORE-SCRIPT-NOISE')</script>
    </article>
  </main>
  <footer>FOOTER-NOISE © Northwind <a href="https://twitter.example/northwind">Twitter</a></footer>
</body>
</html>`;

describe('extractText, each media type', () => {
  test('a PDF: the text of each page, in order, a blank line between pages; the title from its metadata', async () => {
    const pdf = await makePdf(
      ['Grinding coffee for filter brewing.\nUse a medium grind.', 'Water temperature is 94 degrees.'],
      { title: 'Brewing guide' },
    );
    const result = await extractText(pdf, PDF, { name: 'guide.pdf' });
    expect(result).toEqual({
      title: 'Brewing guide',
      text: 'Grinding coffee for filter brewing.\nUse a medium grind.\n\nWater temperature is 94 degrees.',
    });
  });

  test('a PDF without a title in its metadata has none (the caller falls back to the file name)', async () => {
    const result = await extractText(await makePdf(['Only one page.']), PDF);
    expect(result).toEqual({ title: null, text: 'Only one page.' });
  });

  test('the bytes given are left as they were (PDF.js works on a copy)', async () => {
    const pdf = await makePdf(['Kept.']);
    const copy = pdf.slice();
    await extractText(pdf, PDF);
    expect(pdf).toEqual(copy);
  });

  test('a Word .docx: Markdown with its headings, bold and list; the title is its first level-one heading', async () => {
    const result = await extractText(await makeDocx(), DOCX, { name: 'terms.docx' });
    expect(result).toEqual({
      title: 'Wholesale terms',
      text: '# Wholesale terms\n\nWe deliver on **Tuesdays** and Fridays.\n\n- Whole beans\n- Paper filters\n\n## Payment\n\nInvoices are due within 30 days.',
    });
  });

  test('a Word paragraph in the Title style is a level-one heading, and the title', async () => {
    const document = new Document({
      sections: [
        {
          children: [
            new Paragraph({ text: 'Roastery handbook', heading: HeadingLevel.TITLE }),
            new Paragraph({ text: 'Welcome aboard.' }),
          ],
        },
      ],
    });
    const result = await extractText(new Uint8Array(await Packer.toBuffer(document)), DOCX);
    expect(result).toEqual({ title: 'Roastery handbook', text: '# Roastery handbook\n\nWelcome aboard.' });
  });

  test('an HTML page: its article as Markdown, headings and lists kept, navigation, scripts, styles and footer dropped', async () => {
    const result = await extractText(utf8(PAGE), 'text/html; charset=utf-8', { url: 'https://northwind.example/faq' });
    expect(result.title).toBe('Wholesale FAQ');
    expect(result.text).toContain(
      'We sell freshly roasted single-origin beans to cafés and restaurants across the region',
    );
    expect(result.text).toContain(
      '## Ordering\n\n- The minimum order is 5 kg of beans.\n- Orders placed before noon leave the same day.',
    );
    expect(result.text).toContain('## Payment\n\nInvoices are due within 30 days of delivery.');
    expect(result.text).toContain('Size | Price\n1 kg | 20 EUR');
    for (const noise of ['SCRIPT-NOISE', 'STYLE-NOISE', 'NAV-NOISE', 'FOOTER-NOISE', 'https://', ']('])
      expect(result.text).not.toContain(noise);
  });

  test('an HTML page in Windows-1252, as its <meta charset> says', async () => {
    const page =
      '<html><head><meta charset="windows-1252"><title>Caf\u00e9 cr\u00e8me</title></head><body><p>Un caf\u00e9 cr\u00e8me, s\u2019il vous pla\u00eet.</p></body></html>';
    const bytes = Uint8Array.from(page, (char) => (char === '\u2019' ? 0x92 : char.charCodeAt(0)));
    expect(await extractText(bytes, 'text/html')).toEqual({
      title: 'Café crème',
      text: 'Un café crème, s’il vous plaît.',
    });
  });

  test('Markdown as it is; the title is the first "# " heading (not a "# " line in a code fence)', async () => {
    const markdown = 'Intro line.\n\n```sh\n# not a heading\n```\n\n# Brewing guide\n\n## Grind\n\n- medium\n- fine\n';
    expect(await extractText(utf8(markdown), 'text/markdown')).toEqual({
      title: 'Brewing guide',
      text: markdown.trimEnd(),
    });
  });

  test('Markdown front matter is dropped, and its title is the title', async () => {
    const markdown = '---\ntitle: "Cold brew"\ntags: [coffee]\n---\n# Heading one\n\nSteep for 12 hours.\n';
    expect(await extractText(utf8(markdown), 'text/markdown')).toEqual({
      title: 'Cold brew',
      text: '# Heading one\n\nSteep for 12 hours.',
    });
  });

  test('Markdown without a level-one heading has no title', async () => {
    expect((await extractText(utf8('## Only a second level\n\nText.'), 'text/markdown')).title).toBeNull();
  });

  test('CSV: one line a row, "column: value; column: value", quoted commas and quotes kept, empty values left out', async () => {
    const csv =
      'name,origin,notes\r\nHouse blend,"Brazil, Ethiopia","Chocolate, ""nutty"""\r\nDecaf,Colombia,\r\n\r\nKenya AA,Kenya,"Bright\nand fruity"\r\n';
    expect(await extractText(utf8(csv), 'text/csv', { name: 'beans.csv' })).toEqual({
      title: null,
      text: [
        'name: House blend; origin: Brazil, Ethiopia; notes: Chocolate, "nutty"',
        'name: Decaf; origin: Colombia',
        'name: Kenya AA; origin: Kenya; notes: Bright and fruity',
      ].join('\n'),
    });
  });

  test('CSV with semicolons (the delimiter of the first line), more cells than columns, and a header alone', () => {
    expect(csvToText('product;price\nBeans;12,50;extra\n')).toBe('product: Beans; price: 12,50; column 3: extra');
    expect(csvToText('a,b,c\n')).toBe('a, b, c');
  });

  test('plain text that is not valid UTF-8 is read as Latin-1 (Windows-1252)', async () => {
    expect(await extractText(latin1('Caf\u00e9 cr\u00e8me \u00e0 la carte.'), 'text/plain')).toEqual({
      title: null,
      text: 'Café crème à la carte.',
    });
  });

  test('a declared charset is used', async () => {
    expect((await extractText(latin1('na\u00efve'), 'text/plain; charset=ISO-8859-1')).text).toBe('naïve');
  });

  test('UTF-8 with a byte-order mark: the mark is not part of the text', async () => {
    const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...utf8('Crème brûlée.')]);
    expect(await extractText(bytes, 'text/plain')).toEqual({ title: null, text: 'Crème brûlée.' });
    expect(
      (await extractText(new Uint8Array([0xef, 0xbb, 0xbf, ...utf8('# Title\n\nBody')]), 'text/markdown')).title,
    ).toBe('Title');
  });

  test('UTF-16 with a byte-order mark', async () => {
    const text = 'Grüße';
    const bytes = new Uint8Array(2 + text.length * 2);
    bytes.set([0xff, 0xfe]);
    for (let i = 0; i < text.length; i++) bytes.set([text.charCodeAt(i) & 0xff, text.charCodeAt(i) >> 8], 2 + i * 2);
    expect((await extractText(bytes, 'text/plain')).text).toBe('Grüße');
  });

  test('the media type is matched without its case or parameters', async () => {
    expect((await extractText(utf8('Hello.'), ' Text/Plain ; charset=UTF-8')).text).toBe('Hello.');
  });
});

describe('normalised text', () => {
  test('line ends, trailing spaces, runs of blank lines, NFC, control characters, no-break spaces', async () => {
    const raw = '\r\n\r\n  Indented first line  \r\nCafe\u0301\t \r\n\r\n\r\n\r\nnext\u0007\u00a0word\n\n\n';
    expect(await extractText(utf8(raw), 'text/plain')).toEqual({
      title: null,
      text: '  Indented first line\nCafé\n\nnext word',
    });
  });

  test('normaliseText is idempotent', () => {
    const once = normaliseText(' a \n\n\n\nb\r\nc  ');
    expect(normaliseText(once)).toBe(once);
  });
});

describe('extraction errors', () => {
  test('a truncated PDF is unreadable_file', async () => {
    const pdf = await makePdf(['Page one.', 'Page two.']);
    for (const length of [16, Math.floor(pdf.length / 2), pdf.length - 200]) {
      const error = await extractionError(() => extractText(pdf.slice(0, length), PDF, { name: 'guide.pdf' }));
      expect(error.code).toBe('unreadable_file');
      expect(error.message).toBe('"guide.pdf" is not a readable PDF (it is damaged or incomplete).');
    }
  });

  test('an encrypted PDF is unreadable_file, and says so', async () => {
    const error = await extractionError(async () => extractText(await makePdf(['Secret.'], { encrypted: true }), PDF));
    expect(error.code).toBe('unreadable_file');
    expect(error.message).toBe('The file is an encrypted (password-protected) PDF.');
  });

  test('bytes that are not a PDF, sent as one, are unreadable_file', async () => {
    const error = await extractionError(() => extractText(utf8('Just some text.'), PDF));
    expect(error.code).toBe('unreadable_file');
    expect(error.message).toBe('The file is not a PDF (it does not start with a PDF header).');
  });

  test('random bytes as a .docx are unreadable_file; so are a damaged zip, a PDF and a legacy .doc', async () => {
    let seed = 7;
    const random = Uint8Array.from({ length: 2048 }, () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) & 0xff);
    const docx = await makeDocx();
    const damaged = docx.slice(0, 600);
    const legacy = new Uint8Array([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1, ...random.subarray(0, 512)]);
    for (const bytes of [random, damaged, await makePdf(['A PDF.']), legacy]) {
      const error = await extractionError(() => extractText(bytes, DOCX, { name: 'terms.docx' }));
      expect(error.code).toBe('unreadable_file');
    }
    expect((await extractionError(() => extractText(legacy, DOCX))).message).toBe(
      'The file is a legacy Word (.doc) file; save it as .docx and add it again.',
    );
  });

  test('a binary file sent as text is unreadable_file', async () => {
    for (const mediaType of ['text/plain', 'text/markdown', 'text/csv', 'text/html']) {
      const error = await extractionError(async () =>
        extractText(await makePdf(['Binary.'], { objectStreams: true }), mediaType),
      );
      expect(error.code).toBe('unreadable_file');
    }
  });

  test('a media type not handled is unsupported_content', async () => {
    for (const mediaType of ['image/png', 'application/zip', 'application/msword', '']) {
      const error = await extractionError(() => extractText(new Uint8Array([0x89, 0x50, 0x4e, 0x47]), mediaType));
      expect(error.code).toBe('unsupported_content');
    }
    expect((await extractionError(() => extractText(utf8('x'), 'image/png'))).message).toBe(
      'Content of type image/png is not supported; add a PDF, Word (.docx), Markdown, HTML, CSV or plain-text file.',
    );
  });

  test('an empty file, or one with only whitespace or markup, is empty_content', async () => {
    for (const mediaType of ['text/plain', 'text/markdown', 'text/csv', 'text/html']) {
      const error = await extractionError(() => extractText(new Uint8Array(), mediaType, { name: 'empty.txt' }));
      expect(error.code).toBe('empty_content');
      expect(error.message).toBe('No text could be extracted from "empty.txt".');
    }
    expect((await extractionError(() => extractText(utf8(' \n\t\r\n '), 'text/plain'))).code).toBe('empty_content');
    expect(
      (
        await extractionError(() =>
          extractText(
            utf8('<html><head><title>T</title><script>x()</script></head><body><nav></nav></body></html>'),
            'text/html',
          ),
        )
      ).code,
    ).toBe('empty_content');
    expect((await extractionError(() => extractText(utf8('\ufeff'), 'text/plain'))).code).toBe('empty_content');
  });

  test('a PDF without text (a scan) is empty_content, with a hint; an empty file as a PDF is unreadable_file', async () => {
    const error = await extractionError(async () => extractText(await makePdf(['']), PDF));
    expect(error.code).toBe('empty_content');
    expect(error.message).toBe('No text could be extracted from the file (a scanned PDF has no text layer).');
    expect((await extractionError(() => extractText(new Uint8Array(), PDF))).code).toBe('unreadable_file');
  });

  test('an ExtractionError is an Error with its code and name', () => {
    const error = new ExtractionError('empty_content', 'Nothing.');
    expect(error).toBeInstanceOf(Error);
    expect([error.name, error.code, error.message]).toEqual(['ExtractionError', 'empty_content', 'Nothing.']);
  });
});

describe('htmlToMarkdown', () => {
  test('the links of every <a> (navigation and footer too), absolute, without fragments, each once, http(s) only', () => {
    const html = `<html><head><title>Links</title></head><body>
      <nav><a href="/">Home</a><a href="/shop?page=2">Shop</a><a href="#top">Top</a></nav>
      <article><p>Read <a href="beans.html#origin">about beans</a>, <a href="beans.html">again</a>,
      <a href="mailto:hello@northwind.example">mail us</a>, <a href="javascript:void(0)">nothing</a>, <a href="tel:+3312">call</a>,
      <a href="//cdn.northwind.example/menu.pdf">the menu</a> or <a href="HTTPS://Other.example/a b">elsewhere</a>.</p></article>
      <footer><a href="https://twitter.example/northwind">Twitter</a><a>no href</a><a href="">empty</a><a href="http://[bad">bad</a></footer>
      </body></html>`;
    const { title, links } = htmlToMarkdown(html, 'https://northwind.example/guides/brewing?x=1#section');
    expect(title).toBe('Links');
    expect(links).toEqual([
      'https://northwind.example/',
      'https://northwind.example/shop?page=2',
      'https://northwind.example/guides/brewing?x=1',
      'https://northwind.example/guides/beans.html',
      'https://cdn.northwind.example/menu.pdf',
      'https://other.example/a%20b',
      'https://twitter.example/northwind',
    ]);
  });

  test('a <base href> is the base of relative links', () => {
    const { links } = htmlToMarkdown(
      '<html><head><base href="/docs/"></head><body><a href="intro.html">Intro</a></body></html>',
      'https://northwind.example/x/y',
    );
    expect(links).toEqual(['https://northwind.example/docs/intro.html']);
  });

  test('without a page URL, relative links are left out', () => {
    const { links } = htmlToMarkdown(
      '<body><a href="/relative">r</a><a href="https://northwind.example/abs">a</a></body>',
    );
    expect(links).toEqual(['https://northwind.example/abs']);
  });

  test('the text is the article, as Markdown; its heading that repeats the page title is the title', () => {
    const { title, text } = htmlToMarkdown(PAGE, 'https://northwind.example/faq');
    expect(title).toBe('Wholesale FAQ');
    expect(text).toMatch(/^We sell freshly roasted single-origin beans/);
    expect(text).not.toContain('Home');
  });

  test('a page without an article (a fragment, no title): the body without its navigation', () => {
    const { title, text, links } = htmlToMarkdown(
      '<nav><a href="https://a.example/">A</a></nav><p>Just <em>one</em> line.</p><ol start="3"><li>three</li><li>four</li></ol>',
    );
    expect(title).toBeNull();
    expect(text).toBe('Just _one_ line.\n\n3. three\n4. four');
    expect(links).toEqual(['https://a.example/']);
  });
});

describe('extraction and chunking of large sources in worker threads (extract-pool.ts)', () => {
  const paragraphs = Array.from(
    { length: 600 },
    (_, i) => `Paragraph ${i}: refunds are issued within fourteen days of a return, to the card that paid.`,
  );

  test('a large PDF, page and text are read as in place', async () => {
    const pages = Array.from({ length: 4 }, (_, i) => paragraphs.slice(i * 15, i * 15 + 15).join('\n'));
    // Made large by metadata that does not compress (random bytes, base64).
    const document = await PDFDocument.load(await makePdf(pages, { title: 'Refunds' }));
    document.setSubject(randomBytes(75_000).toString('base64'));
    const pdf = await document.save();
    expect(pdf.length).toBeGreaterThanOrEqual(OFF_LOOP_BYTES);
    expect(await extractTextOffLoop(pdf, PDF, { name: 'refunds.pdf' })).toEqual(await extractText(pdf, PDF));

    const page = `<html><head><title>Refunds</title></head><body><nav>Home</nav><article><h1>Refunds</h1>${paragraphs
      .map((p) => `<p>${p} <a href="/more">more</a></p>`)
      .join('')}</article></body></html>`;
    expect(page.length).toBeGreaterThanOrEqual(OFF_LOOP_BYTES);
    expect(await htmlToMarkdownOffLoop(page, 'https://help.example.com/')).toEqual(
      htmlToMarkdown(page, 'https://help.example.com/'),
    );

    const text = [...paragraphs, ...paragraphs].join('\n\n');
    expect(text.length).toBeGreaterThanOrEqual(OFF_LOOP_BYTES);
    const options = { maxChunkTokens: 200, overlapTokens: 20 };
    expect(await chunkTextOffLoop(text, options)).toEqual(await chunkText(text, options));
  });

  test("a large file's ExtractionError is thrown as itself, with its code", async () => {
    const damaged = new Uint8Array(OFF_LOOP_BYTES + 10).fill(0x41);
    damaged.set(utf8('%PDF-1.7\n'));
    const error = await extractionError(() => extractTextOffLoop(damaged, PDF, { name: 'damaged.pdf' }));
    expect(error.code).toBe('unreadable_file');
    expect(error.message).toContain('damaged.pdf');
  });
});
