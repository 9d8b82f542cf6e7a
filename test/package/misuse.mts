// Must NOT type-check: a Result has to be narrowed before its value is read, and payloads are typed.
import { openSession, isEventOf } from 'dsh';

const opened = await openSession('x');
opened.value.inspect();
const e = { type: 'tool/call', seq: 0, time: 0, data: {} };
if (isEventOf(e, 'tool/call')) e.data.callId.toFixed();
