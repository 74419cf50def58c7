package io.meshplane.agent;

import io.vertx.core.MultiMap;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * A denied request as the coordinator is shown it (API.md §20, "Samples"): redacted here, before it
 * leaves the edge. No header that carries credentials or session state ({@code Cookie},
 * {@code Authorization}, {@code Proxy-Authorization}, and any whose name says token, key, secret,
 * session or password); query values of such names replaced by {@code [redacted]}; at most
 * {@value #HEADERS} headers of at most {@value #VALUE} characters each, the target cut to
 * {@value #TARGET}, the body to its first {@value #BODY} characters; control characters as spaces.
 */
final class WafSample {
  static final int HEADERS = 12;
  static final int VALUE = 200;
  static final int TARGET = 512;
  static final int BODY = 256;
  private static final Set<String> DROPPED = Set.of("cookie", "authorization", "proxy-authorization", "set-cookie");
  private static final String[] SECRET_WORDS = {"token", "key", "secret", "session", "password", "passwd", "auth", "credential", "signature"};

  private WafSample() {}

  static JsonObject of(String route, String rule, String outcome, int status, String method, String target, MultiMap headers, String clientIp,
      Buffer body) {
    JsonArray h = new JsonArray();
    for (Map.Entry<String, String> e : headers) {
      if (h.size() == HEADERS) break;
      String name = e.getKey().toLowerCase(Locale.ROOT);
      if (name.length() > 64 || DROPPED.contains(name) || secret(name)) continue;
      h.add(new JsonArray().add(name).add(clean(e.getValue(), VALUE)));
    }
    String text = body == null || body.length() == 0 ? null
        : clean(new String(body.getBytes(0, Math.min(body.length(), BODY * 4)), StandardCharsets.UTF_8), BODY);
    return new JsonObject().put("at", System.currentTimeMillis() / 1000).put("route", route).put("rule", rule).put("outcome", outcome)
        .put("status", status).put("request", new JsonObject().put("method", method).put("target", clean(redactQuery(target), TARGET))
            .put("client_ip", clientIp).put("headers", h).put("body", text));
  }

  static boolean secret(String name) {
    String n = name.toLowerCase(Locale.ROOT);
    for (String w : SECRET_WORDS) if (n.contains(w)) return true;
    return false;
  }

  /** The target with the values of secret-looking query parameters replaced. */
  static String redactQuery(String target) {
    int q = target.indexOf('?');
    if (q < 0) return target;
    StringBuilder b = new StringBuilder(target.length()).append(target, 0, q + 1);
    String[] parts = target.substring(q + 1).split("&", -1);
    for (int i = 0; i < parts.length; i++) {
      if (i > 0) b.append('&');
      int eq = parts[i].indexOf('=');
      if (eq > 0 && secret(parts[i].substring(0, eq))) b.append(parts[i], 0, eq + 1).append("[redacted]");
      else b.append(parts[i]);
    }
    return b.toString();
  }

  /** Control characters as spaces, cut to {@code max} characters (never half a surrogate pair). */
  static String clean(String s, int max) {
    if (s == null) return null;
    StringBuilder b = new StringBuilder(Math.min(s.length(), max));
    for (int i = 0; i < s.length() && b.length() < max; i++) {
      char c = s.charAt(i);
      b.append(Character.isISOControl(c) ? ' ' : c);
    }
    if (b.length() > 0 && Character.isHighSurrogate(b.charAt(b.length() - 1))) b.setLength(b.length() - 1);
    return b.toString();
  }
}
