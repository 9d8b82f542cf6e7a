/** dsh's version (package.json `version`; `test/package.test.ts` checks they agree). */
export const VERSION = '0.1.0';
