/**
 * The report page's script: src/report/page/main.ts, compiled by
 * `tsc -p tsconfig.page.json` (DOM library, no Node types) to
 * dist/report/page/main.js and inlined into every report as one module
 * script allowed by its sha256 in the Content-Security-Policy. Read once, on
 * the first report (commands that write no report never touch it).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Where the compiled page is: beside this module in dist/, or dist/ of the checkout when running from src/ (tests). */
function pageScriptPath(): string {
  const here = import.meta.url;
  return fileURLToPath(here.endsWith('.ts') ? new URL('../../dist/report/page/main.js', here) : new URL('./page/main.js', here));
}

let script: string | undefined;

/** The compiled page script (throws a clear error when the page was never built). */
export function clientScript(): string {
  if (script !== undefined) return script;
  const file = pageScriptPath();
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new Error(`the report page script ${file} is missing (${(error as NodeJS.ErrnoException).code ?? 'unreadable'}): build it with npm run build`);
  }
  script = text;
  return script;
}
