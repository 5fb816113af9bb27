/**
 * ACP's ndjson framing over stdio (services/acp-transport.ts) driven through real node
 * streams: a PassThrough stands for the agent's stdout, a Writable that records each
 * `_write`/`_writev` call for its stdin, so a test sees the lines read, the messages handed on
 * and how many writes reached the pipe. The rules checked are the SDK's own framing's
 * (LF lines, a trailing CR stripped, blank lines skipped, the line-length limit with a CR
 * not counted, protocol errors answered), plus the transport's own: writes of a tick
 * coalesced, backpressure both ways, cancel and failures of the input.
 */
import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { MessageTooLargeError, ndJsonTransport, type UnreadableLine, type WireMessage } from '../../services/acp-transport.js';

/** Lets the event loop turn once (pending I/O callbacks, ticks and microtasks run). */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Waits, turn by turn, until `condition` holds; fails after a deadline instead of hanging. */
async function until(condition: () => boolean, what = 'the condition'): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await turn();
  }
}

/** A promise's state, without waiting for it. */
function track<T>(promise: Promise<T>) {
  const state: { settled: 'pending' | 'resolved' | 'rejected'; error?: unknown } = { settled: 'pending' };
  promise.then(
    () => (state.settled = 'resolved'),
    (error: unknown) => {
      state.settled = 'rejected';
      state.error = error;
    },
  );
  return state;
}

/**
 * The agent's stdin: records each call that reached it (a `_write` is one chunk, a `_writev`
 * many) and the end. With `hold`, a write completes only when the test calls `release()`;
 * with `failWith`, each write calls back that error.
 */
function recordingPipe(options: { highWaterMark?: number; hold?: boolean; failWith?: Error } = {}) {
  const calls: string[][] = [];
  const events: string[] = [];
  const held: Array<() => void> = [];
  const complete = (callback: (error?: Error | null) => void) => {
    if (options.failWith) callback(options.failWith);
    else if (options.hold) held.push(() => callback());
    else callback();
  };
  const pipe = new Writable({
    highWaterMark: options.highWaterMark,
    write(chunk: Buffer, _encoding, callback) {
      calls.push([chunk.toString('utf8')]);
      events.push('write');
      complete(callback);
    },
    writev(chunks, callback) {
      calls.push(chunks.map(({ chunk }) => (chunk as Buffer).toString('utf8')));
      events.push('write');
      complete(callback);
    },
    final(callback) {
      events.push('end');
      callback();
    },
  });
  // The stdin's owner listens for its errors (the agent-process service does); so does the test.
  const errors: Error[] = [];
  pipe.on('error', (error) => errors.push(error));
  return {
    pipe,
    calls,
    events,
    errors,
    /** Every line that reached the pipe, in order. */
    lines: () => calls.flat().join('').split('\n').slice(0, -1),
    release() {
      for (const next of held.splice(0)) next();
    },
    held,
  };
}

/** The answer the test's `answerUnreadable` gives, recognisable in what is written. */
const unreadableAnswer = (line: UnreadableLine): WireMessage => ({ jsonrpc: '2.0', id: null, error: { code: line.kind === 'parse' ? -32700 : -32600, message: line.kind } });

/** A transport over a PassThrough stdout and a recording stdin; `keep` decides what the SDK would see. */
function connect(
  options: {
    keep?: (message: WireMessage) => WireMessage | null;
    maxMessageBytes?: number;
    stdin?: ReturnType<typeof recordingPipe>;
  } = {},
) {
  const stdout = new PassThrough();
  const stdin = options.stdin ?? recordingPipe();
  const accepted: WireMessage[] = [];
  const unreadable: UnreadableLine[] = [];
  const sent: WireMessage[] = [];
  const transport = ndJsonTransport<WireMessage>(stdin.pipe, stdout, {
    accept(message) {
      accepted.push(message);
      return options.keep ? options.keep(message) : message;
    },
    answerUnreadable(line) {
      unreadable.push(line);
      return unreadableAnswer(line);
    },
    sent: (message) => sent.push(message),
    maxMessageBytes: options.maxMessageBytes,
  });
  const reader = transport.readable.getReader();
  const writer = transport.writable.getWriter();
  return { stdout, stdin, accepted, unreadable, sent, reader, writer };
}

/** Reads until the stream is done; the messages read. */
async function readAll(reader: ReadableStreamDefaultReader<WireMessage>): Promise<WireMessage[]> {
  const messages: WireMessage[] = [];
  for (;;) {
    const next = await reader.read();
    if (next.done) return messages;
    messages.push(next.value);
  }
}

/** One ndjson line (with its LF) for a message. */
const line = (message: unknown) => `${JSON.stringify(message)}\n`;

/** A JSON object whose serialization is exactly `bytes` bytes long. */
function messageOfBytes(bytes: number): string {
  const empty = '{"pad":""}';
  const text = `{"pad":"${'x'.repeat(bytes - empty.length)}"}`;
  expect(Buffer.byteLength(text)).toBe(bytes);
  return text;
}

describe('reading: framing', () => {
  it('splits LF-terminated lines into messages', async () => {
    const { stdout, reader } = connect();
    stdout.end(`${line({ id: 1 })}${line({ id: 2 })}`);
    expect(await readAll(reader)).toEqual([{ id: 1 }, { id: 2 }]);
  });

  it('strips a trailing CR (CRLF lines)', async () => {
    const { stdout, reader, unreadable } = connect();
    stdout.end('{"id":1}\r\n{"id":"two"}\r\n');
    expect(await readAll(reader)).toEqual([{ id: 1 }, { id: 'two' }]);
    expect(unreadable).toEqual([]);
  });

  it('joins a line split over many chunks', async () => {
    const { stdout, reader } = connect();
    stdout.write('{"id":');
    await turn();
    stdout.write('1,"text":"he');
    await turn();
    stdout.write('llo"}\r');
    await turn();
    stdout.end('\n');
    expect(await readAll(reader)).toEqual([{ id: 1, text: 'hello' }]);
  });

  it('joins a line sent byte by byte, a multi-byte UTF-8 character split between chunks included', async () => {
    const { stdout, reader, unreadable } = connect();
    const bytes = Buffer.from(line({ text: 'a€b😀c' }));
    let chunks = 0;
    stdout.on('data', () => chunks++);
    for (const byte of bytes) {
      stdout.write(Buffer.of(byte));
      await turn();
    }
    stdout.end();
    expect(await readAll(reader)).toEqual([{ text: 'a€b😀c' }]);
    expect(chunks).toBe(bytes.length);
    expect(unreadable).toEqual([]);
  });

  it('delivers several lines of one chunk, in order', async () => {
    const { stdout, reader, accepted } = connect();
    stdout.write(Buffer.from([1, 2, 3, 4, 5].map((id) => line({ id })).join('')));
    await until(() => accepted.length === 5, 'the five messages');
    stdout.end();
    expect(await readAll(reader)).toEqual([1, 2, 3, 4, 5].map((id) => ({ id })));
  });

  it('skips blank and whitespace-only lines', async () => {
    const { stdout, reader, unreadable, stdin } = connect();
    stdout.end(`\n\r\n   \n\t \r\n${line({ id: 1 })}\n \n${line({ id: 2 })}`);
    expect(await readAll(reader)).toEqual([{ id: 1 }, { id: 2 }]);
    expect(unreadable).toEqual([]);
    expect(stdin.calls).toEqual([]);
  });

  it('delivers a last line without LF at the end of the stream', async () => {
    const { stdout, reader, accepted } = connect();
    stdout.write(line({ id: 1 }));
    stdout.write('{"id":');
    await until(() => accepted.length === 1, 'the first message');
    expect(accepted).toEqual([{ id: 1 }]);
    stdout.end('2}');
    expect(await readAll(reader)).toEqual([{ id: 1 }, { id: 2 }]);
  });

  it('a last line of CR alone or whitespace at the end is no message', async () => {
    const { stdout, reader, unreadable } = connect();
    stdout.end(`${line({ id: 1 })} \r`);
    expect(await readAll(reader)).toEqual([{ id: 1 }]);
    expect(unreadable).toEqual([]);
  });

  it('delivers in the order of the stream, however the chunks fall', async () => {
    const { stdout, reader } = connect();
    const text = Array.from({ length: 40 }, (_, id) => (id % 3 === 0 ? `${JSON.stringify({ id })}\r\n` : line({ id }))).join('');
    // Chunks of uneven sizes, cutting lines anywhere.
    const sizes = [1, 7, 13, 2, 31, 5, 64, 3];
    let offset = 0;
    for (let index = 0; offset < text.length; index++) {
      const size = sizes[index % sizes.length]!;
      stdout.write(text.slice(offset, offset + size));
      offset += size;
      if (index % 4 === 0) await turn();
    }
    stdout.end();
    expect((await readAll(reader)).map((message) => message.id)).toEqual(Array.from({ length: 40 }, (_, id) => id));
  });
});

describe('reading: accept', () => {
  it('hears each message once, in order, as it arrives, before any read', async () => {
    const { stdout, accepted } = connect();
    stdout.write(line({ id: 1 }));
    await until(() => accepted.length === 1, 'the first message');
    stdout.write(`${line({ id: 2 })}${line({ id: 3 })}`);
    await until(() => accepted.length === 3, 'the next two');
    expect(accepted).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }]);
  });

  it('queues only what it keeps; the kept come out of read() in order, then done once the input ended', async () => {
    const { stdout, reader, accepted } = connect({ keep: (message) => (message.take === true ? null : { ...message, kept: true }) });
    stdout.write(`${line({ id: 1 })}${line({ id: 2, take: true })}${line({ id: 3 })}`);
    stdout.write(`${line({ id: 4, take: true })}${line({ id: 5 })}`);
    await until(() => accepted.length === 5, 'all five messages');
    expect(await reader.read()).toEqual({ done: false, value: { id: 1, kept: true } });
    stdout.end();
    await until(() => stdout.readableEnded, 'the end of stdout');
    expect(await reader.read()).toEqual({ done: false, value: { id: 3, kept: true } });
    expect(await reader.read()).toEqual({ done: false, value: { id: 5, kept: true } });
    expect(await reader.read()).toEqual({ done: true, value: undefined });
    expect(await reader.read()).toEqual({ done: true, value: undefined });
  });

  it('a read pending before the data resolves with the first kept message', async () => {
    const { stdout, reader } = connect({ keep: (message) => (message.id === 1 ? null : message) });
    const pending = reader.read();
    stdout.write(`${line({ id: 1 })}${line({ id: 2 })}`);
    expect(await pending).toEqual({ done: false, value: { id: 2 } });
  });

  it('a read pending when the input ends with nothing kept resolves done', async () => {
    const { stdout, reader } = connect({ keep: () => null });
    const pending = reader.read();
    stdout.end(line({ id: 1 }));
    expect(await pending).toEqual({ done: true, value: undefined });
  });
});

describe('reading: lines that are not a JSON-RPC object', () => {
  it('answers invalid JSON with a parse error written to stdin, and goes on', async () => {
    const { stdout, reader, accepted, unreadable, stdin } = connect();
    stdout.end(`{"id":1,\n${line({ id: 2 })}`);
    expect(await readAll(reader)).toEqual([{ id: 2 }]);
    expect(unreadable).toEqual([{ kind: 'parse' }]);
    expect(accepted).toEqual([{ id: 2 }]);
    await until(() => stdin.lines().length === 1, 'the answer on stdin');
    expect(stdin.lines()).toEqual([JSON.stringify(unreadableAnswer({ kind: 'parse' }))]);
  });

  it('answers a JSON array as a batch, without accepting it', async () => {
    const { stdout, reader, accepted, unreadable, stdin } = connect();
    stdout.end(`[{"id":1},{"id":2}]\n${line({ id: 3 })}`);
    expect(await readAll(reader)).toEqual([{ id: 3 }]);
    expect(unreadable).toEqual([{ kind: 'batch' }]);
    expect(accepted).toEqual([{ id: 3 }]);
    await until(() => stdin.lines().length === 1, 'the answer on stdin');
    expect(stdin.lines()).toEqual([JSON.stringify(unreadableAnswer({ kind: 'batch' }))]);
  });

  it('answers a JSON number, string, boolean or null as not an object, with the value', async () => {
    const { stdout, reader, accepted, unreadable, stdin } = connect();
    stdout.end(`42\n"text"\r\nnull\ntrue\n${line({ id: 1 })}`);
    expect(await readAll(reader)).toEqual([{ id: 1 }]);
    expect(unreadable).toEqual([
      { kind: 'not-object', value: 42 },
      { kind: 'not-object', value: 'text' },
      { kind: 'not-object', value: null },
      { kind: 'not-object', value: true },
    ]);
    expect(accepted).toEqual([{ id: 1 }]);
    await until(() => stdin.lines().length === 4, 'the four answers on stdin');
  });

  it('writes nothing when answerUnreadable gives null', async () => {
    const stdout = new PassThrough();
    const stdin = recordingPipe();
    const transport = ndJsonTransport<WireMessage>(stdin.pipe, stdout, { accept: (message) => message, answerUnreadable: () => null });
    stdout.end(`nope\n${line({ id: 1 })}`);
    expect(await readAll(transport.readable.getReader())).toEqual([{ id: 1 }]);
    await turn();
    expect(stdin.calls).toEqual([]);
  });
});

describe('reading: the line-length limit', () => {
  const limit = 64;

  it('a line over the limit fails a pending read with MessageTooLargeError and destroys the input', async () => {
    const { stdout, reader, accepted } = connect({ maxMessageBytes: limit });
    const pending = reader.read();
    stdout.write(`${messageOfBytes(limit + 1)}\n${line({ id: 2 })}`);
    const error = await pending.catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(MessageTooLargeError);
    expect((error as MessageTooLargeError).maxMessageBytes).toBe(limit);
    expect(stdout.destroyed).toBe(true);
    expect(accepted).toEqual([]);
    await expect(reader.read()).rejects.toBeInstanceOf(MessageTooLargeError);
  });

  it('a line over the limit fails the next read', async () => {
    const { stdout, reader } = connect({ maxMessageBytes: limit });
    stdout.write(`${messageOfBytes(limit + 1)}\r\n`);
    await until(() => stdout.destroyed, 'stdout destroyed');
    await expect(reader.read()).rejects.toBeInstanceOf(MessageTooLargeError);
  });

  it('accepts a line of exactly the limit', async () => {
    const { stdout, reader } = connect({ maxMessageBytes: limit });
    stdout.end(`${messageOfBytes(limit)}\n`);
    expect(await readAll(reader)).toEqual([JSON.parse(messageOfBytes(limit))]);
  });

  it('does not count the CR of a CRLF at the limit, in one chunk or split before the LF', async () => {
    const { stdout, reader } = connect({ maxMessageBytes: limit });
    stdout.write(`${messageOfBytes(limit)}\r\n`);
    stdout.write(`${messageOfBytes(limit)}\r`);
    await turn();
    stdout.end('\n');
    expect(await readAll(reader)).toHaveLength(2);
  });

  it('counts a CR that is not the line ending', async () => {
    const { stdout, reader } = connect({ maxMessageBytes: limit });
    // limit bytes, then a CR inside the line (JSON whitespace), then the closing LF.
    stdout.write(`${messageOfBytes(limit)}\r `);
    await turn();
    stdout.write('\n');
    await expect(reader.read()).rejects.toBeInstanceOf(MessageTooLargeError);
  });

  it('fails a line split across chunks as soon as it is over the limit, before its LF', async () => {
    const { stdout, reader } = connect({ maxMessageBytes: limit });
    const pending = reader.read();
    const text = messageOfBytes(limit + 1);
    stdout.write(text.slice(0, 40));
    await turn();
    expect(stdout.destroyed).toBe(false);
    stdout.write(text.slice(40));
    await until(() => stdout.destroyed, 'stdout destroyed');
    await expect(pending).rejects.toBeInstanceOf(MessageTooLargeError);
  });

  it('fails a last line over the limit without LF at the end of the stream', async () => {
    const { stdout, reader, accepted } = connect({ maxMessageBytes: limit });
    stdout.end(messageOfBytes(limit + 1));
    await expect(reader.read()).rejects.toBeInstanceOf(MessageTooLargeError);
    expect(accepted).toEqual([]);
  });
});

describe('writing', () => {
  it('sends each message to the pipe as it is made, in order, also within one tick (the agent starts on the first at once)', async () => {
    const { writer, stdin, sent } = connect();
    const messages = [{ id: 1, method: 'a' }, { id: 2, method: 'b' }, { method: 'c' }];
    const writes = [writer.write(messages[0]!)];
    expect(stdin.lines()).toEqual(['{"id":1,"method":"a"}']); // on the pipe before the next is made, not at the end of the tick
    writes.push(...messages.slice(1).map((message) => writer.write(message)));
    await Promise.all(writes);
    expect(stdin.calls).toEqual(messages.map((message) => [`${JSON.stringify(message)}\n`]));
    expect(sent).toEqual(messages);
  });

  it('sends the messages of different ticks as separate writes, in order', async () => {
    const { writer, stdin, sent } = connect();
    const messages = [{ id: 1 }, { id: 2, text: 'é\n"' }, { id: 3 }];
    for (const message of messages) {
      await writer.write(message);
      await turn();
    }
    await until(() => stdin.lines().length === 3, 'three lines on stdin');
    expect(stdin.calls).toEqual(messages.map((message) => [`${JSON.stringify(message)}\n`]));
    expect(stdin.lines().map((text) => JSON.parse(text) as unknown)).toEqual(messages);
    expect(sent).toEqual(messages);
  });

  it('delivers a line written in the tick the stdin is ended, before the end', async () => {
    const { writer, stdin } = connect();
    void writer.write({ id: 1 });
    stdin.pipe.end();
    await until(() => stdin.events.includes('end'), 'the end of stdin');
    expect(stdin.events).toEqual(['write', 'end']);
    expect(stdin.lines()).toEqual(['{"id":1}']);
  });

  it('writer.close() ends stdin after what was written', async () => {
    const { writer, stdin } = connect();
    void writer.write({ id: 1 });
    await writer.close();
    expect(stdin.events).toEqual(['write', 'end']);
    await expect(writer.write({ id: 2 })).rejects.toThrow(/stdin is closed/);
  });
});

describe('writing: backpressure and failures', () => {
  it('a write that fills the pipe waits for its drain', async () => {
    const stdin = recordingPipe({ highWaterMark: 16, hold: true });
    const { writer } = connect({ stdin });
    const first = track(writer.write({ id: 1, text: 'more than sixteen bytes' }));
    await until(() => stdin.held.length === 1, 'the write to reach the pipe');
    await turn();
    expect(first.settled).toBe('pending');
    stdin.release();
    await until(() => first.settled !== 'pending', 'the write to settle');
    expect(first.settled).toBe('resolved');
  });

  it('a write with room left resolves at once', async () => {
    const stdin = recordingPipe({ highWaterMark: 1024, hold: true });
    const { writer } = connect({ stdin });
    const write = track(writer.write({ id: 1 }));
    await until(() => stdin.held.length === 1, 'the write to reach the pipe');
    // Resolved while the pipe still holds the line: nothing to wait for below the high-water mark.
    expect(write.settled).toBe('resolved');
  });

  it('a write after stdin was destroyed rejects', async () => {
    const { writer, stdin } = connect();
    stdin.pipe.destroy();
    await expect(writer.write({ id: 1 })).rejects.toThrow(/stdin is closed/);
    expect(stdin.calls).toEqual([]);
  });

  it('a write the pipe fails rejects with that error, and so does the next', async () => {
    const failure = new Error('EPIPE: the agent is gone');
    const stdin = recordingPipe({ failWith: failure });
    const { writer } = connect({ stdin });
    await expect(writer.write({ id: 1 })).rejects.toBe(failure);
    await until(() => stdin.errors.length > 0, 'the pipe error');
    await expect(writer.write({ id: 2 })).rejects.toBe(failure);
    expect(stdin.calls).toHaveLength(1);
  });

  it('a write waiting for a drain rejects when the pipe is destroyed with an error', async () => {
    const failure = new Error('EPIPE: the agent is gone');
    const stdin = recordingPipe({ highWaterMark: 16, hold: true });
    const { writer } = connect({ stdin });
    const waiting = track(writer.write({ id: 1, text: 'more than sixteen bytes' }));
    await until(() => stdin.held.length === 1, 'the write to reach the pipe');
    stdin.pipe.destroy(failure);
    await until(() => waiting.settled !== 'pending', 'the write to settle');
    expect(waiting).toEqual({ settled: 'rejected', error: failure });
  });

  it('a write waiting for a drain rejects when the pipe is destroyed before writing it', async () => {
    const stdin = recordingPipe({ highWaterMark: 16, hold: true });
    const { writer } = connect({ stdin });
    const waiting = track(writer.write({ id: 1, text: 'more than sixteen bytes' }));
    await until(() => stdin.held.length === 1, 'the write to reach the pipe');
    stdin.pipe.destroy();
    await until(() => waiting.settled !== 'pending', 'the write to settle');
    expect(waiting.settled).toBe('rejected');
    expect(String(waiting.error)).toMatch(/stdin is closed/);
  });

  it('a write waiting for a drain resolves when the pipe is ended and finishes writing it', async () => {
    const stdin = recordingPipe({ highWaterMark: 16, hold: true });
    const { writer } = connect({ stdin });
    const waiting = track(writer.write({ id: 1, text: 'more than sixteen bytes' }));
    await until(() => stdin.held.length === 1, 'the write to reach the pipe');
    stdin.pipe.end();
    await turn();
    expect(waiting.settled).toBe('pending');
    stdin.release();
    await until(() => waiting.settled !== 'pending', 'the write to settle');
    expect(waiting.settled).toBe('resolved');
    expect(stdin.events).toEqual(['write', 'end']);
  });
});

describe('reading: backpressure', () => {
  it('pauses the input beyond 256 kept messages unread, and resumes it as they are read', async () => {
    const { stdout, reader, accepted } = connect();
    const total = 300;
    for (let id = 0; id < total; id++) stdout.write(line({ id }));
    await until(() => stdout.isPaused(), 'stdout paused');
    // The flow stops at the message that filled the queue; the rest waits in the stream.
    expect(accepted).toHaveLength(256);
    await turn();
    expect(accepted).toHaveLength(256);
    const read: unknown[] = [];
    while (read.length < 45) read.push((await reader.read()).value?.id);
    expect(stdout.isPaused()).toBe(false);
    await until(() => accepted.length === total, 'the rest of the messages');
    stdout.end();
    read.push(...(await readAll(reader)).map((message) => message.id));
    expect(read).toEqual(Array.from({ length: total }, (_, id) => id));
  });

  it('messages taken by accept never pause the input', async () => {
    const { stdout, accepted } = connect({ keep: () => null });
    const total = 400;
    stdout.write(Array.from({ length: total }, (_, id) => line({ id })).join(''));
    await until(() => accepted.length === total, 'all the messages');
    expect(stdout.isPaused()).toBe(false);
  });
});

describe('reading: cancel and input failures', () => {
  it('cancel() destroys the input, resolves a pending read done, and ignores later data', async () => {
    const { stdout, reader, accepted } = connect();
    const pending = reader.read();
    await reader.cancel();
    expect(await pending).toEqual({ done: true, value: undefined });
    expect(stdout.destroyed).toBe(true);
    stdout.emit('data', Buffer.from(line({ id: 1 })));
    expect(accepted).toEqual([]);
    expect(await reader.read()).toEqual({ done: true, value: undefined });
  });

  it('cancel() drops the messages queued and not yet read', async () => {
    const { stdout, reader, accepted } = connect();
    stdout.write(`${line({ id: 1 })}${line({ id: 2 })}`);
    await until(() => accepted.length === 2, 'both messages');
    await reader.cancel();
    expect(await reader.read()).toEqual({ done: true, value: undefined });
  });

  it('cancel() from accept stops at that message, the rest of its chunk unread', async () => {
    const transportHolder: { reader?: ReadableStreamDefaultReader<WireMessage> } = {};
    const { stdout, reader, accepted } = connect({
      keep: (message) => {
        if (message.id === 2) void transportHolder.reader?.cancel();
        return message;
      },
    });
    transportHolder.reader = reader;
    stdout.write(`${line({ id: 1 })}${line({ id: 2 })}${line({ id: 3 })}`);
    await until(() => stdout.destroyed, 'stdout destroyed');
    expect(accepted.map((message) => message.id)).toEqual([1, 2]);
    expect(await reader.read()).toEqual({ done: true, value: undefined });
  });

  it('an input error fails the pending read with that error', async () => {
    const { stdout, reader } = connect();
    const pending = reader.read();
    const failure = new Error('read EIO');
    stdout.destroy(failure);
    await expect(pending).rejects.toBe(failure);
    await expect(reader.read()).rejects.toBe(failure);
  });

  it('an input destroyed without its end fails the pending read', async () => {
    const { stdout, reader } = connect();
    stdout.write('{"id":');
    const pending = reader.read();
    stdout.destroy();
    await expect(pending).rejects.toThrow(/closed before its end/);
  });

  it('accept throwing fails the stream with its error, mid-stream', async () => {
    const failure = new Error('accept broke');
    const { stdout, reader } = connect({
      keep: (message) => {
        if (message.id === 2) throw failure;
        return message;
      },
    });
    stdout.write(`${line({ id: 1 })}${line({ id: 2 })}${line({ id: 3 })}`);
    expect(await reader.read()).toEqual({ done: false, value: { id: 1 } });
    await expect(reader.read()).rejects.toBe(failure);
    expect(stdout.destroyed).toBe(true);
  });

  it('accept throwing on the last line without LF fails the stream with its error', async () => {
    const failure = new Error('accept broke');
    const { stdout, reader } = connect({
      keep: () => {
        throw failure;
      },
    });
    const pending = reader.read();
    stdout.end('{"id":1}');
    await expect(pending).rejects.toBe(failure);
  });

  it('a second read while one is pending is refused', async () => {
    const { reader } = connect();
    void reader.read().catch(() => {});
    await expect(reader.read()).rejects.toBeInstanceOf(TypeError);
    await reader.cancel();
  });
});
