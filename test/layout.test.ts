import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { decodeSegment, encodeSegment, projectKey, sessionPath } from '../src/log/layout.js';

describe('layout (format.md §1.1)', () => {
  it('projectKey: the spec examples', () => {
    expect(projectKey('/Users/qyj/work/deepseek-harness')).toBe('--Users-qyj-work-deepseek-harness--');
    expect(projectKey('C:\\work\\agent')).toBe('--C-work-agent--');
    expect(projectKey('/开发/~agent')).toBe('--~5F00~53D1-~007Eagent--');
    expect(projectKey('/')).toBe('--root--');
    expect(projectKey('/a/b-c')).toBe(projectKey('/a-b/c'));
    expect(projectKey('/a/')).toBe('--a---');
    expect(projectKey('//a//b')).toBe('--a-b--');
    expect(() => projectKey('')).toThrow('cannot encode an empty project path');
  });

  it('projectKey truncates the slug to 251 chars (even inside an escape)', () => {
    const key = projectKey('/' + 'x'.repeat(249) + '~');
    expect(key.length).toBe(255);
    expect(key.endsWith('x~0--')).toBe(true);
  });

  it('encodeSegment / decodeSegment', () => {
    expect(encodeSegment('.')).toBe('~002E');
    expect(encodeSegment('..')).toBe('~002E~002E');
    expect(encodeSegment('a/b')).toBe('a~002Fb');
    expect(encodeSegment('a~b')).toBe('a~007Eb');
    expect(encodeSegment('syn.llm-retry_1')).toBe('syn.llm-retry_1');
    expect(encodeSegment('\ud800x')).toBe('~D800x');
    expect(() => encodeSegment('')).toThrow('cannot encode an empty path segment');
    for (const id of ['a/b', 'a~b', '会话 1', '\ud800x', 'plain', '~002F']) expect(decodeSegment(encodeSegment(id))).toBe(id);
    expect(decodeSegment('~002E~002E')).toBe('..');
  });

  it('sessionPath', () => {
    expect(sessionPath('/r', { id: 'x/y', cwd: '/home/dev/acme-api' }, 'zstd')).toBe(
      path.join('/r', '--home-dev-acme-api--', 'x~002Fy', 'session.jsonl.zstd'),
    );
    expect(sessionPath('/r', { id: 's' }, 'none')).toBe(path.join('/r', '_no-cwd', 's', 'session.jsonl'));
  });
});
