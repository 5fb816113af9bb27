/** A minimal typed event emitter whose listeners cannot break the emitter. */
export class EventHub<Events extends object> {
  private readonly listeners = new Map<keyof Events, Set<(event: never) => void>>();

  on<K extends keyof Events>(type: K, listener: (event: Events[K]) => void): () => void {
    let set = this.listeners.get(type);
    if (!set) this.listeners.set(type, (set = new Set()));
    set.add(listener as (event: never) => void);
    return () => {
      set.delete(listener as (event: never) => void);
    };
  }

  /**
   * Calls every listener of `type`. It iterates the live set (no copy: this is the hot path
   * of a stream of updates): a listener removed during the call is skipped, one added during
   * it hears this event too.
   */
  emit<K extends keyof Events>(type: K, event: Events[K]): void {
    const listeners = this.listeners.get(type);
    if (!listeners) return;
    for (const listener of listeners) {
      try {
        (listener as (event: Events[K]) => void)(event);
      } catch (error) {
        process.emitWarning(`agentvisor: a ${String(type)} listener threw: ${String(error)}`);
      }
    }
  }

  listenerCount(type: keyof Events): number {
    return this.listeners.get(type)?.size ?? 0;
  }
}
