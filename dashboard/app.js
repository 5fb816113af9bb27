// @ts-check
/**
 * The dashboard of `agentvisor serve` (docs/dashboard.md): its entry module. It puts the page
 * together — the state, the API client, the panels, the controller — wires the page's
 * buttons to the controller, and opens the event stream. The daemon links this module and
 * those it imports into the one script of the page, under the page's CSP nonce
 * (daemon/package-assets.ts).
 */
import { createAgentsPanel } from './agents-panel.js';
import { createApiClient } from './api.js';
import { createController } from './controller.js';
import { createNotice, byTestId } from './dom.js';
import { createElicitationsPanel } from './elicitations-panel.js';
import { openEventStream, streamUrl } from './event-stream.js';
import { createLogsPanel } from './logs-panel.js';
import { createOrphansPanel } from './orphans-panel.js';
import { createPermissionsPanel } from './permissions-panel.js';
import { createPromptBox } from './prompt-box.js';
import { AGENT_ACTIONS } from './rows.js';
import { createSessionPanel } from './session-panel.js';
import { selectedSessionRow } from './session-store.js';
import { createSessionsPanel } from './sessions-panel.js';
import { createStatechartPanel } from './statechart-panel.js';
import { createState } from './store.js';
import { createTopBar } from './top-bar.js';
import { createTranscriptPanel } from './transcript-panel.js';

/** @import { AgentAction } from './rows.js' */
/** @import { ZoomDirection } from './statechart-panel.js' */

const token = new URLSearchParams(location.search).get('token') ?? '';
const state = createState();
const api = createApiClient({ token });
const notice = createNotice(byTestId('notice', HTMLParagraphElement));
const chart = createStatechartPanel(api, () => state);
const agents = createAgentsPanel((name, reason) => void controller.agentAction(name, 'restart', reason ? { reason } : {}));
const panels = {
  topBar: createTopBar(),
  agents,
  chart,
  permissions: createPermissionsPanel(),
  elicitations: createElicitationsPanel((id, answer) => void controller.answerElicitation(id, answer)),
  orphans: createOrphansPanel(),
  sessions: createSessionsPanel(),
  session: createSessionPanel((sessionId, picker, value) => void controller.setControl(sessionId, picker, value)),
  transcript: createTranscriptPanel({ state: () => state, watchTerminal: (sessionId, terminalId) => controller.watchTerminal(sessionId, terminalId) }),
  logs: createLogsPanel(),
  prompt: createPromptBox({
    send: (text, sessionName, attachments) => controller.sendPrompt(text, sessionName, attachments),
    commands: () => selectedSessionRow(state)?.commands ?? [],
    notice,
  }),
};
const controller = createController({ state, api, panels, notice });

const isAgentAction = (/** @type {string | undefined} */ action) => AGENT_ACTIONS.some((known) => known === action);
const isZoom = (/** @type {string | undefined} */ direction) => direction === 'in' || direction === 'out' || direction === 'fit';

// One delegated listener: rows are drawn again often, their buttons carry what they act on.
document.addEventListener('click', (event) => {
  const button = event.target instanceof Element ? event.target.closest('button') : null;
  if (!button) return;
  const { action, agent, sessionId, permissionId, optionId, pid, zoom, methodId } = button.dataset;
  if (isZoom(zoom)) chart.zoom(/** @type {ZoomDirection} */ (zoom));
  else if (action === 'cancel-session' && sessionId) void controller.cancel(sessionId);
  else if (action === 'close-session' && sessionId) void controller.close(sessionId);
  else if (action === 'login' && agent && methodId) void controller.authenticate(agent, methodId);
  else if (action === 'restart' && agent) {
    controller.selectAgent(agent);
    agents.askRestart(agent);
  }
  else if (action === 'kill-orphan') void controller.killOrphans([Number(pid)]);
  else if (action === 'kill-orphans') void controller.killOrphans(null);
  else if (action === 'select-agent' && agent) controller.selectAgent(agent);
  else if (action === 'select-session' && sessionId) controller.selectSession(sessionId);
  else if (action === 'answer-permission' && permissionId && optionId) void controller.answerPermission(permissionId, optionId);
  else if (isAgentAction(action) && agent) {
    controller.selectAgent(agent);
    void controller.agentAction(agent, /** @type {AgentAction} */ (action));
  }
});

if (!token) {
  controller.onConnection('closed', 'no token');
  notice.show('This page needs its token: open the address `agentvisor dashboard` prints.');
} else {
  for (const part of /** @type {const} */ (['permissions', 'elicitations', 'orphans', 'sessions', 'session', 'transcript'])) controller.render(part);
  void chart.load();
  openEventStream({
    // Asked at each connection: a reconnection goes on from the last message applied.
    url: () => streamUrl(`ws://${location.host}`, token, state.stream),
    onMessage: (message) => controller.onServerMessage(message),
    onStatus: (connection, text) => controller.onConnection(connection, text),
    tokenRefused: () => api.tokenRefused(),
    onRefused: () => notice.show("The daemon refuses this page's token (was it restarted?): open the address `agentvisor dashboard` prints.", 'error', true),
  });
}
