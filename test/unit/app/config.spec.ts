/** Configuration: every variable validated once; a bad value names itself. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../../src/config';

describe('loadConfig', () => {
  it('has working defaults for development on loopback', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      mode: 'development',
      host: '127.0.0.1',
      httpPort: 3000,
      grpcPort: 50051,
      bodyLimit: 102400,
      mongoUri: undefined,
      tls: undefined,
    });
  });

  it('reads every documented variable', () => {
    const c = loadConfig({
      MONGODB_URI: 'mongodb://db.internal:27017/?replicaSet=rs0',
      RAMPART_HTTP_PORT: '8080',
      RAMPART_GRPC_PORT: '9090',
      RAMPART_API_SECRET: 'a-long-enough-secret',
      RAMPART_WEBHOOK_URL: 'https://app.example.com/hooks',
      RAMPART_SMTP_URL: 'smtp://127.0.0.1:2525',
      RAMPART_RATE_LIMIT: '50',
    });
    expect(c).toMatchObject({
      mongoUri: 'mongodb://db.internal:27017/?replicaSet=rs0',
      httpPort: 8080,
      grpcPort: 9090,
      apiSecret: 'a-long-enough-secret',
      webhookUrl: 'https://app.example.com/hooks',
      smtpUrl: 'smtp://127.0.0.1:2525',
      rateLimitPerSecond: 50,
    });
  });

  it.each([
    ['RAMPART_HTTP_PORT', 'eighty'],
    ['RAMPART_HTTP_PORT', '70000'],
    ['RAMPART_GRPC_PORT', '-1'],
    ['MONGODB_URI', 'postgres://x'],
    ['RAMPART_API_SECRET', 'short'],
    ['RAMPART_WEBHOOK_URL', 'ftp://x'],
    ['RAMPART_WEBHOOK_URL', 'not a url'],
    ['RAMPART_MODE', 'staging'],
    ['RAMPART_MASTER_KEY', 'abc'],
    ['RAMPART_SMTP_URL', 'http://mail'],
    ['RAMPART_TRUST_PROXY', 'maybe'],
    ['RAMPART_BODY_LIMIT', '10'],
    ['RAMPART_DB_NAME', 'bad name!'],
  ])('%s=%s stops start-up with a message naming it', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(name);
  });

  it('requires TLS (or a trusted proxy) and a master key in production', () => {
    expect(() => loadConfig({ RAMPART_MODE: 'production' })).toThrow(/RAMPART_TLS_CERT/);
    expect(() => loadConfig({ RAMPART_MODE: 'production', RAMPART_TRUST_PROXY: 'true' })).toThrow(
      /RAMPART_MASTER_KEY/,
    );
    expect(
      loadConfig({
        RAMPART_MODE: 'production',
        RAMPART_TRUST_PROXY: 'true',
        RAMPART_MASTER_KEY: 'ab'.repeat(32),
        RAMPART_HOST: '0.0.0.0',
      }).trustProxy,
    ).toContain('10.0.0.0/8');
    expect(() =>
      loadConfig({
        RAMPART_MODE: 'production',
        RAMPART_TRUST_PROXY: 'false',
        RAMPART_MASTER_KEY: 'ab'.repeat(32),
      }),
    ).toThrow(/RAMPART_TLS_CERT/);
  });

  it('reads RAMPART_TRUST_PROXY as no proxy, proxies on loopback and private networks, or a list', () => {
    expect(loadConfig({}).trustProxy).toEqual([]);
    expect(loadConfig({ RAMPART_TRUST_PROXY: 'false' }).trustProxy).toEqual([]);
    expect(loadConfig({ RAMPART_TRUST_PROXY: 'true' }).trustProxy).toEqual([
      '127.0.0.0/8',
      '::1/128',
      '10.0.0.0/8',
      '172.16.0.0/12',
      '192.168.0.0/16',
      'fc00::/7',
    ]);
    expect(
      loadConfig({ RAMPART_TRUST_PROXY: '203.0.113.7, 10.1.0.0/16,2001:db8::/48,loopback' }).trustProxy,
    ).toEqual(['203.0.113.7/32', '10.1.0.0/16', '2001:db8::/48', '127.0.0.0/8', '::1/128']);
  });

  it.each(['0.0.0.0/0', '::/0', '10.0.0.0/33', 'proxy.internal', '10.0.0.0/8,bogus', ','])(
    'refuses RAMPART_TRUST_PROXY=%s, naming it',
    (value) => {
      expect(() => loadConfig({ RAMPART_TRUST_PROXY: value })).toThrow(/RAMPART_TRUST_PROXY/);
    },
  );

  it('refuses plain HTTP off loopback in development', () => {
    expect(() => loadConfig({ RAMPART_HOST: '0.0.0.0' })).toThrow(/RAMPART_HOST/);
  });

  it('reads the TLS files, and names a file it cannot read', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rampart-cfg-'));
    writeFileSync(path.join(dir, 'c.pem'), 'CERT');
    writeFileSync(path.join(dir, 'k.pem'), 'KEY');
    const c = loadConfig({
      RAMPART_TLS_CERT: path.join(dir, 'c.pem'),
      RAMPART_TLS_KEY: path.join(dir, 'k.pem'),
    });
    expect(c.tls?.cert.toString()).toBe('CERT');
    expect(() =>
      loadConfig({
        RAMPART_TLS_CERT: path.join(dir, 'missing.pem'),
        RAMPART_TLS_KEY: path.join(dir, 'k.pem'),
      }),
    ).toThrow(/RAMPART_TLS_CERT/);
    expect(() => loadConfig({ RAMPART_TLS_CERT: path.join(dir, 'c.pem') })).toThrow(/RAMPART_TLS_KEY/);
  });
});
