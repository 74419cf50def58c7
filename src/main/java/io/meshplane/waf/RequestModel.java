package io.meshplane.waf;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The request as rule expressions see it ({@code request.*}, ARCHITECTURE.md "WAF"), built once per
 * request and read by every rule. Every part is bounded (the constants below): what does not fit is
 * cut and {@code request.overflow} says so, so a rule can refuse what it could not fully inspect.
 *
 * <p>{@code args} are the values a rule usually inspects: query values, form values and the string
 * leaves of a JSON body, each tagged with where it came from ({@code query:q}, {@code form:q},
 * {@code json:q}: the name of the member holding it). A rule with exclusions (a per-route override,
 * {@link ManagedRules}) reads a {@link #without narrowed} model in which excluded names are absent
 * from {@code query}, {@code form}, {@code headers}, {@code args} and {@code args_text}.
 */
final class RequestModel {
  static final int BODY_PREFIX = 8 * 1024;
  static final int MAX_PARAMS = 128;
  static final int MAX_HEADERS = 128;
  static final int MAX_VALUE_CHARS = 8 * 1024;
  static final int MAX_PATH_CHARS = 8 * 1024;
  static final int MAX_ARGS = 256;
  static final int MAX_ARGS_TEXT = 16 * 1024;
  static final int JSON_DEPTH = 16;
  static final int JSON_VALUES = 256;
  /** Characters of all header names and values together (an edge's own head limit is smaller). */
  static final int MAX_HEADER_CHARS = 16 * 1024;
  /** Characters of the query string read. */
  static final int MAX_QUERY_CHARS = 16 * 1024;
  /**
   * The longest string any request.* field can hold, and the most characters the strings of any one
   * request.* collection hold together: what the cost bound assumes of a string it cannot see.
   */
  static final int MAX_STRING = MAX_ARGS_TEXT;
  /** The largest list or map any request.* field can hold. */
  static final int MAX_ENTRIES = MAX_ARGS;

  final String method;
  final String path;
  final String pathNormalized;
  final Map<String, List<String>> query;
  final Map<String, List<String>> form;
  final Map<String, List<String>> headers;
  final String clientIp;
  final String bodyText;
  final Object bodyJson;
  final long bodySize;
  final boolean bodyTruncated;
  final boolean bodyMalformed;
  final String contentType;
  final String meshIdentity;
  final List<String> argSources;
  final List<String> args;
  final String argsText;
  final boolean overflow;
  final boolean encodingMalformed;

  private RequestModel(RequestModel base, Set<String> excluded) {
    method = base.method;
    path = base.path;
    pathNormalized = base.pathNormalized;
    clientIp = base.clientIp;
    bodyText = base.bodyText;
    bodyJson = base.bodyJson;
    bodySize = base.bodySize;
    bodyTruncated = base.bodyTruncated;
    bodyMalformed = base.bodyMalformed;
    contentType = base.contentType;
    meshIdentity = base.meshIdentity;
    overflow = base.overflow;
    encodingMalformed = base.encodingMalformed;
    query = filter(base.query, "query:", excluded);
    form = filter(base.form, "form:", excluded);
    headers = filter(base.headers, "header:", excluded);
    List<String> src = new ArrayList<>();
    List<String> vals = new ArrayList<>();
    for (int i = 0; i < base.args.size(); i++) {
      if (excluded.contains(base.argSources.get(i))) continue;
      src.add(base.argSources.get(i));
      vals.add(base.args.get(i));
    }
    argSources = src;
    args = Collections.unmodifiableList(vals);
    argsText = join(vals);
  }

  RequestModel(WafRequest r) {
    boolean[] over = {false};
    boolean[] bad = {false};
    method = r.method();
    String target = r.target();
    int q = target.indexOf('?');
    String rawPath = q < 0 ? target : target.substring(0, q);
    if (rawPath.length() > MAX_PATH_CHARS) {
      rawPath = rawPath.substring(0, MAX_PATH_CHARS);
      over[0] = true;
    }
    path = rawPath;
    pathNormalized = UrlText.normalizePath(rawPath, bad);
    List<String> src = new ArrayList<>();
    List<String> vals = new ArrayList<>();
    String rawQuery = q < 0 ? "" : target.substring(q + 1);
    if (rawQuery.length() > MAX_QUERY_CHARS) {
      rawQuery = rawQuery.substring(0, MAX_QUERY_CHARS);
      over[0] = true;
    }
    query = params(rawQuery, "query:", src, vals, over, bad);
    Map<String, List<String>> h = new LinkedHashMap<>();
    int fields = 0;
    int chars = 0;
    String ct = "";
    for (Map.Entry<String, String> e : r.headers()) {
      String name = e.getKey().toLowerCase(Locale.ROOT);
      String value = e.getValue() == null ? "" : e.getValue();
      chars += name.length() + value.length();
      if (++fields > MAX_HEADERS || chars > MAX_HEADER_CHARS) {
        over[0] = true;
        break;
      }
      h.computeIfAbsent(name, k -> new ArrayList<>(1)).add(value);
      if (name.equals("content-type") && ct.isEmpty()) ct = value.toLowerCase(Locale.ROOT).trim();
    }
    headers = freeze(h);
    contentType = ct;
    clientIp = r.clientIp();
    meshIdentity = r.meshIdentity();
    byte[] body = r.body();
    int prefix = Math.min(body.length, BODY_PREFIX);
    bodySize = Math.max(r.bodySize(), body.length);
    bodyTruncated = bodySize > prefix;
    bodyText = UrlText.utf8Lossy(body, 0, prefix);
    String mediaType = ct.contains(";") ? ct.substring(0, ct.indexOf(';')).trim() : ct;
    Map<String, List<String>> f = Map.of();
    Object json = CelValues.NULL;
    boolean malformed = false;
    if (mediaType.equals("application/x-www-form-urlencoded")) {
      f = params(bodyText, "form:", src, vals, over, bad);
    } else if ((mediaType.equals("application/json") || mediaType.endsWith("+json")) && !bodyTruncated && prefix > 0) {
      try {
        json = BoundedJson.parse(bodyText, JSON_DEPTH, JSON_VALUES, CelValues.NULL);
        leaves(json, "", src, vals, over);
      } catch (IllegalArgumentException e) {
        malformed = true;
      }
    }
    form = f;
    bodyJson = json;
    bodyMalformed = malformed;
    argSources = src;
    args = Collections.unmodifiableList(vals);
    argsText = join(vals);
    overflow = over[0];
    encodingMalformed = bad[0];
  }

  /** This model with the given {@code query:NAME}, {@code form:NAME}, {@code json:NAME} and {@code header:NAME} left out. */
  RequestModel without(Set<String> excluded) {
    return excluded.isEmpty() ? this : new RequestModel(this, excluded);
  }

  /** The value of a declared variable ({@link WafEnvironment#VARIABLES}), for CEL's variable resolver. */
  Optional<Object> find(String name) {
    Object v = switch (name) {
      case "request.method" -> method;
      case "request.path" -> path;
      case "request.path_normalized" -> pathNormalized;
      case "request.query" -> query;
      case "request.form" -> form;
      case "request.headers" -> headers;
      case "request.client_ip" -> clientIp;
      case "request.body_text" -> bodyText;
      case "request.body_json" -> bodyJson;
      case "request.body_size" -> bodySize;
      case "request.body_truncated" -> bodyTruncated;
      case "request.body_malformed" -> bodyMalformed;
      case "request.content_type" -> contentType;
      case "request.mesh_identity" -> meshIdentity;
      case "request.args" -> args;
      case "request.args_text" -> argsText;
      case "request.overflow" -> overflow;
      case "request.encoding_malformed" -> encodingMalformed;
      default -> null;
    };
    return Optional.ofNullable(v);
  }

  private static Map<String, List<String>> params(String text, String tag, List<String> src, List<String> vals, boolean[] over,
      boolean[] bad) {
    if (text.isEmpty()) return Map.of();
    Map<String, List<String>> m = new LinkedHashMap<>();
    int count = 0;
    int from = 0;
    while (from <= text.length()) {
      int amp = text.indexOf('&', from);
      if (amp < 0) amp = text.length();
      if (amp > from) {
        if (++count > MAX_PARAMS) {
          over[0] = true;
          break;
        }
        String pair = text.substring(from, amp);
        int eq = pair.indexOf('=');
        String name = cut(UrlText.decode(eq < 0 ? pair : pair.substring(0, eq), true, bad), over);
        String value = cut(eq < 0 ? "" : UrlText.decode(pair.substring(eq + 1), true, bad), over);
        m.computeIfAbsent(name, k -> new ArrayList<>(1)).add(value);
        addArg(tag + name, value, src, vals, over);
      }
      from = amp + 1;
    }
    return freeze(m);
  }

  private static void leaves(Object json, String name, List<String> src, List<String> vals, boolean[] over) {
    if (json instanceof String s) {
      addArg("json:" + name, s, src, vals, over);
    } else if (json instanceof Map<?, ?> m) {
      for (Map.Entry<?, ?> e : m.entrySet()) leaves(e.getValue(), (String) e.getKey(), src, vals, over);
    } else if (json instanceof List<?> l) {
      for (Object o : l) leaves(o, name, src, vals, over);
    }
  }

  private static void addArg(String source, String value, List<String> src, List<String> vals, boolean[] over) {
    if (value.isEmpty()) return;
    int total = vals.size(); // the newlines of args_text
    for (String v : vals) total += v.length();
    if (vals.size() >= MAX_ARGS || total + value.length() > MAX_ARGS_TEXT) {
      over[0] = true;
      return;
    }
    src.add(source);
    vals.add(value);
  }

  private static String cut(String s, boolean[] over) {
    if (s.length() <= MAX_VALUE_CHARS) return s;
    over[0] = true;
    return s.substring(0, MAX_VALUE_CHARS);
  }

  private static String join(List<String> vals) {
    if (vals.isEmpty()) return "";
    if (vals.size() == 1) return vals.get(0);
    return String.join("\n", vals);
  }

  private static Map<String, List<String>> freeze(Map<String, List<String>> m) {
    if (m.isEmpty()) return Map.of();
    m.replaceAll((k, v) -> Collections.unmodifiableList(v));
    return Collections.unmodifiableMap(m);
  }

  private static Map<String, List<String>> filter(Map<String, List<String>> m, String tag, Set<String> excluded) {
    if (m.isEmpty()) return m;
    Map<String, List<String>> out = new LinkedHashMap<>();
    for (Map.Entry<String, List<String>> e : m.entrySet()) {
      if (!excluded.contains(tag + e.getKey())) out.put(e.getKey(), e.getValue());
    }
    return out.size() == m.size() ? m : Collections.unmodifiableMap(out);
  }
}
