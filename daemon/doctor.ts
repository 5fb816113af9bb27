/**
 * `GET /v1/doctor`: what this host offers the daemon's agents — which agent commands are on
 * PATH (and how to install the others), the containment in effect, the store's health.
 */
import { findExecutable, type AgentSpec, type Supervisor } from '../index.js';
import type { DoctorBody, DoctorPreset } from './api-types.js';

/** What the doctor knows beyond the supervisor: the specs it was given, where state lives, which store. */
export interface DoctorInput {
  agents: Record<string, AgentSpec>;
  stateDir: string | null;
  storeKind: DoctorBody['store']['kind'];
}

export async function doctorReport(supervisor: Supervisor, input: DoctorInput, version: string): Promise<DoctorBody> {
  const presets: DoctorPreset[] = Object.entries(input.agents).map(([agent, spec]) => ({
    agent,
    displayName: spec.displayName ?? agent,
    command: spec.command,
    path: findExecutable(spec.command, spec.cwd, spec.env?.PATH ?? process.env.PATH),
    installHint: spec.installHint ?? null,
  }));
  let store: DoctorBody['store'];
  try {
    store = { kind: input.storeKind, ok: true, stats: await supervisor.storeStats(), error: null };
  } catch (error) {
    store = { kind: input.storeKind, ok: false, stats: null, error: (error as Error).message };
  }
  const { kind, refused } = supervisor.containment;
  return { version, node: process.version, stateDir: input.stateDir, presets, containment: { kind, refused }, store };
}
