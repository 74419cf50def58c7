package io.meshplane.node;

import io.meshplane.common.Fields;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * The inventory's filters (API.md §8), validated: each null when not given. The list route reads them
 * from the query string, the bulk feature from a request body's {@code filter}; both with
 * {@link #parse}, so a value is refused the same way (400 naming the field) wherever it comes from.
 *
 * @param address an IPv4 address or prefix ({@code 100.64.0.7}, {@code 100.64.0.0/24}), host bits zero
 * @param policySync {@code current}, {@code behind} or {@code drifting}
 */
public record NodeFilter(String status, String tag, String namePrefix, String agentVersion, String team, String environment,
    String address, String policySync) {
  public static final NodeFilter NONE = new NodeFilter(null, null, null, null, null, null, null, null);
  /** Names of the filters, as query parameters and as keys of a bulk request's {@code filter}. */
  public static final Set<String> NAMES = Set.of("status", "tag", "name_prefix", "agent_version", "team", "environment", "address",
      "policy_sync");
  private static final Pattern NAME_PREFIX = Pattern.compile("^[a-z0-9-]{1,63}$");
  private static final Pattern AGENT_VERSION = Pattern.compile("[A-Za-z0-9.+_-]{1,64}");
  private static final Set<String> STATUSES = Set.of("pending", "online", "stale");
  private static final Set<String> SYNC = Set.of("current", "behind", "drifting");

  /**
   * Reads the filters through {@code get} (a query parameter or a body key; null when absent); errors
   * go to {@code f} named {@code prefix + name} ({@code filter.team}).
   */
  public static NodeFilter parse(Function<String, String> get, Fields f, String prefix) {
    String status = get.apply("status");
    if (status != null && !STATUSES.contains(status)) f.error(prefix + "status", "must be pending, online or stale");
    String tag = get.apply("tag");
    if (tag != null && !NodeFormats.tag(tag)) f.error(prefix + "tag", "must be tag:<slug>");
    String namePrefix = get.apply("name_prefix");
    if (namePrefix != null && !NAME_PREFIX.matcher(namePrefix).matches()) f.error(prefix + "name_prefix", "must be 1-63 of a-z, 0-9, '-'");
    String agentVersion = get.apply("agent_version");
    if (agentVersion != null && !AGENT_VERSION.matcher(agentVersion).matches()) {
      f.error(prefix + "agent_version", "must be 1-64 of A-Z, a-z, 0-9, '.', '+', '_', '-'");
    }
    String team = get.apply("team");
    if (team != null && !Fields.isSlug(team)) f.error(prefix + "team", "must be a team slug: lower-case letters, digits and '-'");
    String env = get.apply("environment");
    if (env != null && !Fields.isSlug(env)) f.error(prefix + "environment", "must be an environment slug: lower-case letters, digits and '-'");
    String address = get.apply("address");
    if (address != null && range(address) == null) {
      f.error(prefix + "address", "must be an IPv4 mesh address (100.64.0.7) or prefix (100.64.0.0/24, no host bits set)");
    }
    String sync = get.apply("policy_sync");
    if (sync != null && !SYNC.contains(sync)) f.error(prefix + "policy_sync", "must be current, behind or drifting");
    return new NodeFilter(status, tag, namePrefix, agentVersion, team, env, address, sync);
  }

  /**
   * The first and last address of {@code address} ({@code a.b.c.d} is {@code /32}) as dotted quads, or
   * null when it is not a strict IPv4 address or prefix: the list reads it as a range of the address
   * index ({@code address BETWEEN first AND last}), whatever plan PostgreSQL caches.
   */
  static String[] range(String address) {
    if (address == null || address.length() > 18) return null;
    int slash = address.indexOf('/');
    long ip;
    int bits = 32;
    if (slash < 0) {
      ip = NodeFormats.ipv4(address, 0, address.length());
    } else {
      if (!NodeFormats.cidr(address)) return null;
      ip = NodeFormats.ipv4(address, 0, slash);
      String b = address.substring(slash + 1);
      if (b.isEmpty() || b.length() > 2 || (b.length() > 1 && b.charAt(0) == '0')) return null;
      bits = Integer.parseInt(b);
    }
    if (ip < 0 || bits < 0 || bits > 32) return null;
    long span = bits == 32 ? 0 : (1L << (32 - bits)) - 1;
    return new String[] {quad(ip), quad(ip | span)};
  }

  private static String quad(long v) {
    return ((v >> 24) & 255) + "." + ((v >> 16) & 255) + "." + ((v >> 8) & 255) + "." + (v & 255);
  }
}
