// Where a webhook may deliver (docs/decisions.md, "Webhooks"): https on port 443, no user
// information or fragment, and a host whose every address is public. The same address check runs
// again on the address actually connected to at delivery (sender.ts), against DNS rebinding.
import { lookup } from 'node:dns/promises';
import { invalidField } from '../../domain-errors.js';
import { ipLiteral, isPublicAddress } from '../../platform/public-address.js';

/** What a URL only a development setup allows is told: the two ways to reach a receiver on this machine. */
const LOCAL_DEVELOPMENT = 'to develop locally, use devdata-client listen --forward-to http://localhost:PORT/PATH or WEBHOOK_ALLOW_PRIVATE_TARGETS=true';

/** The URL as it will be stored, or a 400 naming what is wrong with it. */
export async function checkWebhookUrl(raw: string, allowPrivateTargets: boolean): Promise<string> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalidField('/url', 'must be an absolute URL such as https://example.com/hooks/devdata');
  }
  if (url.username || url.password) throw invalidField('/url', 'must not contain user information');
  if (url.hash) throw invalidField('/url', 'must not contain a fragment');
  if (allowPrivateTargets) {
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalidField('/url', 'must use https or http');
    return url.toString();
  }
  if (url.protocol !== 'https:') throw invalidField('/url', `must use https; ${LOCAL_DEVELOPMENT}`);
  if (url.port !== '' && url.port !== '443') throw invalidField('/url', `must use port 443; ${LOCAL_DEVELOPMENT}`);
  const literal = ipLiteral(url.hostname);
  if (literal !== undefined) {
    if (!isPublicAddress(literal)) throw invalidField('/url', `must be a public address, not a local, private or reserved one; ${LOCAL_DEVELOPMENT}`);
    return url.toString();
  }
  let addresses: Array<{ address: string }>;
  try {
    addresses = await lookup(url.hostname, { all: true, verbatim: true });
  } catch {
    throw invalidField('/url', `host ${url.hostname} could not be resolved`);
  }
  if (addresses.length === 0 || addresses.some((entry) => !isPublicAddress(entry.address))) {
    throw invalidField('/url', `must resolve to public addresses only; ${LOCAL_DEVELOPMENT}`);
  }
  return url.toString();
}
