import { Command, Option } from 'commander';
import type { Io } from '../io.js';
import { writeOut, preview, escapeControl } from '../io.js';
import { forEachLogicalEvent, heldBytesBudget, HeldOutput, HeldOutputFull, logicalEventJson, Output, SINGLE_PASS_BYTES, streamPassBytes, streamValidated, targetBytes } from '../stream.js';
import { addCommon, cacheFor, decoderFor, envFor, indexUseFor, intOption, resolveCli, EXIT, type CommonOptions, speculativeAction, addExamples } from '../shared.js';
import { Labels, labelNeedsFold, type SurfaceLabel, foldOf, TURN_STARTS, EVENT_PREVIEW_WIDTH, eventSummary } from '../../api/views.js';
import { type SessionEvent, UsageError, inspectTarget, inspectTargetIndexed, type SessionInspection, type ResolvedTarget, floorIndexBy, toJson } from '../../api/log.js';
import { progressOption } from '../progress.js';
import { failureJson } from '../render/surface.js';

interface EventsOptions extends CommonOptions {
  streamPassBytes?: string;
  type?: string[];
  from?: string;
  to?: string;
  turn?: string;
  label?: SurfaceLabel[];
  full?: boolean;
  labels?: boolean;
  follow?: boolean;
  interval?: string;
  followStall?: string;
}


/** The NDJSON record's first members, up to the event's time (its label, flags and the event follow). */
function jsonHead(sessionIdJson: string, seq: number, type: string, time: unknown): string {
  return `${recordStart(sessionIdJson)}${seq}${typeAndTime(type)}${time}`;
}

/** `jsonHead` up to the seq's value. */
function recordStart(sessionIdJson: string): string {
  return `{"sessionId":${sessionIdJson},"seq":`;
}

/** `jsonHead` between the seq's value and the time's. */
function typeAndTime(type: string): string {
  return `,"type":${typeJson(type)},"time":`;
}

const typeJsonCache = new Map<string, string>();
/** JSON text of an event type (a log has a few dozen distinct ones). */
function typeJson(type: string): string {
  let json = typeJsonCache.get(type);
  if (json === undefined) {
    json = toJson(type);
    if (typeJsonCache.size < 4096) typeJsonCache.set(type, json);
  }
  return json;
}

export function registerEvents(program: Command, io: Io, setExit: (code: number) => void): void {
  const cmd = program
    .command('events')
    .description('one line per event of the logical log (seq, time, turn/step, label, type, preview)')
    .argument('<target>', 'session file, directory, id, or -')
    .option('--type <types...>', 'only these event types (prefix match with a trailing /, e.g. compaction/)')
    .option('--from <seq>', 'first seq (inclusive)')
    .option('--to <seq>', 'last seq (inclusive)')
    .option('--turn <n>', 'only events of this turn')
    .addOption(new Option('--label <labels...>', 'only events with these surface labels').choices(['current', 'shadowed', 'log-only']))
    .option('--full', 'print whole payloads instead of previews (human mode)')
    .option('--no-labels', 'stream events as they are read, without surface labels (labels need the whole log): first output at once on any size; DSH\'s verdict on the log comes last')
    .option('-f, --follow', 'keep reading a live log (read-only polling): print each event once committed, labels as of the fold so far; a later compaction re-labels earlier events; Ctrl-C stops (exit 0)')
    .option('--interval <ms>', 'with --follow: poll interval (fs.watch wakes it sooner)', '100');
  addCommon(cmd, { json: 'stream NDJSON: one session-query record per line with the event' });
  // Test hooks, not settings: logs of at least this many bytes take the two passes (default 4 MiB);
  // with --follow, a torn tail unchanged this many ms is reported as stalled (default 5 s).
  cmd.addOption(new Option('--stream-pass-bytes <n>').hideHelp());
  cmd.addOption(new Option('--follow-stall <ms>').hideHelp());
  addExamples(
    cmd,
    'dsh events session-incident-1 --root fixtures/incident --type tool/',
    'dsh events session-incident-1 --root fixtures/incident --turn 3 --json',
    'dsh events ~/.dsh/sessions/--home-me-proj--/session-1 --follow',
  );
  cmd.action(
    speculativeAction(io, setExit, async (target: string, opts: EventsOptions) => {
      const env = envFor(io, opts);
      const from = intOption('--from', opts.from);
      const to = intOption('--to', opts.to);
      const turn = intOption('--turn', opts.turn);
      const resolved = await resolveCli(target, opts);
      const types = opts.type;
      const typeOk = (t: string) => !types || types.some((x) => (x.endsWith('/') ? t.startsWith(x) : t === x));
      if (opts.labels === false && opts.label) throw new UsageError('--label filters by surface label; it cannot be combined with --no-labels');
      const out = new Output(io.stdout);
      let currentTurn: number | undefined;
      const labText = (label: SurfaceLabel | undefined) =>
        opts.json
          ? label
            ? `,"surface":"${label}"`
            : ''
          : label === 'current'
            ? env.c.green('current ')
            : label === 'shadowed'
              ? env.c.yellow('shadowed')
              : label
                ? env.c.dim('log-only')
                : env.c.dim('-'.padEnd(8));
      /**
       * The per-event printer; `labels` undefined: records carry no surface label; `held`: printed
       * during the validating pass, a surface-type event's label left as a hole (filled on release).
       */
      const printer = (labels: Labels | undefined, sessionId: unknown, held?: HeldOutput) => {
        const id = toJson(String(sessionId ?? ''));
        return (e: SessionEvent, text: string | undefined, synthetic: boolean, given?: SurfaceLabel) => {
          if (e.type === 'turn/start') currentTurn = e.data?.turn as number | undefined; // as logged
          const eventTurn = typeof e.data?.turn === 'number' ? e.data.turn : currentTurn;
          if (from !== undefined && e.seq < from) return;
          if (to !== undefined && e.seq > to) return;
          if (turn !== undefined && eventTurn !== turn) return;
          if (!typeOk(e.type)) return;
          const deferred = held !== undefined && given === undefined && labelNeedsFold(e.type);
          const label = deferred ? undefined : given ?? (held ? 'log-only' : labels?.ofEvent(e));
          if (!deferred && opts.label && !opts.label.includes(label as SurfaceLabel)) return;
          let head: string;
          let tail: string;
          if (opts.json) {
            head = jsonHead(id, e.seq, e.type, e.time);
            // The event's text is pushed on its own (not joined into one long string first).
            tail = `${synthetic ? ',"synthetic":true' : ''},"event":`;
          } else {
            const step = typeof e.data?.step === 'number' ? `${eventTurn ?? '-'}/${e.data.step}` : `${eventTurn ?? '-'}`;
            const syn = synthetic ? env.c.magenta(' [synthetic]') : '';
            const body = opts.full ? escapeControl(toJson(e.data)) : preview(eventSummary(e), EVENT_PREVIEW_WIDTH);
            head = `${String(e.seq).padStart(6)}  ${new Date(e.time).toISOString()}  ${step.padEnd(7)} `;
            tail = `  ${env.c.cyan(escapeControl(e.type).padEnd(20))}${syn} ${body}\n`;
          }
          const sink = held ?? out;
          if (deferred) {
            held!.startLine();
            held!.push(head);
            held!.hole(e.seq);
          } else tail = head + labText(label) + tail;
          if (opts.json) {
            const json = logicalEventJson(e, text);
            // A long event text is pushed on its own (joining it first would copy it once more).
            if (json.length > LONG_TEXT) {
              sink.push(tail);
              sink.push(json);
              sink.push('}\n');
            } else sink.push(tail + json + '}\n');
          } else sink.push(tail);
          if (deferred) held!.endLine();
        };
      };
      if (opts.follow) {
        if (opts.labels === false) throw new UsageError('--follow labels each event as of the fold so far; --no-labels does not apply');
        const { followLoop, intervalOption, stallOption } = await import('../follow.js');
        const intervalMs = intervalOption(opts.interval);
        const stallMs = stallOption(opts.followStall);
        let print: ReturnType<typeof printer> | undefined;
        let sid = '""';
        return followLoop(io, env, resolved, {
          onMeta: (meta) => {
            print = printer(undefined, meta.id);
            sid = toJson(meta.id);
          },
          onEvent: (e, text, label) => print!(e, text, false, label),
          onRelabel: (seq, label) => {
            if (from !== undefined && seq < from) return;
            if (to !== undefined && seq > to) return;
            if (opts.label && !opts.label.includes(label)) return;
            if (opts.json) out.push(`{"sessionId":${sid},"seq":${seq},"relabel":"${label}"}\n`);
            else out.push(env.c.dim(`${String(seq).padStart(6)}  is now ${label}`) + '\n');
          },
        }, { intervalMs, ...(stallMs !== undefined ? { stallMs } : {}), decoder: decoderFor(opts), flush: () => out.flush() });
      }
      let r;
      if (opts.labels === false) {
        // One pass, printing as events are read: the first lines appear at once whatever the
        // log's size. DSH's verdict on the whole log comes at the end (exit 1 if it refuses it).
        let print: ReturnType<typeof printer> | undefined;
        r = await inspectTarget(resolved, {
          decoder: decoderFor(opts),
          collect: false,
          skipArtifact: true,
          onMeta: (meta) => {
            print = printer(undefined, meta.id);
          },
          onLogical: (e, text) => print!(e, text, false),
          between: () => out.maybeFlush(),
        });
        if (!r.error && print) for (const c of r.closers) print(c, undefined, true);
      } else if (from !== undefined || to !== undefined) {
        r = await seqWindow(io, opts, resolved, from ?? 0, to, printer, out, (turnStart) => {
          currentTurn = turnStart?.data?.turn as number | undefined; // as logged
        });
      } else {
        // NDJSON of a large log (--turn reads every event's turn): validated first, then each line's
        // bytes copied out where they are its event's JSON; smaller logs print during the one pass.
        const streamable = opts.json === true && turn === undefined;
        if (!streamable || targetBytes(resolved) < streamPassBytes(intOption('--stream-pass-bytes', opts.streamPassBytes))) r = await printedInThePass(resolved, opts, printer, labText, out, () => (currentTurn = undefined));
        if (!r && streamable) {
          r = await streamValidated(
            resolved,
            { decoder: decoderFor(opts) },
            cacheFor(io, opts),
            (valid) => {
              const labels = new Labels(valid.surface!.nodes, valid.surface!.replacements);
              const id = toJson(String(valid.meta?.id ?? ''));
              // The record's constant pieces as bytes, copied into the output as they are: most records
              // are a packed row's members, and encoding each piece from a string was a call into the
              // runtime per piece, three per member.
              const fillBytes = new Map<string, Buffer>();
              const startBytes = Buffer.from(recordStart(id));
              const typeTimeBytes = new Map<string, Buffer>();
              const typeTime = (type: string): Buffer => {
                let bytes = typeTimeBytes.get(type);
                if (bytes === undefined) {
                  bytes = Buffer.from(typeAndTime(type));
                  if (typeTimeBytes.size < 4096) typeTimeBytes.set(type, bytes);
                }
                return bytes;
              };
              const chunkTypeTimeBytes = typeTime('assistant/chunk');
              /**
               * The record up to its event's JSON (`jsonHead`, then the label), written piece by piece
               * (`pushInt` writes what `String` would); false, writing nothing, when the filters leave
               * the event out.
               */
              const opening = (seq: number, type: string, typeAndTimeBytes: Buffer, time: number): boolean => {
                if (!typeOk(type)) return false;
                const label = labelNeedsFold(type) ? labels.of(seq) : 'log-only';
                if (opts.label && !opts.label.includes(label)) return false;
                let after = fillBytes.get(label);
                if (after === undefined) fillBytes.set(label, (after = Buffer.from(`${labText(label)},"event":`)));
                out.pushText(startBytes);
                out.pushInt(seq);
                out.pushText(typeAndTimeBytes);
                out.pushInt(time);
                out.pushText(after);
                return true;
              };
              return {
                verbatim: (h, line) => {
                  if (!opening(h.seq, h.type, typeTime(h.type), h.time)) return;
                  out.pushBytes(line);
                  out.pushAscii('}\n');
                },
                chunk: (seq, time, json) => {
                  if (!opening(seq, 'assistant/chunk', chunkTypeTimeBytes, time)) return;
                  out.push(json);
                  out.pushAscii('}\n');
                },
                chunkBytes: (seq, time, member) => {
                  if (!opening(seq, 'assistant/chunk', chunkTypeTimeBytes, time)) return;
                  out.pushRowMember(member);
                  out.pushAscii('}\n');
                },
                event: printer(labels, valid.meta?.id),
              };
            },
            out,
          );
        }
        r ??= await forEachLogicalEvent(resolved, { decoder: decoderFor(opts) }, (valid) => printer(new Labels(valid.surface!.nodes, valid.surface!.replacements), valid.meta?.id), out);
      }
      await out.flush();
      if (r.error) {
        const e = r.error;
        if (opts.json) await writeOut(io.stdout, failureJson(e));
        else io.stderr.write(`dsh: ${e.class}: ${escapeControl(e.message)}\n`);
        return e.kind === 'io' ? EXIT.usage : EXIT.failed;
      }
      return EXIT.ok;
    }),
  );
}

/** Event texts longer than this are written to the output buffer by themselves. */
const LONG_TEXT = 4096;

type MakePrinter = (labels: Labels | undefined, sessionId: unknown, held?: HeldOutput) => Printer;

/**
 * A labelled stream of a log small enough to hold its output: printed during the one validating
 * pass into held buffers (no event is held), surface labels filled in once the fold is final.
 * Undefined when it cannot answer (the output outgrew its budget, or the printer failed): the
 * caller prints the usual way (`reset` clears the printer's state first).
 */
async function printedInThePass(
  resolved: ResolvedTarget,
  opts: EventsOptions,
  printer: MakePrinter,
  labText: (label: SurfaceLabel) => string,
  out: Output,
  reset: () => void,
): Promise<SessionInspection | undefined> {
  if (targetBytes(resolved) > SINGLE_PASS_BYTES) return undefined;
  const held = new HeldOutput(heldBytesBudget());
  let print: Printer | undefined;
  let failed = false;
  let r: SessionInspection;
  try {
    r = await inspectTarget(resolved, {
      decoder: decoderFor(opts),
      collect: false,
      skipArtifact: true,
      onMeta: (meta) => {
        print = printer(undefined, meta.id, held);
      },
      onLogical: (e, text) => {
        if (failed) return;
        try {
          print!(e, text, false);
        } catch (error) {
          if (error instanceof HeldOutputFull) throw error;
          // A log DSH refuses can trip the printer; an accepted one is printed the usual way (which says why).
          failed = true;
        }
      },
    });
  } catch (error) {
    if (!(error instanceof HeldOutputFull)) throw error;
    reset();
    return undefined;
  }
  if (r.error) return r;
  if (failed || !r.surface) {
    reset();
    return undefined;
  }
  const labels = new Labels(r.surface.nodes, r.surface.replacements);
  const fills = new Map<SurfaceLabel, Buffer>();
  await held.release(out.stream, (seq) => {
    const label = labels.of(seq);
    if (opts.label && !opts.label.includes(label)) return null;
    let b = fills.get(label);
    if (!b) fills.set(label, (b = Buffer.from(labText(label))));
    return b;
  });
  const closers = printer(labels, r.meta?.id);
  for (const c of r.closers) closers(c, undefined, true);
  return r;
}

/** Events re-read per batch of a seq window (bounded memory whatever the window). */
const WINDOW_BATCH = 4096;

type Printer = (e: SessionEvent, text: string | undefined, synthetic: boolean) => void;

/**
 * `--from/--to` through the session index: one validating pass the first time (it writes the
 * index), then only the frames that hold the window are decoded. The printer sees the window's
 * events, after the turn/start the first of them belongs to (for its turn column and `--turn`).
 */
async function seqWindow(
  io: Io,
  opts: EventsOptions,
  resolved: ResolvedTarget,
  from: number,
  to: number | undefined,
  printer: (labels: Labels, sessionId: unknown) => Printer,
  out: Output,
  enterTurn: (turnStart: SessionEvent | undefined) => void,
): Promise<SessionInspection> {
  const indexed = await inspectTargetIndexed(resolved, { decoder: decoderFor(opts), ...progressOption(io, opts) }, indexUseFor(io, opts, [TURN_STARTS]));
  try {
    const r = indexed.inspection;
    if (r.error) return r;
    const rereader = indexed.rereader;
    if (!rereader) {
      // Migrated legacy events (an old, small log): the plain pass.
      indexed.close();
      return await forEachLogicalEvent(resolved, { decoder: decoderFor(opts) }, (valid) => printer(new Labels(valid.surface!.nodes, valid.surface!.replacements), valid.meta?.id), out);
    }
    const print = printer(new Labels(r.surface!.nodes, r.surface!.replacements), r.meta?.id);
    const stored = r.storedEventCount;
    const last = Math.min(to ?? Infinity, stored + r.closers.length - 1);
    const starts = foldOf(indexed.folds, TURN_STARTS);
    const at = floorIndexBy(starts.length, (i) => starts[i] as number, Math.min(from, stored) - 1);
    const before = at >= 0 ? (starts[at] as number) : undefined;
    enterTurn(before !== undefined ? (await rereader.events([[before, before]])).get(before) : undefined);
    for (let a = from; a <= Math.min(last, stored - 1); a += WINDOW_BATCH) {
      const b = Math.min(a + WINDOW_BATCH - 1, last, stored - 1);
      const texts = new Map<number, string>();
      const got = await rereader.events([[a, b]], texts);
      for (let q = a; q <= b; q++) print(got.get(q) as SessionEvent, texts.get(q), false);
      await out.maybeFlush();
    }
    for (const c of r.closers) if (c.seq >= from && c.seq <= last) print(c, undefined, true);
    return r;
  } finally {
    indexed.close();
  }
}
