/**
 * The ssh runtime's command building (services/runtimes/ssh.runtime.ts): shell quoting of
 * hostile words (checked by real shells parsing them back), the remote command's words, the
 * ssh options (checked by the real ssh client's `-G` where it is installed), the marker
 * lines, `signalInside` against a fake ssh, and the failure mapping on real ssh error texts.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { AgentSpec } from '../../core/agent-spec.js';
import {
  aliveSettings,
  remoteCommand,
  shellJoin,
  shellQuote,
  sshCommand,
  sshFailureOf,
  sshOptions,
  type SshRuntimeSpec,
} from '../../services/runtimes/ssh.runtime.js';
import { envDecodeScript, envPreamble } from '../../services/runtimes/runtime.js';

const hostile = [
  '',
  ' ',
  'two words',
  "it's",
  "''",
  '"double"',
  '$HOME',
  '${PATH}',
  '`id`',
  '$(id)',
  'a\nb',
  '\n',
  'tab\there',
  '\\',
  '\\n',
  '*',
  '?',
  '[a]',
  '~',
  '~root',
  '-n',
  '--',
  'x=y',
  ';exit 9',
  '&& rm -rf /',
  '| cat',
  '> /tmp/x',
  '#comment',
  '!',
  'é ü 中文',
];

const shells = ['/bin/sh', '/bin/bash', '/bin/dash'].filter((shell) => existsSync(shell));

/** The words a real shell makes of `line` (each printed NUL-terminated). */
function wordsOf(shell: string, line: string): string[] {
  const output = execFileSync(shell, ['-c', `printf '%s\\0' ${line}`], { encoding: 'utf8' });
  return output.split('\0').slice(0, -1);
}

const runtime: SshRuntimeSpec = {
  kind: 'ssh',
  host: 'agents.example.com',
  port: 2222,
  user: 'agent',
  identityFile: '/keys/id ed25519',
  knownHostsFile: '/keys/known hosts',
  connectTimeoutMs: 2_500,
  aliveTimeoutMs: 3_000,
};
const minimal: SshRuntimeSpec = { kind: 'ssh', host: 'agents.example.com', knownHostsFile: '/keys/known_hosts' };

describe('shellQuote', () => {
  it.each(['abc', '/usr/bin/node', '--flag', 'a,b:c@d%e+f', 'v1.2_x-y'])('leaves the plain word %j as it is', (word) => {
    expect(shellQuote(word)).toBe(word);
  });

  it.each([
    ['', "''"],
    ['two words', "'two words'"],
    ["it's", "'it'\\''s'"],
    ['x=y', "'x=y'"],
    ['~', "'~'"],
    ['$HOME', "'$HOME'"],
    ['a\nb', "'a\nb'"],
  ])('quotes %j as %s', (word, quoted) => {
    expect(shellQuote(word)).toBe(quoted);
  });

  it('refuses a NUL byte', () => {
    expect(() => shellQuote('a\0b')).toThrow(/NUL/);
  });

  it.each(shells)('every hostile word comes back from %s exactly, one word each', (shell) => {
    expect(wordsOf(shell, shellJoin(hostile))).toEqual(hostile);
  });
});

describe('remoteCommand', () => {
  /** The positional words the remote login shell hands the wrapper: [WRAPPER, $0, CWD, LAUNCH, INDEX, operands…]. */
  const parsed = (spec: AgentSpec, shell = '/bin/sh') => {
    const command = remoteCommand(spec);
    expect(command.startsWith('exec /bin/sh -c ')).toBe(true);
    const [wrapper, name, cwd, launch, index, ...operands] = wordsOf(shell, command.slice('exec /bin/sh -c '.length));
    return { wrapper: wrapper!, name, cwd, launch: launch!, index: Number(index), operands };
  };

  it.each(shells)('carries hostile arguments and cwd as exact words, and no env value at all (%s)', (shell) => {
    const env = { QUOTED: "v'a\"l", SPACED: ' a  b ', DOLLAR: '$HOME ${X}', TICKS: '`id`', NEWLINE: 'one\ntwo', EMPTY: '', 'ODD-NAME': 'secret-x' };
    const spec: AgentSpec = { command: '/opt/my agent/bin', args: hostile, env, cwd: "/srv/it's here" };
    const words = parsed(spec, shell);
    expect(words.name).toBe('agentvisor-remote');
    expect(words.cwd).toBe("/srv/it's here");
    expect(words.index).toBe(0);
    expect(words.operands).toEqual(['/opt/my agent/bin', ...hostile]);
    // The env travels on stdin: not one name or value is in the command line ssh gets.
    const command = remoteCommand(spec);
    for (const text of ['QUOTED', 'secret-x', 'one\ntwo', 'ODD-NAME']) expect(command).not.toContain(text);
    expect(sshCommand(spec, runtime).stdinPreamble).toBe(envPreamble(env));
  });

  it.each(shells)('the env line decodes to the exact names and values in %s, as env operands: any name, a shell\'s own and the script\'s too', (shell) => {
    const env: Record<string, string> = {
      QUOTED: "v'a\"l",
      SPACED: ' a  b ',
      DOLLAR: '$HOME ${X} $(id) `id`',
      NEWLINES: 'one\ntwo\n',
      EMPTY: '',
      EQUALS: 'a=b==',
      BACKSLASH: '\\c \\0101 \\n %b %s',
      GLOB: '* ? [a]',
      UNICODE: 'é ü 中文',
      'ODD-NAME': 'dash',
      'AV.DOT': '=',
      '9LIVES': 'digit first',
      PATH: '/nowhere',
      // A shell's read-only and dynamic variables, and the scripts' own: none may meet the agent's.
      PPID: 'not the parent',
      UID: 'u',
      RANDOM: '7',
      SECONDS: 's',
      IFS: ':',
      av_line: 'mine',
      av_count: 'x',
      index: 'IDX',
      f: '/nonexistent',
    };
    const line = envPreamble(env);
    expect(line.endsWith('\n')).toBe(true);
    expect(line.slice(0, -1)).toMatch(/^[A-Za-z0-9_\\= ]*$/);
    // As the launcher does it: read the line, decode, then env runs a reporter.
    const script = `IFS= read -r av_line; set --; ${envDecodeScript.replace(/\n/g, ' ')} exec env -- "$@" "${process.execPath}" -e 'process.stdout.write(JSON.stringify(process.env))'`;
    const seen = JSON.parse(execFileSync(shell, ['-c', script], { input: `${line}{"the agent's stream":1}\n`, encoding: 'utf8' })) as Record<string, string>;
    for (const [name, value] of Object.entries(env)) expect(seen[name], name).toBe(value);
    expect(envPreamble({})).toBe('\n');
  });

  it('reads the env line and not a byte of the stream after it', () => {
    const script = `IFS= read -r av_line; ${envDecodeScript.replace(/\n/g, ' ')} cat`;
    const rest = execFileSync('/bin/sh', ['-c', script], { input: `${envPreamble({ A: 'x y' })}{"jsonrpc":"2.0"}\nmore\n`, encoding: 'utf8' });
    expect(rest).toBe('{"jsonrpc":"2.0"}\nmore\n');
  });

  it('an empty cwd means the login directory; no env: the command is operand 0', () => {
    const words = parsed({ command: 'codex-acp' });
    expect(words.cwd).toBe('');
    expect(words.index).toBe(0);
    expect(words.operands).toEqual(['codex-acp']);
  });

  it('a command with `=` in it runs through `nice -n 0 --`, so env does not take it for a variable', () => {
    const words = parsed({ command: '/opt/a=b/agent', args: ['x'], env: { A: '1' } });
    expect(words.operands).toEqual(['nice', '-n', '0', '--', '/opt/a=b/agent', 'x']);
    expect(words.index).toBe(4);
  });

  it('the scripts are constants, whatever the spec holds', () => {
    const one = parsed({ command: 'a' });
    const other = parsed({ command: '$(reboot)', args: ["'; reboot; '"], env: { X: '`reboot`' }, cwd: '/tmp/$(reboot)' });
    expect([other.wrapper, other.launch]).toEqual([one.wrapper, one.launch]);
    expect(one.wrapper).not.toMatch(/\n/); // one line: no shell is asked to keep a newline inside quotes
  });

  it.each(shells)('the wrapper and launcher scripts parse (%s -n)', (shell) => {
    const { wrapper, launch } = parsed({ command: 'a' });
    expect(() => execFileSync(shell, ['-n', '-c', wrapper])).not.toThrow();
    expect(() => execFileSync(shell, ['-n', '-c', launch])).not.toThrow();
  });
});

describe('ssh options', () => {
  it('builds the exact command for a full spec', () => {
    const command = sshCommand({ command: 'agent' }, runtime);
    expect(command.command).toBe('ssh');
    expect(command.env).toBeUndefined();
    expect(command.localContainment).toBe(false);
    expect(command.args).toEqual([
      '-T',
      ...['-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=yes', '-o', 'UserKnownHostsFile=/keys/known hosts', '-o', 'GlobalKnownHostsFile=/dev/null'],
      ...['-o', 'UpdateHostKeys=no', '-o', 'CheckHostIP=no', '-o', 'VerifyHostKeyDNS=no'],
      ...['-o', 'ConnectTimeout=3', '-o', 'ServerAliveInterval=1', '-o', 'ServerAliveCountMax=2'],
      ...['-o', 'ForwardAgent=no', '-o', 'ForwardX11=no', '-o', 'ClearAllForwardings=yes', '-o', 'PermitLocalCommand=no'],
      ...['-o', 'ControlMaster=no', '-o', 'ControlPath=none', '-o', 'RequestTTY=no', '-o', 'RemoteCommand=none', '-o', 'EscapeChar=none'],
      ...['-o', 'LogLevel=INFO'],
      ...['-p', '2222', '-i', '/keys/id ed25519', '-o', 'IdentitiesOnly=yes', '-l', 'agent'],
      '--',
      'agents.example.com',
      remoteCommand({ command: 'agent' }),
    ]);
  });

  it('leaves out port, identity and user when the spec has none; defaults: 10 s to connect, 15 s alive', () => {
    const options = sshOptions(minimal);
    expect(options).not.toContain('-p');
    expect(options).not.toContain('-i');
    expect(options).not.toContain('-l');
    expect(options).not.toContain('IdentitiesOnly=yes');
    expect(options).toEqual(expect.arrayContaining(['ConnectTimeout=10', 'ServerAliveInterval=5', 'ServerAliveCountMax=2']));
  });

  it('puts `--` before the host, so a host can never be read as an option, and the remote command last as one argument', () => {
    const args = sshCommand({ command: 'agent' }, { ...minimal, host: '-oProxyCommand=touch /tmp/pwned' }).args;
    expect(args.slice(-3, -1)).toEqual(['--', '-oProxyCommand=touch /tmp/pwned']);
    expect(args.filter((arg) => arg === '--')).toHaveLength(1);
  });

  it('uses the ssh client given', () => {
    expect(sshCommand({ command: 'agent' }, minimal, { sshCommand: '/opt/openssh/bin/ssh' }).command).toBe('/opt/openssh/bin/ssh');
  });

  it.each([
    [1_000, { interval: 1, countMax: 1 }],
    [2_000, { interval: 1, countMax: 1 }],
    [3_000, { interval: 1, countMax: 2 }],
    [4_999, { interval: 1, countMax: 2 }],
    [10_000, { interval: 3, countMax: 2 }],
    [15_000, { interval: 5, countMax: 2 }],
    [600_000, { interval: 200, countMax: 2 }],
  ])('aliveTimeoutMs %i: %j (interval × (count + 1) ≤ the timeout, at least 2 s)', (ms, settings) => {
    expect(aliveSettings(ms)).toEqual(settings);
    expect(settings.interval * (settings.countMax + 1)).toBeLessThanOrEqual(Math.max(2_000, ms) / 1000);
  });

  it.each([
    [100, 'ConnectTimeout=1'],
    [1_000, 'ConnectTimeout=1'],
    [1_001, 'ConnectTimeout=2'],
    [600_000, 'ConnectTimeout=600'],
  ])('connectTimeoutMs %i: %s', (ms, option) => {
    expect(sshOptions({ ...minimal, connectTimeoutMs: ms })).toContain(option);
  });

  const ssh = ['/usr/bin/ssh', '/bin/ssh', '/usr/local/bin/ssh'].find((path) => existsSync(path));
  it.skipIf(!ssh)('every option is one this ssh client knows, with the value meant (ssh -G)', () => {
    const args = sshCommand({ command: 'agent' }, runtime).args.slice(0, -1);
    // -F /dev/null: this machine's ssh_config files must not decide the outcome.
    const config = execFileSync(ssh!, ['-G', '-F', '/dev/null', ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const settings = new Map(config.split('\n').map((line) => [line.slice(0, line.indexOf(' ')), line.slice(line.indexOf(' ') + 1)]));
    const keys = ['batchmode', 'stricthostkeychecking', 'userknownhostsfile', 'globalknownhostsfile', 'connecttimeout'];
    expect(Object.fromEntries(keys.map((key) => [key, settings.get(key)]))).toEqual({
      batchmode: 'yes',
      stricthostkeychecking: 'true',
      userknownhostsfile: '/keys/known hosts',
      globalknownhostsfile: '/dev/null',
      connecttimeout: '3',
    });
    expect(settings.get('serveraliveinterval')).toBe('1');
    expect(settings.get('serveralivecountmax')).toBe('2');
    expect(settings.get('forwardagent')).toBe('no');
    expect(settings.get('controlmaster')).toBe('false');
    expect(settings.get('identitiesonly')).toBe('yes');
    expect(settings.get('updatehostkeys')).toBe('false');
    expect([settings.get('hostname'), settings.get('port'), settings.get('user')]).toEqual(['agents.example.com', '2222', 'agent']);
    expect(settings.has('localforward')).toBe(false);
  });
});

describe('marker lines', () => {
  it('swallows the first pid marker and remembers it; after it every line is the agent\'s, a forged marker too', () => {
    const command = sshCommand({ command: 'agent' }, minimal);
    expect(command.onStderrLine!('Warning: something from ssh')).toBe(false);
    expect(command.onStderrLine!('agentvisor-remote-pid 4242')).toBe(true);
    expect(command.onStderrLine!('agentvisor-remote-pid 1')).toBe(false);
    expect(command.onStderrLine!('agentvisor-remote-failure not_installed x')).toBe(false);
    expect(command.onStderrLine!('agent says hello')).toBe(false);
  });

  it.each([
    ['agentvisor-remote-failure not_installed codex-acp: command not found', 127, 'not_installed', 'agents.example.com: codex-acp: command not found'],
    ['agentvisor-remote-failure spawn_failed cwd /nope is not a directory', 126, 'spawn_failed', 'agents.example.com: cwd /nope is not a directory'],
    [
      'agentvisor-remote-failure runtime_missing setsid is not installed on the remote host',
      127,
      'runtime_missing',
      'agents.example.com: setsid is not installed on the remote host',
    ],
  ])('a start failure %j is swallowed and is the failure (exit %i)', (line, exitCode, kind, detail) => {
    const command = sshCommand({ command: 'agent' }, minimal);
    expect(command.onStderrLine!(line)).toBe(true);
    expect(command.failureOf!({ exitCode, signal: null }, [])).toEqual({ kind, detail });
    // Read from the lines too, when they were not passed through onStderrLine.
    expect(sshCommand({ command: 'agent' }, minimal).failureOf!({ exitCode, signal: null }, [line])).toEqual({ kind, detail });
  });

  it('does not swallow a pid marker with anything else on the line', () => {
    const command = sshCommand({ command: 'agent' }, minimal);
    expect(command.onStderrLine!('agentvisor-remote-pid 12; rm')).toBe(false);
    expect(command.onStderrLine!('agentvisor-remote-pid 0')).toBe(false);
  });
});

describe('signalInside', () => {
  const dir = mkdtempSync(join(tmpdir(), 'agentvisor-fake-ssh-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const fakeSsh = join(dir, 'ssh');
  writeFileSync(
    fakeSsh,
    `#!/bin/sh\nprintf '%s\\n' "$@" >> '${join(dir, 'calls')}'\nprintf 'ssh: connect to host x port 22: Connection refused\\n' >&2\nexit 255\n`,
  );
  chmodSync(fakeSsh, 0o755);
  const calls = () => (existsSync(join(dir, 'calls')) ? readFileSync(join(dir, 'calls'), 'utf8').trim().split('\n') : []);

  it('does nothing before the remote pid is known', async () => {
    const command = sshCommand({ command: 'agent' }, runtime, { sshCommand: fakeSsh });
    await command.signalInside!('SIGTERM');
    expect(calls()).toEqual([]);
  });

  it('runs `kill -s SIG -- -<pgid>` over a second ssh with the same options, and resolves when that ssh fails', async () => {
    const command = sshCommand({ command: 'agent' }, runtime, { sshCommand: fakeSsh });
    command.onStderrLine!('agentvisor-remote-pid 4242');
    await command.signalInside!('SIGTERM');
    await command.signalInside!('SIGKILL');
    const options = sshOptions(runtime);
    expect(calls()).toEqual([...options, '--', 'agents.example.com', 'kill -s TERM -- -4242', ...options, '--', 'agents.example.com', 'kill -s KILL -- -4242']);
  });

  it('resolves when there is no ssh client at all', async () => {
    const command = sshCommand({ command: 'agent' }, runtime, { sshCommand: join(dir, 'no-such-ssh') });
    command.onStderrLine!('agentvisor-remote-pid 4242');
    await expect(command.signalInside!('SIGKILL')).resolves.toBeUndefined();
  });
});

describe('failureOf: ssh\'s own failures (exit 255), from real ssh texts', () => {
  const hostChanged = [
    '@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@',
    '@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @',
    '@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@',
    'IT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!',
    'Someone could be eavesdropping on you right now (man-in-the-middle attack)!',
    'It is also possible that a host key has just been changed.',
    'The fingerprint for the ED25519 key sent by the remote host is',
    'SHA256:fFPA/nqynMVNy0cibYUPrkdw12rv6rTZdegyv0FYkk4.',
    'Please contact your system administrator.',
    'Add correct host key in /tmp/known_hosts to get rid of this message.',
    'Offending ED25519 key in /tmp/known_hosts:1',
    '  remove with:',
    '  ssh-keygen -f "/tmp/known_hosts" -R "[10.200.1.2]:2222"',
    'Host key for [10.200.1.2]:2222 has changed and you have requested strict checking.',
    'Host key verification failed.',
  ];

  const refused = 'ssh: connect to host 10.200.1.2 port 2223: Connection refused';

  it.each([
    ['a changed host key', hostChanged, 'runtime_host_key_changed', 'Host key for [10.200.1.2]:2222 has changed and you have requested strict checking.'],
    [
      'an unknown host key',
      ['No ED25519 host key is known for [10.200.1.2]:2222 and you have requested strict checking.', 'Host key verification failed.'],
      'runtime_host_key_changed',
      'No ED25519 host key is known for [10.200.1.2]:2222 and you have requested strict checking.',
    ],
    ['host key verification alone', ['Host key verification failed.'], 'runtime_host_key_changed', 'Host key verification failed.'],
    ['a refused key', ['root@10.200.1.2: Permission denied (publickey).'], 'runtime_auth_failed', 'root@10.200.1.2: Permission denied (publickey).'],
    [
      'a missing identity file',
      ['Warning: Identity file /nonexistent/key not accessible: No such file or directory.', 'agent@host: Permission denied (publickey,password).'],
      'runtime_auth_failed',
      'agent@host: Permission denied (publickey,password).',
    ],
    ['too many keys tried', ['Received disconnect from 10.0.0.1 port 22:2: Too many authentication failures'], 'runtime_auth_failed', expect.any(String)],
    ['no listener', [refused], 'runtime_unreachable', refused],
    ['a connect timeout', ['ssh: connect to host 10.0.0.9 port 22: Connection timed out'], 'runtime_unreachable', expect.stringContaining('timed out')],
    ['no route', ['ssh: connect to host 10.0.0.9 port 22: No route to host'], 'runtime_unreachable', expect.stringContaining('No route to host')],
    ['a localized connect error', ['ssh: connect to host 10.0.0.9 port 22: Verbindung abgelehnt'], 'runtime_unreachable', expect.stringContaining('abgelehnt')],
    ['no network', ['ssh: connect to host 10.0.0.9 port 22: Network is unreachable'], 'runtime_unreachable', expect.stringContaining('unreachable')],
    ['an unknown name', ['ssh: Could not resolve hostname x.invalid: Name or service not known'], 'runtime_unreachable', expect.stringContaining('resolve')],
    [
      'a timeout during the banner',
      ['Connection timed out during banner exchange', 'Connection to 10.200.1.2 port 2222 timed out'],
      'runtime_unreachable',
      'Connection timed out during banner exchange',
    ],
    ['the link dropped (ServerAlive)', ['Timeout, server 10.200.1.2 not responding.'], 'runtime_unreachable', 'Timeout, server 10.200.1.2 not responding.'],
    ['the server closed it', ['Connection to 10.200.1.2 closed by remote host.'], 'runtime_unreachable', 'Connection to 10.200.1.2 closed by remote host.'],
    [
      'closed before the banner',
      ['kex_exchange_identification: Connection closed by remote host', 'Connection closed by 10.200.1.2 port 2222'],
      'runtime_unreachable',
      expect.stringContaining('Connection closed by'),
    ],
    [
      'a reset',
      ['kex_exchange_identification: read: Connection reset by peer', 'Connection reset by 10.200.1.2 port 2222'],
      'runtime_unreachable',
      expect.stringContaining('reset'),
    ],
    ['a broken pipe', ['client_loop: send disconnect: Broken pipe'], 'runtime_unreachable', 'client_loop: send disconnect: Broken pipe'],
  ])('%s', (_, stderr, kind, detail) => {
    const command = sshCommand({ command: 'agent' }, minimal);
    expect(command.failureOf!({ exitCode: 255, signal: null }, stderr)).toEqual({ kind, detail });
  });

  it('an exit other than 255 is the agent\'s, whatever it printed', () => {
    const command = sshCommand({ command: 'agent' }, minimal);
    expect(command.failureOf!({ exitCode: 1, signal: null }, ['ssh: connect to host x port 22: Connection refused'])).toBeNull();
    expect(command.failureOf!({ exitCode: 0, signal: null }, [])).toBeNull();
    expect(command.failureOf!({ exitCode: null, signal: 'SIGKILL' }, ['Connection refused'])).toBeNull();
  });

  it('255 with nothing ssh would say is the agent\'s own', () => {
    expect(sshCommand({ command: 'agent' }, minimal).failureOf!({ exitCode: 255, signal: null }, ['fatal: the agent gave up'])).toBeNull();
  });

  it('once the agent started, a login or host key text is its own output; a lost connection is still the runtime\'s', () => {
    const command = sshCommand({ command: 'agent' }, minimal);
    command.onStderrLine!('agentvisor-remote-pid 4242');
    expect(command.failureOf!({ exitCode: 255, signal: null }, ['git: Permission denied (publickey).'])).toBeNull();
    expect(command.failureOf!({ exitCode: 255, signal: null }, ['Host key verification failed.'])).toBeNull();
    const dropped = command.failureOf!({ exitCode: 255, signal: null }, ['Timeout, server agents.example.com not responding.']);
    expect(dropped).toMatchObject({ kind: 'runtime_unreachable' });
    // The same when the marker is only among the lines.
    expect(sshFailureOf(['Permission denied (publickey).'], true)).toBeNull();
    const fresh = sshCommand({ command: 'agent' }, minimal);
    expect(fresh.failureOf!({ exitCode: 255, signal: null }, ['agentvisor-remote-pid 7', 'Host key verification failed.'])).toBeNull();
  });
});
