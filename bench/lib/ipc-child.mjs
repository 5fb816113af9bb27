/**
 * The request loop of a benchmark's helper process (spawned with an IPC channel by
 * bench/lib/daemon.ts): each message `{ id, type, ... }` is answered by `handlers[type]`
 * with `{ ...answer, id }` or `{ id, error }`; `{ type: 'exit' }` runs `onExit` and ends the
 * process, as does the parent going away.
 */
export function serveParent(handlers, onExit) {
  process.on('message', async (message) => {
    if (message.type === 'exit') {
      onExit();
      process.disconnect();
      setTimeout(() => process.exit(0), 200).unref();
      return;
    }
    try {
      const answer = await handlers[message.type](message);
      process.send({ ...answer, id: message.id });
    } catch (error) {
      process.send({ id: message.id, error: error instanceof Error ? error.message : String(error) });
    }
  });
  process.on('disconnect', () => setTimeout(() => process.exit(0), 200).unref());
}
