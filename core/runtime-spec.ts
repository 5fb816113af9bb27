/**
 * Where an agent runs (docs/runtimes.md): on this host (`local`, the default), fenced in by
 * bubblewrap (`sandbox`), on a remote host over SSH (`ssh`), in a container (`docker`) or a
 * pod (`kubernetes`). Plain data, checked at the public edge like the rest of a spec.
 */
import { z } from 'zod';
import { noNul } from './schema.js';

const path = noNul(z.string().min(1, 'must be a non-empty path'));
const name = noNul(z.string().min(1, 'must not be empty').max(253, 'must be at most 253 characters'));

export const runtimeSpecSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('local') }),
  z.strictObject({
    kind: z.literal('sandbox'),
    /** The agent may reach the network (default false: its own empty network namespace). */
    network: z.boolean().optional(),
    /** Extra paths the agent may read (the system's own directories are readable by default). */
    readOnly: z.array(path).optional(),
    /** Extra paths the agent may write, besides its working directory. */
    readWrite: z.array(path).optional(),
    /** Paths hidden from the agent (an empty directory over each), e.g. the home directory. */
    hide: z.array(path).optional(),
  }),
  z.strictObject({
    kind: z.literal('ssh'),
    host: name,
    port: z.number().int().min(1).max(65_535).optional(),
    user: name.optional(),
    identityFile: path.optional(),
    /** The known_hosts file the host key is checked against; a host key is never accepted blindly. */
    knownHostsFile: path,
    /** How long connecting may take (default 10 000 ms). */
    connectTimeoutMs: z.number().int().min(100).max(600_000).optional(),
    /** A dropped connection is noticed after this long without an answer (default 15 000 ms). */
    aliveTimeoutMs: z.number().int().min(1_000).max(600_000).optional(),
  }),
  z.strictObject({
    kind: z.literal('docker'),
    /** `docker exec -i` into this running container… */
    container: name.optional(),
    /** …or `docker run -i --rm` from this image. */
    image: name.optional(),
    /**
     * Extra arguments for `docker run` (volumes, network), before the image. Not `--rm`
     * (agentvisor removes the container itself, and with `--rm` Podman's API reports every
     * exit as 0) nor `-d`/`--detach` (the agent speaks over the attached stdio).
     */
    runArgs: z
      .array(noNul(z.string()))
      .refine((args) => !args.some((arg) => /^--rm(=|$)/.test(arg)), 'must not hold --rm: agentvisor removes the container itself once its client is gone')
      .refine((args) => !args.some((arg) => /^(-(?!-)[A-Za-z]*d[A-Za-z]*|--detach(=.*)?)$/.test(arg)), 'must not hold -d/--detach: the agent speaks ACP over the attached stdin and stdout')
      .optional(),
  }),
  z.strictObject({
    kind: z.literal('kubernetes'),
    pod: name,
    namespace: name.optional(),
    container: name.optional(),
    context: name.optional(),
    kubeconfig: path.optional(),
  }),
]);

export type RuntimeSpec = z.infer<typeof runtimeSpecSchema>;
export type RuntimeKind = RuntimeSpec['kind'];

/** Whether an agent of this runtime runs on this host (local or sandboxed): its paths are this host's, its pty too. */
export function runsOnThisHost(kind: RuntimeKind | undefined): boolean {
  return kind === undefined || kind === 'local' || kind === 'sandbox';
}
