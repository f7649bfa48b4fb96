// deploy/nginx.conf in front of the real server: Debian's nginx as a child process with a prefix
// and configuration of its own in a temporary directory, a self-signed certificate made with
// openssl for the test, everything on loopback. The example is used as written, with only its
// addresses, ports and paths replaced. Without nginx the tests are skipped with a notice, except
// under CI=true, where .ci/run installs it and a missing nginx fails them.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, fetch as undiciFetch, type Response } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, cleanEnv, killAll, ROOT, run, ServerProcess } from '../support/processes.js';
import { until } from '../support/wait.js';

const NGINX = process.env.NGINX_PATH ?? '/usr/sbin/nginx';
const REQUIRED = process.env.CI === 'true';
const available = existsSync(NGINX);

if (!available) {
  process.stderr.write(
    `\n*** nginx not found at ${NGINX}: the reverse-proxy tests are ${REQUIRED ? 'failing (CI=true requires them)' : 'skipped'}. ` +
      'To run them: apt-get install nginx openssl (or set NGINX_PATH).\n',
  );
}

const describeWithNginx = available || REQUIRED ? describe : describe.skip;

async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** deploy/nginx.conf with the test's ports and paths; each replaced text must be found, so a changed example fails loudly. */
function exampleFor(dir: string, ports: { http: number; https: number; devdata: number }): string {
  let text = readFileSync(join(ROOT, 'deploy', 'nginx.conf'), 'utf8');
  const replace = (from: string | RegExp, to: string) => {
    const before = text;
    text = text.replace(from, to);
    if (text === before) throw new Error(`deploy/nginx.conf no longer contains ${String(from)}: update this test with the example`);
  };
  replace('server 127.0.0.1:8080;', `server 127.0.0.1:${ports.devdata};`);
  replace(/^\s*listen 80;$/m, `    listen 127.0.0.1:${ports.http};`);
  replace(/^\s*listen 443 ssl http2;$/m, `    listen 127.0.0.1:${ports.https} ssl http2;`);
  // Loopback only: the IPv6 wildcard listens go.
  replace(/^\s*listen \[::\]:80;$/m, '');
  replace(/^\s*listen \[::\]:443 ssl http2;$/m, '');
  replace('/etc/letsencrypt/live/devdata.example.com/fullchain.pem', join(dir, 'cert.pem'));
  replace('/etc/letsencrypt/live/devdata.example.com/privkey.pem', join(dir, 'key.pem'));
  replace('/var/log/nginx/devdata.access.log', join(dir, 'access.log'));
  return text;
}

describeWithNginx('deploy/nginx.conf in front of devdata', () => {
  let dir: string;
  let nginx: ChildProcess | undefined;
  let nginxOutput = '';
  let server: ServerProcess;
  let ports: { http: number; https: number; devdata: number };
  let certificate: string;
  let key: string;
  const agents: Agent[] = [];

  /** A client of nginx's HTTPS port, trusting the test certificate, connecting from `localAddress` (a loopback address). */
  function client(localAddress = '127.0.0.1') {
    const agent = new Agent({ connect: { ca: certificate }, localAddress, pipelining: 0 });
    agents.push(agent);
    return (path: string, init: Parameters<typeof undiciFetch>[1] = {}): Promise<Response> =>
      undiciFetch(`https://127.0.0.1:${ports.https}${path}`, { ...init, dispatcher: agent });
  }

  beforeAll(async () => {
    if (!available) throw new Error(`nginx not found at ${NGINX}; CI=true requires the reverse-proxy tests (apt-get install nginx)`);
    dir = mkdtempSync(join(tmpdir(), 'devdata-nginx-'));
    ports = { http: await freePort(), https: await freePort(), devdata: await freePort() };
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=devdata.test',
        '-addext',
        'subjectAltName=DNS:devdata.test,IP:127.0.0.1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    certificate = readFileSync(join(dir, 'cert.pem'), 'utf8');

    const dbPath = join(dir, 'data', 'devdata.db');
    mkdirSync(join(dir, 'data'));
    const env = cleanEnv({
      DATABASE_URL: `sqlite:${dbPath}`,
      HOST: '127.0.0.1',
      PORT: String(ports.devdata),
      BASE_URL: `https://127.0.0.1:${ports.https}`,
      TRUST_PROXY: '127.0.0.1',
      RATE_LIMIT_ANON_PER_MINUTE: '3',
      LOG_LEVEL: 'info',
    });
    const created = await run(process.execPath, [CLI, 'accounts', 'create', '--name', 'Proxied', '--json'], { env, cwd: dir });
    expect(created.code, created.stderr).toBe(0);
    key = JSON.parse(created.stdout).apiKey.key;
    server = new ServerProcess(env, dir);
    await server.listening();

    for (const temp of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, temp));
    writeFileSync(join(dir, 'devdata.conf'), exampleFor(dir, ports));
    writeFileSync(
      join(dir, 'nginx.conf'),
      [
        // As root the workers would otherwise run as nobody, who cannot enter the temporary directory.
        ...(process.getuid?.() === 0 ? ['user root;'] : []),
        'daemon off;',
        'worker_processes 1;',
        `pid ${join(dir, 'nginx.pid')};`,
        `error_log ${join(dir, 'error.log')} info;`,
        'events { worker_connections 256; }',
        'http {',
        `  client_body_temp_path ${join(dir, 'client_body')};`,
        `  proxy_temp_path ${join(dir, 'proxy')};`,
        `  fastcgi_temp_path ${join(dir, 'fastcgi')};`,
        `  uwsgi_temp_path ${join(dir, 'uwsgi')};`,
        `  scgi_temp_path ${join(dir, 'scgi')};`,
        `  access_log ${join(dir, 'default-access.log')};`,
        `  include ${join(dir, 'devdata.conf')};`,
        '}',
        '',
      ].join('\n'),
    );
    const check = await run(NGINX, ['-t', '-p', dir, '-c', join(dir, 'nginx.conf')], { cwd: dir });
    expect(check.code, `nginx -t:\n${check.stderr}`).toBe(0);
    nginx = spawn(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf')], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    nginx.stdout?.on('data', (chunk: Buffer) => (nginxOutput += chunk.toString()));
    nginx.stderr?.on('data', (chunk: Buffer) => (nginxOutput += chunk.toString()));
    await until(
      async () => {
        if (nginx!.exitCode !== null) throw new Error(`nginx exited: ${nginxOutput}\n${readFileSync(join(dir, 'error.log'), 'utf8')}`);
        return (await accepts(ports.https)) && (await accepts(ports.http));
      },
      'nginx to listen',
      60_000,
      100,
    );
  });

  afterAll(async () => {
    for (const agent of agents) await agent.close().catch(() => undefined);
    if (nginx && nginx.exitCode === null) {
      nginx.kill('SIGQUIT');
      await new Promise((resolve) => {
        const timer = setTimeout(() => {
          nginx!.kill('SIGKILL');
          resolve(undefined);
        }, 5000);
        nginx!.once('exit', () => {
          clearTimeout(timer);
          resolve(undefined);
        });
      });
    }
    await killAll();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('terminates TLS for devdata, and sends plain HTTP to HTTPS', async () => {
    const response = await client()('/api/v1/health');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ready', checks: { storage: { status: 'ok' } } });
    expect(response.headers.get('strict-transport-security')).toBe('max-age=63072000');

    const plain = await undiciFetch(`http://127.0.0.1:${ports.http}/api/v1/health`, { redirect: 'manual' });
    expect(plain.status).toBe(301);
    expect(plain.headers.get('location')).toBe(`https://127.0.0.1/api/v1/health`);
    await plain.arrayBuffer();
  });

  it("passes the caller's request id through, and gives nginx's own to devdata when there is none", async () => {
    const fetchVia = client();
    const chosen = await fetchVia('/api/v1/auth/me', { headers: { authorization: `Bearer ${key}`, 'x-request-id': 'edge-trace-7' } });
    expect(chosen.status).toBe(200);
    await chosen.arrayBuffer();
    expect(chosen.headers.get('x-request-id')).toBe('edge-trace-7');

    const generated = await fetchVia('/api/v1/auth/me', { headers: { authorization: `Bearer ${key}` } });
    expect(generated.status).toBe(200);
    await generated.arrayBuffer();
    const id = generated.headers.get('x-request-id')!;
    // nginx's $request_id: 32 hex digits, not devdata's req_… form.
    expect(id).toMatch(/^[0-9a-f]{32}$/);

    for (const requestId of ['edge-trace-7', id]) {
      const line = await server.waitForLog((entry) => entry.requestId === requestId && entry.msg === 'request completed', `devdata's log line of ${requestId}`);
      expect(line).toMatchObject({ url: '/api/v1/auth/me', statusCode: 200 });
      await until(() => readFileSync(join(dir, 'access.log'), 'utf8').includes(`rid=${requestId} `), `nginx's access line of ${requestId}`);
    }
  });

  it("rate-limits by the client's address, which a client cannot forge", async () => {
    // RATE_LIMIT_ANON_PER_MINUTE=3: devdata counts per client address, which it learns from nginx.
    const fromA = client('127.0.0.2');
    const fromB = client('127.0.0.3');
    const anonymous = async (fetchVia: ReturnType<typeof client>, headers: Record<string, string> = {}) => {
      const response = await fetchVia('/api/v1/auth/me', { headers });
      await response.arrayBuffer();
      return response;
    };
    let refused: Response | undefined;
    for (let attempt = 0; attempt < 8 && !refused; attempt++) {
      const response = await anonymous(fromA);
      if (response.status === 429) refused = response;
      else expect(response.status).toBe(401);
    }
    expect(refused, 'client A is refused once past its allowance').toBeDefined();
    // Another client's allowance is its own: nginx's address is not what is counted.
    const other = await anonymous(fromB);
    expect(other.status).toBe(401);
    expect(Number(other.headers.get('ratelimit-remaining'))).toBeGreaterThanOrEqual(1);
    // An X-Forwarded-For sent by the client is replaced by nginx, not believed.
    const forged = await anonymous(fromA, { 'x-forwarded-for': '198.51.100.7' });
    expect(forged.status).toBe(429);
  });

  it('delivers each stream event as soon as it is written, not when a buffer fills', async () => {
    const fetchVia = client();
    const abort = new AbortController();
    const stream = await fetchVia('/api/v1/events/stream', { headers: { authorization: `Bearer ${key}` }, signal: abort.signal });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = stream.body!.getReader();
    const decoder = new TextDecoder();
    let received = '';
    // A buffering proxy holds a small chunk until its buffer fills, which these never do: a bound
    // that a busy machine meets still tells it apart.
    const readUntil = async (text: string, withinMs: number) => {
      const deadline = Date.now() + withinMs;
      while (!received.includes(text)) {
        const remaining = deadline - Date.now();
        if (remaining <= 0) throw new Error(`"${text}" did not arrive within ${withinMs} ms; received: ${received}`);
        const chunk = await Promise.race([reader.read(), new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), remaining))]);
        if (chunk === 'timeout') continue;
        if (chunk.done) throw new Error(`the stream ended; received: ${received}`);
        received += decoder.decode(chunk.value, { stream: true });
      }
    };
    try {
      // The "connected" comment is a few bytes: a buffering proxy would hold it.
      await readUntil(': connected', 30_000);
      for (let n = 0; n < 3; n++) {
        const published = await fetchVia('/api/v1/events', {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'custom.proxied', data: { n } }),
        });
        expect(published.status).toBe(201);
        const { id } = (await published.json()) as { id: number };
        await readUntil(`id: ${id}\n`, 30_000);
      }
    } finally {
      abort.abort();
      await reader.cancel().catch(() => undefined);
    }
  });

  it('deploy/devdata.service is a unit systemd accepts', async () => {
    const analyze = '/usr/bin/systemd-analyze';
    if (!existsSync(analyze)) {
      process.stderr.write('\n*** systemd-analyze not found: deploy/devdata.service is not verified\n');
      return;
    }
    const result = await run(analyze, ['verify', join(ROOT, 'deploy', 'devdata.service')], { cwd: dir });
    // verify reports unknown settings and bad values as warnings, with exit status 0.
    expect(result.stdout + result.stderr).toBe('');
    expect(result.code).toBe(0);
  });
});
