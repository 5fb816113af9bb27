/**
 * The docker and kubernetes runtimes' commands: the exact argv for each option, env names
 * without values (docker) or inside the wrapper (kubectl), hostile values passed through
 * untouched, the wrapper's marker, and which endings are the runtime's failures (with the
 * clients' real words: docker 28 and kubectl 1.32 printed the daemon and server ones here).
 */
import { describe, expect, it } from 'vitest';
import type { AgentSpec } from '../../core/agent-spec.js';
import { AgentError } from '../../core/errors.js';
import {
  dockerCommand,
  dockerFailure,
  kubernetesCommand,
  kubernetesFailure,
  remotePidMarker,
  signalScript,
  wrapperArgv,
  wrapperScript,
} from '../../services/runtimes/container.runtime.js';
import { envPreamble } from '../../services/runtimes/runtime.js';

const agent: AgentSpec = { command: 'codex-acp', args: ['--acp', 'x y'] };
/** The wrapper around `argv` with the supervisor's default ladder (5 s, 2 s): grace 6 s and 3 s. */
const wrapped = (...argv: string[]) => ['/bin/sh', '-c', wrapperScript, 'agentvisor-wrapper', '6', '3', '0', ...argv];
/** The same, reading the env line from stdin first (kubectl). */
const wrappedReadingEnv = (...argv: string[]) => ['/bin/sh', '-c', wrapperScript, 'agentvisor-wrapper', '6', '3', '1', ...argv];

describe('dockerCommand', () => {
  it('docker exec -i -- <container> <wrapper>', () => {
    const command = dockerCommand(agent, { kind: 'docker', container: 'dev' });
    expect(command.command).toBe('docker');
    expect(command.args).toEqual(['exec', '-i', '--', 'dev', ...wrapped('codex-acp', '--acp', 'x y')]);
    expect(command.env).toBeUndefined();
    expect(command.localContainment).toBe(true);
  });

  it('env: -e NAME only, the values in the client\'s own environment; -w for the cwd', () => {
    const spec: AgentSpec = { ...agent, env: { OPENAI_API_KEY: 'sk-secret value', EMPTY: '' }, cwd: '/srv/app' };
    const command = dockerCommand(spec, { kind: 'docker', container: 'dev' }, { docker: '/usr/local/bin/docker' });
    expect(command.command).toBe('/usr/local/bin/docker');
    expect(command.args).toEqual(['exec', '-i', '-e', 'OPENAI_API_KEY', '-e', 'EMPTY', '-w', '/srv/app', '--', 'dev', ...wrapped('codex-acp', '--acp', 'x y')]);
    expect(command.env).toEqual({ OPENAI_API_KEY: 'sk-secret value', EMPTY: '' });
    expect(command.args.join('\n')).not.toContain('sk-secret');
  });

  it('docker run -i --init --label … --name <generated> [runArgs] -- <image> <wrapper>: no --rm, labelled with the agent, the supervisor and its own token', () => {
    const command = dockerCommand(agent, { kind: 'docker', image: 'ghcr.io/acme/agent:1', runArgs: ['--network', 'none', '-v', '/data:/data:ro'] }, { agent: 'coder', supervisor: 'host/42-7' });
    const [name] = command.args.slice(command.args.indexOf('--name') + 1);
    expect(name).toMatch(/^agentvisor-[0-9a-f]{12}$/);
    const runArgs = ['--network', 'none', '-v', '/data:/data:ro'];
    const labels = ['--label', 'io.agentvisor.agent=coder', '--label', 'io.agentvisor.supervisor=host/42-7', '--label', `io.agentvisor.container=${name}`];
    expect(command.args).toEqual(['run', '-i', '--init', '--name', name, ...runArgs, ...labels, '--', 'ghcr.io/acme/agent:1', ...wrapped('codex-acp', '--acp', 'x y')]);
    expect(command.leftover).toEqual({ kind: 'docker-container', client: 'docker', token: name, engine: expect.any(Object) as object });
    const fixed = dockerCommand(agent, { kind: 'docker', image: 'img' }, { name: 'fixed' }).args;
    expect(fixed.slice(0, 3)).toEqual(['run', '-i', '--init']);
    expect(fixed.slice(fixed.indexOf('--name'), fixed.indexOf('--name') + 2)).toEqual(['--name', 'fixed']);
  });

  it('docker run keeps a --name of runArgs (either form) and adds none; its token label is still its own', () => {
    for (const runArgs of [['--name', 'mine'], ['--name=mine']]) {
      const command = dockerCommand({ ...agent, env: { K: 'v' }, cwd: '/w' }, { kind: 'docker', image: 'img', runArgs }, { agent: 'a' });
      const token = command.leftover!.token;
      expect(token).toMatch(/^agentvisor-[0-9a-f]{12}$/);
      expect(command.args).toEqual([
        'run',
        '-i',
        '--init',
        ...runArgs,
        '--label',
        'io.agentvisor.agent=a',
        '--label',
        `io.agentvisor.container=${token}`,
        '-e',
        'K',
        '-w',
        '/w',
        '--',
        'img',
        ...wrapped('codex-acp', '--acp', 'x y'),
      ]);
    }
  });

  it('a label of the same key in runArgs cannot replace the token: agentvisor\'s labels come after runArgs', () => {
    const args = dockerCommand(agent, { kind: 'docker', image: 'img', runArgs: ['--label', 'io.agentvisor.container=theirs'] }, { name: 'ours' }).args;
    expect(args.lastIndexOf('io.agentvisor.container=ours')).toBeGreaterThan(args.indexOf('io.agentvisor.container=theirs'));
  });

  it('the engine a container is removed from: the docker settings as the client has them (the spec\'s over this process\'s, unset ones empty), nothing else', () => {
    const names = ['DOCKER_HOST', 'DOCKER_CONTEXT', 'DOCKER_CONFIG', 'DOCKER_CERT_PATH', 'DOCKER_TLS_VERIFY'] as const;
    const saved = Object.fromEntries(names.map((name) => [name, process.env[name]]));
    for (const name of names) delete process.env[name];
    process.env.DOCKER_HOST = 'unix:///from/process.sock';
    try {
      const none = { DOCKER_HOST: '', DOCKER_CONTEXT: '', DOCKER_CONFIG: '', DOCKER_CERT_PATH: '', DOCKER_TLS_VERIFY: '' };
      const plain = dockerCommand({ ...agent, env: { SECRET: 'x' } }, { kind: 'docker', image: 'img' });
      expect(plain.leftover?.engine).toEqual({ ...none, DOCKER_HOST: 'unix:///from/process.sock' });
      const own = dockerCommand({ ...agent, env: { DOCKER_HOST: 'tcp://127.0.0.1:2375', DOCKER_CONTEXT: 'ci', DOCKER_CERT_PATH: '/certs' } }, { kind: 'docker', image: 'img' });
      expect(own.leftover?.engine).toEqual({ ...none, DOCKER_HOST: 'tcp://127.0.0.1:2375', DOCKER_CONTEXT: 'ci', DOCKER_CERT_PATH: '/certs' });
      expect(dockerCommand(agent, { kind: 'docker', container: 'c' }).leftover).toBeUndefined(); // exec: the container is not ours
    } finally {
      for (const name of names) {
        if (saved[name] === undefined) delete process.env[name];
        else process.env[name] = saved[name];
      }
    }
  });

  it('prefers the container when both are given; refuses neither', () => {
    expect(dockerCommand(agent, { kind: 'docker', container: 'c', image: 'i' }).args[0]).toBe('exec');
    expect(() => dockerCommand(agent, { kind: 'docker' })).toThrow(AgentError);
  });

  it('hostile names and arguments: "--" ends docker\'s options, the agent\'s argv is positional, never a script', () => {
    const hostile = ["'; rm -rf / #", '$(id)', '`id`', 'a\nb', '"', '\\', '-e', '--privileged'];
    const command = dockerCommand({ command: '$(reboot)', args: hostile }, { kind: 'docker', container: '--privileged' });
    expect(command.args).toEqual(['exec', '-i', '--', '--privileged', ...wrapped('$(reboot)', ...hostile)]);
    expect(command.args[6]).toBe(wrapperScript); // the script is one constant
  });
});

describe('kubernetesCommand', () => {
  it('kubectl exec -i <pod> -- <wrapper>, no env and no local env: an empty env line first on stdin', () => {
    const command = kubernetesCommand(agent, { kind: 'kubernetes', pod: 'agent-0' });
    expect(command.command).toBe('kubectl');
    expect(command.args).toEqual(['exec', '-i', 'agent-0', '--', ...wrappedReadingEnv('codex-acp', '--acp', 'x y')]);
    expect(command.env).toBeUndefined();
    expect(command.stdinPreamble).toBe('\n');
  });

  it('every option: --kubeconfig, --context, -n, -c; the env on stdin (in no argv); cwd by a cd shim', () => {
    const spec: AgentSpec = { ...agent, env: { TOKEN: 'v a l', 'ODD-NAME': '$x' }, cwd: '/srv/app', shutdownTimeoutMs: 0, killTimeoutMs: 10_500 };
    const runtime = { kind: 'kubernetes', pod: 'agent-0', namespace: 'tools', container: 'main', context: 'prod', kubeconfig: '/etc/kube/config' } as const;
    const command = kubernetesCommand(spec, runtime, { kubectl: '/opt/kubectl' });
    expect(command.command).toBe('/opt/kubectl');
    expect(command.args).toEqual([
      '--kubeconfig',
      '/etc/kube/config',
      '--context',
      'prod',
      'exec',
      '-i',
      '-n',
      'tools',
      'agent-0',
      '-c',
      'main',
      '--',
      '/bin/sh',
      '-c',
      wrapperScript,
      'agentvisor-wrapper',
      '1', // ceil(0 / 1000) + 1
      '12', // ceil(10.5) + 1
      '1', // the env line comes first on stdin
      '/bin/sh',
      '-c',
      'CDPATH= cd -- "$1" && shift && exec "$@"',
      'agentvisor-cwd',
      '/srv/app',
      'codex-acp',
      '--acp',
      'x y',
    ]);
    expect(command.stdinPreamble).toBe(envPreamble({ TOKEN: 'v a l', 'ODD-NAME': '$x' }));
  });

  it('a pod named like an option is passed as pod/<name>, never read as a flag', () => {
    expect(kubernetesCommand(agent, { kind: 'kubernetes', pod: '-it' }).args.slice(0, 4)).toEqual(['exec', '-i', 'pod/-it', '--']);
  });
});

describe('the wrapper and its marker', () => {
  it('wrapperArgv: the grace periods are the spec\'s ladder plus one second, in whole seconds', () => {
    expect(wrapperArgv({ command: 'a' }, ['a'])).toEqual(wrapped('a'));
    expect(wrapperArgv({ command: 'a', shutdownTimeoutMs: 1, killTimeoutMs: 2_001 }, ['a']).slice(4, 6)).toEqual(['2', '4']);
  });

  it('onStderrLine swallows the marker (the first one names the group) and nothing else', () => {
    const command = dockerCommand(agent, { kind: 'docker', container: 'dev' });
    expect(command.remotePid()).toBeNull();
    expect(command.onStderrLine('starting')).toBe(false);
    expect(command.onStderrLine(`${remotePidMarker} 4242`)).toBe(true);
    expect(command.onStderrLine(`${remotePidMarker} 4242\r`)).toBe(true);
    expect(command.onStderrLine(`${remotePidMarker} 17`)).toBe(true);
    expect(command.remotePid()).toBe(4242);
    expect(command.onStderrLine(`x ${remotePidMarker} 1`)).toBe(false);
    expect(command.onStderrLine(`${remotePidMarker} 12a`)).toBe(false);
  });

  it('signalInside does nothing before the marker (nothing is known to signal)', async () => {
    const command = dockerCommand(agent, { kind: 'docker', container: 'dev' }, { docker: '/nonexistent/docker' });
    await expect(command.signalInside('SIGTERM')).resolves.toBeUndefined();
  });

  it('signalInside never rejects, even when the client cannot run', async () => {
    const command = kubernetesCommand(agent, { kind: 'kubernetes', pod: 'p' }, { kubectl: '/nonexistent/kubectl' });
    command.onStderrLine(`${remotePidMarker} 99`);
    await expect(command.signalInside('SIGKILL')).resolves.toBeUndefined();
  });

  it('the signal script takes the signal and the group as positional parameters', () => {
    expect(signalScript).toBe('kill -s "$1" -- "-$2"');
  });
});

describe('dockerFailure', () => {
  const ended = (exitCode: number | null) => ({ exitCode, signal: null });

  it('maps the daemon, the container and the image', () => {
    const noSuchContainer = 'Error response from daemon: No such container: dev';
    expect(dockerFailure(ended(1), [noSuchContainer])).toEqual({ kind: 'runtime_missing', detail: noSuchContainer });
    expect(dockerFailure(ended(1), ['Error response from daemon: container 3f2a is not running'])).toMatchObject({ kind: 'runtime_missing' });
    expect(dockerFailure(ended(1), ['Error response from daemon: Container 3f2a is not running'])).toMatchObject({ kind: 'runtime_missing' });
    expect(
      dockerFailure(ended(125), [
        "Unable to find image 'nope:latest' locally",
        "docker: Error response from daemon: pull access denied for nope, repository does not exist or may require 'docker login': denied: requested access to the resource is denied",
        '',
        "Run 'docker run --help' for more information",
      ]),
    ).toMatchObject({ kind: 'runtime_missing', detail: expect.stringContaining('pull access denied for nope') });
    // Words docker 28.2.2 printed on this host (no daemon): exec exits 1, run 125.
    expect(dockerFailure(ended(1), ['Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?'])).toMatchObject({
      kind: 'runtime_unreachable',
    });
    expect(dockerFailure(ended(125), ['docker: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?'])).toMatchObject({
      kind: 'runtime_unreachable',
    });
    expect(
      dockerFailure(ended(1), ['permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock: dial unix: connect: permission denied']),
    ).toMatchObject({ kind: 'runtime_auth_failed' });
  });

  it('maps Podman\'s words (its Docker API, 4.3.1, through docker 28.2.2: printed here)', () => {
    const noContainer = 'Error response from daemon: no container with name or ID "nosuch" found: no such container';
    expect(dockerFailure(ended(1), [noContainer])).toEqual({ kind: 'runtime_missing', detail: noContainer });
    const stopped = 'Error response from daemon: can only create exec sessions on running containers: container state improper';
    expect(dockerFailure(ended(1), [stopped])).toEqual({ kind: 'runtime_missing', detail: stopped });
    const noImage = 'docker: Error response from daemon: no such image: localhost/nope:1: image not known';
    expect(dockerFailure(ended(125), [noImage, '', "Run 'docker run --help' for more information"])).toEqual({ kind: 'runtime_missing', detail: noImage });
    const pullFailed = [
      "Unable to find image 'localhost/nope:1' locally",
      'docker: initializing source docker://localhost/nope:1: pinging container registry localhost: Get "https://localhost/v2/": dial tcp 127.0.0.1:443: connect: connection refused',
    ];
    expect(dockerFailure(ended(125), pullFailed)).toEqual({ kind: 'runtime_missing', detail: pullFailed.join(' ') });
  });

  it('a container the engine could not start (Podman\'s 409 to the attach, printed here for a mount point it could not make) is runtime_missing', () => {
    expect(dockerFailure(ended(125), ['unable to upgrade to tcp, received 409'])).toMatchObject({ kind: 'runtime_missing', detail: expect.stringContaining('could not start the container') });
  });

  it('a --name of runArgs that another container holds (Docker\'s and Podman\'s words) is runtime_missing saying so', () => {
    const docker = 'docker: Error response from daemon: Conflict. The container name "/mine" is already in use by container "3f2a". You have to remove (or rename) that container to be able to reuse that name.';
    const podman = 'docker: Error response from daemon: creating container storage: the container name "mine" is already in use by 3f2a. You have to remove that container to be able to reuse that name: that name is already in use';
    for (const line of [docker, podman]) expect(dockerFailure(ended(125), [line])).toMatchObject({ kind: 'runtime_missing', detail: expect.stringContaining('name is taken') });
  });

  it('maps what the wrapper reports: no setsid, no /bin/sh, the agent\'s command not installed, nowhere for its fifo', () => {
    const noFifo = dockerFailure(ended(125), ['agentvisor-wrapper: cannot make a fifo in /tmp, /tmp or /dev/shm']);
    expect(noFifo).toMatchObject({ kind: 'runtime_missing', detail: expect.stringContaining('needs a writable $TMPDIR, /tmp or /dev/shm for its fifo') });
    expect(dockerFailure(ended(127), ['agentvisor-wrapper: setsid not found in the container'])).toMatchObject({ kind: 'runtime_missing' });
    expect(dockerFailure(ended(127), ['agentvisor-agent: 1: exec: codex-acp: not found'])).toMatchObject({ kind: 'runtime_missing' });
    const noShell = 'OCI runtime exec failed: exec failed: unable to start container process: exec: "/bin/sh": stat /bin/sh: no such file or directory: unknown';
    expect(dockerFailure(ended(126), [noShell])).toMatchObject({ kind: 'runtime_missing' });
  });

  it("is null for the agent's own endings", () => {
    expect(dockerFailure(ended(1), ['Error: boom'])).toBeNull();
    expect(dockerFailure(ended(125), ['something else'])).toBeNull();
    expect(dockerFailure(ended(137), [])).toBeNull();
    // "Unable to find image" alone is a pull that went on to succeed, not a failure
    expect(dockerFailure(ended(1), ["Unable to find image 'img:latest' locally", 'latest: Pulling from library/img', 'agent crashed'])).toBeNull();
  });
});

describe('kubernetesFailure', () => {
  const ended = (exitCode: number | null) => ({ exitCode, signal: null });

  it('maps the pod, the server and the credentials', () => {
    expect(kubernetesFailure(ended(1), ['Error from server (NotFound): pods "agent-0" not found'])).toEqual({
      kind: 'runtime_missing',
      detail: 'Error from server (NotFound): pods "agent-0" not found',
    });
    // kubectl 1.32 on this host, with a server that refuses: the last line is the one it prints without -v.
    expect(kubernetesFailure(ended(1), ['The connection to the server 127.0.0.1:1 was refused - did you specify the right host or port?'])).toMatchObject({ kind: 'runtime_unreachable' });
    expect(kubernetesFailure(ended(1), ['Unable to connect to the server: dial tcp 10.0.0.1:443: i/o timeout'])).toMatchObject({ kind: 'runtime_unreachable' });
    expect(kubernetesFailure(ended(1), ['error: You must be logged in to the server (Unauthorized)'])).toMatchObject({ kind: 'runtime_auth_failed' });
    expect(
      kubernetesFailure(ended(1), ['Error from server (Forbidden): pods "agent-0" is forbidden: User "bob" cannot create resource "pods/exec" in API group "" in the namespace "tools"']),
    ).toMatchObject({ kind: 'runtime_auth_failed' });
    expect(kubernetesFailure(ended(1), ['error: unable to upgrade connection: container not found ("main")'])).toMatchObject({ kind: 'runtime_missing' });
    expect(kubernetesFailure(ended(1), ['Error in configuration: context was not found for specified context: nope'])).toMatchObject({ kind: 'runtime_missing' });
    expect(kubernetesFailure(ended(1), ['error: stat /etc/kube/missing: no such file or directory'])).toMatchObject({ kind: 'runtime_missing' });
  });

  it("maps the wrapper's reports, and is null for the agent's own endings", () => {
    expect(kubernetesFailure(ended(127), ['env: ‘codex-acp’: No such file or directory', 'command terminated with exit code 127'])).toMatchObject({ kind: 'runtime_missing' });
    expect(kubernetesFailure(ended(2), ["agentvisor-cwd: 1: cd: can't cd to /srv/nope"])).toMatchObject({ kind: 'runtime_missing' });
    expect(kubernetesFailure(ended(1), ['Traceback (most recent call last):', 'command terminated with exit code 1'])).toBeNull();
    expect(kubernetesFailure(ended(143), ['command terminated with exit code 143'])).toBeNull();
  });
});
