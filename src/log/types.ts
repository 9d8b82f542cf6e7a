/** The on-disk header (DSH `SessionHeader` as stored, only known fields). */
export interface SessionHeader {
  version: number;
  id: string;
  createdAt: number;
  cwd?: string;
  parentSession?: string;
  seedLength?: number;
  origin?: 'subagent';
  delegationDepth: number;
  agentPreset?: string;
}

export type SurfaceOp = 'append' | { op: 'replace'; start: number; end: number };

/** A SessionEvent as decoded (payload untyped: DSH's vocabulary is merge-extensible). */
export interface SessionEvent {
  type: string;
  seq: number;
  time: number;
  data: any;
  ignorable?: true;
  sourceEventSeqs?: number[];
  surfaceOp?: SurfaceOp;
}

export type Encoding = 'zstd' | 'none';
