// The operator settings added for running the service: who is trusted as a proxy, where metrics
// listen, where the secrets key file lives, the database and the form of the log lines.
import { resolve } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('TRUST_PROXY', () => {
  it('is false by default, true or false as words, or the addresses and ranges of the proxy', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: 'off' }).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: '127.0.0.1' }).trustProxy).toEqual(['127.0.0.1']);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, ::1,fd00::/8' }).trustProxy).toEqual(['10.0.0.0/8', '::1', 'fd00::/8']);
  });

  it('refuses anything else, naming what it accepts', () => {
    for (const bad of ['maybe', '127.0.0.1,nginx', '10.0.0.0/33', '300.1.1.1', '127.1']) {
      expect(() => loadConfig({ TRUST_PROXY: bad }), bad).toThrow(ConfigError);
    }
    expect(() => loadConfig({ TRUST_PROXY: '127.0.0.1,nginx' })).toThrow(/addresses and CIDR ranges of the proxy/);
  });
});

describe('METRICS_PORT and METRICS_HOST', () => {
  it('are off by default, and listen on loopback once a port is given', () => {
    expect(loadConfig({}).metrics).toBeUndefined();
    expect(loadConfig({ METRICS_PORT: '9464' }).metrics).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(loadConfig({ METRICS_PORT: '9464', METRICS_HOST: '10.1.2.3' }).metrics).toEqual({ host: '10.1.2.3', port: 9464 });
  });

  it('never share the public port, and a host alone is a mistake', () => {
    expect(() => loadConfig({ PORT: '8080', METRICS_PORT: '8080' })).toThrow(/METRICS_PORT must differ from PORT \(8080\)/);
    expect(() => loadConfig({ METRICS_PORT: '8080' })).toThrow(/must differ from PORT/);
    expect(() => loadConfig({ METRICS_HOST: '127.0.0.1' })).toThrow(/METRICS_PORT is not/);
    expect(() => loadConfig({ METRICS_PORT: 'ninety' })).toThrow(/METRICS_PORT must be an integer/);
  });
});

describe('SECRETS_KEY_FILE', () => {
  it('defaults to secrets.key beside the SQLite file, ./data for PostgreSQL, none in memory', () => {
    expect(loadConfig({}).secretsKeyFile).toBe(resolve('data', 'secrets.key'));
    expect(loadConfig({ DATABASE_URL: 'sqlite:/var/lib/devdata/devdata.db' }).secretsKeyFile).toBe('/var/lib/devdata/secrets.key');
    expect(loadConfig({ DATABASE_URL: 'postgres://db.internal/devdata' }).secretsKeyFile).toBe(resolve('data', 'secrets.key'));
    expect(loadConfig({ DATABASE_URL: 'sqlite::memory:' }).secretsKeyFile).toBeUndefined();
    expect(loadConfig({ DATABASE_URL: 'sqlite::memory:', SECRETS_KEY_FILE: '/etc/devdata/key' }).secretsKeyFile).toBe('/etc/devdata/key');
  });
});

describe('DATABASE_URL and DATABASE_CREATE', () => {
  it('refuses every value that is neither sqlite: nor postgres://, naming the valid forms and at most the scheme of what was given', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.webUrl({ withQueryParameters: true }),
          fc
            .tuple(fc.constantFrom('mysql', 'file', 'sqlite3', 'postgre', 'http', 'pg'), fc.webAuthority({ withUserInfo: true }))
            .map(([scheme, rest]) => `${scheme}://${rest}`),
        ),
        (url) => {
          fc.pre(!/^(sqlite:.+|postgres(ql)?:\/\/.+)$/.test(url));
          let error: unknown;
          try {
            loadConfig({ DATABASE_URL: url });
          } catch (caught) {
            error = caught;
          }
          expect(error, url).toBeInstanceOf(ConfigError);
          const message = (error as Error).message;
          expect(message.startsWith('DATABASE_URL must be sqlite:<path>, sqlite::memory: or postgres://…, got "')).toBe(true);
          // What follows the scheme (a user and password, a host) is never repeated.
          const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:/.exec(url)?.[0];
          if (scheme) expect(message.endsWith(`got "${scheme}…"`), message).toBe(true);
        },
      ),
    );
  });

  it('creates a missing directory for the default DATABASE_URL; for another only when DATABASE_CREATE says so', () => {
    expect(loadConfig({}).databaseCreate).toBe(true);
    expect(loadConfig({ DATABASE_URL: 'sqlite:./data/devdata.db' }).databaseCreate).toBe(true);
    expect(loadConfig({ DATABASE_URL: 'sqlite:/var/lib/devdata/devdata.db' }).databaseCreate).toBe(false);
    expect(loadConfig({ DATABASE_URL: 'sqlite:/var/lib/devdata/devdata.db', DATABASE_CREATE: 'true' }).databaseCreate).toBe(true);
    expect(loadConfig({ DATABASE_CREATE: 'false' }).databaseCreate).toBe(true);
    expect(() => loadConfig({ DATABASE_CREATE: 'sometimes' })).toThrow(/DATABASE_CREATE must be true or false, got "sometimes"/);
  });
});

describe('LOG_FORMAT', () => {
  it('is auto by default; json, pretty or auto in any case; anything else is refused with the valid values', () => {
    expect(loadConfig({}).logFormat).toBe('auto');
    expect(loadConfig({ LOG_FORMAT: '' }).logFormat).toBe('auto');
    expect(loadConfig({ LOG_FORMAT: 'JSON' }).logFormat).toBe('json');
    expect(loadConfig({ LOG_FORMAT: ' pretty ' }).logFormat).toBe('pretty');
    expect(loadConfig({ LOG_FORMAT: 'auto' }).logFormat).toBe('auto');
    expect(() => loadConfig({ LOG_FORMAT: 'text' })).toThrow('LOG_FORMAT must be one of auto, json, pretty, got "text"');
  });
});
