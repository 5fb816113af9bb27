/**
 * The session controls (docs/acp.md, "Controls"): `set-mode`, `set-model` and `set` (a config
 * option) on an agent's named session in the daemon, as `prompt -s NAME` names it (default
 * `default`). A mode, model, option or value the session does not offer is refused here, with
 * what it offers, before anything is sent; the daemon (and the agent) have the last word.
 */
import type { Command } from 'commander';
import type { SessionConfigOption } from '../../index.js';
import { CliError } from '../cli-error.js';
import type { DaemonClient } from '../daemon-client.js';
import { ExitCode } from '../exit-codes.js';
import { printJson } from '../output.js';
import { currentMode, currentModel, currentValue, offeredModels, offeredModes, optionValues, valueList, type SessionDetail } from '../session-view.js';
import { connect } from './agents.js';
import { formatOption, type FormatOptions } from './options.js';
import { namedSession } from './prompt.js';

interface ControlOptions extends FormatOptions {
  session?: string;
}

const sessionPath = (id: string, rest: string) => `/v1/sessions/${encodeURIComponent(id)}${rest}`;

/** Adds `set-mode`, `set-model` and `set` to the program. */
export function registerControls(program: Command): void {
  program
    .command('set-mode')
    .description("set the mode of an agent's named session (ACP session/set_mode)")
    .argument('<agent>', 'the agent')
    .argument('<mode>', 'the mode id (`agentvisor sessions show ID` lists them)')
    .option('-s, --session <name>', 'the named session (default: "default")')
    .addOption(formatOption())
    .action((agent: string, mode: string, options: ControlOptions, command: Command) =>
      control(command, agent, options, (row) => {
        checkMode(row, mode);
        return { path: '/mode', body: { modeId: mode }, said: (updated) => `mode ${currentMode(updated) ?? mode}` };
      }),
    );
  program
    .command('set-model')
    .description("set the model of an agent's named session (its model config option, or session/set_model)")
    .argument('<agent>', 'the agent')
    .argument('<model>', 'the model id (`agentvisor sessions show ID` lists them)')
    .option('-s, --session <name>', 'the named session (default: "default")')
    .addOption(formatOption())
    .action((agent: string, model: string, options: ControlOptions, command: Command) =>
      control(command, agent, options, (row) => {
        checkModel(row, model);
        return { path: '/model', body: { modelId: model }, said: (updated) => `model ${currentModel(updated) ?? model}` };
      }),
    );
  program
    .command('set')
    .description("set a config option of an agent's named session (ACP session/set_config_option); a boolean option takes true or false")
    .argument('<agent>', 'the agent')
    .argument('<option>', 'the config option id (`agentvisor sessions show ID` lists them)')
    .argument('<value>', 'one of its values; true or false for a boolean option')
    .option('-s, --session <name>', 'the named session (default: "default")')
    .addOption(formatOption())
    .action((agent: string, configId: string, given: string, options: ControlOptions, command: Command) =>
      control(command, agent, options, (row) => {
        const value = configValue(row, configId, given);
        return {
          path: '/config',
          body: { configId, value },
          said: (updated) => {
            const option = updated.configOptions?.find((each) => each.id === configId);
            return `${configId} ${option ? currentValue(option) : String(value)}`;
          },
        };
      }),
    );
}

/** What one control sends, and how its answer is told. */
interface ControlRequest {
  path: string;
  body: unknown;
  said(updated: SessionDetail): string;
}

/** Finds the named session, checks the request against what it offers, sends it, prints the answer. */
async function control(command: Command, agent: string, options: ControlOptions, build: (row: SessionDetail) => ControlRequest): Promise<void> {
  const client = await connect(command);
  const name = options.session ?? 'default';
  const row = await sessionDetail(client, agent, name);
  const request = build(row);
  const updated = await client.request<SessionDetail>('POST', sessionPath(row.sessionId, request.path), { body: request.body });
  if (options.format === 'json') return printJson(updated);
  if (options.format === 'text') process.stdout.write(`${agent}/${name}: ${request.said(updated)}\n`);
}

/** The named session with its state (a list's row may leave the state out: the session's own route has it). */
async function sessionDetail(client: DaemonClient, agent: string, name: string): Promise<SessionDetail> {
  const listed = await namedSession(client, agent, name);
  return client.request<SessionDetail>('GET', sessionPath(listed.sessionId, ''));
}

/**
 * Whether the session's offers are known: an open session the daemon reports the state of. A
 * session that is not open (its agent restarted, a stored one) is reopened by the daemon first,
 * and what it offers then is the agent's to say: nothing is checked here.
 */
function offersKnown(row: SessionDetail): boolean {
  return row.live && row.configOptions !== undefined;
}

/** A usage error about the session's offers, kind `invalid_options` (or `unsupported` when it offers none). */
function refusal(row: SessionDetail, message: string, hint: string | undefined, kind = 'invalid_options'): CliError {
  return new CliError(`Session ${row.name === null ? row.sessionId : `"${row.name}"`} of ${row.agent} ${message}`, ExitCode.usage, hint, kind);
}

/** A mode the session offers, or a usage error naming its modes. */
export function checkMode(row: SessionDetail, mode: string): void {
  if (!offersKnown(row)) return;
  const modes = offeredModes(row);
  if (modes.length === 0) throw refusal(row, 'has no modes: the agent offers none', undefined, 'unsupported');
  if (!modes.some((each) => each.value === mode)) throw refusal(row, `offers no mode "${mode}"`, `its modes: ${valueList(modes)}`);
}

/** A model the session offers, or a usage error naming its models. */
export function checkModel(row: SessionDetail, model: string): void {
  if (!offersKnown(row)) return;
  const models = offeredModels(row);
  if (models.length === 0) throw refusal(row, 'has no models to choose from: the agent offers none', undefined, 'unsupported');
  if (!models.some((each) => each.value === model)) throw refusal(row, `offers no model "${model}"`, `its models: ${valueList(models)}`);
}

/**
 * The value to send for a config option: `true`/`false` as booleans for a boolean option, a
 * select option's value as given. An option or value the session does not offer is a usage
 * error naming what it does. Unknown offers (see {@link offersKnown}): `true`/`false` go as
 * booleans, anything else as text.
 */
export function configValue(row: SessionDetail, configId: string, given: string): string | boolean {
  const asBoolean = given === 'true' ? true : given === 'false' ? false : undefined;
  if (!offersKnown(row)) return asBoolean ?? given;
  const options = row.configOptions ?? [];
  if (options.length === 0) throw refusal(row, 'has no config options: the agent offers none', undefined, 'unsupported');
  const option: SessionConfigOption | undefined = options.find((each) => each.id === configId);
  if (!option) throw refusal(row, `has no config option "${configId}"`, `its options: ${options.map((each) => each.id).join(', ')}`);
  if (option.type === 'boolean') {
    if (asBoolean === undefined) throw refusal(row, `takes true or false for "${configId}", not "${given}"`, `"${configId}" (${option.name}) is a boolean option`);
    return asBoolean;
  }
  const values = optionValues(option);
  if (!values.some((each) => each.value === given)) throw refusal(row, `offers no value "${given}" for "${configId}"`, `its values: ${valueList(values)}`);
  return given;
}
