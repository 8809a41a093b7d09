import { BlockList, isIP } from "node:net";

/**
 * Where the dispatcher may connect in AWS: not to loopback, private, link-local, carrier-grade
 * NAT, multicast, reserved or metadata addresses (IPv4, IPv6, and IPv4 written inside IPv6),
 * lest a tenant's webhook reach into the deployment's own network (server-side request
 * forgery). Checked on a URL's literal address at create and, in the adapter, on every
 * address a name resolves to, at the moment of connecting to it (so a name that resolves to a
 * public address at create and a private one later is still refused).
 */
const blocked = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const) {
  blocked.addSubnet(network, prefix, "ipv4");
}
for (const [network, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["64:ff9b::", 96],
  ["100::", 64],
  ["2001:db8::", 32],
  ["fc00::", 7],
  ["fe80::", 10],
  ["fec0::", 10],
  ["ff00::", 8],
  // AWS's IPv6 instance metadata endpoint (fd00:ec2::254) is inside fc00::/7 already.
] as const) {
  blocked.addSubnet(network, prefix, "ipv6");
}

/** An IPv4 address written as IPv6 (::ffff:a.b.c.d, ::a.b.c.d): the IPv4 address it stands for. */
function embeddedIpv4(address: string): string | undefined {
  const match = /^::(?:ffff:)?(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (match) return match[1];
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return undefined;
  const high = Number.parseInt(hex[1] ?? "0", 16);
  const low = Number.parseInt(hex[2] ?? "0", 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join(".");
}

/** Whether the dispatcher may connect to this IP address (in AWS). */
export function isPublicAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, "");
  const family = isIP(bare);
  if (family === 0) return false;
  if (family === 6) {
    const v4 = embeddedIpv4(bare);
    if (v4 !== undefined) return isPublicAddress(v4);
    return !blocked.check(bare, "ipv6");
  }
  return !blocked.check(bare, "ipv4");
}

/** Names that always mean this machine or the deployment's own network. */
const LOCAL_NAMES = /(^|\.)(localhost|localdomain|internal|local)$/i;

/**
 * The problem with a webhook URL, or undefined: https only and no credentials in it; unless
 * `allowPrivate` (the local runtime), no plain http and no literal private address or
 * local-only name. A public name is checked again on the address it resolves to, at connect.
 */
export function webhookUrlProblem(text: string, allowPrivate: boolean): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "must be an absolute URL";
  }
  if (url.protocol !== "https:" && !(allowPrivate && url.protocol === "http:")) {
    return allowPrivate ? "must be an https:// or http:// URL" : "must be an https:// URL";
  }
  if (url.username !== "" || url.password !== "") return "must not carry a user name or password";
  if (url.hash !== "") return "must not have a #fragment";
  if (allowPrivate) return undefined;
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (isIP(host) !== 0 && !isPublicAddress(host)) {
    return "must not point to a loopback, private, link-local or metadata address";
  }
  if (isIP(host) === 0 && (LOCAL_NAMES.test(host) || !host.includes("."))) {
    return "must name a public host (not localhost, a bare name or a .internal/.local name)";
  }
  return undefined;
}
