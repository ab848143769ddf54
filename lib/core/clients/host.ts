const LOOPBACK = new Set(['localhost', '127.0.0.1', '::1']);

/**
 * One spelling per host, so that two names of one server are seen as one node:
 * case and a trailing dot dropped, IPv4 shorthand (`127.1`) and IPv4-mapped
 * IPv6 (`::ffff:127.0.0.1`) written out, and every loopback name and address
 * (`localhost`, 127.0.0.0/8, `::1`) taken as `127.0.0.1`: a server listening on
 * all interfaces answers on each of them.
 */
export function hostOf(host: string | undefined): string {
  if (!host) return '127.0.0.1';
  let name = host
    .toLowerCase()
    .replace(/\.$/, '')
    .replace(/^\[(.*)\]$/, '$1');
  try {
    // The URL parser writes IPv4 shorthand and IPv6 out in one canonical form.
    name = new URL(`http://${name.includes(':') ? `[${name}]` : name}`).hostname.replace(/^\[(.*)\]$/, '$1');
  } catch {
    return name;
  }
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(name);
  if (mapped) {
    const [hi, lo] = [parseInt(mapped[1]!, 16), parseInt(mapped[2]!, 16)];
    name = `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  if (LOOPBACK.has(name) || /^127\.\d+\.\d+\.\d+$/.test(name)) return '127.0.0.1';
  return name;
}
