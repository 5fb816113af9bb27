/** The longest delay a timer may be given, and the schema of a timeout option. */
import { z } from 'zod';

/** Node's timers fire at once for a delay above 2^31 - 1 ms: no timing may be longer. */
export const maxTimerMs = 2 ** 31 - 1;
export const timeoutMsSchema = z.number().min(0).max(maxTimerMs, `must be at most ${maxTimerMs} ms (about 24.8 days), the longest timer Node keeps`);
