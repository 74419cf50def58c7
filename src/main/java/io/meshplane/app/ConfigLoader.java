package io.meshplane.app;

import io.meshplane.common.Durations;
import io.meshplane.common.Ports;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

/**
 * Builds the {@link MeshConfig}: defaults, then the YAML file, then {@code MESH_*} environment variables,
 * then explicit overrides (command line, tests). Every value is validated; the first bad one stops the
 * start with a {@link ConfigException} naming its key. Unknown keys in the file are errors too (typos
 * must not silently fall back to defaults).
 */
public final class ConfigLoader {
  private static final Pattern SLUG = Pattern.compile("^[a-z0-9][a-z0-9-]{0,62}$");
  private static final Pattern HOST = Pattern.compile("^[A-Za-z0-9.\\-:\\[\\]]{1,253}$");

  private ConfigLoader() {}

  public static MeshConfig load(Path file, boolean fileRequired, Map<String, String> env, Map<String, String> overrides) {
    Map<String, String> values = new LinkedHashMap<>();
    for (Setting s : Setting.values()) values.put(s.key, s.defaultValue);
    if (file != null && Files.exists(file)) {
      values.putAll(readYaml(file));
    } else if (fileRequired) {
      throw new ConfigException("config file " + file + " does not exist");
    }
    for (Setting s : Setting.values()) {
      String v = env.get(s.env);
      if (v != null) values.put(s.key, v);
    }
    checkLogging(env);
    for (Map.Entry<String, String> e : overrides.entrySet()) {
      if (Setting.byKey(e.getKey()) == null) throw new ConfigException(e.getKey() + ": unknown setting");
      values.put(e.getKey(), e.getValue());
    }
    return build(values);
  }

  /** Logging is set up by logback before this runs (logback.xml reads these two); check them anyway. */
  private static void checkLogging(Map<String, String> env) {
    String format = env.get("MESH_LOG_FORMAT");
    if (format != null && !format.equals("text") && !format.equals("json")) {
      throw new ConfigException("MESH_LOG_FORMAT: '" + format + "' is not text or json");
    }
    String level = env.get("MESH_LOG_LEVEL");
    if (level != null && !List.of("TRACE", "DEBUG", "INFO", "WARN", "ERROR").contains(level)) {
      throw new ConfigException("MESH_LOG_LEVEL: '" + level + "' is not TRACE, DEBUG, INFO, WARN or ERROR");
    }
  }

  /** {@code MESH_*} variables that no setting reads: most likely typos, which would otherwise go unnoticed. */
  public static List<String> unknownEnvironment(Map<String, String> env) {
    List<String> unknown = new ArrayList<>();
    for (String name : env.keySet()) {
      if (!name.startsWith("MESH_") || name.equals("MESH_LOG_FORMAT") || name.equals("MESH_LOG_LEVEL")) continue;
      // read by `meshplane snapshot` (backup.SnapshotCommand), not settings of a replica
      if (name.equals("MESH_SNAPSHOT_SIGNING_KEY") || name.equals("MESH_SNAPSHOT_VERIFY_KEY")) continue;
      // read by `meshplane ca` (meshca.CaCommand) on the offline root's machine; its value is never logged
      if (name.equals("MESH_CA_PASSPHRASE")) continue;
      boolean known = false;
      for (Setting s : Setting.values()) known |= s.env.equals(name);
      if (!known) unknown.add(name);
    }
    java.util.Collections.sort(unknown);
    return unknown;
  }

  static Map<String, String> readYaml(Path file) {
    Object root;
    try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      root = new Yaml(new SafeConstructor(new LoaderOptions())).load(r);
    } catch (IOException e) {
      throw new ConfigException("config file " + file + " cannot be read: " + e.getMessage());
    } catch (RuntimeException e) {
      throw new ConfigException("config file " + file + " is not valid YAML: " + e.getMessage().lines().findFirst().orElse(""));
    }
    Map<String, String> flat = new LinkedHashMap<>();
    if (root == null) return flat;
    if (!(root instanceof Map<?, ?> map)) throw new ConfigException("config file " + file + ": top level must be a mapping");
    flatten("", map, flat);
    for (String key : flat.keySet()) {
      if (Setting.byKey(key) == null) throw new ConfigException(key + ": unknown setting in " + file);
    }
    return flat;
  }

  private static void flatten(String prefix, Map<?, ?> map, Map<String, String> out) {
    for (Map.Entry<?, ?> e : map.entrySet()) {
      String key = prefix + e.getKey();
      Object v = e.getValue();
      if (v instanceof Map<?, ?> nested) {
        flatten(key + ".", nested, out);
      } else if (v instanceof List<?> list && (key.equals(Setting.RELAYS.key) || key.equals(Setting.PANEL_OIDC_MAPPINGS.key))) {
        out.put(key, new io.vertx.core.json.JsonArray(toJsonable(list)).encode());
      } else if (v instanceof List<?> list) {
        List<String> parts = new ArrayList<>();
        for (Object o : list) parts.add(String.valueOf(o));
        out.put(key, String.join(",", parts));
      } else {
        out.put(key, v == null ? "" : String.valueOf(v));
      }
    }
  }

  /** YAML's lists and maps as Vert.x JSON can take them (snakeyaml gives LinkedHashMaps and ArrayLists). */
  @SuppressWarnings("unchecked")
  private static List<Object> toJsonable(List<?> list) {
    List<Object> out = new ArrayList<>();
    for (Object o : list) {
      if (o instanceof Map<?, ?> m) {
        Map<String, Object> copy = new LinkedHashMap<>();
        m.forEach((k, val) -> copy.put(String.valueOf(k), val == null ? null : String.valueOf(val)));
        out.add(copy);
      } else {
        out.add(o == null ? null : String.valueOf(o));
      }
    }
    return out;
  }

  private static final Pattern RELAY_NAME = Pattern.compile("^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$");

  /** {@code relays}: a JSON/YAML list of {name, region, url}; the first bad entry stops the start, named by its index and key. */
  private static io.meshplane.node.Relays relays(Map<String, String> v) {
    Setting s = Setting.RELAYS;
    String raw = v.get(s.key).trim();
    if (raw.isEmpty()) return io.meshplane.node.Relays.NONE;
    io.vertx.core.json.JsonArray list;
    try {
      list = new io.vertx.core.json.JsonArray(raw);
    } catch (RuntimeException e) {
      throw new ConfigException(s.key + " (env " + s.env + "): must be a list of {name, region, url}");
    }
    List<io.meshplane.node.Relays.Relay> out = new ArrayList<>();
    java.util.Set<String> names = new java.util.HashSet<>();
    for (int i = 0; i < list.size(); i++) {
      String at = s.key + "[" + i + "]";
      if (!(list.getValue(i) instanceof io.vertx.core.json.JsonObject r)) throw new ConfigException(at + ": must be {name, region, url}");
      for (String k : r.fieldNames()) {
        if (!List.of("name", "region", "url").contains(k)) throw new ConfigException(at + "." + k + ": unknown key (name, region, url)");
      }
      String name = r.getValue("name") instanceof String n ? n : null;
      if (name == null || !RELAY_NAME.matcher(name).matches()) throw new ConfigException(at + ".name: must be a DNS label (a-z, 0-9, '-')");
      if (!names.add(name)) throw new ConfigException(at + ".name: '" + name + "' is configured twice");
      String region = r.getValue("region") instanceof String g ? g : null;
      if (region == null || !SLUG.matcher(region).matches()) throw new ConfigException(at + ".region: must be a slug (a-z, 0-9, '-')");
      String url = r.getValue("url") instanceof String u ? u : null;
      if (url == null || !url.matches("^(https|http)://[A-Za-z0-9.\\-]+(:[0-9]{1,5})?(/[\\x21-\\x7e]*)?$") || !urlPort(url)) {
        throw new ConfigException(at + ".url: must be an http(s) URL such as https://fra1.relay.example.net");
      }
      out.add(new io.meshplane.node.Relays.Relay(name, region, url));
    }
    return new io.meshplane.node.Relays(out);
  }

  /** An http(s) base URL: a host name, IPv4 or [IPv6] address, an optional port, an optional path; no trailing '/', no query. */
  static final Pattern BASE_URL = Pattern.compile(
      "^https?://([A-Za-z0-9.\\-]{1,253}|\\[[0-9A-Fa-f:.]{2,45}\\])(:[0-9]{1,5})?(/[A-Za-z0-9._~!$&'()*+,;=:@%/\\-]*)?$");

  /** {@code cluster.advertise_url}: empty, or a base URL agents can reach this replica at (its value goes into answers as JSON). */
  static String advertiseUrl(Map<String, String> v) {
    Setting s = Setting.CLUSTER_ADVERTISE_URL;
    String raw = v.get(s.key).trim();
    if (raw.isEmpty()) return "";
    java.util.regex.Matcher m = BASE_URL.matcher(raw);
    boolean ok = raw.length() <= 512 && m.matches() && !raw.endsWith("/") && (m.group(2) == null || Ports.parse(m.group(2).substring(1)) > 0);
    if (!ok) {
      throw bad(s, raw, "is not a base URL http(s)://host[:port][/path] (no trailing '/', no query), such as http://10.0.3.7:8080");
    }
    return raw;
  }

  private static MeshConfig build(Map<String, String> v) {
    return new MeshConfig(
        host(v, Setting.HTTP_HOST),
        port(v, Setting.HTTP_PORT, true),
        intIn(v, Setting.HTTP_INSTANCES, 0, 64),
        trustedProxies(v),
        port(v, Setting.PANEL_PORT, true),
        new io.meshplane.panel.PanelSettings(
            bool(v, Setting.PANEL_COOKIE_SECURE),
            duration(v, Setting.PANEL_SESSION_IDLE, Duration.ofSeconds(1), Duration.ofDays(1)),
            duration(v, Setting.PANEL_SESSION_LIFETIME, Duration.ofSeconds(1), Duration.ofDays(30)),
            intIn(v, Setting.PANEL_LOGIN_FAILURES, 1, 1000),
            duration(v, Setting.PANEL_LOGIN_WINDOW, Duration.ofSeconds(1), Duration.ofDays(1)),
            intIn(v, Setting.PANEL_LOGIN_PER_ADDRESS, 1, 100_000),
            intIn(v, Setting.PANEL_API_RATE, 1, 100_000),
            intIn(v, Setting.PANEL_API_BURST, 1, 100_000),
            duration(v, Setting.PANEL_SERIES_INTERVAL, Duration.ofMillis(100), Duration.ofMinutes(1)),
            OidcConfig.parse(v, duration(v, Setting.PANEL_OIDC_TIMEOUT, Duration.ofMillis(100), Duration.ofMinutes(1)),
                intIn(v, Setting.PANEL_OIDC_MAX_PENDING, 2, 1_000_000))),
        postgresUrl(v),
        intIn(v, Setting.POSTGRES_POOL_SIZE, 1, 500),
        intIn(v, Setting.POSTGRES_READ_POOL_SIZE, 1, 100),
        duration(v, Setting.POSTGRES_READ_TIMEOUT, Duration.ofMillis(10), Duration.ofMinutes(10)),
        path(v, Setting.POSTGRES_EMBEDDED_DIR),
        slug(v, Setting.CLUSTER_NAME),
        optionalHost(v, Setting.CLUSTER_HOST),
        port(v, Setting.CLUSTER_PORT, false),
        eventBusPort(v),
        members(v),
        optionalHost(v, Setting.CLUSTER_K8S_SERVICE),
        advertiseUrl(v),
        path(v, Setting.AUTH_KEYS_DIR),
        nonBlank(v, Setting.AUTH_ISSUER),
        duration(v, Setting.TOKENS_MAX_LIFETIME, Duration.ofMinutes(1), Duration.ofDays(3650)),
        duration(v, Setting.HEARTBEAT_INTERVAL, Duration.ofSeconds(1), Duration.ofHours(1)),
        duration(v, Setting.HEARTBEAT_STALE_AFTER, Duration.ofMillis(100), Duration.ofDays(1)),
        duration(v, Setting.WRITEBEHIND_FLUSH_INTERVAL, Duration.ofMillis(10), Duration.ofMinutes(10)),
        addressPool(v),
        duration(v, Setting.NODES_PENDING_TTL, Duration.ofSeconds(1), Duration.ofDays(365)),
        duration(v, Setting.OPERATIONS_DEADLINE, Duration.ofSeconds(1), Duration.ofDays(7)),
        policyWork(v),
        relays(v),
        watch(v),
        MeshcaConfig.parse(v),
        intIn(v, Setting.WRITEBEHIND_MAX_BACKLOG, 1, 100_000_000),
        duration(v, Setting.SHUTDOWN_GRACE, Duration.ZERO, Duration.ofMinutes(5)),
        duration(v, Setting.METRICS_GAUGE_INTERVAL, Duration.ofSeconds(1), Duration.ofMinutes(5)));
  }

  /** The watch stream's limits ({@code watch.*}) and the heartbeat interval its answers carry. */
  private static io.meshplane.watch.WatchModule.Settings watch(Map<String, String> v) {
    return new io.meshplane.watch.WatchModule.Settings(io.meshplane.watch.WatchModule.Settings.MAX_PER_NODE,
        intIn(v, Setting.WATCH_MAX_BUFFER, 4096, 64 * 1024 * 1024),
        intIn(v, Setting.WATCH_ADMIT_PER_SECOND, 1, 1_000_000),
        duration(v, Setting.WATCH_PING, Duration.ofSeconds(1), Duration.ofSeconds(30)),
        duration(v, Setting.WATCH_DRAIN, Duration.ZERO, Duration.ofMinutes(10)),
        Math.max(1, duration(v, Setting.HEARTBEAT_INTERVAL, Duration.ofSeconds(1), Duration.ofHours(1)).toSeconds()));
  }

  /** The policy work pool: at least as many evaluations admitted as threads, and a caller's share within them. */
  private static io.meshplane.common.BoundedWork.Limits policyWork(Map<String, String> v) {
    int threads = intIn(v, Setting.POLICY_WORKERS, 1, 64);
    int max = intIn(v, Setting.POLICY_MAX_EVALUATIONS, 1, 1000);
    int perCaller = intIn(v, Setting.POLICY_MAX_PER_CALLER, 1, 1000);
    if (max < threads) throw bad(Setting.POLICY_MAX_EVALUATIONS, v.get(Setting.POLICY_MAX_EVALUATIONS.key), "is below policy.workers (" + threads + ")");
    if (perCaller > max) {
      throw bad(Setting.POLICY_MAX_PER_CALLER, v.get(Setting.POLICY_MAX_PER_CALLER.key), "is above policy.max_evaluations (" + max + ")");
    }
    int perTeam = intIn(v, Setting.POLICY_MAX_PER_TEAM, 1, 1000);
    if (perTeam > max) {
      throw bad(Setting.POLICY_MAX_PER_TEAM, v.get(Setting.POLICY_MAX_PER_TEAM.key), "is above policy.max_evaluations (" + max + ")");
    }
    return new io.meshplane.common.BoundedWork.Limits(threads, max, perCaller, perTeam,
        duration(v, Setting.POLICY_DEADLINE, Duration.ofMillis(100), Duration.ofMinutes(10)));
  }

  static ConfigException bad(Setting s, String value, String why) {
    return new ConfigException(s.key + " (env " + s.env + "): '" + value + "' " + why);
  }

  /** The event bus port: any port or 0, but not the Hazelcast member's (both bind the same interface). */
  private static int eventBusPort(Map<String, String> v) {
    int p = port(v, Setting.CLUSTER_EVENTBUS_PORT, true);
    if (p != 0 && p == port(v, Setting.CLUSTER_PORT, false)) {
      throw bad(Setting.CLUSTER_EVENTBUS_PORT, String.valueOf(p), "is cluster.port, the Hazelcast member's; pick another port or 0");
    }
    return p;
  }

  /** A port as {@link Ports} reads it (no sign, no leading zero, ASCII digits), or 0 where that means "any free port". */
  static int port(Map<String, String> v, Setting s, boolean zeroAllowed) {
    String raw = v.get(s.key).trim();
    int min = zeroAllowed ? 0 : 1;
    int p = zeroAllowed ? Ports.parseOrZero(raw) : Ports.parse(raw);
    if (p >= min) return p;
    throw bad(s, raw, "is not a port (" + min + "-65535, digits without a leading zero)");
  }

  /** The port of a URL the pattern accepted, when it has one, is a port as {@link Ports} reads it. */
  private static boolean urlPort(String url) {
    int hostStart = url.indexOf("://") + 3;
    int slash = url.indexOf('/', hostStart);
    int end = slash < 0 ? url.length() : slash;
    int colon = url.lastIndexOf(':', end - 1);
    return colon < hostStart || Ports.parse(url, colon + 1, end) > 0;
  }

  static int intIn(Map<String, String> v, Setting s, int min, int max) {
    String raw = v.get(s.key).trim();
    try {
      int n = Integer.parseInt(raw);
      if (n >= min && n <= max) return n;
    } catch (NumberFormatException ignored) {
      // reported below
    }
    throw bad(s, raw, "is not a whole number from " + min + " to " + max);
  }

  static boolean bool(Map<String, String> v, Setting s) {
    String raw = v.get(s.key).trim();
    if (raw.equals("true")) return true;
    if (raw.equals("false")) return false;
    throw bad(s, raw, "is not true or false");
  }

  static Duration duration(Map<String, String> v, Setting s, Duration min, Duration max) {
    String raw = v.get(s.key).trim();
    Duration d;
    try {
      d = Durations.parse(raw);
    } catch (IllegalArgumentException e) {
      throw bad(s, raw, "is not a duration (write e.g. 500ms, 30s, 15m, 24h, 90d)");
    }
    if (d.compareTo(min) < 0 || d.compareTo(max) > 0) {
      throw bad(s, raw, "is out of range (" + Durations.format(min) + " to " + Durations.format(max) + ")");
    }
    return d;
  }

  private static String host(Map<String, String> v, Setting s) {
    String raw = v.get(s.key).trim();
    if (!HOST.matcher(raw).matches()) throw bad(s, raw, "is not a host name or address");
    return raw;
  }

  private static String optionalHost(Map<String, String> v, Setting s) {
    String raw = v.get(s.key).trim();
    return raw.isEmpty() ? "" : host(v, s);
  }

  private static String nonBlank(Map<String, String> v, Setting s) {
    String raw = v.get(s.key).trim();
    if (raw.isEmpty() || raw.length() > 200) throw bad(s, raw, "must be 1-200 characters");
    return raw;
  }

  private static String slug(Map<String, String> v, Setting s) {
    String raw = v.get(s.key).trim();
    if (!SLUG.matcher(raw).matches()) throw bad(s, raw, "must be lower-case letters, digits and '-' (at most 63)");
    return raw;
  }

  static Path path(Map<String, String> v, Setting s) {
    String raw = v.get(s.key).trim();
    if (raw.isEmpty()) throw bad(s, raw, "must name a folder");
    return Path.of(raw);
  }

  private static String postgresUrl(Map<String, String> v) {
    Setting s = Setting.POSTGRES_URL;
    String raw = v.get(s.key).trim();
    if (raw.equals("embedded") || raw.startsWith("postgresql://") || raw.startsWith("postgres://")) return raw;
    // Never echo the value: a URL may carry a password.
    throw new ConfigException(s.key + " (env " + s.env + "): must be 'embedded' or a postgresql:// URL");
  }

  private static final Pattern CIDR4 = Pattern.compile("^(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})/(\\d{1,2})$");

  private static String addressPool(Map<String, String> v) {
    Setting s = Setting.NODES_ADDRESS_POOL;
    String raw = v.get(s.key).trim();
    java.util.regex.Matcher m = CIDR4.matcher(raw);
    if (!m.matches()) throw bad(s, raw, "is not an IPv4 CIDR such as 100.64.0.0/10");
    long addr = 0;
    for (int i = 1; i <= 4; i++) {
      int octet = Integer.parseInt(m.group(i));
      if (octet > 255) throw bad(s, raw, "is not an IPv4 CIDR such as 100.64.0.0/10");
      addr = (addr << 8) | octet;
    }
    int prefix = Integer.parseInt(m.group(5));
    if (prefix < 8 || prefix > 30) throw bad(s, raw, "must have a prefix length from /8 to /30");
    long hostMask = (1L << (32 - prefix)) - 1;
    if ((addr & hostMask) != 0) throw bad(s, raw, "has host bits set (write the network address)");
    return raw;
  }

  private static List<String> trustedProxies(Map<String, String> v) {
    Setting s = Setting.HTTP_TRUSTED_PROXIES;
    List<String> out = new ArrayList<>();
    for (String part : v.get(s.key).split(",")) {
      if (!part.isBlank()) out.add(part.trim());
    }
    try {
      io.meshplane.http.ClientAddresses.of(out);
    } catch (IllegalArgumentException e) {
      throw bad(s, v.get(s.key), e.getMessage().replace("'", ""));
    }
    return List.copyOf(out);
  }

  private static List<String> members(Map<String, String> v) {
    Setting s = Setting.CLUSTER_MEMBERS;
    List<String> out = new ArrayList<>();
    for (String part : v.get(s.key).split(",")) {
      String m = part.trim();
      if (m.isEmpty()) continue;
      int colon = m.lastIndexOf(':');
      String host = colon > 0 && m.indexOf(':') == colon ? m.substring(0, colon) : m;
      if (colon > 0 && m.indexOf(':') == colon) {
        String port = m.substring(colon + 1);
        if (Ports.parse(port) < 0) {
          // "127.0.0.1:5701-5703" is a common mistake: list each member instead
          if (port.contains("-")) throw bad(s, m, "is not host[:port] (list each member separately, no port ranges)");
          throw bad(s, m, "has no port 1-65535 (digits without a leading zero)");
        }
      }
      if (!HOST.matcher(host).matches()) throw bad(s, m, "is not host[:port]");
      out.add(m);
    }
    if (out.isEmpty()) throw bad(s, v.get(s.key), "must list at least one member");
    return List.copyOf(out);
  }
}
