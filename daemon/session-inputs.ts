/**
 * What a request gives a session beyond its text, checked before anything is opened or sent:
 * the per-session inputs of an open (MCP servers, more directories, a permission policy) and
 * the content blocks of a prompt against what the agent advertised. The library checks a
 * prompt's blocks again before it sends them; checking here first is what lets a refusal be
 * a 4xx of its own rather than the last line of a stream already under way.
 */
import { existingDirectory, type ContentBlock, type McpServer, type Supervisor } from '../index.js';
import type { z } from 'zod';
import { absoluteDirectories, type contentBlock, type mcpServer } from './api-schemas.js';
import { ApiError } from './http-kit.js';
import type { SessionInputs } from './session-desk.js';

/** Which `promptCapabilities` flag a block type needs (docs/acp.md, "Rich prompts"); text and links every agent takes. */
const capabilityOf: Record<ContentBlock['type'], 'image' | 'audio' | 'embeddedContext' | null> = {
  text: null,
  resource_link: null,
  image: 'image',
  audio: 'audio',
  resource: 'embeddedContext',
};

/**
 * Refuses, `422 unsupported` as the library would, a block of a type the agent's
 * `promptCapabilities` do not allow. The agent is connected first when a block needs a
 * capability (its `initialize` answer says what it takes); text and links need nothing.
 */
export async function refuseUnsupportedContent(supervisor: Supervisor, agent: string, blocks: ReadonlyArray<z.output<typeof contentBlock>>): Promise<void> {
  const needed = blocks.map((block, index) => ({ index, type: block.type, needs: capabilityOf[block.type] })).filter((block) => block.needs !== null);
  if (needed.length === 0) return;
  const { agentCapabilities, displayName } = await supervisor.ensureAgent(agent);
  const capabilities = agentCapabilities.promptCapabilities ?? {};
  const refused = needed.find((block) => capabilities[block.needs!] !== true);
  if (refused) {
    throw new ApiError(422, 'unsupported', `${displayName} does not take ${refused.type} content in prompts (promptCapabilities.${refused.needs} is not advertised): block ${refused.index} refused, nothing sent`, { agent });
  }
}

/**
 * The library's session inputs of a body: `additionalDirectories` absolute (`400
 * invalid_options`) and, for an agent that runs on this host, existing directories (the
 * library's own check, naming the path); `mcpServers` of a transport the agent advertises
 * (`mcpCapabilities.http` / `.sse`; stdio every agent takes) — the agent is connected to
 * know — else `422 unsupported`.
 */
export async function sessionInputsOf(
  supervisor: Supervisor,
  agent: string,
  body: { mcpServers?: Array<z.output<typeof mcpServer>> | undefined; additionalDirectories?: string[] | undefined; permissions?: SessionInputs['permissions'] },
): Promise<SessionInputs> {
  const directories = absoluteDirectories(body.additionalDirectories);
  if (directories !== undefined && ['local', 'sandbox'].includes(supervisor.agentSpec(agent).runtime)) {
    for (const directory of directories) existingDirectory(directory, 'Option additionalDirectories', agent);
  }
  const remote = body.mcpServers?.filter((server) => 'type' in server) ?? [];
  if (remote.length > 0) {
    const { agentCapabilities, displayName } = await supervisor.ensureAgent(agent);
    const refused = remote.find((server) => agentCapabilities.mcpCapabilities?.[server.type] !== true);
    if (refused) {
      throw new ApiError(422, 'unsupported', `${displayName} does not take ${refused.type} MCP servers (mcpCapabilities.${refused.type} is not advertised): "${refused.name}" refused`, { agent });
    }
  }
  return {
    ...(body.mcpServers === undefined ? {} : { mcpServers: body.mcpServers.map(acpMcpServer) }),
    ...(directories === undefined ? {} : { additionalRoots: directories }),
    ...(body.permissions === undefined ? {} : { permissions: body.permissions }),
  };
}

/** ACP's shape of a server: a stdio one's `args` and `env`, an http or sse one's `headers`, are lists it always carries. */
function acpMcpServer(server: z.output<typeof mcpServer>): McpServer {
  if ('type' in server) return { ...server, headers: server.headers ?? [] };
  return { ...server, args: server.args ?? [], env: server.env ?? [] };
}
