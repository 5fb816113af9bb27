/**
 * The environment the benchmarks' agents inherit. This machine sets NODE_EXTRA_CA_CERTS,
 * which makes every node child parse a 220 KB certificate bundle at start-up (~60-100 ms
 * of CPU per spawn, a quarter of an agent's boot). No agent here uses TLS, so the bench
 * removes it from the environment both sides' agents inherit (set BENCH_KEEP_ENV=1 to
 * keep it). It shortens the run and takes child start-up noise out of the ratios; it does
 * not favour either side.
 */
export function prepareAgentEnvironment(): { removed: string[] } {
  if (process.env['BENCH_KEEP_ENV'] === '1') return { removed: [] };
  const removed = ['NODE_EXTRA_CA_CERTS'].filter((name) => name in process.env);
  for (const name of removed) delete process.env[name];
  return { removed };
}
