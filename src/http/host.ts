/**
 * The organization part of a Host header, as Zulip reads it: Django's `get_host`
 * checks the header's syntax (a malformed one is `DisallowedHost`, a 400), then
 * `get_subdomain` takes what precedes `.EXTERNAL_HOST`.
 */

/**
 * Django's `host_validation_re`: a name of letters, digits, dots and hyphens, or a
 * bracketed IPv6 literal, then an optional port. Anything else (`b.localhost@localhost`,
 * a space, an underscore, an empty port) is no host.
 */
const HOST = /^([a-z0-9.-]+|\[[a-f0-9]*:[a-f0-9.:]+\])(?::(\d+))?$/;
const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;

/**
 * The subdomain a Host header names: `""` for a missing header, the bare host, an IP
 * address or a name outside `externalHost` (the default organization, as Zulip's root
 * domain); `null` for a malformed header. Case, a port and one trailing dot (the
 * fully qualified form, `b.localhost.`) are normalized away.
 */
export function subdomainOf(host: string | undefined, externalHost: string): string | null {
  if (!host) return '';
  const m = HOST.exec(host.trim().toLowerCase());
  if (!m) return null;
  let name = m[1];
  if (name.startsWith('[')) return '';
  if (name.endsWith('.')) name = name.slice(0, -1);
  if (name === '' || name.startsWith('.') || name.endsWith('.')) return null;
  if (IPV4.test(name)) return '';
  let root = externalHost.toLowerCase().replace(/:\d+$/, '');
  if (root.endsWith('.')) root = root.slice(0, -1);
  if (name === root) return '';
  if (name.endsWith(`.${root}`)) return name.slice(0, -(root.length + 1));
  return '';
}
