/**
 * Log content is untrusted: escape C0/C1 control characters (and DEL) so a
 * crafted log cannot move the cursor, retitle the terminal or hide text.
 * `keepNewlines` keeps LF and TAB for multi-line blocks.
 */
export function escapeControl(text: string, keepNewlines = false): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (ch) => {
    if (keepNewlines && (ch === '\n' || ch === '\t')) return ch;
    switch (ch) {
      case '\n':
        return '\\n';
      case '\r':
        return '\\r';
      case '\t':
        return '\\t';
      default:
        return `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;
    }
  });
}

/** One-line preview of arbitrary text, escaped and truncated by code points. */
export function preview(text: string, max = 80): string {
  const flat = escapeControl(text.replace(/\s+/g, ' ').trim());
  const chars = Array.from(flat);
  return chars.length <= max ? flat : chars.slice(0, max - 1).join('') + '…';
}
