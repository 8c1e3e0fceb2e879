// Bytes fetched from the web as text. Shared by the features that read pages (documents' citation sources,
// knowledge's crawler), below both so that neither imports the other.

/** The body as text, in the charset of its Content-Type or (HTML) its `<meta charset>`, else UTF-8. */
export function decode(bytes: Uint8Array, type: string, html: boolean): string {
  let charset = /charset=["']?([\w.:-]+)/.exec(type)?.[1];
  if (!charset && html) {
    const head = Buffer.from(bytes.subarray(0, 2048)).toString('latin1');
    charset = /<meta[^<>]*charset\s*=\s*["']?([\w.:-]+)/i.exec(head)?.[1];
  }
  try {
    return new TextDecoder(charset ?? 'utf-8').decode(bytes);
  } catch {
    return new TextDecoder('utf-8').decode(bytes);
  }
}
