/**
 * Choosing the containment mechanism: the strongest this host offers, or the one asked for,
 * falling back down the list — pid-namespace, cgroup, proc-tracking — with the reason each
 * stronger one was refused, so the choice is reported, never made silently.
 */
import { existsSync } from 'node:fs';
import { cgroupContainment, findCgroupRoot } from './cgroup.containment.js';
import type { ContainmentKind, ContainmentMechanism } from './containment.js';
import { pidNamespaceContainment, pidNamespaceSupport } from './pid-namespace.containment.js';
import { procTrackingContainment } from './proc-tracking.containment.js';

/** What a supervisor asks for: the strongest available, one mechanism (or weaker), or none. */
export type ContainmentPreference = 'auto' | ContainmentKind | 'none';

/** The mechanisms, strongest first. */
export const containmentKinds: readonly ContainmentKind[] = ['pid-namespace', 'cgroup', 'proc-tracking'];

export interface ContainmentChoice {
  /** The mechanism in effect; null means process groups only (asked for with 'none', or nothing works). */
  mechanism: ContainmentMechanism | null;
  /** Stronger mechanisms that were tried and why each was refused. */
  refused: Array<{ kind: ContainmentKind; reason: string }>;
}

/** Probes (each probe runs once per process) from the preferred mechanism down. */
export function chooseContainment(preference: ContainmentPreference): ContainmentChoice {
  const refused: ContainmentChoice['refused'] = [];
  if (preference === 'none') return { mechanism: null, refused };
  const start = preference === 'auto' ? 0 : containmentKinds.indexOf(preference);
  for (const kind of containmentKinds.slice(start)) {
    const probed = probe(kind);
    if ('mechanism' in probed) return { mechanism: probed.mechanism, refused };
    refused.push({ kind, reason: probed.reason });
  }
  return { mechanism: null, refused };
}

function probe(kind: ContainmentKind): { mechanism: ContainmentMechanism } | { reason: string } {
  if (process.platform !== 'linux') return { reason: `${kind} needs Linux` };
  switch (kind) {
    case 'pid-namespace': {
      const support = pidNamespaceSupport();
      return support ? { mechanism: pidNamespaceContainment(support) } : { reason: 'util-linux unshare cannot create a PID namespace here (no unshare, or user namespaces are not allowed)' };
    }
    case 'cgroup': {
      const root = findCgroupRoot();
      return root ? { mechanism: cgroupContainment(root) } : { reason: 'no writable cgroup: neither a delegated cgroup v2 subtree nor cgroup v1 as root' };
    }
    case 'proc-tracking':
      return existsSync('/proc/self/stat') ? { mechanism: procTrackingContainment } : { reason: '/proc is not readable' };
  }
}
