/**
 * The containment mechanisms, strongest first (docs/containment.md). `null` where a kind is
 * expected means the agent is contained by its process group only.
 */
export type ContainmentKind = 'pid-namespace' | 'cgroup' | 'proc-tracking';
