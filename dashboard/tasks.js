// @ts-check
/** Running the page's reloads without piling them up (tests/unit/dashboard-feed.test.ts). */

/**
 * `task`, run one at a time: calls while it runs fold into one more run after it, and get
 * the promise of the run under way.
 * @param {() => Promise<void>} task
 * @returns {() => Promise<void>}
 */
export function coalesced(task) {
  /** @type {Promise<void> | null} */
  let running = null;
  let again = false;
  return () => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      try {
        do {
          again = false;
          await task();
        } while (again);
      } finally {
        running = null;
      }
    })();
    return running;
  };
}
