package io.meshplane.app;

import io.meshplane.meshca.MeshcaModule;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * {@code meshca.*} (docs/OPERATIONS.md, settings and "MeshCA"), validated at start like every setting:
 * the first bad value stops the start with a {@link ConfigException} naming its key. The secret's value
 * is never echoed; whether it opens the keys already sealed in PostgreSQL is checked once PostgreSQL
 * answers (the module's load), with the same kind of message.
 */
final class MeshcaConfig {
  /** A SPIFFE trust domain: lower-case letters, digits, '.', '-' and '_'. */
  private static final Pattern TRUST_DOMAIN = Pattern.compile("^[a-z0-9]([a-z0-9._-]{0,253}[a-z0-9])?$");
  static final int MIN_SECRET_BYTES = 32;

  private MeshcaConfig() {}

  static MeshcaModule.Settings parse(Map<String, String> v) {
    String domain = v.get(Setting.MESHCA_TRUST_DOMAIN.key).trim();
    if (!TRUST_DOMAIN.matcher(domain).matches()) {
      throw ConfigLoader.bad(Setting.MESHCA_TRUST_DOMAIN, domain, "is not a trust domain (lower-case letters, digits, '.', '-', '_'), "
          + "such as mesh.example.com");
    }
    // drills scale lifetimes down to minutes (an outage of half a lifetime, a rotation running its course within a test)
    boolean short_ = ConfigLoader.bool(v, Setting.MESHCA_SHORT_LIFETIMES);
    Duration node = ConfigLoader.duration(v, Setting.MESHCA_NODE_LIFETIME, short_ ? Duration.ofMinutes(1) : Duration.ofHours(1), Duration.ofDays(30));
    Duration grace = ConfigLoader.duration(v, Setting.MESHCA_RENEWAL_GRACE, Duration.ZERO, Duration.ofDays(90));
    int rate = ConfigLoader.intIn(v, Setting.MESHCA_MAX_SIGNATURES_PER_S, 1, 100_000);
    Duration intermediate = ConfigLoader.duration(v, Setting.MESHCA_INTERMEDIATE_LIFETIME, short_ ? Duration.ofMinutes(2) : Duration.ofDays(1),
        Duration.ofDays(3650));
    Duration root = ConfigLoader.duration(v, Setting.MESHCA_ROOT_LIFETIME, short_ ? Duration.ofMinutes(3) : Duration.ofDays(30),
        Duration.ofDays(36500));
    if (intermediate.compareTo(node.multipliedBy(2)) < 0) {
      throw ConfigLoader.bad(Setting.MESHCA_INTERMEDIATE_LIFETIME, v.get(Setting.MESHCA_INTERMEDIATE_LIFETIME.key),
          "must be at least twice meshca.node_lifetime (an intermediate outlives the certificates it signs)");
    }
    if (root.compareTo(intermediate) <= 0) {
      throw ConfigLoader.bad(Setting.MESHCA_ROOT_LIFETIME, v.get(Setting.MESHCA_ROOT_LIFETIME.key),
          "must be longer than meshca.intermediate_lifetime");
    }
    Path keys = ConfigLoader.path(v, Setting.AUTH_KEYS_DIR).toAbsolutePath().normalize();
    return new MeshcaModule.Settings(secret(v), keys.resolveSibling("meshca.secret"), domain, node, grace, rate, crlUrl(v), intermediate,
        root, ConfigLoader.bool(v, Setting.MESHCA_AUTO_ROTATE));
  }

  /** The configured secret's bytes (UTF-8), or null when neither meshca.secret nor meshca.secret_file is set. */
  private static byte[] secret(Map<String, String> v) {
    Setting direct = Setting.MESHCA_SECRET;
    Setting file = Setting.MESHCA_SECRET_FILE;
    String value = v.get(direct.key);
    String path = v.get(file.key).trim();
    if (!value.isEmpty() && !path.isEmpty()) throw new ConfigException(direct.key + " and " + file.key + ": set one of them, not both");
    if (!path.isEmpty()) {
      try {
        value = Files.readString(Path.of(path), StandardCharsets.UTF_8).strip();
      } catch (IOException | RuntimeException e) {
        throw new ConfigException(file.key + " (env " + file.env + "): cannot read " + path + ": " + e.getClass().getSimpleName());
      }
    }
    if (value.isEmpty()) {
      if (!path.isEmpty()) throw new ConfigException(file.key + " (env " + file.env + "): " + path + " is empty");
      return null;
    }
    byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
    // never echoed: only its length is reported
    if (bytes.length < MIN_SECRET_BYTES) {
      throw new ConfigException((path.isEmpty() ? direct.key + " (env " + direct.env + ")" : file.key + " (env " + file.env + ")")
          + ": the secret holds " + bytes.length + " bytes; at least " + MIN_SECRET_BYTES + " are needed (e.g. openssl rand -base64 48)");
    }
    return bytes;
  }

  /** meshca.crl_url: an http(s) URL; by default the CRL route of the advertised URL, or of localhost at http.port. */
  private static String crlUrl(Map<String, String> v) {
    Setting s = Setting.MESHCA_CRL_URL;
    String raw = v.get(s.key).trim();
    if (raw.isEmpty()) {
      String base = ConfigLoader.advertiseUrl(v);
      if (base.isEmpty()) base = "http://localhost:" + ConfigLoader.port(v, Setting.HTTP_PORT, true);
      return base + "/v1/meshca/crl";
    }
    java.util.regex.Matcher m = ConfigLoader.BASE_URL.matcher(raw);
    if (raw.length() > 512 || !m.matches()) {
      throw ConfigLoader.bad(s, raw, "is not an http(s) URL without a query, such as https://mesh.example.com/v1/meshca/crl");
    }
    return raw;
  }
}
