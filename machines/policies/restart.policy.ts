/**
 * One agent's restart policy from what was given: the defaults, the `when` its protocol
 * implies, the supervisor's `restart` options, then the agent's own `spec.restart` — each
 * layer over the one before, class policies merged class by class.
 */
import { failureClasses } from '../../core/failure-class.js';
import type { RestartOptions, RestartWhen } from '../../core/restart-spec.js';
import { defaultRestartPolicy, type RestartPolicy } from './backoff.policy.js';
import type { ClassPolicies } from './class-policy.js';

/**
 * `when` by protocol, unless given: an ACP agent is a server that should never end by itself,
 * so any exit is a loss ('always'); a pty CLI or a stream-json run ends with code 0 when its
 * work or its user is done, which is an outcome, not a crash ('on-failure').
 */
export function defaultRestartWhen(protocol: 'acp' | 'stream-json' | 'pty' | undefined): RestartWhen {
  return protocol === 'pty' || protocol === 'stream-json' ? 'on-failure' : 'always';
}

/** The agent's whole restart policy: defaults, its protocol's `when`, then each layer of options given. */
export function resolveRestartPolicy(protocol: 'acp' | 'stream-json' | 'pty' | undefined, ...layers: Array<RestartOptions | undefined>): RestartPolicy {
  let policy: RestartPolicy = { ...defaultRestartPolicy, when: defaultRestartWhen(protocol) };
  for (const layer of layers) {
    if (!layer) continue;
    const { policies: given, ...numbers } = layer;
    const policies = Object.fromEntries(failureClasses.map((failureClass) => [failureClass, { ...policy.policies[failureClass], ...definedOnly(given?.[failureClass] ?? {}) }])) as ClassPolicies;
    policy = { ...policy, ...definedOnly(numbers), policies };
  }
  return policy;
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
