// Which network destinations a webhook may reach: public unicast addresses only (no loopback,
// private, link-local, reserved, multicast, CGNAT, documentation ranges…; IPv6 only inside
// 2000::/3), checked when a URL is saved and again on the address actually connected to, so DNS
// rebinding gains nothing.
import { lookup as dnsLookup } from 'node:dns';
import type { LookupAddress, LookupOptions } from 'node:dns';
import ipaddr from 'ipaddr.js';

// IPv6 is public only in global unicast: ipaddr.js calls most of ::/96 (IPv4-compatible, so
// ::7f00:1 is 127.0.0.1) 'unicast', and its list of special ranges may lag the IANA registry.
const GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');
// Special-purpose blocks inside it, refused whole even where a sub-block is globally reachable:
// IETF protocol assignments (Teredo, ORCHID, AMT…), documentation, and 6to4 (embeds IPv4).
const SPECIAL_GLOBAL = ['2001::/23', '2001:db8::/32', '2002::/16', '3fff::/20'].map((cidr) => ipaddr.parseCIDR(cidr));

export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv4') return parsed.range() === 'unicast';
  const ipv6 = parsed as ipaddr.IPv6;
  if (ipv6.isIPv4MappedAddress()) return ipv6.toIPv4Address().range() === 'unicast';
  return ipv6.match(GLOBAL_UNICAST) && !SPECIAL_GLOBAL.some((range) => ipv6.match(range)) && ipv6.range() === 'unicast';
}

/** An IP literal from a URL host (IPv6 hosts come in brackets), or undefined for a name. */
export function ipLiteral(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) && (bare.includes(':') || ipaddr.IPv4.isValidFourPartDecimal(bare)) ? bare : undefined;
}

export class ForbiddenAddressError extends Error {
  readonly code = 'EADDRFORBIDDEN';
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `dns.lookup` for socket connections that refuses to hand out a non-public address: the
 * check runs on the very address the connection will use.
 */
export function publicOnlyLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, []);
    const forbidden = addresses.find((entry) => !isPublicAddress(entry.address));
    if (forbidden) return callback(new ForbiddenAddressError(`${hostname} resolves to a non-public address`), []);
    if (options.all) return callback(null, addresses);
    const first = addresses[0];
    if (!first) return callback(new ForbiddenAddressError(`${hostname} has no address`), []);
    callback(null, first.address, first.family);
  });
}
