package io.meshplane.http;

import static io.meshplane.http.HostileInput.*;
import static io.meshplane.http.HostileReplica.*;

import io.vertx.core.http.HttpMethod;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/** {@link HostileInputTest}'s cases that break a query string, a path parameter or the HTTP framing itself. */
final class HostileRequests {
  private HostileRequests() {}

  /** Route {@code route}'s valid query with parameter {@code param} (an index into the sorted names) broken by {@code b}. */
  static Case query(Breakage b, QueryRoute route, int param, int n, String junk) {
    List<String> names = new ArrayList<>(new TreeSet<>(route.params().keySet()));
    String name = b == Breakage.FORGED_CURSOR ? "cursor" : names.get(param % names.size());
    StringBuilder q = new StringBuilder();
    for (String p : names) {
      if (!q.isEmpty()) q.append('&');
      String value = route.params().get(p);
      if (p.equals(name)) {
        switch (b) {
          case BAD_QUERY_VALUE -> value = badValue(p, n, junk);
          case QUERY_SEMICOLON -> value = enc(value) + ";" + (n % 2 == 0 ? "limit=1" : "x");
          case QUERY_REPEATED -> value = enc(value) + "&" + p + "=" + enc(value);
          case FORGED_CURSOR -> value = forgedCursor(route, n, junk);
          default -> throw new IllegalStateException(b.toString());
        }
        q.append(p).append('=').append(value);
      } else {
        q.append(p).append('=').append(enc(value));
      }
    }
    String target = route.path() + "?" + q;
    byte[] body = route.body() == null ? null : route.body().encode().getBytes(StandardCharsets.UTF_8);
    return new Case(b, what(route.method(), target), route.method(), route.door().port(), target, body == null ? null : "application/json",
        body, route.door().headers(), Set.of(400), name, true, null);
  }

  /** A percent-encoded value that is wrong for parameter {@code p} whatever the junk. */
  static String badValue(String p, int n, String junk) {
    return switch (p) {
      case "limit" -> new String[] {"%EF%BC%91%EF%BC%90", "0", "1001", "-1", "%2B5", "1e2", "0x10", "5.0", "99999999999", enc(junk) + "x"}[n % 10];
      case "cursor" -> "%zz" + enc(junk);
      default -> n % 3 == 0 ? enc(junk) + "%0A" : n % 3 == 1 ? "%zz" : "%00" + enc(junk);
    };
  }

  static String forgedCursor(QueryRoute route, int n, String junk) {
    Cursors stranger = new Cursors(("stranger-key-" + n + "-0123456789abcdef").getBytes(StandardCharsets.UTF_8));
    String b64 = java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(("[\"" + route.list() + "\",\"zz\"]").getBytes(StandardCharsets.UTF_8));
    String tampered = tokensCursor.substring(0, 4) + (tokensCursor.charAt(4) == 'A' ? 'B' : 'A') + tokensCursor.substring(5);
    String[] forged = {
        route.list().equals("tokens") ? enc(stranger.encode("tokens", List.of("tok_0"))) : enc(tokensCursor), // another list's
        enc(stranger.encode(route.list(), List.of("zz"))), // another installation's
        b64, b64 + ".AAAAAAAAAAAAAAAAAAAAAA", enc(tampered), enc(junk) + ".x", "a".repeat(600)};
    return forged[n % forged.length];
  }

  /** Route {@code route} with a hostile value (never {@code .} or {@code ..}) for its path parameter. */
  static Case hostileId(IdRoute route, String junk) {
    String id = "x" + enc(junk);
    String target = route.target().replace("{hostile}", id);
    boolean body = route.method() == HttpMethod.POST || route.method() == HttpMethod.PUT || route.method() == HttpMethod.PATCH;
    return new Case(Breakage.HOSTILE_ID, what(route.method(), target), route.method(), route.door().port(), target,
        body ? "application/json" : null, body ? "{}".getBytes(StandardCharsets.UTF_8) : null, route.door().headers(), route.statuses(),
        null, true, null);
  }

  /** Header fields or a request line over the limits, before any route is known. */
  static Case framing(Breakage b, int n) {
    if (b == Breakage.OVERSIZE_HEADERS) {
      String value = "a".repeat(HttpVerticle.MAX_HEADERS + 1 + n % 20_000);
      return rawCase(b, "a header of " + value.length() + " bytes", port, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + value + "\r\n\r\n",
          Set.of(431));
    }
    String uri = "/v1/nodes?name_prefix=" + "a".repeat(HttpVerticle.MAX_REQUEST_LINE + n % 20_000);
    return rawCase(b, "a URI of " + uri.length() + " bytes", port, "GET " + uri + " HTTP/1.1\r\nHost: x\r\n\r\n", Set.of(414));
  }

  static String enc(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
  }

  static Case rawCase(Breakage b, String what, int port, String request, Set<Integer> statuses) {
    return new Case(b, what, null, port, null, null, null, Map.of(), statuses, null, true, request.getBytes(StandardCharsets.ISO_8859_1));
  }
}
