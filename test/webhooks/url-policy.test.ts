// Which IPv6 addresses a webhook may target (docs/decisions.md: "Webhooks"): only global unicast,
// 2000::/3, minus the special-purpose blocks. Outside it, IPv4-compatible (::/96) and NAT64
// (64:ff9b::/96) literals embed an IPv4 address that may well be loopback or private, and
// ipaddr.js calls most of ::/96 'unicast', so the rule cannot rest on range() alone.
// No webhook here is ever sent anything: no event is published.
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import { describe, expect, it } from 'vitest';
import { WebhookSender } from '../../src/areas/webhooks/sender.js';
import { isPublicAddress } from '../../src/platform/public-address.js';
import { useTestApp } from '../support/app.js';
import { expectError } from '../support/expect.js';

const word = fc.integer({ min: 0, max: 0xffff });
const words = (count: number) => fc.array(word, { minLength: count, maxLength: count });

/** Eight 16-bit words starting with `prefix`, the rest drawn at random. */
const withPrefix = (prefix: number[]) => words(8 - prefix.length).map((rest) => [...prefix, ...rest]);

/** `first`, a second word from `min` to `max`, and six at random. */
const secondWordIn = (first: number, min: number, max: number) =>
  fc.tuple(fc.integer({ min, max }), words(6)).map(([second, rest]) => [first, second, ...rest]);

/** An address outside 2000::/3: its first word below 0x2000 or from 0x4000 up. */
const outsideGlobalUnicast = fc.oneof(
  withPrefix([0, 0, 0, 0, 0, 0]),
  withPrefix([0x64, 0xff9b, 0, 0, 0, 0]),
  withPrefix([0x64, 0xff9b, 1]),
  fc.tuple(fc.integer({ min: 0xfc00, max: 0xfdff }), words(7)).map(([first, rest]) => [first, ...rest]),
  fc.tuple(fc.integer({ min: 0xfe80, max: 0xfebf }), words(7)).map(([first, rest]) => [first, ...rest]),
  fc.tuple(fc.integer({ min: 0xff00, max: 0xffff }), words(7)).map(([first, rest]) => [first, ...rest]),
  fc.tuple(fc.integer({ min: 0, max: 0x1fff }), words(7)).map(([first, rest]) => [first, ...rest]),
  fc.tuple(fc.integer({ min: 0x4000, max: 0xffff }), words(7)).map(([first, rest]) => [first, ...rest]),
);

/** IPv4-mapped addresses (::ffff:0:0/96) are judged as their IPv4 address, checked apart. */
const isIPv4Mapped = (parts: number[]) => parts.slice(0, 5).every((part) => part === 0) && parts[5] === 0xffff;

/** Both the full and the compressed spellings. */
const spellings = (parts: number[]) => [parts.map((part) => part.toString(16)).join(':'), new ipaddr.IPv6(parts).toString()];

describe('IPv6 webhook targets', () => {
  it('refuses every generated address outside 2000::/3 (IPv4-mapped apart)', () => {
    fc.assert(
      fc.property(
        outsideGlobalUnicast.filter((parts) => !isIPv4Mapped(parts)),
        (parts) => {
          for (const address of spellings(parts)) expect(isPublicAddress(address), address).toBe(false);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('refuses the special-purpose blocks inside 2000::/3', () => {
    const blocks = [
      secondWordIn(0x2001, 0, 0x1ff), // 2001::/23, IETF protocol assignments
      withPrefix([0x2001, 0xdb8]), // documentation
      withPrefix([0x2002]), // 6to4, embeds an IPv4 address
      secondWordIn(0x3fff, 0, 0xfff), // 3fff::/20, documentation
    ];
    fc.assert(
      fc.property(fc.oneof(...blocks), (parts) => {
        for (const address of spellings(parts)) expect(isPublicAddress(address), address).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });

  it('keeps judging IPv4-mapped addresses as their IPv4 address, and accepts global unicast', () => {
    for (const address of ['::ffff:127.0.0.1', '::ffff:10.0.0.1', '::ffff:192.168.1.1']) expect(isPublicAddress(address), address).toBe(false);
    for (const address of ['::ffff:93.184.215.14', '2606:4700::1111', '2a00:1450:4001::200e', '2001:4860:4860::8888']) {
      expect(isPublicAddress(address), address).toBe(true);
    }
  });

  it('refuses IPv4-compatible literals at delivery too, before connecting', async () => {
    const sender = new WebhookSender(false, 2000);
    try {
      for (const url of ['https://[::7f00:1]/hook', 'https://[::a00:1]/hook']) {
        const result = await sender.send(url, '{}', { 'content-type': 'application/json' });
        expect(result, url).toMatchObject({ responseStatus: null, error: 'destination refused: the address is not public' });
      }
    } finally {
      await sender.close();
    }
  });

  describe('through the API', () => {
    const app = useTestApp();
    const create = (key: string, url: string) =>
      app().request({ method: 'POST', url: '/api/v1/webhooks', key, body: { name: 'x', url, events: ['custom.*'], enabled: false } });

    it.each([
      ['IPv4-compatible loopback', 'https://[::7f00:1]/hook'],
      ['IPv4-compatible private', 'https://[::a00:1]/hook'],
      ['NAT64 of a private address', 'https://[64:ff9b::a00:1]/'],
      ['6to4 of loopback', 'https://[2002:7f00:1::1]/'],
      ['documentation 3fff::/20', 'https://[3fff::1]/'],
    ])('refuses %s (%s) with 400 on /url, creating nothing', async (_what, url) => {
      const caller = await app().account(['webhooks:manage', 'events:read']);
      const response = await create(caller.key, url);
      expectError(response, 400, 'invalid_request');
      expect(response.json.error.details).toEqual([{ path: '/url', message: expect.any(String) }]);
      const list = await app().request({ url: '/api/v1/webhooks', key: caller.key });
      expect(list.status).toBe(200);
      expect(list.json.data).toEqual([]);
    });

    it('accepts a global unicast literal', async () => {
      const caller = await app().account(['webhooks:manage', 'events:read']);
      const response = await create(caller.key, 'https://[2606:4700::1111]/');
      expect(response.status, response.body).toBe(201);
      expect(response.json.url).toBe('https://[2606:4700::1111]/');
    });
  });
});
