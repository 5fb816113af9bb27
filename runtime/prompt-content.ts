/**
 * Prompt content checked before it is sent: every block well formed (ACP's schema) and of a
 * type the agent accepts (`promptCapabilities`: image, audio, embeddedContext; text and
 * resource links always), and files turned into the block that suits the agent.
 */
import type { ContentBlock, PromptCapabilities } from '../core/acp-types.js';
import { agentFailure, failures, invalidOptions, toError, type AgentError } from '../core/errors.js';
import { contentBlockIssue } from '../services/acp-client.service.js';
import { ContentFileTooLarge, readContentFile } from '../services/content-file.service.js';

/** The default bound of a file made into a content block: 10 MiB (its base64 stays well under ACP's 32 MiB message limit). */
export const defaultContentFileBytes = 10 * 1024 * 1024;

/** Which capability a content block type needs; text and resource links every agent takes. */
const capabilityOf: Record<string, keyof PromptCapabilities | null> = {
  text: null,
  resource_link: null,
  image: 'image',
  audio: 'audio',
  resource: 'embeddedContext',
};

/**
 * A prompt's blocks, each a well-formed block the agent accepts; else `invalid_options` or
 * `unsupported`, and nothing is sent. `capabilities` undefined (no connection now: the
 * session machine refuses the turn itself) checks the blocks' shape only.
 */
export function checkPrompt(agent: string, displayName: string, blocks: ContentBlock[], capabilities: PromptCapabilities | undefined): void {
  if (blocks.length === 0) throw invalidOptions('A prompt needs at least one content block', agent);
  blocks.forEach((block, index) => {
    const issue = contentBlockIssue(block);
    if (issue !== null) throw invalidOptions(`Prompt block ${index} is not an ACP content block: ${issue}`, agent);
    const type = (block as { type: string }).type;
    const needs = capabilityOf[type];
    if (needs === undefined) throw invalidOptions(`Prompt block ${index} has an unknown type "${type}"`, agent);
    if (needs !== null && capabilities !== undefined && capabilities[needs] !== true) {
      throw toError(agent, failures.unsupported(displayName, `${type} content in prompts (promptCapabilities.${needs})`));
    }
  });
}

/**
 * A file as the content block that suits the agent: an image or audio block (its mime type
 * from its bytes or name), a text file as an embedded `resource` when the agent takes
 * embedded context, else as a `resource_link`; other bytes as an embedded blob, else a link.
 * `too_large` past `maxBytes`; `unsupported` for an image or audio file the agent does not take.
 */
export async function contentBlockFromFile(
  agent: string,
  displayName: string,
  path: string,
  capabilities: PromptCapabilities | undefined,
  maxBytes = defaultContentFileBytes,
): Promise<ContentBlock> {
  if (typeof path !== 'string' || path === '') throw invalidOptions('A file path must be a non-empty string', agent);
  if (!Number.isInteger(maxBytes) || maxBytes < 1) throw invalidOptions('maxBytes must be a positive whole number', agent);
  let file;
  try {
    file = await readContentFile(path, maxBytes);
  } catch (error) {
    throw fileError(agent, path, error);
  }
  const { kind, mimeType, uri, name, bytes } = file;
  if (kind === 'image' || kind === 'audio') {
    if (capabilities?.[kind] !== true) throw toError(agent, failures.unsupported(displayName, `${kind} content in prompts (promptCapabilities.${kind})`));
    return { type: kind, mimeType, data: bytes.toString('base64'), ...(kind === 'image' ? { uri } : {}) } as ContentBlock;
  }
  if (capabilities?.embeddedContext === true) {
    const resource = kind === 'text' ? { uri, mimeType, text: bytes.toString('utf8') } : { uri, mimeType, blob: bytes.toString('base64') };
    return { type: 'resource', resource };
  }
  return { type: 'resource_link', uri, name, mimeType, size: bytes.length };
}

function fileError(agent: string, path: string, error: unknown): AgentError {
  if (error instanceof ContentFileTooLarge) return agentFailure('too_large', agent, error.message, error);
  const code = (error as NodeJS.ErrnoException).code;
  return invalidOptions(`Cannot read ${path} for a prompt: ${code ?? (error as Error).message}${code ? ` (${(error as Error).message})` : ''}`, agent);
}
