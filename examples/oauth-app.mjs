// An app that users connect to their devdata account (OAuth 2.0, authorization code with PKCE).
// Register it first (a key with apps:manage), with this redirect URI:
//   curl -X POST $DEVDATA_URL/api/v1/apps -H "Authorization: Bearer $DEVDATA_API_KEY" -H 'Content-Type: application/json' \
//     -d '{"name":"Example app","type":"public","redirectUris":["http://127.0.0.1:4000/callback"],"scopes":["resources:read"]}'
// then: DEVDATA_URL=http://localhost:8080 CLIENT_ID=ddc_… [CLIENT_SECRET=ddcs_…] node examples/oauth-app.mjs
// and open http://127.0.0.1:4000/ in a browser.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { DevdataClient, DevdataError, DevdataOAuth } from '@devdata/client';

const port = Number(process.env.PORT ?? 4000);
const issuer = process.env.DEVDATA_URL ?? 'http://localhost:8080';
const oauth = await DevdataOAuth.discover({
  issuer,
  clientId: process.env.CLIENT_ID,
  ...(process.env.CLIENT_SECRET && { clientSecret: process.env.CLIENT_SECRET }),
  redirectUri: `http://127.0.0.1:${port}/callback`,
});
// What a real app keeps in its session store, keyed by a cookie.
const pendingBySession = new Map();

const server = createServer(async (request, response) => {
  const url = new URL(request.url, `http://127.0.0.1:${port}`);
  const session = /session=([\w-]+)/.exec(request.headers.cookie ?? '')?.[1];
  if (url.pathname === '/') {
    const pending = await oauth.authorizationUrl({ scopes: (process.env.SCOPES ?? 'resources:read').split(' ') });
    const id = randomBytes(16).toString('base64url');
    pendingBySession.set(id, pending);
    response.writeHead(302, { location: pending.url.toString(), 'set-cookie': `session=${id}; HttpOnly; SameSite=Lax; Path=/` }).end();
  } else if (url.pathname === '/callback') {
    const pending = session && pendingBySession.get(session);
    if (!pending) return response.writeHead(400).end('No authorization in progress: start at /');
    pendingBySession.delete(session);
    try {
      // Checks state and iss, then exchanges the code with the PKCE verifier.
      const tokens = await oauth.exchangeCode(url, pending);
      const devdata = new DevdataClient({ baseUrl: issuer, apiKey: tokens.accessToken });
      const me = await devdata.getCurrentCredential();
      const resources = (await devdata.listResources()).data;
      console.log(`connected to ${me.account.name} with ${tokens.scopes.join(' ')}`);
      response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(`Connected to ${me.account.name}: ${resources.length} resources.\n`);
      // Keep tokens.refreshToken to stay connected; oauth.refresh() rotates it, oauth.revoke() disconnects.
    } catch (error) {
      if (!(error instanceof DevdataError)) throw error;
      response.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' }).end(`Not connected: ${error.code}: ${error.message}\n`);
    }
  } else response.writeHead(404).end();
});
server.listen(port, '127.0.0.1', () => console.log(`open http://127.0.0.1:${port}/`));
