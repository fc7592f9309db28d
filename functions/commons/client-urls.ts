import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * The rules for an address a client gives the service to reach (an `audio_url` to fetch, a
 * `webhook_url` to post to), as far as the address itself tells: checked when the job is submitted
 * and again on every request and redirect by `outbound-http.ts`, whose agent then checks the address
 * DNS gives for a name before connecting to it. One set of rules for both kinds of address.
 */
export interface ClientUrlRules {
  /** Local mode: plain http and private addresses (the developer's own servers) are allowed too. */
  local: boolean;
  /** Plain http although not local (tests' own servers). */
  allowHttp?: boolean;
  /** Addresses allowed although not public (tests' own servers, outside local mode). */
  allowAddresses?: string[];
}

/** Longer addresses are refused: nothing legitimate needs more, and they are stored with the job. */
export const MAX_CLIENT_URL_LENGTH = 2048;

/**
 * Whether an IP address is one the service may reach outside local mode: a public unicast address.
 * Loopback, private (RFC 1918, unique local), link-local (where the instance metadata service is,
 * 169.254.169.254 and fd00:ec2::254), carrier-grade NAT, multicast, reserved, unspecified and the IPv6
 * forms that embed another address (IPv4-mapped, 6to4, Teredo) are not. This is the rule
 * `request-filtering-agent` applies after DNS (ipaddr.js's `unicast` range), applied here before it.
 */
export function isPublicAddress(address: string): boolean {
  return ipaddr.isValid(address) && ipaddr.parse(address).range() === 'unicast';
}

/** `localhost` and its subdomains (RFC 6761) name this machine whatever DNS says. */
function isLocalhostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/**
 * What is wrong with an address under the rules, as a sentence a client can act on, or undefined.
 * The URL parser has already turned every spelling of an IPv4 address (`0x7f.1`, `2130706433`) into
 * its dotted form, so a literal address is judged as the address it is.
 */
export function clientUrlProblem(address: string, rules: ClientUrlRules): string | undefined {
  const schemes = rules.local || rules.allowHttp ? ['https:', 'http:'] : ['https:'];
  const url = URL.canParse(address) ? new URL(address) : undefined;
  if (!url || !schemes.includes(url.protocol) || url.hostname === '') {
    return `must be an absolute ${schemes.map((scheme) => `${scheme}//`).join(' or ')} address`;
  }
  if (url.username || url.password) return 'must not carry a user name or password';
  if (url.href.length > MAX_CLIENT_URL_LENGTH) return `is longer than ${MAX_CLIENT_URL_LENGTH} characters`;
  if (rules.local) return undefined;
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (rules.allowAddresses?.includes(host)) return undefined;
  if (isLocalhostName(host) || (isIP(host) !== 0 && !isPublicAddress(host))) {
    return 'must name a public host, not localhost or a private, loopback, link-local or metadata address';
  }
  return undefined;
}
