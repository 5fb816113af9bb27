/**
 * Values kept per agent and session while a store handles a batch, in the order each session
 * was first seen: two map lookups per write, no `agent + session id` key string built for
 * every write (a batch of tiny turns holds thousands of writes; the strings were most of the
 * grouping's cost — docs/performance.md, *turns*).
 */
export class BySession<V> {
  private readonly byAgent = new Map<string, Map<string, V>>();
  /** Every value, in the order its session was first added. */
  readonly inOrder: V[] = [];

  get(agent: string, sessionId: string): V | undefined {
    return this.byAgent.get(agent)?.get(sessionId);
  }

  /** Adds the first value of a session (one that has none yet). */
  add(agent: string, sessionId: string, value: V): void {
    let ofAgent = this.byAgent.get(agent);
    if (!ofAgent) this.byAgent.set(agent, (ofAgent = new Map()));
    ofAgent.set(sessionId, value);
    this.inOrder.push(value);
  }

  clear(): void {
    this.byAgent.clear();
    this.inOrder.length = 0;
  }
}
