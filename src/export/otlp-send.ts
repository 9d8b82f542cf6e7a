/**
 * OTLP/HTTP sending: JSON (`application/json`) or protobuf
 * (`application/x-protobuf`, encoded by protobufjs from the official
 * opentelemetry-proto v1.11.0 definitions shipped in `proto/`), batched, with
 * retries on the statuses OTLP/HTTP calls retryable (429, 502, 503, 504) and
 * on connection failures, honouring `Retry-After`.
 */
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { createRequire } from 'node:module';
import type * as Protobuf from 'protobufjs';
import type { ExportTraceServiceRequest } from './otlp.js';
import { toJson } from '../core/json.js';

/** How OTLP/HTTP requests are encoded. */
export type OtlpProtocol = 'http/json' | 'http/protobuf';

/** Where the official .proto files are (package root `proto/`). */
export const PROTO_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'proto');
export const TRACE_SERVICE_PROTO = 'opentelemetry/proto/collector/trace/v1/trace_service.proto';

let requestType: Protobuf.Type | undefined;

/** protobufjs's reflected `ExportTraceServiceRequest`, loaded once from the official definitions. */
export function traceRequestType(): Protobuf.Type {
  if (requestType) return requestType;
  const require = createRequire(import.meta.url);
  const protobuf = require('protobufjs') as typeof Protobuf;
  const root = new protobuf.Root();
  root.resolvePath = (_origin: string, target: string) => path.join(PROTO_DIR, target);
  root.loadSync(TRACE_SERVICE_PROTO);
  root.resolveAll();
  requestType = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
  return requestType;
}

const ID_KEYS = new Set(['traceId', 'spanId', 'parentSpanId']);

/** OTLP/JSON → the object protobufjs encodes: hex ids become bytes (the JSON mapping's one exception). */
function toProtoObject(v: unknown, key?: string): unknown {
  if (typeof v === 'string' && key !== undefined && ID_KEYS.has(key)) return Buffer.from(v, 'hex');
  if (Array.isArray(v)) return v.map((x) => toProtoObject(x));
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = toProtoObject(x, k);
    return out;
  }
  return v;
}

/** Encode an OTLP/JSON export request as OTLP protobuf. */
export function encodeProtobuf(request: ExportTraceServiceRequest): Uint8Array {
  const T = traceRequestType();
  return T.encode(T.fromObject(toProtoObject(request) as Record<string, unknown>)).finish();
}

export interface SendOptions {
  protocol: OtlpProtocol;
  /** Attempts per batch (default 4). */
  attempts?: number;
  /** First back-off in ms (doubles; default 250). */
  backoffMs?: number;
  timeoutMs?: number;
  headers?: Record<string, string>;
  onRetry?: (info: { attempt: number; delayMs: number; reason: string }) => void;
}

/** The endpoint refused or could not be reached after every retry. */
export class OtlpSendError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'OtlpSendError';
  }
}

/** An OTLP endpoint: a bare base URL gets `/v1/traces`, a URL with a path is used as it is. */
export function tracesUrl(endpoint: string): URL {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new OtlpSendError(`--endpoint ${toJson(endpoint)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new OtlpSendError(`--endpoint must be an http(s) URL, got ${url.protocol}`);
  if (url.pathname === '' || url.pathname === '/') url.pathname = '/v1/traces';
  return url;
}

const RETRYABLE = new Set([429, 502, 503, 504]);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function retryAfter(header: string | null): number | undefined {
  if (!header) return undefined;
  const s = Number(header);
  if (Number.isFinite(s) && s >= 0) return Math.min(s * 1000, 30_000);
  const t = Date.parse(header);
  return Number.isFinite(t) ? Math.max(0, Math.min(t - Date.now(), 30_000)) : undefined;
}

/** POST one export request; resolves on 2xx, throws OtlpSendError otherwise. */
export async function sendRequest(url: URL, request: ExportTraceServiceRequest, options: SendOptions): Promise<{ attempts: number; partialRejected?: number }> {
  const body = options.protocol === 'http/protobuf' ? encodeProtobuf(request) : Buffer.from(toJson(request));
  const contentType = options.protocol === 'http/protobuf' ? 'application/x-protobuf' : 'application/json';
  const attempts = Math.max(1, options.attempts ?? 4);
  let delay = options.backoffMs ?? 250;
  let last = '';
  for (let attempt = 1; attempt <= attempts; attempt++) {
    let wait: number | undefined;
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': contentType, ...(options.headers ?? {}) },
        body,
        signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
      });
      const text = await res.text().catch(() => '');
      if (res.ok) {
        let partialRejected: number | undefined;
        if (options.protocol === 'http/json' && text) {
          try {
            const r = JSON.parse(text);
            const n = Number(r?.partialSuccess?.rejectedSpans ?? 0);
            if (n > 0) partialRejected = n;
          } catch {
            /* an empty or non-JSON 2xx body is a success */
          }
        }
        return { attempts: attempt, ...(partialRejected ? { partialRejected } : {}) };
      }
      last = `HTTP ${res.status}${text ? `: ${text.slice(0, 300).replace(/\s+/g, ' ')}` : ''}`;
      if (!RETRYABLE.has(res.status)) throw new OtlpSendError(`the OTLP endpoint ${url.href} refused the export (${last})`, res.status);
      wait = retryAfter(res.headers.get('retry-after'));
    } catch (error) {
      if (error instanceof OtlpSendError) throw error;
      const e = error as { cause?: { code?: string; message?: string }; message?: string; name?: string };
      last = e.name === 'TimeoutError' ? `no answer within ${options.timeoutMs ?? 10_000} ms` : (e.cause?.code ?? e.cause?.message ?? e.message ?? String(error));
    }
    if (attempt < attempts) {
      const ms = wait ?? delay;
      options.onRetry?.({ attempt, delayMs: ms, reason: last });
      await sleep(ms);
      delay *= 2;
    }
  }
  throw new OtlpSendError(`the OTLP endpoint ${url.href} could not take the export after ${attempts} attempt(s) (${last})`);
}
