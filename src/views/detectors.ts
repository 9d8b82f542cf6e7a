import { toJson } from '../core/json.js';
/**
 * Built-in secret detectors. Each finds spans of SECRET text in a string; the
 * surrounding context that identified it (a `Bearer ` prefix, a `KEY=`, a
 * URL's `scheme://user:`) is kept, only the secret itself is replaced.
 *
 * Detectors run on the original string in priority order; a later detector's
 * match that overlaps an earlier one is ignored, so every byte is redacted at
 * most once and replacement tokens are never re-scanned.
 */

export interface SecretSpan {
  start: number;
  end: number;
  detector: string;
  /** The prefix shown in the token (`sk-…`, `ghp_…`), never secret material beyond a public prefix. */
  label: string;
}

export interface Detector {
  name: string;
  description: string;
  find(text: string): SecretSpan[];
  /**
   * A substring test every match needs (`find` returns nothing for a text it
   * does not match), for callers that pre-screen large texts; absent when the
   * detector has none.
   */
  hint?: RegExp;
}

interface RegexSpec {
  name: string;
  description: string;
  re: RegExp;
  /** Capture group holding the secret (0 = whole match). */
  group?: number;
  label: string | ((secret: string, m: RegExpExecArray) => string);
  /** Reject a candidate (placeholders, variable references, numbers). */
  accept?: (secret: string, m: RegExpExecArray) => boolean;
  /** Cheap pre-check: skip the regex when this substring is absent. */
  hint?: string | RegExp;
}

function regexDetector(spec: RegexSpec): Detector {
  const group = spec.group ?? 0;
  const hint = spec.hint === undefined ? undefined : typeof spec.hint === 'string' ? new RegExp(spec.hint.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')) : spec.hint;
  return {
    name: spec.name,
    description: spec.description,
    ...(hint ? { hint } : {}),
    find(text: string): SecretSpan[] {
      if (spec.hint !== undefined) {
        if (typeof spec.hint === 'string' ? !text.includes(spec.hint) : !spec.hint.test(text)) return [];
      }
      const out: SecretSpan[] = [];
      const re = new RegExp(spec.re.source, spec.re.flags.includes('g') ? spec.re.flags : spec.re.flags + 'g');
      for (let m = re.exec(text); m !== null; m = re.exec(text)) {
        if (m[0].length === 0) {
          re.lastIndex += 1;
          continue;
        }
        const secret = m[group];
        if (secret === undefined || secret.length === 0) continue;
        if (spec.accept && !spec.accept(secret, m)) continue;
        // Offset of the group inside the match (first occurrence after the groups before it).
        let start = m.index;
        if (group > 0) {
          let prefix = 0;
          for (let g = 1; g < group; g++) prefix += (m[g] ?? '').length;
          const rel = m[0].indexOf(secret, prefix);
          start = m.index + (rel === -1 ? m[0].indexOf(secret) : rel);
        }
        out.push({ start, end: start + secret.length, detector: spec.name, label: typeof spec.label === 'string' ? spec.label : spec.label(secret, m) });
      }
      return out;
    },
  };
}

/** Values that are clearly not secrets: references, placeholders, numbers, already redacted. */
function plausibleValue(v: string): boolean {
  if (v.length < 4) return false;
  if (/^\d+(\.\d+)?$/.test(v)) return false;
  if (/^(\$|%|\{\{|<|\[REDACTED)/.test(v)) return false;
  if (/^(true|false|null|none|undefined|changeme|example|xxx+|\*+|\.\.\.|…)$/i.test(v)) return false;
  if (/^(process\.env|os\.environ|getenv|env\.)/i.test(v)) return false;
  // Code, not values: calls, dotted references, type annotations.
  if (v.includes('(') || /^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)+$/.test(v)) return false;
  if (/^(string|number|boolean|bool|any|str|int|bytes|optional|none|secret|token|password|required|redacted|hidden)$/i.test(v)) return false;
  return true;
}

/** KEY names that denote a secret: SECRET, TOKEN, PASSWORD, API_KEY (as a word of the key). */
export function isSecretKeyName(key: string): boolean {
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
  if (words.length === 0) return false;
  const joined = words.join('_');
  if (/(^|_)(secret|secrets|token|password|passwd|pwd|passphrase|apikey|api_key|private_key|access_key|secret_key|client_secret|auth_token|credentials?)(_|$)/.test(joined)) {
    // `max_tokens`, `token_count`, `token_budget`-style counters are not secrets.
    if (/(^|_)(max|num|count|total|limit|budget|usage)(_|$)/.test(joined) && !/(secret|password|passwd|api_?key)/.test(joined)) return false;
    if (/(^|_)(tokens|count|limit|length|len|size|type|types|url|uri|file|path|name|id|expiry|expires|ttl)$/.test(joined) && !/(^|_)(secret|password|passwd|api_key|apikey)$/.test(joined)) return false;
    return true;
  }
  return false;
}

/** `.env`-style `KEY=value` / `KEY: value` / `"key": "value"` where KEY names a secret. */
function envDetector(): Detector {
  const re = /(["']?)([A-Za-z_][A-Za-z0-9_.-]{0,80})\1(\s*[:=]\s*)(?:"([^"\\\n]{1,512})"|'([^'\\\n]{1,512})'|([^\s"'`,;}\])\\]{1,512}))/g;
  const hint = /secret|token|passw|pwd|api_?key|apikey|credential|passphrase|private_key|access_key/i;
  return {
    name: 'env-secret',
    description: '.env-style assignments KEY=value / KEY: value where KEY contains SECRET, TOKEN, PASSWORD or API_KEY',
    hint,
    find(text: string): SecretSpan[] {
      if (!hint.test(text)) return [];
      const out: SecretSpan[] = [];
      re.lastIndex = 0;
      for (let m = re.exec(text); m !== null; m = re.exec(text)) {
        const key = m[2] ?? '';
        const value = m[4] ?? m[5] ?? m[6] ?? '';
        const quoted = m[4] !== undefined || m[5] !== undefined;
        const start = m.index + m[0].length - value.length - (quoted ? 1 : 0);
        if (!isSecretKeyName(key) || !plausibleValue(value)) {
          // Re-scan inside the value: `"command": "export TOKEN=…"` holds assignments.
          re.lastIndex = start;
          continue;
        }
        out.push({ start, end: start + value.length, detector: 'env-secret', label: 'secret' });
        // Continue after the value (a line can hold several assignments).
        re.lastIndex = start + value.length;
      }
      return out;
    },
  };
}

const PREFIX_LABEL = (n: number) => (secret: string) => `${secret.slice(0, n)}…`;

export const BUILTIN_DETECTORS: Detector[] = [
  regexDetector({
    name: 'private-key',
    description: 'PEM private key blocks (-----BEGIN … PRIVATE KEY----- … END; a block cut off before END is redacted to the end of the text)',
    re: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|$(?![\s\S]))/,
    label: 'private-key',
    hint: 'PRIVATE KEY',
  }),
  regexDetector({
    name: 'anthropic',
    description: 'Anthropic API keys (sk-ant-…)',
    re: /(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}/,
    label: 'sk-ant-…',
    hint: 'sk-ant-',
  }),
  regexDetector({
    name: 'openai',
    description: 'OpenAI / DeepSeek style API keys (sk-…, sk-proj-…)',
    re: /(?<![A-Za-z0-9_-])sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}/,
    label: 'sk-…',
    hint: 'sk-',
    accept: (s) => /[0-9]/.test(s) && /[A-Za-z]/.test(s.slice(3)),
  }),
  regexDetector({
    name: 'github',
    description: 'GitHub tokens (ghp_, gho_, ghs_, ghu_, ghr_, github_pat_)',
    re: /(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})/,
    label: (s) => (s.startsWith('github_pat_') ? 'github_pat_…' : `${s.slice(0, 4)}…`),
    hint: /gh[pousr]_|github_pat_/,
  }),
  regexDetector({
    name: 'aws-access-key-id',
    description: 'AWS access key ids (AKIA…, ASIA…)',
    re: /(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])/,
    label: PREFIX_LABEL(4),
    hint: /AKIA|ASIA/,
  }),
  regexDetector({
    name: 'aws-secret-access-key',
    description: 'AWS secret access keys in assignments (aws_secret_access_key = …, AWS_SECRET_ACCESS_KEY=…, SecretAccessKey: …)',
    re: /((?:aws_?)?secret_?access_?key|aws_?secret_?key)(["']?\s*[:=]\s*["']?)([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])/i,
    group: 3,
    label: 'aws-secret',
    hint: /secret_?access_?key|secret_?key/i,
  }),
  regexDetector({
    name: 'slack',
    description: 'Slack tokens (xoxa-, xoxb-, xoxp-, xoxr-)',
    re: /(?<![A-Za-z0-9])xox[abpr]-[A-Za-z0-9-]{10,}/,
    label: PREFIX_LABEL(5),
    hint: 'xox',
  }),
  regexDetector({
    name: 'google',
    description: 'Google API keys (AIza…)',
    re: /(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])/,
    label: 'AIza…',
    hint: 'AIza',
  }),
  regexDetector({
    name: 'stripe',
    description: 'Stripe live/test secret and restricted keys (sk_live_, rk_live_, sk_test_)',
    re: /(?<![A-Za-z0-9_])[sr]k_(?:live|test)_[A-Za-z0-9]{16,}/,
    label: (s) => `${s.slice(0, 8)}…`,
    hint: /k_(live|test)_/,
  }),
  regexDetector({
    name: 'jwt',
    description: 'JSON Web Tokens (eyJ….eyJ….signature)',
    re: /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/,
    label: 'jwt',
    hint: 'eyJ',
  }),
  regexDetector({
    name: 'url-password',
    description: 'passwords in URLs (scheme://user:password@host)',
    re: /\b([a-z][a-z0-9+.-]{1,20}:\/\/[^\s:@/?#"'`<>]{1,128}:)([^\s@/?#"'`<>]{1,256})@/i,
    group: 2,
    label: 'url-password',
    hint: '://',
    accept: (s) => !/^(\$|\[REDACTED|\{\{|<)/.test(s) && s !== '***' && s !== 'password',
  }),
  regexDetector({
    name: 'bearer',
    description: 'Bearer tokens (Authorization: Bearer …)',
    re: /\b(Bearer\s+)([A-Za-z0-9\-._~+/]{16,}=*)/i,
    group: 2,
    label: 'bearer',
    hint: /bearer/i,
    accept: (s) => /[0-9]/.test(s) || /[A-Z].*[a-z]|[a-z].*[A-Z]/.test(s),
  }),
  envDetector(),
];


/** The names of the built-in secret detectors. */
export const DETECTOR_NAMES = BUILTIN_DETECTORS.map((d) => d.name);

/** A user pattern (`--redact-pattern REGEX`): the whole match, or group 1 when the regex has groups. */
export function patternDetector(source: string, index: number): Detector {
  let re: RegExp;
  try {
    re = new RegExp(source, 'g');
  } catch (error) {
    throw new Error(`invalid --redact-pattern ${toJson(source)}: ${(error as Error).message}`);
  }
  if (re.test('')) throw new Error(`--redact-pattern ${toJson(source)} matches the empty string`);
  const name = `pattern-${index + 1}`;
  return {
    name,
    description: `--redact-pattern ${source}`,
    find(text: string): SecretSpan[] {
      const out: SecretSpan[] = [];
      re.lastIndex = 0;
      for (let m = re.exec(text); m !== null; m = re.exec(text)) {
        if (m[0].length === 0) {
          re.lastIndex += 1;
          continue;
        }
        const secret = m.length > 1 && m[1] !== undefined ? m[1] : m[0];
        const rel = m.length > 1 && m[1] !== undefined ? m[0].indexOf(secret) : 0;
        if (secret.length === 0) continue;
        out.push({ start: m.index + rel, end: m.index + rel + secret.length, detector: name, label: name });
      }
      return out;
    },
  };
}

/** Home directories (`/home/<user>`, `/Users/<user>`, `C:\Users\<user>`): the user name is redacted. */
export function homeDetector(): Detector {
  const re = /(?:(?<![A-Za-z0-9_.-])\/(?:home|Users)\/|(?<![A-Za-z0-9])[A-Za-z]:\\{1,2}Users\\{1,2})([A-Za-z0-9._@-]{1,64})/g;
  const skip = new Set(['shared', 'Shared', 'Public', 'public', 'Default', 'All Users']);
  return {
    name: 'home-path',
    description: 'user names in home directories (/home/<user>, /Users/<user>, C:\\Users\\<user>)',
    find(text: string): SecretSpan[] {
      if (!/\/home\/|\/Users\/|\\Users\\/.test(text)) return [];
      const out: SecretSpan[] = [];
      re.lastIndex = 0;
      for (let m = re.exec(text); m !== null; m = re.exec(text)) {
        const user = m[1]!;
        if (skip.has(user) || user.startsWith('[REDACTED')) continue;
        const start = m.index + m[0].length - user.length;
        out.push({ start, end: start + user.length, detector: 'home-path', label: 'user' });
      }
      return out;
    },
  };
}

/** The session's cwd as a path prefix (followed by a separator, a quote, whitespace or the end). */
export function cwdDetector(cwd: string): Detector | undefined {
  const trimmed = cwd.replace(/[\\/]+$/, '');
  // `/`, `/home`, `C:` and the like are not identifying.
  if (trimmed.length < 2 || trimmed.split(/[\\/]/).filter(Boolean).length < 2) return undefined;
  return {
    name: 'cwd',
    description: `the session working directory ${cwd}`,
    find(text: string): SecretSpan[] {
      const out: SecretSpan[] = [];
      let at = text.indexOf(trimmed);
      while (at !== -1) {
        const after = text[at + trimmed.length];
        const before = at > 0 ? text[at - 1] : undefined;
        const okAfter = after === undefined || /[\\/\s"'`:;,)\]}]/.test(after);
        const okBefore = before === undefined || !/[A-Za-z0-9_.-]/.test(before);
        if (okAfter && okBefore) out.push({ start: at, end: at + trimmed.length, detector: 'cwd', label: 'cwd' });
        at = text.indexOf(trimmed, at + trimmed.length);
      }
      return out;
    },
  };
}
