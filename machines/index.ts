/** Every machine of agentvisor, by name: what `npm run viz` draws and the tests check. */
import type { AnyStateMachine } from 'xstate';
import { agentMachine } from './agent.machine.js';
import { ptyActivityMachine } from './pty-activity.machine.js';
import { sessionMachine } from './session.machine.js';
import { supervisorMachine } from './supervisor.machine.js';
import { workspaceMachine } from './workspace.machine.js';

export { agentMachine, ptyActivityMachine, sessionMachine, supervisorMachine, workspaceMachine };

export const visualizedMachines: Record<string, AnyStateMachine> = {
  agent: agentMachine,
  supervisor: supervisorMachine,
  session: sessionMachine,
  ptyActivity: ptyActivityMachine,
  workspace: workspaceMachine,
};
