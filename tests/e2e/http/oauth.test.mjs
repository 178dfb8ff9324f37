// End-to-end of `stockade serve --http --oauth` (docs/http.md#oauth-resource-server) with the
// official MCP TypeScript SDK's client. Network-free: the authorization server is a small one of
// this file's own on loopback (RFC 8414 metadata and a client_credentials token endpoint), so
// the SDK's whole flow runs — the 401, the Protected Resource Metadata it points at, the
// authorization server's metadata, the token request with the resource (RFC 8707), the retry.
//
// Keys: an RSA and a P-256 key pair made by `openssl genpkey`; their public halves, as JWKs
// (node:crypto), are the JWKS file serve reads. Tokens are signed with node:crypto: RS256 by the
// authorization server, ES256 and the refused ones by the tests. Tenants "alpha" and "beta" list
// no token_sha256: the tenant claim `stockade_tenant` names them. STOCKADE_BIN names the binary
// (run_http.sh sets it); without it, or without openssl, everything here is skipped.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { discoverOAuthProtectedResourceMetadata, extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { chownTree, freePort, startServe } from './harness.mjs';

const BIN = process.env.STOCKADE_BIN;
const HAS_OPENSSL = spawnSync('openssl', ['version']).status === 0;
const skip = !BIN ? 'STOCKADE_BIN is not set (run_http.sh sets it)'
    : !HAS_OPENSSL ? 'the openssl command is not installed (it makes the keys)' : false;
const ROOT = process.getuid() === 0;
const SCOPE = 'mcp:tools';
const CLIENTS = { 'alpha-agent': { secret: 'alpha-secret', tenant: 'alpha' }, 'nobody-agent': { secret: 'n', tenant: 'nobody' } };

let dir;
let serve;
let serveLog = '';
let resource;       // http://127.0.0.1:PORT/mcp, the server's URL and the tokens' audience
let issuer;         // http://127.0.0.1:ASPORT, the authorization server
let authServer;
const keys = {};    // kid -> { privateKey, jwk }
const issued = [];  // every token made here: none may reach serve's log
const tokenRequests = [];

const b64url = (data) => Buffer.from(data).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);

// A key pair made by openssl, and its public JWK under `kid`.
function makeKey(kid, args) {
    const file = path.join(dir, `${kid}.pem`);
    const made = spawnSync('openssl', ['genpkey', ...args, '-out', file], { encoding: 'utf8' });
    assert.equal(made.status, 0, made.stderr);
    const privateKey = crypto.createPrivateKey(fs.readFileSync(file));
    const jwk = { ...crypto.createPublicKey(privateKey).export({ format: 'jwk' }), kid };
    keys[kid] = { privateKey, jwk };
}

function writeJwks(kids) {
    const file = path.join(dir, 'jwks.json');
    fs.writeFileSync(`${file}.next`, JSON.stringify({ keys: kids.map((kid) => keys[kid].jwk) }));
    fs.renameSync(`${file}.next`, file);  // as a refresh job would: whole, at once
}

// A compact JWS of `claims` signed with key `kid` (RS256 for RSA, ES256 for P-256).
function sign(kid, claims, header = {}) {
    const key = keys[kid].privateKey;
    const alg = key.asymmetricKeyType === 'rsa' ? 'RS256' : 'ES256';
    const input = `${b64url(JSON.stringify({ alg, kid, typ: 'at+jwt', ...header }))}.${b64url(JSON.stringify(claims))}`;
    const signature = crypto.sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' });
    const token = `${input}.${b64url(signature)}`;
    issued.push(token);
    return token;
}

function claims(extra = {}) {
    return {
        iss: issuer, aud: resource, sub: 'alice', jti: crypto.randomUUID(), iat: now(), exp: now() + 300,
        stockade_tenant: 'alpha', scope: SCOPE, ...extra,
    };
}

// The authorization server: RFC 8414 metadata and a client_credentials token endpoint
// (client_secret_basic) that signs RS256 access tokens for the resource asked for.
async function startAuthServer() {
    authServer = http.createServer((req, res) => {
        const reply = (status, body) => {
            res.writeHead(status, { 'Content-Type': 'application/json' });
            res.end(JSON.stringify(body));
        };
        if (req.method === 'GET' && req.url === '/.well-known/oauth-authorization-server') {
            return reply(200, {
                issuer, authorization_endpoint: `${issuer}/authorize`, token_endpoint: `${issuer}/token`,
                response_types_supported: ['code'], grant_types_supported: ['client_credentials'],
                token_endpoint_auth_methods_supported: ['client_secret_basic'], code_challenge_methods_supported: ['S256'],
            });
        }
        if (req.method !== 'POST' || req.url !== '/token') return reply(404, { error: 'not_found' });
        let body = '';
        req.on('data', (chunk) => { body += chunk; });
        req.on('end', () => {
            const form = new URLSearchParams(body);
            const [id, secret] = Buffer.from((req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64').toString().split(':');
            const client = CLIENTS[decodeURIComponent(id ?? '')];
            tokenRequests.push({ client: id, resource: form.get('resource'), scope: form.get('scope'), grant: form.get('grant_type') });
            if (!client || decodeURIComponent(secret ?? '') !== client.secret) return reply(401, { error: 'invalid_client' });
            if (form.get('grant_type') !== 'client_credentials') return reply(400, { error: 'unsupported_grant_type' });
            const scope = form.get('scope') ?? '';  // what was asked for, nothing more
            const token = sign('rsa-1', claims({
                aud: form.get('resource'), sub: id, stockade_tenant: client.tenant,
                ...(scope ? { scope } : { scope: undefined }),
            }));
            return reply(200, { access_token: token, token_type: 'Bearer', expires_in: 300, ...(scope ? { scope } : {}) });
        });
    });
    await new Promise((resolve) => authServer.listen(0, '127.0.0.1', resolve));
    issuer = `http://127.0.0.1:${authServer.address().port}`;
}

async function startServer() {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stockade-oauth-'));
    fs.chmodSync(dir, 0o755);
    for (const name of ['alpha', 'beta', 'state']) fs.mkdirSync(path.join(dir, name));
    makeKey('rsa-1', ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048']);
    makeKey('ec-1', ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256']);
    makeKey('rsa-2', ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048']);
    writeJwks(['rsa-1', 'ec-1']);
    await startAuthServer();
    const port = await freePort();
    resource = `http://127.0.0.1:${port}/mcp`;
    fs.writeFileSync(path.join(dir, 'oauth.json'), JSON.stringify({
        issuer, resource, jwks_file: path.join(dir, 'jwks.json'), authorization_servers: [issuer],
        scopes_supported: [SCOPE], required_scope: SCOPE, tenant_claim: 'stockade_tenant', leeway_seconds: 30,
    }));
    const tenants = {
        tenants: [
            { name: 'alpha', workspace_root: path.join(dir, 'alpha'), ...(ROOT ? { host_uid_range: '1500200000-1500265535' } : {}) },
            { name: 'beta', workspace_root: path.join(dir, 'beta'), ...(ROOT ? { host_uid_range: '1500300000-1500365535' } : {}) },
        ],
    };
    if (ROOT) {
        chownTree(path.join(dir, 'alpha'), 1500200000);
        chownTree(path.join(dir, 'beta'), 1500300000);
    }
    fs.writeFileSync(path.join(dir, 'tenants.json'), JSON.stringify(tenants));
    ({ serve } = await startServe(BIN, ['--tenants', path.join(dir, 'tenants.json'), '--oauth', path.join(dir, 'oauth.json'),
        '--allowed-host', 'mcp.other.test', '--no-user-settings'],
    { ...process.env, STOCKADE_STATE_DIR: path.join(dir, 'state'), SPDLOG_LEVEL: 'info' },
    (chunk) => { serveLog += chunk; }, `127.0.0.1:${port}`));
}

const HEADERS = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
const INITIALIZE = {
    jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
};

async function initialize(token) {
    const headers = { ...HEADERS, ...(token ? { Authorization: `Bearer ${token}` } : {}) };
    const response = await fetch(resource, { method: 'POST', headers, body: JSON.stringify(INITIALIZE) });
    await response.text();
    return response;
}

// An SDK client whose every request carries `token` (no auth flow).
async function connectWith(token) {
    const client = new Client({ name: 'stockade-oauth-e2e', version: '0.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(resource), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
    await client.connect(transport);
    return client;
}

function textOf(result) {
    return result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

describe('stockade serve --http --oauth', { skip }, () => {
    before(startServer);
    after(() => {
        if (serve && (serve.signalCode || serve.exitCode)) {
            console.error(`serve ended with ${serve.signalCode ?? serve.exitCode}:\n${serveLog}`);
        }
        if (serve && serve.exitCode === null) serve.kill('SIGKILL');
        authServer?.close();
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    test('a request without a token gets 401 naming the metadata, built from the resource', async () => {
        const response = await initialize();
        assert.equal(response.status, 401);
        const params = extractWWWAuthenticateParams(response);
        const metadataUrl = `${new URL(resource).origin}/.well-known/oauth-protected-resource/mcp`;
        assert.equal(params.resourceMetadataUrl?.href, metadataUrl);
        assert.equal(params.scope, SCOPE);
        assert.equal(params.error, undefined);
        // Another Host header changes nothing: the URL comes from the configuration.
        const other = await new Promise((resolve, reject) => {
            const req = http.request(resource, {
                method: 'POST', headers: { ...HEADERS, Host: 'mcp.other.test' },
            }, (res) => { res.resume(); resolve(res); });
            req.on('error', reject);
            req.end(JSON.stringify(INITIALIZE));
        });
        assert.equal(other.statusCode, 401);
        assert.equal(other.headers['www-authenticate'], `Bearer resource_metadata="${metadataUrl}", scope="${SCOPE}"`);
    });

    test('the Protected Resource Metadata is served without a token, where the SDK looks', async () => {
        const expected = { resource, authorization_servers: [issuer], scopes_supported: [SCOPE], bearer_methods_supported: ['header'] };
        assert.deepEqual(await discoverOAuthProtectedResourceMetadata(new URL(resource)), expected);  // path-aware
        const root = await fetch(`${new URL(resource).origin}/.well-known/oauth-protected-resource`);
        assert.equal(root.status, 200);
        assert.deepEqual(await root.json(), expected);
    });

    test('the SDK gets a token from the authorization server by itself and calls a tool', async () => {
        const provider = new ClientCredentialsProvider({
            clientId: 'alpha-agent', clientSecret: 'alpha-secret', expectedIssuer: issuer, scope: SCOPE,
        });
        const client = new Client({ name: 'stockade-oauth-e2e', version: '0.0.0' });
        await client.connect(new StreamableHTTPClientTransport(new URL(resource), { authProvider: provider }));
        const result = await client.callTool({ name: 'bash', arguments: { command: 'echo oauth-ok; pwd' } });
        assert.equal(result.isError, false, textOf(result));
        assert.match(textOf(result), /oauth-ok/);
        assert.match(textOf(result), /\/workspace|alpha/);  // neutral paths where there is a mount view
        // The token was asked for this server (RFC 8707) and the scope the server named.
        const asked = tokenRequests.filter((r) => r.client === 'alpha-agent' && r.grant === 'client_credentials');
        assert.ok(asked.length >= 1);
        assert.equal(asked.at(-1).resource, resource);
        assert.equal(asked.at(-1).scope, SCOPE);
        await client.close();
        assert.match(serveLog, /http session opened tenant=alpha session=\w+ shared=false sub="alpha-agent"/);
    });

    test('an ES256 token the client already holds is let in', async () => {
        const client = await connectWith(sign('ec-1', claims({ stockade_tenant: 'beta', sub: 'bob' })));
        const result = await client.callTool({ name: 'bash', arguments: { command: 'echo es256-ok' } });
        assert.match(textOf(result), /es256-ok/);
        await client.close();
    });

    test('an expired token and a token for another audience get 401 invalid_token', async () => {
        for (const [token, description] of [
            [sign('rsa-1', claims({ exp: now() - 120, iat: now() - 600, sub: 'late' })), 'the token has expired'],
            [sign('rsa-1', claims({ aud: 'https://other.example.com/mcp' })), 'the token was not issued for this server (aud does not name it)'],
        ]) {
            const response = await initialize(token);
            assert.equal(response.status, 401);
            const params = extractWWWAuthenticateParams(response);
            assert.equal(params.error, 'invalid_token');
            assert.match(response.headers.get('www-authenticate'), new RegExp(`error_description="${description.replace(/[()]/g, '\\$&')}"`));
            await assert.rejects(connectWith(token), (error) => error instanceof StreamableHTTPError && error.code === 401);
        }
        assert.match(serveLog, /http token refused reason=expired sub="late" jti="[0-9a-f-]+"/);
    });

    test('a token without the scope gets 403 insufficient_scope', async () => {
        const token = sign('rsa-1', claims({ scope: 'profile email' }));
        const response = await initialize(token);
        assert.equal(response.status, 403);
        const params = extractWWWAuthenticateParams(response);
        assert.equal(params.error, 'insufficient_scope');
        assert.equal(params.scope, SCOPE);
        assert.equal(params.resourceMetadataUrl?.href, `${new URL(resource).origin}/.well-known/oauth-protected-resource/mcp`);
        await assert.rejects(connectWith(token), (error) => error instanceof StreamableHTTPError && error.code === 403);
        // The SDK's step-up asks again for the scope the 403 names; an authorization server that
        // grants only what the client is configured for gives the same token, and the SDK stops.
        const provider = new ClientCredentialsProvider({ clientId: 'alpha-agent', clientSecret: 'alpha-secret', expectedIssuer: issuer });
        const client = new Client({ name: 'stockade-oauth-e2e', version: '0.0.0' });
        await assert.rejects(client.connect(new StreamableHTTPClientTransport(new URL(resource), { authProvider: provider })),
            (error) => error instanceof StreamableHTTPError && error.code === 403);
    });

    test('alg none, a key not in the JWKS, and an unknown tenant get 401', async () => {
        const unsigned = `${b64url(JSON.stringify({ alg: 'none' }))}.${b64url(JSON.stringify(claims()))}.`;
        issued.push(unsigned);
        for (const token of [unsigned, sign('rsa-2', claims()), sign('rsa-1', claims({ stockade_tenant: 'gamma' }))]) {
            const response = await initialize(token);
            assert.equal(response.status, 401, token);
            assert.equal(extractWWWAuthenticateParams(response).error, 'invalid_token');
        }
    });

    test('a key added to the JWKS is used without a restart', async () => {
        const token = sign('rsa-2', claims());
        assert.equal((await initialize(token)).status, 401);
        writeJwks(['rsa-1', 'ec-1', 'rsa-2']);
        let status = 0;
        for (let i = 0; i < 40 && status !== 200; ++i) {
            await new Promise((resolve) => setTimeout(resolve, 100));
            status = (await initialize(token)).status;
        }
        assert.equal(status, 200);
        assert.match(serveLog, /oauth jwks reloaded file="[^"]+" keys=rsa-1,ec-1,rsa-2/);
    });

    test('no token, nor any part of one, reaches the log', () => {
        assert.ok(issued.length >= 8);
        for (const token of issued) {
            const [header, payload, signature] = token.split('.');
            assert.ok(!serveLog.includes(payload), 'claims in the log');
            if (signature) assert.ok(!serveLog.includes(signature.slice(0, 16)), 'a signature in the log');
            assert.ok(!serveLog.includes(header), 'a token header in the log');
        }
    });
});

describe('stockade serve --http --oauth refuses to start', { skip }, () => {
    test('with a tenant that lists token_sha256, with --no-auth, or with a JWKS it cannot use', () => {
        const where = fs.mkdtempSync(path.join(os.tmpdir(), 'stockade-oauth-start-'));
        try {
            const jwks = path.join(where, 'jwks.json');
            fs.writeFileSync(jwks, JSON.stringify({ keys: [{ kty: 'oct', kid: 'h', k: 'c2VjcmV0' }] }));
            const oauth = path.join(where, 'oauth.json');
            fs.writeFileSync(oauth, JSON.stringify({ issuer: 'https://auth.example.com', resource: 'https://mcp.example.com/mcp', jwks_file: jwks }));
            const tenants = path.join(where, 'tenants.json');
            fs.writeFileSync(tenants, JSON.stringify({ tenants: [{ name: 'a', token_sha256: ['0'.repeat(64)], workspace_root: where }] }));
            const run = (args) => spawnSync(BIN, ['serve', '--http', '127.0.0.1:0', ...args], { encoding: 'utf8', timeout: 30000 });
            let refused = run(['--tenants', tenants, '--oauth', oauth]);
            assert.equal(refused.status, 2);
            assert.match(refused.stderr, /tenant "a": token_sha256: this server takes OAuth access tokens/);
            fs.writeFileSync(tenants, JSON.stringify({ tenants: [{ name: 'a', workspace_root: where }] }));
            refused = run(['--tenants', tenants, '--oauth', oauth]);
            assert.equal(refused.status, 2);
            assert.match(refused.stderr, /jwks_file ".*": keys\[0\] \(kid "h"\): holds private or secret key material/);
            // RFC 7515 A.3's public key: usable, so the file's own key is what is refused next.
            fs.writeFileSync(jwks, JSON.stringify({ keys: [{
                kty: 'EC', kid: 'rfc7515', crv: 'P-256',
                x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU', y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0',
            }] }));
            fs.writeFileSync(oauth, JSON.stringify({ issuer: 'https://auth.example.com', resource: 'https://mcp.example.com/mcp', jwks_file: jwks, jwks: 1 }));
            refused = run(['--tenants', tenants, '--oauth', oauth]);
            assert.equal(refused.status, 2);
            assert.match(refused.stderr, /unknown key "jwks"/);
            refused = run(['--no-auth', '--oauth', oauth]);
            assert.equal(refused.status, 2);
            assert.match(refused.stderr, /--oauth: .*drop --oauth, or drop --no-auth/);
        } finally {
            fs.rmSync(where, { recursive: true, force: true });
        }
    });
});
