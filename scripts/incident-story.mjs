// The content of the bundled sample sessions (scripts/make-fixtures.mjs): an
// invented but coherent incident a reviewer can follow. acme-api's nightly
// deploy failed; the agent finds a rounding regression in invoice totals,
// fixes it (after a rate-limited attempt and a switch to the larger model),
// the context is pruned and compacted, and the production deploy is cut short
// by a crash with the deploy command in flight. Everything here is made up.

const SYSTEM = [
  'You are DSH, a coding agent working in a local repository. Be precise and concise.',
  'Follow the repository conventions. Prefer small, verifiable changes. Run the tests after each change.',
  '- The workspace is acme-api, a TypeScript service (Node 20, vitest, PostgreSQL).',
  '- Never push, tag or deploy without an explicit request from the user.',
  '- Quote the command and the relevant lines of its output when you report a finding.',
  '- Money is stored in integer cents; never round intermediate values.',
].join('\n');

const CI_LOG = `nightly-deploy  run 1187  main@4d2f9b1  2026-07-26T02:00:04Z
  build            ok    1m12s
  test             FAILED 2m48s
  migrate          skipped
  deploy           skipped

--- test (failed step log) ---
> acme-api@3.14.0 test
> vitest run

 RUN  v4.1.12 /build/acme-api

 ✓ test/auth/session.test.ts (18 tests) 412ms
 ✓ test/billing/tax-rates.test.ts (9 tests) 88ms
 ✓ test/customers/search.test.ts (22 tests) 1204ms
 × test/billing/invoice-total.test.ts (7 tests | 2 failed) 96ms
   ✓ sums line items in cents
   ✓ applies a single tax rate
   × applies tax per line before summing (EU invoices)
     → expected 11900 to be 11901 // Object.is equality
   × matches the stored total of invoice INV-2026-0412
     → expected 48217 to be 48218 // Object.is equality
   ✓ rejects negative quantities
   ✓ zero-rated lines add no tax
   ✓ credit notes are negative
 ✓ test/webhooks/stripe.test.ts (14 tests) 640ms

 FAIL  test/billing/invoice-total.test.ts > applies tax per line before summing (EU invoices)
AssertionError: expected 11900 to be 11901 // Object.is equality
 ❯ test/billing/invoice-total.test.ts:41:32
     39|     const invoice = invoiceOf([line(3333, 3, 'DE'), line(1, 1, 'DE')]);
     40|     const total = invoiceTotal(invoice);
     41|     expect(total.grossCents).toBe(11901);
       |                                ^

 Test Files  1 failed | 4 passed (5)
      Tests  2 failed | 68 passed (70)
   Duration  5.31s

Error: Process completed with exit code 1.
deploy skipped: required step "test" failed
`;

const TEST_FILE = `import { describe, expect, it } from 'vitest';
import { invoiceTotal } from '../../src/billing/invoice.js';
import { invoiceOf, line } from './helpers.js';

describe('invoiceTotal', () => {
  it('sums line items in cents', () => {
    expect(invoiceTotal(invoiceOf([line(1250, 2, 'US'), line(99, 1, 'US')])).netCents).toBe(2599);
  });

  it('applies a single tax rate', () => {
    expect(invoiceTotal(invoiceOf([line(10000, 1, 'DE')])).grossCents).toBe(11900);
  });

  // EU rules: tax is computed per line on the exact amount, and the invoice
  // total is rounded once, at the end (see docs/billing.md#rounding).
  it('applies tax per line before summing (EU invoices)', () => {
    const invoice = invoiceOf([line(3333, 3, 'DE'), line(1, 1, 'DE')]);
    const total = invoiceTotal(invoice);
    expect(total.grossCents).toBe(11901);
  });

  it('matches the stored total of invoice INV-2026-0412', () => {
    expect(invoiceTotal(loadFixture('INV-2026-0412')).grossCents).toBe(48218);
  });
});
`;

const GREP = `src/billing/invoice.ts:3:import { roundCents } from './money.js';
src/billing/invoice.ts:27:    const tax = roundCents(net * rate);
src/billing/invoice.ts:28:    return { netCents: net, taxCents: tax, grossCents: net + tax };
src/billing/money.ts:8:export function roundCents(value: number): number {
src/billing/credit-note.ts:19:  const tax = roundCents(net * rateOf(note.country));
`;

const GIT_LOG = `4d2f9b1 (HEAD -> main, origin/main) deps: bump pg to 8.16.3
a41c9e2 billing: round each line's tax to cents before summing (#482)
77b0e1d billing: move tax rates to config/tax-rates.json
1c5d8aa customers: paginate search results
e02f6b3 webhooks: verify stripe signature timestamps

commit a41c9e2
Author: Dana Okafor
Date:   Sat Jul 25 17:42:10 2026 +0200

    billing: round each line's tax to cents before summing (#482)

    Fixes the display of per-line tax on the invoice PDF.

 src/billing/invoice.ts | 14 +++++++-------
 1 file changed, 7 insertions(+), 7 deletions(-)
`;

const INVOICE_SRC = `import type { Invoice, InvoiceLine } from './types.js';
import { rateOf } from './tax-rates.js';
import { roundCents } from './money.js';

export interface InvoiceTotal {
  netCents: number;
  taxCents: number;
  grossCents: number;
}

/** Per-line amounts as shown on the invoice PDF. */
export function lineTotal(l: InvoiceLine): InvoiceTotal {
  const net = l.unitCents * l.quantity;
  const tax = roundCents(net * rateOf(l.country));
  return { netCents: net, taxCents: tax, grossCents: net + tax };
}

export function invoiceTotal(invoice: Invoice): InvoiceTotal {
  const lines = invoice.lines.map(lineTotal);
  const netCents = lines.reduce((s, l) => s + l.netCents, 0);
  const taxCents = lines.reduce((s, l) => s + l.taxCents, 0);
  return { netCents, taxCents, grossCents: netCents + taxCents };
}
`;

const TESTS_PASS = `> acme-api@3.14.0 test
> vitest run test/billing

 RUN  v4.1.12 /home/dev/acme-api

 ✓ test/billing/tax-rates.test.ts (9 tests) 71ms
 ✓ test/billing/invoice-total.test.ts (7 tests) 64ms
 ✓ test/billing/credit-note.test.ts (5 tests) 40ms

 Test Files  3 passed (3)
      Tests  21 passed (21)
   Duration  1.02s
`;

const FULL_SUITE = `> acme-api@3.14.0 test
> vitest run

 RUN  v4.1.12 /home/dev/acme-api

 ✓ test/auth/session.test.ts (18 tests) 398ms
 ✓ test/billing/tax-rates.test.ts (9 tests) 80ms
 ✓ test/billing/invoice-total.test.ts (7 tests) 70ms
 ✓ test/billing/credit-note.test.ts (5 tests) 44ms
 ✓ test/customers/search.test.ts (22 tests) 1187ms
 ✓ test/webhooks/stripe.test.ts (14 tests) 612ms

 Test Files  6 passed (6)
      Tests  75 passed (75)
   Duration  5.12s
`;

const SUMMARY = `Turn 1 (investigation, nothing changed): the user asked why the nightly deploy of acme-api failed (run 1187 on main). \`gh run view 1187 --log-failed\` showed the run stopped at the test step (build ok; migrate and deploy skipped): 2 of 70 tests failed, both in test/billing/invoice-total.test.ts and both one cent short, "applies tax per line before summing (EU invoices)" (expected 11901, got 11900) and "matches the stored total of invoice INV-2026-0412" (expected 48218, got 48217). The test requires tax on exact amounts with a single rounding at the end (docs/billing.md#rounding). grep found roundCents() applied per line in lineTotal() (src/billing/invoice.ts:27). \`git log -- src/billing\` showed commit a41c9e2 (#482, "round each line's tax to cents before summing", Dana Okafor, Jul 25) as the only billing change since the last green nightly: invoiceTotal() sums the already-rounded per-line tax. Proposed fix: keep lineTotal()'s rounded tax for the PDF, make invoiceTotal() sum exact per-line tax and round once.`;

export const incidentScript = {
  title: 'Nightly deploy failed: invoice totals off by one cent',
  system: SYSTEM,
  turns: {
    1: {
      user: 'The nightly deploy of acme-api failed last night (run 1187 on main). Find out why. Do not change anything yet.',
      steps: [
        {
          reasoning: 'Start with the failed job itself: which step failed and with what output.',
          text: "I'll start with the log of the failed run.",
          calls: [{ name: 'bash', args: { command: 'gh run view 1187 --log-failed' }, output: CI_LOG }],
        },
        {
          reasoning: 'Only the billing totals fail, both by exactly one cent. Read the test to see what it expects.',
          text: 'The deploy never ran: the test step failed, with two invoice-total tests off by one cent. Reading the test.',
          calls: [{ name: 'read_file', args: { path: 'test/billing/invoice-total.test.ts' }, output: TEST_FILE }],
        },
        {
          text: 'The test expects tax on exact amounts and a single rounding at the end. Looking for where totals are rounded.',
          calls: [{ name: 'grep', args: { pattern: 'roundCents\\(', path: 'src/billing' }, output: GREP }],
        },
        {
          reasoning: 'The tests passed before; something changed in src/billing recently.',
          text: 'Checking what changed in billing since the last green nightly.',
          calls: [{ name: 'bash', args: { command: 'git log --oneline -5 -- src/billing && git show --stat a41c9e2' }, output: GIT_LOG }],
        },
        {
          text:
            'Found it. The nightly failed at the test step (migrate and deploy were skipped), on two tests in test/billing/invoice-total.test.ts that are one cent short: 11900 instead of 11901, and 48217 instead of 48218 for INV-2026-0412.\n\n' +
            "The cause is commit a41c9e2 (#482, \"round each line's tax to cents before summing\"), merged on Saturday: invoiceTotal() now adds up tax that lineTotal() has already rounded per line, so an invoice with several taxed lines loses a cent now and then. docs/billing.md and the test require tax on the exact amounts with one rounding at the end.\n\n" +
            'Suggested fix: keep the rounded per-line tax for the PDF, but have invoiceTotal() sum the exact per-line tax and round once. Nothing changed yet.',
        },
      ],
    },
    2: {
      user: 'Go ahead and fix it. Switch to the bigger model for this one, I want the rounding right.',
      failedAttempt: { text: "I'll read src/billing/invoice.ts and", failure: { message: 'rate limit exceeded: 429 Too Many Requests', code: 'RATE_LIMITED', status: 429, providerRetryAfterMs: 2000 } },
      steps: [
        {
          reasoning: 'Read the current implementation before editing; lineTotal is also used by the PDF renderer, so keep its output.',
          text: 'Reading the current implementation first.',
          calls: [{ name: 'read_file', args: { path: 'src/billing/invoice.ts' }, output: INVOICE_SRC }],
        },
        {
          reasoning: 'Sum exact tax (net * rate) over the lines, round once. lineTotal keeps its rounded tax for display.',
          text: 'Changing invoiceTotal() to sum the exact tax and round once, then running the billing tests.',
          calls: [
            {
              name: 'edit_file',
              args: {
                path: 'src/billing/invoice.ts',
                old: '  const taxCents = lines.reduce((s, l) => s + l.taxCents, 0);',
                new: '  // Tax on exact amounts, rounded once (docs/billing.md#rounding); lineTotal() keeps the per-line figure for the PDF.\n  const taxCents = roundCents(invoice.lines.reduce((s, l) => s + l.unitCents * l.quantity * rateOf(l.country), 0));',
              },
              output: 'Edited src/billing/invoice.ts: 1 replacement.',
            },
            { name: 'bash', args: { command: 'npx vitest run test/billing' }, output: TESTS_PASS },
          ],
        },
        {
          text: 'Fixed. invoiceTotal() now sums the exact per-line tax and rounds once, so 3 × 33.33 € + 0.01 € at 19% gives 119.01 € again and INV-2026-0412 matches its stored 482.18 €. lineTotal() is unchanged, so the PDF still shows rounded per-line tax. All 21 billing tests pass. Not committed.',
        },
      ],
    },
    3: {
      user: 'Good. Before we redeploy, write the incident note for #ops: what failed, why, what we changed.',
      compactionSummary: SUMMARY,
      steps: [
        {
          text:
            'Incident note for #ops:\n\n' +
            '**What failed**: the nightly deploy of acme-api (run 1187, main@4d2f9b1) stopped at the test step; migrate and deploy were skipped, production was not touched.\n' +
            '**Why**: commit a41c9e2 (#482) rounded each line\'s tax before summing, so multi-line invoices could come out one cent low. Two billing tests caught it.\n' +
            '**Change**: invoiceTotal() computes tax on exact amounts and rounds once; per-line figures on the PDF are unchanged. Billing tests pass.\n' +
            '**Next**: full suite, merge the fix, re-run the deploy.',
        },
      ],
    },
    4: {
      user: 'Run the full suite and, if it is green, deploy to production with scripts/deploy.sh.',
      steps: [
        {
          text: 'Running the whole suite first.',
          calls: [{ name: 'bash', args: { command: 'npm test' }, output: FULL_SUITE }],
        },
        {
          reasoning: 'All 75 tests pass. Deploy, then smoke-test and tag the release, as the runbook says.',
          text: 'All 75 tests pass. Deploying to production, then the smoke test and the release tag.',
          calls: [
            { name: 'bash', args: { command: './scripts/deploy.sh production' }, output: '' },
            { name: 'bash', args: { command: './scripts/smoke.sh production' }, output: '' },
            { name: 'bash', args: { command: 'git tag -a v3.14.1 -m "billing: round invoice tax once"' }, output: '' },
          ],
        },
      ],
    },
  },
};

// The fork: the same session up to the fix (turn 2), then a different decision.
export const forkScript = {
  system: SYSTEM,
  turns: {
    3: {
      user: 'Different plan: leave invoiceTotal() as it was and revert a41c9e2 instead, then run the billing tests.',
      steps: [
        {
          reasoning: 'Reverting restores the old behaviour everywhere, including the PDF per-line figures #482 wanted to fix.',
          text: 'Reverting a41c9e2 and running the billing tests.',
          calls: [
            { name: 'bash', args: { command: 'git revert --no-edit a41c9e2' }, output: '[main 5e0c2d4] Revert "billing: round each line\'s tax to cents before summing (#482)"\n 1 file changed, 7 insertions(+), 7 deletions(-)\n' },
            { name: 'bash', args: { command: 'npx vitest run test/billing' }, output: TESTS_PASS },
          ],
        },
        {
          text: 'Reverted as 5e0c2d4; the billing tests pass. Note that this also brings back the PDF display issue #482 was about, so that issue should be reopened.',
        },
      ],
    },
  },
};

// The raw-mode sample: a small front-end question in another repository.
export const rawScript = {
  title: 'Blank signup page in Safari',
  system: SYSTEM.replace('acme-api, a TypeScript service (Node 20, vitest, PostgreSQL)', 'acme-web, a React front end (Vite, vitest)'),
  turns: {
    1: {
      user: 'Support says the signup page is blank in Safari 16. Can you find out why?',
      steps: [
        {
          text: 'Looking for browser APIs in the signup code that Safari 16 lacks.',
          calls: [
            {
              name: 'grep',
              args: { pattern: 'structuredClone|\\.at\\(|findLast', path: 'src/signup' },
              output: 'src/signup/steps.ts:14:  const last = steps.findLast((s) => s.done);\nsrc/signup/form.tsx:52:  const draft = structuredClone(initial);\n',
            },
          ],
        },
        {
          text: 'Array.prototype.findLast only arrived in Safari 15.4, and structuredClone in 15.4 too, so those are fine. Checking the build target instead.',
          calls: [{ name: 'read_file', args: { path: 'vite.config.ts' }, output: "import { defineConfig } from 'vite';\nimport react from '@vitejs/plugin-react';\n\nexport default defineConfig({\n  plugins: [react()],\n  build: { target: 'es2023' },\n});\n" }],
        },
        {
          text: "The build targets es2023, which Vite passes to esbuild unchanged, so the bundle keeps syntax Safari 16 cannot parse (the regexp v flag in src/signup/validate.ts). One syntax error and the whole bundle fails, hence the blank page. Setting build.target to ['es2022', 'safari16'] fixes it.",
        },
      ],
    },
    2: {
      user: 'Make that change and check the build output.',
      steps: [
        {
          text: 'Updating the build target and rebuilding.',
          calls: [
            { name: 'edit_file', args: { path: 'vite.config.ts', old: "build: { target: 'es2023' },", new: "build: { target: ['es2022', 'safari16'] }," }, output: 'Edited vite.config.ts: 1 replacement.' },
            { name: 'bash', args: { command: 'npx vite build' }, output: 'vite v7.1.4 building for production...\n✓ 412 modules transformed.\ndist/index.html                  0.62 kB\ndist/assets/index-3f9c1a.css    18.40 kB\ndist/assets/index-b81e0d.js    246.11 kB\n✓ built in 3.84s\n' },
          ],
        },
        {
          text: "Done: vite.config.ts now targets ['es2022', 'safari16'] and the build succeeds; the regexp in validate.ts is transpiled. Worth adding Safari 16 to the browser test matrix so this is caught before release.",
        },
      ],
    },
  },
};
