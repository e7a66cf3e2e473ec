// Which addresses a webhook delivery may reach: public unicast ones, and what the operator allowed.
import { describe, expect, it } from 'vitest';
import { AddressPolicy, validAllowedHost } from '../../../src/outbound/address-policy.js';

describe('AddressPolicy', () => {
  const none = new AddressPolicy([]);

  it('refuses loopback, private, link-local, multicast and unspecified addresses, also written as IPv6', () => {
    for (const address of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:a9fe:a9fe',
    ])
      expect([address, none.addressAllowed(address)]).toEqual([address, false]);
  });

  it('lets public addresses through', () => {
    for (const address of ['93.184.215.14', '8.8.8.8', '2606:4700::1111', '::ffff:8.8.8.8'])
      expect([address, none.addressAllowed(address)]).toEqual([address, true]);
  });

  it('allows what the operator lists: names, addresses and CIDRs', () => {
    const policy = new AddressPolicy(['hooks.internal', '127.0.0.1', '10.0.0.0/8', 'fd00::/8']);
    expect(policy.nameAllowed('HOOKS.internal')).toBe(true);
    expect(policy.nameAllowed('other.internal')).toBe(false);
    expect(policy.addressAllowed('127.0.0.1')).toBe(true);
    expect(policy.addressAllowed('127.0.0.2')).toBe(false);
    expect(policy.addressAllowed('10.200.0.1')).toBe(true);
    expect(policy.addressAllowed('fd12::1')).toBe(true);
    expect(policy.addressAllowed('192.168.0.1')).toBe(false);
  });

  it('checks the form of allowed hosts', () => {
    for (const good of ['example.org', 'localhost', '127.0.0.1', '10.0.0.0/8', '::1', 'fd00::/8'])
      expect([good, validAllowedHost(good)]).toEqual([good, true]);
    for (const bad of ['', 'exa mple', '10.0.0.0/33', '::/129', '10.0.0.0/8/1', 'http://x', '1.2.3.4/x'])
      expect([bad, validAllowedHost(bad)]).toEqual([bad, false]);
  });
});
