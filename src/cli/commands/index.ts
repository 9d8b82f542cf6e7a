import type { Command } from 'commander';
import type { Io } from '../io.js';
import { registerInspect } from './inspect.js';
import { registerCheck } from './check.js';
import { registerExport } from './export.js';
import { registerEvents } from './events.js';
import { registerFrames } from './frames.js';
import { registerRequest } from './request.js';
import { registerSurface } from './surface.js';
import { registerTrace } from './trace.js';
import { registerTranscript } from './transcript.js';
import { registerLs } from './ls.js';
import { registerLineage } from './lineage.js';
import { registerReplay } from './replay.js';
import { registerHistory } from './history.js';
import { registerSalvage } from './salvage.js';
import { registerRedact } from './redact.js';
import { registerSearch } from './search.js';
import { registerFork } from './fork.js';
import { registerStats } from './stats.js';
import { registerCompactions } from './compactions.js';
import { registerReport } from './report.js';

/** A command registers itself on the program; `setExit` records its exit code. */
export type RegisterCommand = (program: Command, io: Io, setExit: (code: number) => void) => void;

/** The command registry: one line per command module. */
export const COMMANDS: RegisterCommand[] = [registerInspect, registerCheck, registerEvents, registerFrames, registerExport, registerRequest, registerSurface, registerTrace, registerTranscript, registerLs, registerLineage, registerReplay, registerHistory, registerSalvage, registerRedact, registerSearch, registerFork, registerStats, registerReport, registerCompactions];
