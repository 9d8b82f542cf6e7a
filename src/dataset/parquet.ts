/**
 * The one place that knows which Parquet library writes the files. The rest
 * of the dataset layer sees `TableFile`: open with a table's columns and
 * key-value metadata, append rows, close. The backend is hyparquet-writer
 * (pure JavaScript, one pure-JS dependency, nothing to compile or download at
 * install time); see README "Datasets" for why.
 */
import { writeSync } from 'node:fs';
import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import type { ColumnDef, Row } from './schema.js';

export interface TableFile {
  /** Buffer rows; a row group is written every `rowGroupRows` rows. */
  append(rows: readonly Row[]): void;
  /** Write the last row group and the footer. Returns the rows written. */
  close(): number;
}

export interface TableFileOptions {
  columns: readonly ColumnDef[];
  /** Key-value metadata in the footer. */
  metadata: Record<string, string>;
  createdBy: string;
  rowGroupRows?: number;
}

type SchemaElement = ConstructorParameters<typeof ParquetWriter>[0]['schema'][number];

function element(c: ColumnDef): SchemaElement {
  const base = { name: c.name, repetition_type: 'OPTIONAL' as const };
  switch (c.kind) {
    case 'string':
      return { ...base, type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' } };
    case 'int32':
      return { ...base, type: 'INT32' };
    case 'int64':
      return { ...base, type: 'INT64' };
    case 'double':
      return { ...base, type: 'DOUBLE' };
    case 'bool':
      return { ...base, type: 'BOOLEAN' };
    case 'timestamp':
      return { ...base, type: 'INT64', converted_type: 'TIMESTAMP_MILLIS', logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MILLIS' } };
  }
}

/** A row value in the column's physical representation (null for missing or ill-typed values). */
function cell(c: ColumnDef, v: Row[string]): unknown {
  if (v === undefined || v === null) return null;
  switch (c.kind) {
    case 'string':
      return typeof v === 'string' ? v : String(v);
    case 'int32':
      return typeof v === 'number' && Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31 ? v : null;
    case 'int64':
    case 'timestamp':
      return typeof v === 'number' && Number.isSafeInteger(v) ? BigInt(v) : null;
    case 'double':
      return typeof v === 'number' && Number.isFinite(v) ? v : null;
    case 'bool':
      return typeof v === 'boolean' ? v : null;
  }
}

/**
 * A buffered writer into an open file descriptor (the publisher's temporary file): the library's
 * own file writer flushed by path, this one by `fd`, in chunks of about a megabyte.
 */
function fdWriter(fd: number): ByteWriter {
  const writer = new ByteWriter();
  const chunkSize = 1_000_000;
  const flush = () => {
    const chunk = new Uint8Array(writer.buffer, 0, writer.index);
    for (let off = 0; off < chunk.length; ) off += writeSync(fd, chunk, off, chunk.length - off);
    writer.index = 0;
  };
  writer.ensure = (size: number) => {
    if (writer.index > chunkSize) flush();
    if (writer.index + size > writer.buffer.byteLength) {
      const grown = new ArrayBuffer(Math.max(writer.buffer.byteLength * 2, writer.index + size));
      new Uint8Array(grown).set(new Uint8Array(writer.buffer));
      writer.buffer = grown;
      writer.view = new DataView(writer.buffer);
    }
  };
  writer.getBuffer = () => {
    throw new Error('getBuffer is not supported by a file writer');
  };
  writer.getBytes = () => {
    throw new Error('getBytes is not supported by a file writer');
  };
  writer.finish = flush;
  return writer;
}

/** Write a Parquet file into `fd` (an empty file open for writing, e.g. the output publisher's temporary file). */
export function openTableFile(fd: number, options: TableFileOptions): TableFile {
  const columns = options.columns;
  const writer = fdWriter(fd);
  const pq = new ParquetWriter({
    writer,
    schema: [{ name: 'root', num_children: columns.length }, ...columns.map(element)],
    codec: 'SNAPPY',
    kvMetadata: Object.entries(options.metadata).map(([key, value]) => ({ key, value })),
    createdBy: options.createdBy,
  });
  const groupRows = options.rowGroupRows ?? 100_000;
  let pending: Row[] = [];
  let total = 0;
  const flush = () => {
    if (pending.length === 0) return;
    const columnData = columns.map((c) => ({ name: c.name, data: pending.map((r) => cell(c, r[c.name])) as never }));
    void pq.write({ columnData, rowGroupSize: pending.length });
    total += pending.length;
    pending = [];
  };
  return {
    append(rows) {
      for (const r of rows) {
        pending.push(r);
        if (pending.length >= groupRows) flush();
      }
    },
    close() {
      flush();
      void pq.finish();
      return total;
    },
  };
}
