/**
 * ACP's newline-delimited JSON over an agent's stdio, in the shape the SDK's connection
 * takes (`{ readable, writable }`), without the web-stream adapters the SDK's own
 * `ndJsonStream` sits on.
 *
 * Why not `ndJsonStream(Writable.toWeb(stdin), Readable.toWeb(stdout))`: on that path every
 * message goes through three web streams and a chain of promises each way
 * (docs/performance.md, *turns*). Here:
 *
 * - **Writes** go to the pipe as they are made, one write each. A write that fills the pipe
 *   resolves on its drain; once stdin failed or was destroyed, writes reject (one still
 *   waiting for the drain included), which closes the SDK's connection. (Corking the writes
 *   of a tick into one `writev` saved a system call or two but made the agent wait for the
 *   whole tick's work — the next prompts of 16 sessions whose turns ended in one read — before
 *   starting on the first: the two processes took turns instead of working at once, and a
 *   tiny turn took longer; docs/performance.md, *turns*.)
 * - **Reads** split lines from the stream's own `data` events and hand each message to
 *   `accept` at once, in order: what it keeps (null: taken or dropped) waits for the SDK's
 *   next `read()` in a plain queue.
 *
 * The SDK's connection only ever calls `readable.getReader()` (then `read`, `releaseLock`,
 * `cancel`) and `writable.getWriter()` (then `write`, `releaseLock`), so both are such
 * objects, not full web streams. The rules of the SDK's own framing are kept: LF-terminated
 * lines (a trailing CR stripped), blank lines skipped, a line over `maxMessageBytes` fails the
 * stream, a line that is not JSON is answered with a parse error, a JSON array with "batches
 * are not supported", any other non-object with "invalid request".
 */
import type { Readable, Writable } from 'node:stream';

/** One JSON-RPC message as it travels (an object; its shape is the caller's to check). */
export type WireMessage = Record<string, unknown>;

/** Why a line read was not a message: the caller answers the agent (JSON-RPC's protocol errors). */
export type UnreadableLine = { kind: 'parse' } | { kind: 'batch' } | { kind: 'not-object'; value: unknown };

export interface NdJsonTransportOptions<M> {
  /**
   * Each message read, as soon as it is read: the message to hand the SDK, or null when it
   * was taken here (a session's update) or dropped. Called in the order of the stream.
   */
  accept(message: WireMessage): M | null;
  /** The answer to send the agent for a line that is not a JSON-RPC object (null: none). */
  answerUnreadable(line: UnreadableLine): WireMessage | null;
  /** Hears each message as it is sent (before it is queued for the pipe). */
  sent?(message: M): void;
  /** The longest line read (bytes, without its line ending); the SDK's default: 32 MiB. */
  maxMessageBytes?: number;
}

/** What a reader's `read()` resolves with. */
type ReadResult<M> = { done: false; value: M } | { done: true; value: undefined };

/** What the SDK's connection reads and writes through. */
export interface NdJsonTransport<M> {
  readable: ReadableStream<M>;
  writable: WritableStream<M>;
}

const defaultMaxMessageBytes = 32 * 1024 * 1024;
const newline = 0x0a;
const carriageReturn = 0x0d;

/** Messages queued for the SDK beyond this pause the agent's stdout until it reads on. */
const readQueueHighWater = 256;

/** The error a stream fails with when a line is longer than the limit (the SDK's message). */
export class MessageTooLargeError extends Error {
  constructor(readonly maxMessageBytes: number) {
    super(`Incoming ACP data exceeds the configured ${maxMessageBytes} byte limit`);
    this.name = 'MessageTooLargeError';
  }
}

export function ndJsonTransport<M extends object>(output: Writable, input: Readable, options: NdJsonTransportOptions<M>): NdJsonTransport<M> {
  const maxMessageBytes = options.maxMessageBytes ?? defaultMaxMessageBytes;

  // ---- writing ----
  let writeFailure: Error | null = null;
  const writeLine = (line: string): Promise<void> | undefined => {
    if (writeFailure) return Promise.reject(writeFailure);
    if (output.destroyed || output.writableEnded) return Promise.reject(new Error('The agent\'s stdin is closed'));
    const room = output.write(line, (error) => {
      if (error) writeFailure ??= error;
    });
    if (room) return undefined;
    // Backpressure: the next message waits until the pipe drains (or the stream ends).
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        output.off('drain', done);
        output.off('close', done);
        if (writeFailure) reject(writeFailure);
        // Closed without finishing (destroyed): what was waiting may never have reached the pipe.
        else if (output.destroyed && !output.writableFinished) reject(output.errored ?? new Error('The agent\'s stdin is closed'));
        else resolve();
      };
      output.on('drain', done);
      output.on('close', done);
    });
  };
  const send = (message: M | WireMessage): Promise<void> => writeLine(`${JSON.stringify(message)}\n`) ?? Promise.resolve();
  const writer = {
    write(message: M): Promise<void> {
      options.sent?.(message);
      return send(message);
    },
    releaseLock() {},
    close: () => new Promise<void>((resolve) => output.end(resolve)),
    abort: (reason?: unknown) => {
      output.destroy(reason instanceof Error ? reason : undefined);
      return Promise.resolve();
    },
  };
  const writable = { getWriter: () => writer } as unknown as WritableStream<M>;

  // ---- reading ----
  const queue: M[] = [];
  let waiting: { resolve(next: ReadResult<M>): void; reject(error: unknown): void } | null = null;
  let ended = false;
  let failure: unknown = null;
  let cancelled = false;
  /** Bytes of the line not ended yet, carried across chunks. */
  let partial: Buffer[] = [];
  let partialBytes = 0;

  const settle = () => {
    if (!waiting) return;
    const { resolve, reject } = waiting;
    if (queue.length > 0) {
      waiting = null;
      resolve({ done: false, value: queue.shift()! });
      if (queue.length < readQueueHighWater && input.isPaused() && !ended) input.resume();
    } else if (failure !== null) {
      waiting = null;
      reject(failure);
    } else if (ended) {
      waiting = null;
      resolve({ done: true, value: undefined });
    }
  };

  const fail = (error: unknown) => {
    if (ended || failure !== null) return;
    failure = error;
    detach();
    input.destroy();
    settle();
  };

  const handleLine = (text: string) => {
    const trimmed = text.trim();
    if (trimmed === '') return;
    let value: unknown;
    try {
      value = JSON.parse(trimmed);
    } catch {
      answer({ kind: 'parse' });
      return;
    }
    if (Array.isArray(value)) return answer({ kind: 'batch' });
    if (value === null || typeof value !== 'object') return answer({ kind: 'not-object', value });
    const kept = options.accept(value as WireMessage);
    // A reader cancelled by accept itself reads nothing more, this message included.
    if (kept === null || cancelled) return;
    queue.push(kept);
  };
  const answer = (line: UnreadableLine) => {
    const response = options.answerUnreadable(line);
    if (response) void send(response).catch(() => {});
  };

  const lineTooLong = (bytes: number) => bytes > maxMessageBytes;

  const onData = (chunk: Buffer) => {
    if (cancelled) return;
    let start = 0;
    let index = chunk.indexOf(newline);
    try {
      while (index !== -1) {
        let end = index;
        if (partialBytes === 0) {
          if (end > start && chunk[end - 1] === carriageReturn) end--;
          if (lineTooLong(end - start)) throw new MessageTooLargeError(maxMessageBytes);
          handleLine(chunk.toString('utf8', start, end));
        } else {
          partial.push(chunk.subarray(start, end));
          let line = Buffer.concat(partial, partialBytes + (end - start));
          partial = [];
          partialBytes = 0;
          if (line.length > 0 && line[line.length - 1] === carriageReturn) line = line.subarray(0, -1);
          if (lineTooLong(line.length)) throw new MessageTooLargeError(maxMessageBytes);
          handleLine(line.toString('utf8'));
        }
        if (cancelled) return;
        start = index + 1;
        index = chunk.indexOf(newline, start);
      }
      if (start < chunk.length) {
        const tail = chunk.subarray(start);
        // A CR ending the tail may be the line's ending (its LF in the next chunk): not counted, as the SDK's LineBuffer has it.
        const endingCarriageReturn = tail[tail.length - 1] === carriageReturn ? 1 : 0;
        if (lineTooLong(partialBytes + tail.length - endingCarriageReturn)) throw new MessageTooLargeError(maxMessageBytes);
        partial.push(tail);
        partialBytes += tail.length;
      }
    } catch (error) {
      partial = [];
      partialBytes = 0;
      fail(error);
      return;
    }
    if (queue.length >= readQueueHighWater) input.pause();
    settle();
  };
  const onEnd = () => {
    if (partialBytes > 0) {
      let line = Buffer.concat(partial, partialBytes);
      partial = [];
      partialBytes = 0;
      if (line[line.length - 1] === carriageReturn) line = line.subarray(0, -1);
      // As in onData: a throw of accept's fails the stream (here it would escape the 'end' event).
      try {
        handleLine(line.toString('utf8'));
      } catch (error) {
        fail(error);
        return;
      }
    }
    ended = true;
    detach();
    settle();
  };
  const onError = (error: Error) => fail(error);
  // A stream destroyed before its end (the process's pipe torn down) ends the connection as a failure, as Readable.toWeb has it.
  const onClose = () => {
    if (!ended) fail(new Error('The agent\'s stdout closed before its end'));
  };
  const detach = () => {
    input.off('data', onData);
    input.off('end', onEnd);
    input.off('error', onError);
    input.off('close', onClose);
  };
  input.on('data', onData);
  input.on('end', onEnd);
  input.on('error', onError);
  input.on('close', onClose);

  const reader = {
    read(): Promise<ReadResult<M>> {
      if (waiting) return Promise.reject(new TypeError('A read is already pending'));
      return new Promise<ReadResult<M>>((resolve, reject) => {
        waiting = { resolve, reject };
        settle();
      });
    },
    releaseLock() {},
    cancel(_reason?: unknown): Promise<void> {
      if (!cancelled) {
        cancelled = true;
        queue.length = 0;
        ended = true;
        detach();
        input.destroy();
        settle();
      }
      return Promise.resolve();
    },
  };
  const readable = { getReader: () => reader } as unknown as ReadableStream<M>;
  return { readable, writable };
}
