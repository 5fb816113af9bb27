/**
 * Where an agent runs (docs/runtimes.md): on this host (`local`, the default), fenced in by
 * bubblewrap (`sandbox`), on a remote host over SSH (`ssh`), in a container (`docker`) or a
 * pod (`kubernetes`). Plain data, checked at the public edge like the rest of a spec.
 */
import { z } from 'zod';
import { noNul } from './schema.js';

const path = noNul(z.string().min(1, 'must be a non-empty path'));
const name = noNul(z.string().min(1, 'must not be empty').max(253, 'must be at most 253 characters'));

/** A Kubernetes name: a DNS-1123 label (a Secret's, a volume's, a container's). */
const dnsLabel = z.string().regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'must be a DNS-1123 label (lower-case letters, digits and "-", at most 63)');
/** A Secret's or a ConfigMap's name: a DNS-1123 subdomain. */
const objectName = z.string().regex(/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/, 'must be a DNS-1123 subdomain (lower-case letters, digits, "-" and ".", at most 253)');
/** An environment variable's name as Kubernetes accepts it. */
const envName = z.string().regex(/^[-._a-zA-Z][-._a-zA-Z0-9]*$/, 'must be a C identifier-like name (letters, digits, "_", "-", ".")').max(253);
/** A resource quantity (`500m`, `2Gi`, `1`). */
const quantity = z.string().regex(/^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/, 'must be a Kubernetes quantity (100m, 2, 512Mi, 1Gi)');
/** A label or selector map: keys and values as Kubernetes checks them (values at most 63 characters). */
const labelMap = z.record(
  z.string().regex(/^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/, 'must be a label key ([prefix/]name)'),
  z.string().regex(/^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/, 'must be a label value (at most 63 letters, digits, "-", "_", ".")'),
);

/**
 * The pod the supervisor creates for an agent (docs/runtimes-kubernetes.md). No value of a
 * variable is ever in it: `env` and `envFrom` name Secrets, which the kubelet reads; the
 * spec's own `env` travels on the exec stream's stdin, never in the pod.
 */
export const podTemplateSchema = z.strictObject({
  image: noNul(z.string().min(1, 'must name an image').max(1000)),
  imagePullPolicy: z.enum(['Always', 'IfNotPresent', 'Never']).optional(),
  /** The container's own command (default: a keepalive shell that waits for SIGTERM): the agent itself is started by exec. */
  command: z.array(noNul(z.string())).min(1, 'must hold the command (leave it out for the keepalive)').optional(),
  args: z.array(noNul(z.string())).optional(),
  /** Variables taken from Secrets by reference (`secretKeyRef`): the value is never in the pod spec, a record or the store. */
  env: z
    .array(z.strictObject({ name: envName, secretKeyRef: z.strictObject({ name: objectName, key: z.string().regex(/^[-._a-zA-Z0-9]+$/, 'must be a Secret key').max(253), optional: z.boolean().optional() }) }))
    .optional(),
  /** Every key of these Secrets as a variable (`envFrom: secretRef`), each name with `prefix` before it. */
  envFrom: z.array(z.strictObject({ secretRef: z.strictObject({ name: objectName, optional: z.boolean().optional() }), prefix: envName.optional() })).optional(),
  resources: z.strictObject({ requests: z.record(z.string().min(1), quantity).optional(), limits: z.record(z.string().min(1), quantity).optional() }).optional(),
  serviceAccountName: objectName.optional(),
  nodeSelector: labelMap.optional(),
  tolerations: z
    .array(
      z.strictObject({
        key: z.string().min(1).max(316).optional(),
        operator: z.enum(['Exists', 'Equal']).optional(),
        value: z.string().max(63).optional(),
        effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']).optional(),
        tolerationSeconds: z.number().int().min(0).optional(),
      }),
    )
    .optional(),
  /** Volumes, each mounted in the agent's container at `mountPath`; exactly one source each. */
  volumes: z
    .array(
      z
        .strictObject({
          name: dnsLabel,
          mountPath: noNul(z.string().regex(/^\//, 'must be an absolute path')),
          readOnly: z.boolean().optional(),
          emptyDir: z.strictObject({ medium: z.enum(['', 'Memory']).optional(), sizeLimit: quantity.optional() }).optional(),
          secret: z.strictObject({ secretName: objectName, optional: z.boolean().optional() }).optional(),
          configMap: z.strictObject({ name: objectName, optional: z.boolean().optional() }).optional(),
          persistentVolumeClaim: z.strictObject({ claimName: objectName, readOnly: z.boolean().optional() }).optional(),
        })
        .refine((volume) => [volume.emptyDir, volume.secret, volume.configMap, volume.persistentVolumeClaim].filter((source) => source !== undefined).length === 1, {
          message: 'needs exactly one source: emptyDir, secret, configMap or persistentVolumeClaim',
        }),
    )
    .optional(),
  /** More labels and annotations on the pod (agentvisor's own `agentvisor.io/…` labels cannot be replaced). */
  labels: labelMap.optional(),
  annotations: z.record(z.string().min(1).max(316), z.string().max(65_536)).optional(),
  /** How long the pod may stay Pending (unschedulable, pulling its image) before the start fails `runtime_missing` naming the reason (default 120 000 ms). */
  pendingTimeoutMs: z.number().int().min(100).max(3_600_000).optional(),
});

/** A pod template (`runtime.template` of a `kubernetes` runtime). */
export type PodTemplate = z.infer<typeof podTemplateSchema>;

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
    /** `kubectl exec -i` into this running pod (it is not agentvisor's: never created nor deleted)… */
    pod: name.optional(),
    /** …or a pod per agent that the supervisor creates through the API (docs/runtimes-kubernetes.md), deleted when the agent stops. */
    template: podTemplateSchema.optional(),
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
