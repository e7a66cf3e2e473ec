// Which addresses an outbound call (a webhook delivery) may reach: by default none that is loopback, private,
// link-local, multicast or otherwise not a public unicast address, so that a user cannot make the service call into
// its own network; the operator's allowed hosts (names, addresses or CIDRs) are reachable anyway.
import { BlockList, isIP } from 'node:net';

const NOT_PUBLIC = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  NOT_PUBLIC.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  NOT_PUBLIC.addSubnet(net, prefix, 'ipv6');

/** An IPv4 address written as IPv6 (::ffff:a.b.c.d or ::ffff:XXXX:XXXX) in its IPv4 form; anything else as given. */
function unmapped(address: string): string {
  const lower = address.toLowerCase();
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1]!;
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (!hex) return address;
  const [hi, lo] = [Number.parseInt(hex[1]!, 16), Number.parseInt(hex[2]!, 16)];
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
}

export class AddressPolicy {
  private readonly allowedNames = new Set<string>();
  private readonly allowedNets = new BlockList();

  /** `allowed`: host names, addresses and CIDRs (config webhooks.allowedHosts, validated at start). */
  constructor(allowed: readonly string[]) {
    for (const entry of allowed) {
      const [net, prefix] = entry.split('/');
      const family = isIP(net!);
      if (family === 0) this.allowedNames.add(entry.toLowerCase());
      else if (prefix === undefined) this.allowedNets.addAddress(net!, family === 4 ? 'ipv4' : 'ipv6');
      else this.allowedNets.addSubnet(net!, Number(prefix), family === 4 ? 'ipv4' : 'ipv6');
    }
  }

  /** Whether calls to this host name (as the URL writes it) may go to any address it resolves to. */
  nameAllowed(host: string): boolean {
    return this.allowedNames.has(host.toLowerCase());
  }

  /** Whether an address may be called. */
  addressAllowed(address: string): boolean {
    const plain = unmapped(address);
    const type = isIP(plain) === 4 ? 'ipv4' : 'ipv6';
    return this.allowedNets.check(plain, type) || !NOT_PUBLIC.check(plain, type);
  }
}

/** Whether an entry of webhooks.allowedHosts is well formed: a host name, an address or a CIDR. */
export function validAllowedHost(entry: string): boolean {
  const [net, prefix, extra] = entry.split('/');
  if (extra !== undefined) return false;
  const family = isIP(net!);
  if (family === 0) return prefix === undefined && /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/i.test(entry);
  if (prefix === undefined) return true;
  const bits = Number(prefix);
  return /^\d{1,3}$/.test(prefix) && bits <= (family === 4 ? 32 : 128);
}
