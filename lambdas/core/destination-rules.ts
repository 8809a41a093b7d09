import { isIP } from "node:net";
import ipaddr from "ipaddr.js";

/**
 * Where the dispatcher may connect in AWS (decisions 0029 and 0032): lest a tenant's webhook
 * reach into the deployment's own network (server-side request forgery), only to a public
 * unicast address, on an allowed port. Checked on a URL at create and update and again before
 * each delivery, and, in the adapter, on every address a name resolves to at the moment of
 * connecting to it (so a name that resolves to a public address at create and a private one
 * later is still refused).
 *
 * Which addresses are special comes from ipaddr.js's table of the IANA special-purpose blocks
 * (loopback, private, link-local where the metadata service is, carrier-grade NAT, multicast,
 * reserved and documentation ranges; unique local, NAT64, 6to4, Teredo, IPv4-translated...),
 * not from a hand-kept list. An IPv6 address must also be in 2000::/3, the only block IANA
 * hands out as global unicast: that refuses the deprecated IPv4-compatible form (::a.b.c.d),
 * which the table calls unicast, and whatever else sits outside it.
 */
export interface DestinationRules {
  /** The local runtime: loopback, private addresses, any port and plain http are allowed. */
  readonly allowPrivate: boolean;
  /** The ports an https target may name (443 unless the deployment's webhookPorts says more). */
  readonly ports: readonly number[];
}

/** The rules a deployment's settings set. */
export function destinationRulesOf(settings: {
  readonly allowPrivateTargets: number;
  readonly webhookPorts: readonly number[];
}): DestinationRules {
  return { allowPrivate: settings.allowPrivateTargets === 1, ports: settings.webhookPorts };
}

/** What a few special-purpose blocks are called in an answer; the rest by ipaddr.js's name. */
const BLOCK_NAMES: Readonly<Record<string, string>> = {
  unspecified: "an unspecified address",
  broadcast: "the broadcast address",
  multicast: "a multicast address",
  linkLocal: "a link-local address (where the metadata service is)",
  loopback: "a loopback address",
  carrierGradeNat: "a carrier-grade NAT address (100.64.0.0/10)",
  private: "a private address",
  reserved: "a reserved or documentation address",
  uniqueLocal: "a unique local address (fc00::/7)",
  deprecatedSiteLocal: "a site-local address (fec0::/10)",
  rfc6145: "an IPv4-translated address (::ffff:0:a.b.c.d)",
  rfc6052: "a NAT64 address (64:ff9b::/96, 64:ff9b:1::/48)",
  "6to4": "a 6to4 address (2002::/16)",
  teredo: "a Teredo address (2001::/32)",
};

const GLOBAL_UNICAST = ipaddr.parseCIDR("2000::/3");
const IPV4_COMPATIBLE = ipaddr.parseCIDR("::/96");

/**
 * Why the dispatcher may not connect to this IP address (in AWS), or undefined if it may. An
 * IPv4 address written as IPv6 (::ffff:a.b.c.d, which a socket connects to as a.b.c.d) is
 * judged as the IPv4 address.
 */
export function addressProblem(address: string): string | undefined {
  const bare = address.replace(/^\[|\]$/g, "");
  if (isIP(bare) === 0) return "is not an IP address";
  const parsed = ipaddr.parse(bare);
  if (parsed.kind() === "ipv6") {
    const v6 = parsed as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) return addressProblem(v6.toIPv4Address().toString());
    const range = v6.range();
    if (range !== "unicast") return `is ${blockName(range)}`;
    if (!v6.match(GLOBAL_UNICAST)) {
      return v6.match(IPV4_COMPATIBLE)
        ? "is an IPv4-compatible address (::a.b.c.d, deprecated)"
        : "is outside IPv6 global unicast (2000::/3)";
    }
    return undefined;
  }
  const range = (parsed as ipaddr.IPv4).range();
  return range === "unicast" ? undefined : `is ${blockName(range)}`;
}

function blockName(range: string): string {
  return BLOCK_NAMES[range] ?? `a special-purpose address (${range})`;
}

/** Names that always mean this machine or the deployment's own network. */
const LOCAL_NAMES = /(^|\.)(localhost|localdomain|internal|local|home\.arpa)$/i;

/**
 * The problem with a webhook URL, or undefined: https only and no credentials in it; unless
 * the rules allow private targets (the local runtime), no plain http, no local-only name, no
 * name with a trailing dot, and what destinationProblem refuses. A public name is checked
 * again on the addresses it resolves to, at connect.
 */
export function webhookUrlProblem(text: string, rules: DestinationRules): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "must be an absolute URL";
  }
  if (url.protocol !== "https:" && !(rules.allowPrivate && url.protocol === "http:")) {
    return rules.allowPrivate ? "must be an https:// or http:// URL" : "must be an https:// URL";
  }
  if (url.username !== "" || url.password !== "") return "must not carry a user name or password";
  if (url.hash !== "") return "must not have a #fragment";
  if (rules.allowPrivate) return undefined;
  const host = url.hostname;
  if (isIP(host.replace(/^\[|\]$/g, "")) === 0) {
    // `localhost.` is localhost, `metadata.google.internal.` the metadata service: a name
    // with its root's dot is refused outright rather than read two ways.
    if (host.endsWith(".")) return `must name a host without a trailing dot (${host})`;
    if (LOCAL_NAMES.test(host) || !host.includes(".")) {
      return "must name a public host (not localhost, a bare name or a .internal/.local name)";
    }
  }
  return destinationProblem(url, rules);
}

/**
 * What the dispatcher checks again before it connects (for a job stored before a rule came,
 * or before the ports were narrowed): in AWS, https only, a literal address only if public,
 * and an allowed port. A name is judged by the addresses it resolves to, at connect
 * (adapters/targets/guarded-lookup.ts).
 */
export function destinationProblem(url: URL, rules: DestinationRules): string | undefined {
  if (rules.allowPrivate) return undefined;
  if (url.protocol !== "https:") return "must be an https:// URL";
  // The URL parser writes IP addresses in one form (0x7f.1 and 2130706433 become 127.0.0.1,
  // [::127.0.0.1] becomes [::7f00:1]), so what is checked here is what would be connected to.
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const problem = isIP(host) === 0 ? undefined : addressProblem(host);
  if (problem) {
    return `must not point to a loopback, private, link-local, metadata or other special-purpose address: ${host} ${problem}`;
  }
  // An https URL's port is "" when it is the default, 443.
  const port = url.port === "" ? 443 : Number(url.port);
  if (!rules.ports.includes(port)) {
    return `must use port ${rules.ports.join(" or ")}, not ${port} (the deployment's webhookPorts setting lists the ports allowed)`;
  }
  return undefined;
}
