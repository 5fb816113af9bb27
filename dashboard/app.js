// The dashboard of `agentvisor serve` (docs/dashboard.md): one ES module, inlined into the page
// by the daemon under a CSP nonce. Plain browser JavaScript — no build step, no imports, no
// framework. Everything an agent sends reaches the page as text nodes (textContent); the only
// markup inserted is the daemon's own statechart SVG.
//
// Sources of truth: the event stream (`/v1/events`) for agents, states, permissions, session
// updates and log lines; the HTTP API for history (transcripts, logs) and actions. A prompt's
// NDJSON stream says which session it runs in and how the turn ends; its updates are also on
// the event stream, which is the one source the transcript takes them from (never both).

const token = new URLSearchParams(location.search).get('token') ?? '';

/** Items kept per transcript or log feed, beyond which the oldest go. */
const FEED_LIMIT = 20000;
/** Entries per history page asked for. */
const PAGE_LIMIT = 500;
/** Log lines shown when an agent is selected (the newest), before the live ones. */
const LOG_TAIL = 1000;
/** States listed in the trail under the statechart. */
const TRAIL_LENGTH = 12;
/** Reconnect backoff of the event stream, in ms. */
const RECONNECT_INITIAL_MS = 250;
const RECONNECT_MAX_MS = 8000;

const $ = (testid) => document.querySelector(`[data-testid="${testid}"]`);

const view = {
  connection: $('connection'),
  version: $('daemon-version'),
  notice: $('notice'),
  agents: $('agents'),
  permissions: $('permissions'),
  permissionsEmpty: $('permissions-empty'),
  orphans: $('orphans'),
  orphansEmpty: $('orphans-empty'),
  orphansPolicy: $('orphans-policy'),
  orphansKillAll: $('orphans-kill-all'),
  sessions: $('sessions'),
  sessionsEmpty: $('sessions-empty'),
  sessionsAgent: $('sessions-agent'),
  agentState: $('agent-state'),
  trail: $('state-trail'),
  statechart: $('statechart'),
  transcript: $('transcript'),
  transcriptSession: $('transcript-session'),
  promptForm: $('prompt-form'),
  promptSession: $('prompt-session'),
  promptText: $('prompt-text'),
  promptStatus: $('prompt-status'),
  logs: $('logs'),
  logsAgent: $('logs-agent'),
};

// ---------------------------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------------------------

const state = {
  /** @type {Map<string, any>} AgentRow by name, in the daemon's order. */
  agents: new Map(),
  /** @type {Map<string, string[]>} Recent dotted states per agent, oldest first. */
  trails: new Map(),
  /** @type {Map<string, any>} PermissionRow by id, while pending. */
  permissions: new Map(),
  /** @type {Map<string, any>} PermissionRow by id, kept after it is answered (its session, its options). */
  permissionsSeen: new Map(),
  selectedAgent: null,
  /** SessionRows of the selected agent, newest first. */
  sessions: [],
  selectedSession: null,
  /** @type {Map<string, Feed>} Transcript items by session id. */
  transcripts: new Map(),
  /** @type {Map<string, Feed>} Log lines by agent. */
  logs: new Map(),
  /** @type {Map<string, { text: string, session: string }>} The prompt box of each agent, kept while another is selected. */
  drafts: new Map(),
};

/**
 * A list fed live by the event stream and back-filled once from the API's history. Until
 * `loaded`, `items` holds only what arrived live since the page (or its last resync) began.
 */
class Feed {
  constructor() {
    this.items = [];
    this.loaded = false;
    this.loading = null;
    /** Bumped by a resync: a load begun before it is thrown away. */
    this.generation = 0;
  }

  push(item) {
    this.items.push(item);
    this.trim();
  }

  trim() {
    if (this.items.length > FEED_LIMIT) this.items.splice(0, this.items.length - FEED_LIMIT);
  }

  /**
   * Loads the past once (`fetchPast` resolves with its items, oldest first) and joins it to
   * what came live meanwhile (`mergeOverlap`). `settled` runs once it is loaded or has failed,
   * unless a resync began meanwhile (which starts a load of its own).
   */
  backfill({ fetchPast, key, what, settled }) {
    if (this.loaded || this.loading) return;
    const generation = this.generation;
    this.loading = fetchPast()
      .then((past) => {
        if (generation !== this.generation) return;
        this.items = mergeOverlap(past, this.items, key);
        this.trim();
        this.loaded = true;
      })
      .catch((error) => showNotice(`Could not load ${what}: ${error.message}`))
      .finally(() => {
        if (generation !== this.generation) return;
        this.loading = null;
        settled();
      });
  }
}

function feedOf(map, key) {
  let feed = map.get(key);
  if (!feed) map.set(key, (feed = new Feed()));
  return feed;
}

/**
 * `history` then `live`, without the items both hold. The event stream carries no store
 * cursor, so the overlap is found by content: the longest run at the head of `live` that
 * equals the tail of `history`.
 */
function mergeOverlap(history, live, key) {
  const tail = history.map(key);
  const head = live.map(key);
  for (let length = Math.min(tail.length, head.length); length > 0; length--) {
    let same = true;
    for (let i = 0; i < length && same; i++) same = tail[tail.length - length + i] === head[i];
    if (same) return history.concat(live.slice(length));
  }
  return history.concat(live);
}

// ---------------------------------------------------------------------------------------------
// The HTTP API
// ---------------------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, body) {
    super(body?.error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.kind = body?.error?.kind ?? 'http';
  }
}

function request(path, { method = 'GET', body, accept = 'application/json' } = {}) {
  const headers = { Authorization: `Bearer ${token}`, Accept: accept };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  return fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
}

async function failure(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    // not JSON: the status says enough
  }
  return new ApiError(response.status, body);
}

async function api(path, options) {
  const response = await request(path, options);
  if (!response.ok) throw await failure(response);
  return response.json();
}

/** Every page of a paged list (`{ entries, next }`), oldest first. */
async function allPages(path) {
  const entries = [];
  let after = 0;
  for (;;) {
    const separator = path.includes('?') ? '&' : '?';
    const page = await api(`${path}${separator}after=${after}&limit=${PAGE_LIMIT}`);
    entries.push(...page.entries);
    if (page.next === null || page.next === undefined || page.entries.length === 0) return entries;
    after = page.next;
  }
}

const enc = encodeURIComponent;

/** `task`, run one at a time: calls while it runs fold into one more run after it. */
function coalesced(task) {
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

let noticeTimer = null;
/** A message above the panels, gone after a while unless `sticky`. */
function showNotice(message, kind = 'error', sticky = false) {
  view.notice.textContent = message;
  view.notice.dataset.kind = kind;
  view.notice.hidden = false;
  clearTimeout(noticeTimer);
  if (!sticky) noticeTimer = setTimeout(() => (view.notice.hidden = true), 8000);
}

// ---------------------------------------------------------------------------------------------
// DOM helpers
// ---------------------------------------------------------------------------------------------

/** An element; strings among `children` become text nodes (never markup). */
function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === 'class') element.className = value;
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined && child !== false) element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

const time = (at) => (typeof at === 'number' ? new Date(at).toLocaleTimeString() : '');

/**
 * Renders `items` into `container`, one element each, kept by key and updated in place: lists
 * are re-rendered on every event, and a button swapped under the pointer would lose its click.
 * `create(item)` returns `{ element, ... }` (its parts), `update(parts, item)` refreshes them.
 */
function renderKeyed(container, cache, items, keyOf, create, update) {
  const keys = new Set(items.map(keyOf));
  for (const [key, parts] of cache) {
    if (!keys.has(key)) {
      parts.element.remove();
      cache.delete(key);
    }
  }
  const elements = items.map((item) => {
    let parts = cache.get(keyOf(item));
    if (!parts) cache.set(keyOf(item), (parts = create(item)));
    update(parts, item);
    return parts.element;
  });
  // Moved only when the order changed: moving a node also cancels a click on it.
  if (elements.length !== container.children.length || elements.some((element, index) => container.children[index] !== element)) {
    container.replaceChildren(...elements);
  }
}

/** Keeps a scrolled list at its bottom while it grows, unless the reader scrolled up. */
function stickToBottom(element, update) {
  const atBottom = element.scrollHeight - element.scrollTop - element.clientHeight < 24;
  update();
  if (atBottom) element.scrollTop = element.scrollHeight;
}

// ---------------------------------------------------------------------------------------------
// Agents
// ---------------------------------------------------------------------------------------------

const agentRows = new Map();

function createAgentRow({ name }) {
  const parts = {
    name: h('button', { type: 'button', class: 'agent-name', 'data-action': 'select-agent', 'data-agent': name }),
    status: h('span', { class: 'badge', 'data-testid': 'agent-status' }),
    pid: h('dd', { 'data-testid': 'agent-pid' }),
    restarts: h('dd', { 'data-testid': 'agent-restarts' }),
    sessions: h('dd', { 'data-testid': 'agent-sessions' }),
    lastExit: h('dd', { 'data-testid': 'agent-last-exit' }),
    credential: h('dd', { 'data-testid': 'agent-credential' }),
    error: h('p', { class: 'agent-error', 'data-testid': 'agent-error' }),
    // kill: stop with force (SIGKILL to the whole containment at once); it stays usable while a graceful stop waits.
    buttons: ['start', 'stop', 'kill', 'restart'].map((action) =>
      h('button', { type: 'button', 'data-action': action, 'data-agent': name, 'data-testid': `agent-${action}`, ...(action === 'kill' ? { title: 'stop at once: SIGKILL to all its processes' } : {}) }, action),
    ),
  };
  const facts = h(
    'dl',
    { class: 'facts' },
    h('dt', {}, 'pid'),
    parts.pid,
    h('dt', {}, 'restarts'),
    parts.restarts,
    h('dt', {}, 'sessions'),
    parts.sessions,
    h('dt', {}, 'last exit'),
    parts.lastExit,
    h('dt', {}, 'credentials'),
    parts.credential,
  );
  parts.element = h('li', { class: 'agent', 'data-testid': 'agent-row', 'data-agent': name }, parts.name, parts.status, facts, parts.error, h('div', { class: 'agent-actions' }, parts.buttons));
  return parts;
}

function updateAgentRow(parts, agent) {
  parts.element.classList.toggle('selected', agent.name === state.selectedAgent);
  parts.element.dataset.status = agent.status;
  parts.name.textContent = agent.displayName && agent.displayName !== agent.name ? `${agent.displayName} (${agent.name})` : agent.name;
  parts.name.title = agent.state ?? '';
  parts.status.textContent = agent.status;
  parts.status.className = `badge status-${agent.status}`;
  parts.status.title = agent.since ? `since ${new Date(agent.since).toLocaleString()} · restart policy ${agent.restart ?? 'always'}` : '';
  const exit = agent.lastExit;
  parts.lastExit.textContent = exit ? (exit.signal ? exit.signal : `code ${exit.code ?? '?'}`) : '—';
  parts.lastExit.title = exit ? new Date(exit.at).toLocaleString() : '';
  parts.credential.textContent = agent.credential ?? '—';
  parts.pid.textContent = agent.pid ?? '—';
  parts.restarts.textContent = agent.restarts ?? 0;
  parts.sessions.textContent = agent.sessions ?? 0;
  const error = agent.lastError;
  parts.error.hidden = !error;
  parts.error.textContent = error?.message ?? '';
  parts.error.title = error ? [error.kind, error.class].filter(Boolean).join(' · ') : '';
  for (const button of parts.buttons) button.disabled = Boolean(agent.busy) && button.dataset.action !== 'kill';
}

function renderAgents() {
  renderKeyed(view.agents, agentRows, [...state.agents.values()], (agent) => agent.name, createAgentRow, updateAgentRow);
}

/** Takes a newer AgentRow, keeping what the page knows that the row does not (busy buttons). */
function updateAgent(row) {
  const known = state.agents.get(row.name);
  state.agents.set(row.name, { ...known, ...row });
  noteState(row.name, row.state);
}

function noteState(agent, dotted) {
  if (!dotted) return;
  const trail = state.trails.get(agent) ?? [];
  if (trail.at(-1) !== dotted) {
    trail.push(dotted);
    if (trail.length > TRAIL_LENGTH) trail.shift();
  }
  state.trails.set(agent, trail);
  if (agent === state.selectedAgent) renderState();
}

async function agentAction(name, action) {
  const agent = state.agents.get(name);
  if (!agent) return;
  agent.busy = true;
  renderAgents();
  try {
    const row = action === 'kill' ? await api(`/v1/agents/${enc(name)}/stop`, { method: 'POST', body: { force: true } }) : await api(`/v1/agents/${enc(name)}/${action}`, { method: 'POST' });
    // The event stream has said all this already, maybe newer: the answer counts only without it.
    if (view.connection.dataset.state !== 'open') updateAgent(row);
  } catch (error) {
    showNotice(`${action} ${name}: ${error.message}`);
  } finally {
    const current = state.agents.get(name);
    if (current) current.busy = false;
    renderAgents();
  }
}

/** @type {Map<string, () => Promise<void>>} */
const sessionCounts = new Map();

/**
 * An agent's open-session count, which changes without a status change. Only that is taken
 * from the answer: the event stream may already have newer states than it.
 */
function refreshSessionCount(name) {
  let run = sessionCounts.get(name);
  if (!run) {
    run = coalesced(async () => {
      try {
        const row = await api(`/v1/agents/${enc(name)}`);
        const agent = state.agents.get(name);
        if (agent) agent.sessions = row.sessions;
        renderAgents();
      } catch {
        // the next status change brings it
      }
    });
    sessionCounts.set(name, run);
  }
  return run();
}

function selectAgent(name) {
  if (state.selectedAgent === name) return;
  // Each agent has its own prompt box: what was typed for one is not sent to another.
  if (state.selectedAgent) state.drafts.set(state.selectedAgent, { text: view.promptText.value, session: view.promptSession.value });
  const draft = (name && state.drafts.get(name)) || { text: '', session: '' };
  view.promptText.value = draft.text;
  view.promptSession.value = draft.session;
  state.selectedAgent = name;
  state.selectedSession = null;
  state.sessions = [];
  renderAgents();
  renderState();
  renderSessions();
  renderTranscript();
  view.sessionsAgent.textContent = name ? `· ${name}` : '';
  view.logsAgent.textContent = name ? `· ${name}` : '';
  void refreshSessions();
  showLogs();
}

// ---------------------------------------------------------------------------------------------
// The statechart: the daemon's Graphviz SVG, its current state lit
// ---------------------------------------------------------------------------------------------

/** @type {Map<string, Element>} The SVG's node and cluster groups by their <title>. */
let chartGroups = new Map();
let chartLoading = null;
let zoom = 1;

function loadStatechart() {
  chartLoading ??= (async () => {
    const response = await request('/v1/machines/agent.svg', { accept: 'image/svg+xml' });
    if (!response.ok) throw await failure(response);
    const parsed = new DOMParser().parseFromString(await response.text(), 'image/svg+xml');
    const svg = parsed.documentElement;
    if (svg.nodeName !== 'svg') throw new Error('the statechart is not an SVG');
    // Scaled by CSS (the viewBox keeps its proportions); the natural width is kept for zoom.
    const naturalWidth = svg.viewBox.baseVal?.width || parseFloat(svg.getAttribute('width')) || 1000;
    svg.removeAttribute('width');
    svg.removeAttribute('height');
    svg.dataset.naturalWidth = String(naturalWidth);
    const node = document.importNode(svg, true);
    // At its natural size by default (its labels readable), scrolled to the current state; `fit` shows it whole.
    if (!view.statechart.classList.contains('fit')) node.style.width = `${Math.round(naturalWidth * zoom)}px`;
    chartGroups = new Map();
    for (const group of node.querySelectorAll('g.node, g.cluster')) {
      const title = group.querySelector(':scope > title')?.textContent;
      if (title) chartGroups.set(title, group);
    }
    view.statechart.replaceChildren(node);
    renderState();
  })().catch((error) => {
    chartLoading = null;
    view.statechart.replaceChildren(h('p', { class: 'empty' }, `The statechart could not be loaded: ${error.message}`));
  });
  return chartLoading;
}

/**
 * The groups to light for a dotted state: the leaf node (`connected_stable`) and every
 * enclosing cluster (`cluster_connected`). A compound state given alone lights its cluster.
 */
function groupsForState(dotted) {
  const parts = dotted.split('.');
  const groups = [];
  for (let depth = 1; depth <= parts.length; depth++) {
    const path = parts.slice(0, depth).join('_');
    const group = depth === parts.length ? (chartGroups.get(path) ?? chartGroups.get(`cluster_${path}`)) : chartGroups.get(`cluster_${path}`);
    if (group) groups.push(group);
  }
  return groups;
}

function renderState() {
  const agent = state.agents.get(state.selectedAgent);
  const dotted = agent?.state ?? '';
  view.agentState.textContent = dotted ? `· ${agent.name}: ${dotted}` : '';
  view.statechart.dataset.state = dotted;
  for (const group of view.statechart.querySelectorAll('.lit')) group.classList.remove('lit', 'lit-leaf');
  const groups = dotted ? groupsForState(dotted) : [];
  for (const group of groups) group.classList.add('lit');
  const leaf = groups.at(-1);
  if (leaf) {
    leaf.classList.add('lit-leaf');
    if (!view.statechart.classList.contains('fit')) centerOn(leaf);
  }
  const trail = state.trails.get(state.selectedAgent) ?? [];
  view.trail.replaceChildren(...trail.map((entry) => h('li', { 'data-testid': 'state-trail-entry' }, entry)));
}

/** Scrolls the zoomed chart (and nothing else on the page) so `group` is in the middle. */
function centerOn(group) {
  const panel = view.statechart.getBoundingClientRect();
  const box = group.getBoundingClientRect();
  view.statechart.scrollLeft += box.left + box.width / 2 - (panel.left + panel.width / 2);
  view.statechart.scrollTop += box.top + box.height / 2 - (panel.top + panel.height / 2);
}

function setZoom(direction) {
  const svg = view.statechart.querySelector('svg');
  if (!svg) return;
  if (direction === 'fit') {
    zoom = 1;
    view.statechart.classList.add('fit');
    svg.style.width = '';
    return;
  }
  if (view.statechart.classList.contains('fit')) {
    // Zooming starts from the size the panel shows now.
    zoom = svg.getBoundingClientRect().width / Number(svg.dataset.naturalWidth);
    view.statechart.classList.remove('fit');
  }
  zoom = Math.min(3, Math.max(0.1, zoom * (direction === 'in' ? 1.25 : 0.8)));
  // CSSOM, not a style attribute: allowed by the page's CSP.
  svg.style.width = `${Math.round(Number(svg.dataset.naturalWidth) * zoom)}px`;
  renderState();
}

// ---------------------------------------------------------------------------------------------
// Permissions
// ---------------------------------------------------------------------------------------------

function addPermission(row) {
  state.permissionsSeen.set(row.id, row);
  state.permissions.set(row.id, row);
  renderPermissions();
}

const permissionRows = new Map();

function createPermissionRow(row) {
  const options = row.options.map((option) =>
    h(
      'button',
      { type: 'button', class: `option-${option.kind}`, title: option.kind, 'data-testid': 'permission-option', 'data-action': 'answer-permission', 'data-permission-id': row.id, 'data-option-id': option.optionId },
      option.name,
    ),
  );
  const element = h(
    'li',
    { class: 'permission', 'data-testid': 'permission', 'data-permission-id': row.id, 'data-agent': row.agent, 'data-session-id': row.sessionId },
    h('p', { class: 'permission-title' }, row.toolCall?.title || row.toolCall?.toolCallId || 'A tool call'),
    h('p', { class: 'muted' }, `${row.agent} · ${row.toolCall?.kind ?? 'tool'} · ${time(row.requestedAt)}`),
    h('div', { class: 'permission-options' }, options),
  );
  return { element, options };
}

function renderPermissions() {
  const rows = [...state.permissions.values()];
  renderKeyed(view.permissions, permissionRows, rows, (row) => row.id, createPermissionRow, (parts, row) => {
    for (const button of parts.options) button.disabled = Boolean(row.answering);
  });
  view.permissionsEmpty.hidden = rows.length > 0;
}

async function answerPermission(id, optionId) {
  const row = state.permissions.get(id);
  if (!row) return;
  row.answering = true;
  renderPermissions();
  try {
    await api(`/v1/permissions/${enc(id)}`, { method: 'POST', body: { optionId } });
    // Its answer reaches the transcript with `permission:resolved`, in order with the updates.
    if (state.permissions.delete(id)) renderPermissions();
  } catch (error) {
    showNotice(`Could not answer the permission request: ${error.message}`);
    row.answering = false;
    renderPermissions();
  }
}

/** Answered (here or elsewhere, as the event stream says): no longer pending; the answer joins its session's transcript once. */
function resolvePermission(id, outcome) {
  const row = state.permissionsSeen.get(id);
  if (state.permissions.delete(id)) renderPermissions();
  if (row && !row.answered) {
    row.answered = true;
    liveTranscriptItem(row.sessionId, { kind: 'permission_outcome', data: { outcome } });
  }
}

// ---------------------------------------------------------------------------------------------
// Orphans: what a crashed supervisor left running (GET /v1/orphans, a listing that touches
// nothing), killed one by one or all at once (POST /v1/orphans/kill)
// ---------------------------------------------------------------------------------------------

/** The leftovers as last listed, and the daemon's start-up policy. */
const orphanState = { rows: [], policy: null, killing: new Set() };
const orphanRows = new Map();

/** Lists them again: on hello, after a sweep anyone made (`orphans:swept`), after a kill here. */
const refreshOrphans = coalesced(async () => {
  try {
    const body = await api('/v1/orphans');
    orphanState.rows = body.orphans;
    orphanState.policy = body.startup?.policy ?? null;
  } catch (error) {
    showNotice(`Could not list the orphans: ${error.message}`);
  }
  renderOrphans();
});

function createOrphanRow(orphan) {
  const kill = h('button', { type: 'button', 'data-action': 'kill-orphan', 'data-pid': orphan.pid, 'data-testid': 'orphan-kill', title: `SIGKILL what is left of pid ${orphan.pid}` }, 'kill');
  const started = orphan.startedAt === null ? 'start unknown' : `started ${new Date(orphan.startedAt).toLocaleString()}`;
  const left = [orphan.running ? null : 'its process is gone', orphan.container ? `container ${orphan.container}` : null].filter(Boolean).join(' · ');
  const element = h(
    'li',
    { class: 'orphan', 'data-testid': 'orphan', 'data-pid': orphan.pid, 'data-agent': orphan.agent },
    h('p', { class: 'orphan-title' }, `pid ${orphan.pid} · ${orphan.agent}${orphan.terminal ? ' (terminal)' : ''}`),
    h('p', { class: 'muted orphan-command' }, orphan.command),
    h('p', { class: 'muted' }, `${started} · left by pid ${orphan.owner}${left ? ` · ${left}` : ''}`),
    h('div', { class: 'orphan-actions' }, kill),
  );
  return { element, kill };
}

function renderOrphans() {
  renderKeyed(view.orphans, orphanRows, orphanState.rows, (orphan) => String(orphan.pid), createOrphanRow, (parts, orphan) => {
    parts.kill.disabled = orphanState.killing.has(orphan.pid) || orphanState.killing.has('all');
  });
  view.orphansEmpty.hidden = orphanState.rows.length > 0;
  view.orphansKillAll.hidden = orphanState.rows.length < 2;
  view.orphansKillAll.disabled = orphanState.killing.size > 0;
  view.orphansPolicy.textContent = orphanState.policy ? `· at start: ${orphanState.policy}` : '';
}

/** Kills the leftovers of `pids`, or every one (null); a pid that is no longer one is said, and the list is read again. */
async function killOrphans(pids) {
  const key = pids === null ? 'all' : pids[0];
  orphanState.killing.add(key);
  renderOrphans();
  try {
    const result = await api('/v1/orphans/kill', { method: 'POST', body: pids === null ? {} : { pids } });
    showNotice(result.killed.length > 0 ? `Killed ${result.killed.map((killed) => `pid ${killed.pid} (${killed.agent})`).join(', ')}` : 'Nothing was left to kill.', 'info');
  } catch (error) {
    showNotice(`Could not kill: ${error.message}`);
  } finally {
    orphanState.killing.delete(key);
    await refreshOrphans();
  }
}

// ---------------------------------------------------------------------------------------------
// Sessions and transcripts
// ---------------------------------------------------------------------------------------------

/** The selected agent's sessions, reloaded; with none selected yet, the newest is. */
const refreshSessions = coalesced(async () => {
  const agent = state.selectedAgent;
  if (!agent) return;
  try {
    const body = await api(`/v1/sessions?agent=${enc(agent)}`);
    if (agent !== state.selectedAgent) return;
    state.sessions = body.sessions;
    if (!state.selectedSession && body.sessions.length) selectSession(body.sessions[0].sessionId);
    renderSessions();
  } catch (error) {
    showNotice(`Could not list the sessions: ${error.message}`);
  }
});

const sessionRows = new Map();

function createSessionRow({ sessionId }) {
  const button = h('button', { type: 'button', 'data-action': 'select-session', 'data-session-id': sessionId });
  const facts = h('span', { class: 'muted' });
  return { element: h('li', { class: 'session', 'data-testid': 'session-row', 'data-session-id': sessionId }, button, facts), button, facts };
}

function updateSessionRow(parts, session) {
  parts.element.classList.toggle('selected', session.sessionId === state.selectedSession);
  // A named session keeps its name when the agent gives it a title: the title is a fact beside it.
  parts.button.textContent = session.name || session.title || session.sessionId;
  parts.button.title = [session.title, session.sessionId, session.cwd].filter(Boolean).join('\n');
  const title = session.name && session.title ? `“${session.title}”` : null;
  const facts = [title, session.state, session.busy && 'busy', session.queued && `${session.queued} queued`, !session.live && 'not open', time(session.updatedAt)];
  parts.facts.textContent = facts.filter(Boolean).join(' · ');
}

function renderSessions() {
  renderKeyed(view.sessions, sessionRows, state.sessions, (session) => session.sessionId, createSessionRow, updateSessionRow);
  view.sessionsEmpty.hidden = state.sessions.length > 0;
}

function selectSession(sessionId) {
  state.selectedSession = sessionId;
  const session = state.sessions.find((candidate) => candidate.sessionId === sessionId);
  view.promptSession.value = session?.name ?? '';
  renderSessions();
  renderTranscript();
  loadTranscript(sessionId);
}

/** Transcript items: `{ kind: 'prompt' | 'update' | 'permission' | 'permission_outcome' | 'prompt_result', data }`, as the store keeps them. */
function transcriptKey(item) {
  const data = item.data ?? {};
  switch (item.kind) {
    case 'prompt':
      return `prompt:${promptText(data.prompt)}`;
    case 'permission':
      return `permission:${data.toolCall?.toolCallId}`;
    case 'permission_outcome':
      return `outcome:${data.outcome?.outcome}:${data.outcome?.optionId ?? ''}`;
    default:
      return `${item.kind}:${JSON.stringify(data)}`;
  }
}

const promptText = (blocks) => (Array.isArray(blocks) ? blocks.map((block) => (block?.type === 'text' ? block.text : `[${block?.type}]`)).join('') : '');

function loadTranscript(sessionId) {
  feedOf(state.transcripts, sessionId).backfill({
    fetchPast: async () => (await allPages(`/v1/sessions/${enc(sessionId)}/history`)).map((entry) => ({ kind: entry.kind, data: entry.data })),
    key: transcriptKey,
    what: 'the transcript',
    settled: () => state.selectedSession === sessionId && renderTranscript(),
  });
}

function liveTranscriptItem(sessionId, item) {
  if (!sessionId) return;
  const feed = feedOf(state.transcripts, sessionId);
  feed.push(item);
  if (sessionId === state.selectedSession && feed.loaded) stickToBottom(view.transcript, () => transcriptView.append(item));
}

/** Renders transcript items into blocks; consecutive message chunks of one kind join into one block. */
class TranscriptView {
  constructor(container) {
    this.container = container;
    this.reset();
  }

  reset() {
    this.container.replaceChildren();
    this.open = null; // { kind, text: Text node } of the block chunks still join
    this.tools = new Map(); // toolCallId → its block
    this.options = new Map(); // optionId → name, from the latest permission
  }

  block(kind, label, ...content) {
    const block = h(
      'div',
      { class: `entry entry-${kind}`, 'data-testid': 'transcript-entry', 'data-kind': kind },
      h('span', { class: 'entry-label' }, label ?? ''),
      h('div', { class: 'entry-body' }, ...content),
    );
    this.container.append(block);
    this.open = null;
    return block;
  }

  chunk(kind, label, text) {
    if (this.open?.kind !== kind) {
      const body = document.createTextNode('');
      this.block(kind, label, h('span', { class: 'entry-text', 'data-testid': 'transcript-text' }, body));
      this.open = { kind, text: body };
    }
    this.open.text.appendData(text);
  }

  append(item) {
    const data = item.data ?? {};
    switch (item.kind) {
      case 'prompt':
        return this.block('user', 'you', h('span', { class: 'entry-text' }, promptText(data.prompt)));
      case 'prompt_result':
        return data.error
          ? this.block('error', null, `turn failed: ${data.error.message ?? data.error.kind}`)
          : this.block('result', null, `turn ended: ${data.stopReason}`);
      case 'permission':
        (data.options ?? []).forEach((option) => this.options.set(option.optionId, option.name));
        return this.block(
          'permission',
          'permission',
          h('span', { class: 'entry-text' }, data.toolCall?.title || data.toolCall?.toolCallId || 'a tool call'),
          h('span', { class: 'muted' }, ` — ${(data.options ?? []).map((option) => option.name).join(' / ')}`),
        );
      case 'permission_outcome': {
        const outcome = data.outcome ?? {};
        const answer = outcome.outcome === 'selected' ? `answered: ${this.options.get(outcome.optionId) ?? outcome.optionId}` : 'cancelled';
        return this.block('permission-outcome', null, answer);
      }
      case 'update':
        return this.update(data);
      default:
        return this.block('other', item.kind, JSON.stringify(data));
    }
  }

  update(update) {
    const content = update.content;
    const text = content?.type === 'text' ? content.text : content ? `[${content.type}]` : '';
    switch (update.sessionUpdate) {
      case 'agent_message_chunk':
        return this.chunk('agent', 'agent', text);
      case 'agent_thought_chunk':
        return this.chunk('thought', 'thinking', text);
      case 'user_message_chunk':
        return this.chunk('user', 'you', text);
      case 'tool_call':
      case 'tool_call_update':
        return this.tool(update);
      case 'plan':
        return this.block('plan', 'plan', h('ul', {}, (update.entries ?? []).map((entry) => h('li', { 'data-status': entry.status }, `${entry.content} (${entry.status})`))));
      case 'current_mode_update':
        return this.block('info', null, `mode: ${update.currentModeId}`);
      case 'session_info_update':
        return this.block('info', null, `title: ${update.title ?? '—'}`);
      default:
        return this.block('info', null, update.sessionUpdate ?? 'update');
    }
  }

  /** A tool call's block, updated in place by its `tool_call_update`s. */
  tool(update) {
    let tool = this.tools.get(update.toolCallId);
    if (!tool) {
      const title = h('span', { class: 'entry-text' });
      const status = h('span', { class: 'tool-status' });
      const output = h('pre', { class: 'tool-output' });
      this.block('tool', 'tool', title, ' ', status, output);
      tool = { title, status, output };
      this.tools.set(update.toolCallId, tool);
    } else {
      this.open = null;
    }
    if (update.title) tool.title.textContent = update.kind ? `${update.title} (${update.kind})` : update.title;
    if (update.status) tool.status.textContent = update.status;
    for (const part of update.content ?? []) {
      const partText = part.type === 'content' && part.content?.type === 'text' ? part.content.text : part.type === 'diff' ? `diff ${part.path}` : `[${part.type}]`;
      tool.output.append(`${partText}\n`);
    }
  }
}

const transcriptView = new TranscriptView(view.transcript);

function renderTranscript() {
  transcriptView.reset();
  const sessionId = state.selectedSession;
  view.transcriptSession.textContent = sessionId ? `· ${sessionId}` : '';
  view.transcript.dataset.sessionId = sessionId ?? '';
  const feed = sessionId ? state.transcripts.get(sessionId) : null;
  if (!sessionId || !feed?.loaded) {
    view.transcript.dataset.loaded = 'false';
    view.transcript.append(h('p', { class: 'empty' }, sessionId ? 'Loading…' : 'Select a session, or send a prompt.'));
    return;
  }
  view.transcript.dataset.loaded = 'true';
  for (const item of feed.items) transcriptView.append(item);
  view.transcript.scrollTop = view.transcript.scrollHeight;
}

// ---------------------------------------------------------------------------------------------
// Prompts: POST /v1/prompt, its answer read as NDJSON while it streams
// ---------------------------------------------------------------------------------------------

async function sendPrompt(agent, text, sessionName) {
  // An unnamed session is only reachable by its id; a name (default `default`) goes through /v1/prompt.
  const byId = !sessionName && state.selectedSession ? state.selectedSession : null;
  const path = byId ? `/v1/sessions/${enc(byId)}/prompt` : '/v1/prompt';
  const body = byId ? { text } : { agent, text, session: sessionName || 'default' };
  let sessionId = byId ?? state.sessions.find((session) => session.live && session.name === (sessionName || 'default'))?.sessionId ?? null;
  let updates = 0;
  // The prompt itself shows when the event stream brings it (session:turn), as every client's
  // prompts do: one source for the transcript, in the order the daemon sent it.
  view.promptStatus.textContent = 'sending…';
  const response = await request(path, { method: 'POST', body, accept: 'application/x-ndjson' });
  if (!response.ok) throw await failure(response);
  await readLines(response, (line) => {
    switch (line.type) {
      case 'queued':
        view.promptStatus.textContent = `queued behind ${line.position}`;
        break;
      case 'session':
        sessionId = line.sessionId;
        if (line.notice) showNotice(line.notice, 'info');
        // A session opened just now has no history but what the event stream brought since the
        // page loaded: its feed is complete, and the turn shows live from its first update.
        if (line.opened === 'new') feedOf(state.transcripts, sessionId).loaded = true;
        if (agent === state.selectedAgent && state.selectedSession !== sessionId) selectSession(sessionId);
        if (agent === state.selectedAgent) view.promptSession.value = line.name ?? '';
        void refreshSessions();
        break;
      case 'started':
        view.promptStatus.textContent = 'running…';
        break;
      case 'update':
        // Rendered from the event stream (session:update); counted here.
        view.promptStatus.textContent = `running… ${++updates} update${updates === 1 ? '' : 's'}`;
        break;
      case 'permission':
        if (!state.permissionsSeen.get(line.permission.id)?.answered) addPermission(line.permission);
        view.promptStatus.textContent = 'waiting for a permission answer';
        break;
      case 'done':
        view.promptStatus.textContent = `done: ${line.stopReason}`;
        void refreshSessions();
        break;
      case 'error':
        view.promptStatus.textContent = `error: ${line.error?.message ?? line.error?.kind}`;
        showNotice(line.error?.message ?? 'The prompt failed');
        break;
    }
  });
  return sessionId;
}

/** Calls `onLine` with each JSON line of a streamed answer, as it arrives. */
async function readLines(response, onLine) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (value) buffer += value;
    let newline;
    while ((newline = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, newline).trim();
      buffer = buffer.slice(newline + 1);
      if (line) onLine(JSON.parse(line));
    }
    if (done) break;
  }
  if (buffer.trim()) onLine(JSON.parse(buffer));
}

// ---------------------------------------------------------------------------------------------
// Logs
// ---------------------------------------------------------------------------------------------

function showLogs() {
  const agent = state.selectedAgent;
  renderLogs();
  if (!agent) return;
  feedOf(state.logs, agent).backfill({
    fetchPast: async () => (await api(`/v1/agents/${enc(agent)}/logs?tail=${LOG_TAIL}`)).entries.map((entry) => ({ at: entry.at, line: entry.line })),
    key: (entry) => entry.line,
    what: 'the logs',
    settled: () => state.selectedAgent === agent && renderLogs(),
  });
}

const logLine = (entry) => h('li', { 'data-testid': 'log-line' }, h('time', {}, time(entry.at)), ' ', entry.line);

function renderLogs() {
  const feed = state.logs.get(state.selectedAgent);
  view.logs.replaceChildren(...(feed?.loaded ? feed.items.map(logLine) : []));
  view.logs.scrollTop = view.logs.scrollHeight;
}

function liveLog(agent, entry) {
  const feed = feedOf(state.logs, agent);
  feed.push(entry);
  if (agent !== state.selectedAgent || !feed.loaded) return;
  stickToBottom(view.logs, () => {
    view.logs.append(logLine(entry));
    while (view.logs.childElementCount > FEED_LIMIT) view.logs.firstElementChild.remove();
  });
}

// ---------------------------------------------------------------------------------------------
// The event stream
// ---------------------------------------------------------------------------------------------

let socket = null;
let reconnectDelay = RECONNECT_INITIAL_MS;

function setConnection(connectionState, text) {
  view.connection.dataset.state = connectionState;
  view.connection.textContent = text;
}

function connect() {
  setConnection('connecting', 'connecting…');
  socket = new WebSocket(`ws://${location.host}/v1/events?token=${enc(token)}`);
  socket.addEventListener('open', () => {
    reconnectDelay = RECONNECT_INITIAL_MS;
    setConnection('open', 'live');
  });
  socket.addEventListener('message', (event) => {
    let message;
    try {
      message = JSON.parse(event.data);
    } catch {
      return;
    }
    onMessage(message);
  });
  socket.addEventListener('close', async () => {
    socket = null;
    const delay = reconnectDelay;
    reconnectDelay = Math.min(RECONNECT_MAX_MS, reconnectDelay * 2);
    setConnection('closed', `disconnected — retrying in ${(delay / 1000).toFixed(1)} s`);
    // A daemon started again has a new token, which this page cannot learn: retrying is no use.
    if (await tokenRefused()) {
      setConnection('closed', 'token refused');
      showNotice('The daemon refuses this page\'s token (was it restarted?): open the address `agentvisor dashboard` prints.', 'error', true);
      return;
    }
    setTimeout(connect, delay);
  });
}

async function tokenRefused() {
  try {
    return (await request('/v1/health')).status === 401;
  } catch {
    return false; // the daemon is not there (yet): keep trying
  }
}

/**
 * After a (re)connection or dropped messages the page may have missed some: every feed starts
 * over (`reloadSelected` then loads the selected session's transcript and agent's logs again).
 */
function resetFeeds() {
  for (const feed of [...state.transcripts.values(), ...state.logs.values()]) {
    feed.generation++;
    feed.items = [];
    feed.loaded = false;
    feed.loading = null;
  }
}

/** Every agent's row again: state moves are among what a slow page may have missed. */
async function refreshAgents() {
  try {
    for (const row of (await api('/v1/agents')).agents) updateAgent(row);
    renderAgents();
  } catch (error) {
    showNotice(`Could not list the agents: ${error.message}`);
  }
}

function reloadSelected() {
  renderTranscript();
  renderLogs();
  if (state.selectedSession) loadTranscript(state.selectedSession);
  showLogs();
  void refreshSessions();
}

function onMessage(message) {
  switch (message.type) {
    case 'hello': {
      view.version.textContent = `v${message.version}`;
      state.agents = new Map();
      for (const row of message.agents) updateAgent(row);
      state.permissions = new Map();
      for (const row of message.permissions) addPermission(row);
      renderPermissions();
      void refreshOrphans();
      resetFeeds();
      if (!state.selectedAgent || !state.agents.has(state.selectedAgent)) {
        state.selectedAgent = null;
        selectAgent(message.agents[0]?.name ?? null);
      } else {
        renderAgents();
        renderState();
        reloadSelected();
      }
      break;
    }
    case 'agent:status':
      updateAgent(message.row);
      renderAgents();
      break;
    case 'agent:state': {
      const agent = state.agents.get(message.agent);
      if (!agent) break;
      agent.state = message.state;
      agent.status = message.status;
      noteState(message.agent, message.state);
      renderAgents();
      break;
    }
    case 'agent:error': {
      const agent = state.agents.get(message.agent);
      if (!agent) break;
      agent.lastError = { ...agent.lastError, kind: message.kind, message: message.message, class: message.class };
      renderAgents();
      break;
    }
    case 'session:update':
      liveTranscriptItem(message.sessionId, { kind: 'update', data: message.update });
      break;
    case 'session:turn':
      // A prompt as sent (by any client), then how its turn ended: the transcript's own shapes.
      if ('prompt' in message.turn) liveTranscriptItem(message.sessionId, { kind: 'prompt', data: { prompt: message.turn.prompt } });
      else liveTranscriptItem(message.sessionId, { kind: 'prompt_result', data: message.turn });
      break;
    case 'session:status':
      if (message.agent === state.selectedAgent) void refreshSessions();
      void refreshSessionCount(message.agent);
      break;
    case 'permission:request':
      if (!state.permissionsSeen.get(message.permission.id)?.answered) addPermission(message.permission);
      liveTranscriptItem(message.permission.sessionId, { kind: 'permission', data: { toolCall: message.permission.toolCall, options: message.permission.options } });
      break;
    case 'permission:resolved':
      resolvePermission(message.id, message.outcome);
      break;
    case 'log':
      liveLog(message.agent, { at: message.at, line: message.line });
      break;
    case 'orphans:swept':
      void refreshOrphans();
      break;
    case 'dropped':
      showNotice(`${message.count} events were dropped (the page read too slowly); reloading.`, 'info');
      resetFeeds();
      reloadSelected();
      void refreshAgents();
      break;
  }
}

// ---------------------------------------------------------------------------------------------
// Wiring
// ---------------------------------------------------------------------------------------------

// One delegated listener: rows are re-rendered often, their buttons carry what they act on.
document.addEventListener('click', (event) => {
  const target = event.target instanceof Element ? event.target.closest('button') : null;
  if (!target) return;
  const { action, agent, sessionId, permissionId, optionId, zoom: zoomDirection } = target.dataset;
  if (action === 'kill-orphan' || action === 'kill-orphans') return void killOrphans(action === 'kill-orphan' ? [Number(target.dataset.pid)] : null);
  if (zoomDirection) setZoom(zoomDirection);
  else if (action === 'select-agent') selectAgent(agent);
  else if (action === 'select-session') selectSession(sessionId);
  else if (action === 'answer-permission') void answerPermission(permissionId, optionId);
  else if (action === 'start' || action === 'stop' || action === 'kill' || action === 'restart') {
    selectAgent(agent);
    void agentAction(agent, action);
  }
});

view.promptForm.addEventListener('submit', (event) => {
  event.preventDefault();
  const text = view.promptText.value;
  const agent = state.selectedAgent;
  if (!text.trim() || !agent) return;
  view.promptText.value = '';
  sendPrompt(agent, text, view.promptSession.value.trim()).catch((error) => {
    view.promptStatus.textContent = `error: ${error.message}`;
    showNotice(`The prompt failed: ${error.message}`);
  });
});

view.promptText.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) view.promptForm.requestSubmit();
});

if (!token) {
  setConnection('closed', 'no token');
  showNotice('This page needs its token: open the address `agentvisor dashboard` prints.');
} else {
  renderPermissions();
  renderOrphans();
  renderSessions();
  renderTranscript();
  void loadStatechart();
  connect();
}
