import ipaddr from 'ipaddr.js';

/**
 * Where webhooks may go. `public`: the deployed service, which must never be turned against its own
 * network (SSRF): only public unicast addresses. `loopback`: the local runtime, which delivers to this
 * machine only, so that a webhook tried locally never leaves it.
 */
export type WebhookDestinations = 'public' | 'loopback';

/**
 * Whether an address (as DNS resolved it, or as written in the URL) may receive webhooks. Loopback,
 * private (RFC 1918, unique local), link-local (which holds the instance metadata service,
 * 169.254.169.254 and fd00:ec2::254 on EC2), carrier-grade NAT, multicast, reserved and
 * documentation ranges, and IPv6 forms that embed an IPv4 address (6to4, Teredo, NAT64) are refused
 * unless they are public; an IPv4-mapped IPv6 address is judged as the IPv4 address it maps.
 */
export function isAllowedAddress(address: string, destinations: WebhookDestinations): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  }
  const range = parsed.range();
  return destinations === 'loopback' ? range === 'loopback' : range === 'unicast';
}

/** `localhost` and its subdomains (RFC 6761) name this machine whatever DNS says. */
export function isLocalhostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/** The host of a URL as an address when it is an IP literal (brackets of IPv6 removed), else undefined. */
export function literalAddress(hostname: string): string | undefined {
  const bare = hostname.replace(/^\[(.*)\]$/, '$1');
  return ipaddr.isValid(bare) && (bare.includes(':') || ipaddr.IPv4.isValidFourPartDecimal(bare))
    ? bare
    : undefined;
}

/**
 * What can be told from the URL alone, before any DNS: a literal address or a `localhost` name that
 * may not receive webhooks. The address DNS gives for any other name is checked when delivering.
 */
export function refusedByName(hostname: string, destinations: WebhookDestinations): boolean {
  const literal = literalAddress(hostname);
  if (literal !== undefined) return !isAllowedAddress(literal, destinations);
  // Locally only names of this machine are delivered to, so that nothing is looked up elsewhere.
  return destinations === 'loopback' ? !isLocalhostName(hostname) : isLocalhostName(hostname);
}
