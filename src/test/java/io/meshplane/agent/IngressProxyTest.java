package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.testing.Await;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The agent's ingress edge as a client and a target see it: routing by hostname and path prefix with the
 * catch-all 404 problem, the forwarding headers and hop-by-hop removal checked at the target, the
 * per-route counters the heartbeat reports, and a route-set swap under load without a failed request.
 */
@Timeout(90)
class IngressProxyTest {
  @TempDir Path dir;

  @Test
  void routesByHostAndPathSetsForwardingHeadersDropsHopByHopAndCounts() throws Exception {
    try (IngressFixture.Target a = new IngressFixture.Target("a"); IngressFixture.Target b = new IngressFixture.Target("b");
        IngressFixture f = new IngressFixture(dir.resolve("state"), IngressFixture.plain().withSourceOverrides(Map.of("127.0.0.1", "100.64.0.20")))) {
      f.peers.set(new JsonObject().put("version", 1).put("items", new JsonArray()
          .add(new JsonObject().put("id", "nd_01jdfake000000000000000020").put("address", "100.64.0.20/32"))));
      int dead;
      try (ServerSocket s = new ServerSocket(0)) {
        dead = s.getLocalPort(); // nothing listens there once closed
      }
      String api = IngressFixture.routeId();
      String site = IngressFixture.routeId();
      String other = IngressFixture.routeId();
      String broken = IngressFixture.routeId();
      String unbound = IngressFixture.routeId();
      JsonObject noTarget = IngressFixture.route(unbound, "app.example.com", "/old", IngressFixture.MESH_B, b.port());
      noTarget.put("target", new JsonObject().put("node", "nd_01jdfake000000000000000009").put("service", "web").put("state", "service_unbound"));
      f.serve("7", noTarget, IngressFixture.route(api, "app.example.com", "/api", IngressFixture.MESH_A, a.port()),
          IngressFixture.route(site, "app.example.com", "/", IngressFixture.MESH_B, b.port()),
          IngressFixture.route(other, "other.example.com", "/", IngressFixture.MESH_A, a.port()),
          IngressFixture.route(broken, "broken.example.com", "/", IngressFixture.MESH_A, dead),
          IngressFixture.route(IngressFixture.routeId(), "mesh.example.com", "/", IngressFixture.MESH_A, a.port()).put("exposure", "mesh"));

      try (IngressFixture.Raw c = new IngressFixture.Raw(f.port())) {
        IngressFixture.Answer r = c.exchange("GET", "/api/v1/items?q=1", "app.example.com", "X-Forwarded-For: 6.6.6.6",
            "X-Forwarded-Proto: https", "X-Forwarded-Host: evil.example", "Forwarded: for=6.6.6.6", "Connection: keep-alive, X-Secret",
            "X-Secret: do-not-forward", "Proxy-Authorization: Basic Zm9vOmJhcg==", "TE: trailers", "Keep-Alive: timeout=9", "X-Mine: kept");
        assertEquals(200, r.status(), r.body());
        JsonObject seen = r.json();
        assertEquals("a", seen.getString("server"));
        assertEquals("/api/v1/items", seen.getString("path"));
        JsonObject h = seen.getJsonObject("headers");
        assertEquals("127.0.0.1", h.getString("x-forwarded-for"), "a public client's claim is replaced: " + h);
        assertEquals("http", h.getString("x-forwarded-proto"));
        assertEquals("app.example.com", h.getString("x-forwarded-host"));
        assertEquals("app.example.com", h.getString("host"), "the Host goes to the target unchanged");
        assertEquals("kept", h.getString("x-mine"));
        for (String gone : List.of("x-secret", "proxy-authorization", "te", "keep-alive", "forwarded")) {
          assertFalse(h.containsKey(gone), gone + " reached the target: " + h);
        }
        assertFalse(h.getString("connection", "").toLowerCase().contains("x-secret"), h.toString());
        // the target's own hop-by-hop headers stop at the edge
        assertFalse(r.headers().containsKey("x-upstream-secret"), r.headers().toString());
        assertFalse(r.headers().containsKey("keep-alive"), r.headers().toString());
        assertFalse(r.headers().containsKey("proxy-foo"), r.headers().toString());
        assertEquals("yes", r.headers().get("x-kept"));

        // segment prefixes: /apis is not under /api; the host is matched lower-case without its port
        assertEquals("b", c.exchange("GET", "/apis", "app.example.com").json().getString("server"));
        assertEquals("a", c.exchange("GET", "/api", "APP.Example.COM:8443").json().getString("server"));
        assertEquals("a", c.exchange("GET", "/", "other.example.com").json().getString("server"));
        assertEquals(404, c.exchange("GET", "/status/404", "app.example.com").status(), "the target's 404 passes through");
        assertEquals(503, c.exchange("GET", "/status/503", "app.example.com").status());

        IngressFixture.Answer none = c.exchange("GET", "/x/y", "nowhere.example.com");
        assertEquals(404, none.status());
        assertEquals("application/problem+json", none.headers().get("content-type"));
        JsonObject p = none.json();
        assertEquals("no_route", p.getString("code"));
        assertEquals("Not Found", p.getString("title"));
        assertEquals(404, p.getInteger("status"));
        assertEquals("no ingress route for nowhere.example.com/x/y", p.getString("detail"));

        IngressFixture.Answer dots = c.exchange("GET", "/api/%2e%2e/admin", "app.example.com");
        assertEquals(400, dots.status(), dots.body());
        assertTrue(dots.json().getString("detail").startsWith("path:"), dots.body());

        IngressFixture.Answer down = c.exchange("GET", "/", "broken.example.com");
        assertEquals(502, down.status());
        assertEquals("bad_gateway", down.json().getString("code"));
        assertTrue(down.json().getString("detail").contains(broken), down.body());

        // a route whose target the coordinator says is unbound keeps its place: 502, not the "/" rule after it
        IngressFixture.Answer old = c.exchange("GET", "/old/page", "app.example.com");
        assertEquals(502, old.status(), old.body());
        assertEquals("bad_gateway", old.json().getString("code"));
        assertTrue(old.json().getString("detail").contains(unbound + ": its target is service_unbound"), old.body());

        // a mesh-exposed route appends to the chain it was given
        JsonObject hm = c.exchange("GET", "/", "mesh.example.com", "X-Forwarded-For: 100.64.0.9").json().getJsonObject("headers");
        assertEquals("100.64.0.9, 127.0.0.1", hm.getString("x-forwarded-for"));
      }

      // the counters, as the next heartbeats report them
      Await.until("a report with the broken and the unbound routes' errors", 15_000, () -> {
        JsonObject rep = f.lastReport();
        return rep != null && "7".equals(rep.getString("version")) && rep.getJsonObject("routes").getJsonObject(broken).getLong("errors") == 1
            && rep.getJsonObject("routes").getJsonObject(unbound) != null && rep.getJsonObject("routes").getJsonObject(unbound).getLong("errors") == 1;
      });
      JsonObject report = f.lastReport();
      JsonObject ra = report.getJsonObject("routes").getJsonObject(api);
      assertEquals(2, ra.getLong("requests"), ra.encode());
      assertEquals(0, ra.getLong("errors"));
      assertEquals(0, ra.getLong("active"));
      assertTrue(ra.getLong("bytes_out") > 100, ra.encode());
      assertNull(ra.getValue("serial"));
      assertEquals(new JsonObject().put("2xx", 2).put("3xx", 0).put("4xx", 0).put("5xx", 0), ra.getJsonObject("status_classes"));
      JsonObject rs = report.getJsonObject("routes").getJsonObject(site);
      assertEquals(3, rs.getLong("requests"), rs.encode());
      assertEquals(new JsonObject().put("2xx", 1).put("3xx", 0).put("4xx", 1).put("5xx", 1), rs.getJsonObject("status_classes"));
      JsonObject rb = report.getJsonObject("routes").getJsonObject(broken);
      assertEquals(1, rb.getLong("requests"));
      assertEquals(1, rb.getLong("errors"));
      assertEquals(1, rb.getJsonObject("status_classes").getLong("5xx"));
      JsonObject ru = report.getJsonObject("routes").getJsonObject(unbound);
      assertEquals(1, ru.getLong("requests"), ru.encode());
      assertEquals(1, ru.getLong("errors"));
      assertEquals(1, ru.getJsonObject("status_classes").getLong("5xx"));

      // the same counts on the agent's /metrics, by route, hostname and class, linted by promtool
      String m = f.metrics();
      AgentProcessTest.promtool(m);
      assertEquals(2, f.metric("mesh_ingress_requests_total{route=\"" + api + "\",hostname=\"app.example.com\",class=\"2xx\"}"), m);
      assertEquals(1, f.metric("mesh_ingress_requests_total{route=\"" + site + "\",hostname=\"app.example.com\",class=\"4xx\"}"), m);
      assertEquals(1, f.metric("mesh_ingress_requests_total{route=\"" + site + "\",hostname=\"app.example.com\",class=\"5xx\"}"), m);
      assertEquals(0, f.metric("mesh_ingress_requests_total{route=\"" + site + "\",hostname=\"app.example.com\",class=\"3xx\"}"), m);
      assertEquals(1, f.metric("mesh_ingress_errors_total{route=\"" + broken + "\"}"), m);
      assertEquals(0, f.metric("mesh_ingress_errors_total{route=\"" + api + "\"}"), m);
      assertEquals((double) ra.getLong("bytes_out"), f.metric("mesh_ingress_bytes_total{route=\"" + api + "\",direction=\"out\"}"), m);
      assertEquals(0, f.metric("mesh_ingress_active_requests{route=\"" + api + "\"}"), m);
      assertEquals(6, f.metric("mesh_ingress_routes"), m);
      assertTrue(f.metric("mesh_ingress_active_connections") >= 0, m);
      // the routes version was confirmed by the last answers (one a second here): the config age stays small
      double age = f.metric("mesh_ingress_config_age_seconds");
      assertTrue(age >= 0 && age < 10, m);
      // no ACME: no certificate families
      assertFalse(m.contains("mesh_ingress_certificate_expiry_seconds"), m);
    }
  }

  /**
   * {@code exposure: mesh}: served to a client whose address is the mesh address of one of the node's
   * peers, refused 403 {@code mesh_only} to anyone else (and to a peer once the policy takes it away);
   * a public route on the same edge serves everyone. Clients come from 127.0.0.x addresses that
   * {@code --ingress-source-override} maps to mesh addresses, as WireGuard would deliver them.
   */
  @Test
  void aMeshRouteIsServedToTheNodesPeersOnly() throws Exception {
    IngressEdge.Settings edge = IngressFixture.plain().withSourceOverrides(Map.of("127.0.0.2", "100.64.0.21", "127.0.0.3", "100.64.0.22"));
    try (IngressFixture.Target a = new IngressFixture.Target("a"); IngressFixture f = new IngressFixture(dir.resolve("state"), edge)) {
      f.peers.set(new JsonObject().put("version", 1).put("items", new JsonArray()
          .add(new JsonObject().put("id", "nd_01jdfake000000000000000021").put("address", "100.64.0.21/32"))));
      String mesh = IngressFixture.routeId();
      f.serve("3", IngressFixture.route(mesh, "mesh.example.com", "/", IngressFixture.MESH_A, a.port()).put("exposure", "mesh"),
          IngressFixture.route(IngressFixture.routeId(), "public.example.com", "/", IngressFixture.MESH_A, a.port()));
      Await.until("the peer applied", 15_000, () -> f.agent.verticle().session().peerAt("100.64.0.21") != null);

      try (IngressFixture.Raw peer = from("127.0.0.2", f.port()); IngressFixture.Raw stranger = from("127.0.0.3", f.port());
          IngressFixture.Raw outside = new IngressFixture.Raw(f.port())) {
        assertEquals(200, peer.exchange("GET", "/x", "mesh.example.com").status(), "a peer of the ingress node");
        IngressFixture.Answer no = stranger.exchange("GET", "/x", "mesh.example.com");
        assertEquals(403, no.status(), no.body());
        assertEquals("mesh_only", no.json().getString("code"));
        assertTrue(no.json().getString("detail").contains("100.64.0.22 is not the mesh address of a peer"), no.body());
        assertEquals(403, outside.exchange("GET", "/x", "mesh.example.com").status(), "an address outside the mesh");
        assertEquals(200, outside.exchange("GET", "/x", "public.example.com").status(), "a public route serves anyone");
      }
      // the policy takes the peer away: its next request is refused
      f.peers.set(new JsonObject().put("version", 2).put("items", new JsonArray()));
      Await.until("the peer removed", 15_000, () -> f.agent.verticle().session().peerAt("100.64.0.21") == null);
      try (IngressFixture.Raw peer = from("127.0.0.2", f.port())) {
        assertEquals(403, peer.exchange("GET", "/x", "mesh.example.com").status());
      }
      Await.until("the refusals counted as 4xx of the mesh route", 15_000, () -> {
        JsonObject rep = f.lastReport();
        JsonObject r = rep == null ? null : rep.getJsonObject("routes").getJsonObject(mesh);
        return r != null && r.getLong("requests") == 4 && r.getJsonObject("status_classes").getLong("4xx", 0L) == 3;
      });
    }
  }

  private static IngressFixture.Raw from(String local, int port) throws IOException {
    return new IngressFixture.Raw(new java.net.Socket("127.0.0.1", port, java.net.InetAddress.getByName(local), 0));
  }

  @Test
  void theConfigAgeGrowsWhileTheAnswersCarryRoutesTheAgentCannotApply() throws Exception {
    try (IngressFixture.Target a = new IngressFixture.Target("a"); IngressFixture f = new IngressFixture(dir.resolve("state"), IngressFixture.plain())) {
      String id = IngressFixture.routeId();
      f.serve("1", IngressFixture.route(id, "app.example.com", "/", IngressFixture.MESH_A, a.port()));
      Await.until("the config age confirmed by the answers (one a second)", 15_000, () -> f.metric("mesh_ingress_config_age_seconds"), v -> v < 2);
      // answers now carry a version the agent cannot apply: version 1 stays in force, unconfirmed
      f.routes.set(new JsonObject().put("version", "2!").put("routes", new io.vertx.core.json.JsonArray()));
      Await.until("the config age past 3 s", 20_000, () -> f.metric("mesh_ingress_config_age_seconds"), v -> v > 3);
      assertEquals("1", f.agent.ingress().table().version());
      // a version it applies confirms it again
      f.serve("2", IngressFixture.route(id, "app.example.com", "/", IngressFixture.MESH_A, a.port()));
      Await.until("the config age back under 2 s", 15_000, () -> f.metric("mesh_ingress_config_age_seconds"), v -> v < 2);
    }
  }

  @Test
  void aRouteSetSwappedUnderLoadFailsNoRequest() throws Exception {
    try (IngressFixture.Target a = new IngressFixture.Target("a"); IngressFixture.Target b = new IngressFixture.Target("b");
        IngressFixture f = new IngressFixture(dir.resolve("state"), IngressFixture.plain())) {
      String id = IngressFixture.routeId();
      f.serve("1", IngressFixture.route(id, "app.example.com", "/", IngressFixture.MESH_A, a.port()));
      Vertx vertx = Vertx.vertx();
      HttpClient client = vertx.createHttpClient(new HttpClientOptions().setKeepAlive(true), new PoolOptions().setHttp1MaxSize(8));
      AtomicBoolean stop = new AtomicBoolean();
      AtomicInteger ok = new AtomicInteger();
      Map<String, Integer> failures = new ConcurrentHashMap<>();
      Map<String, AtomicInteger> byServer = new ConcurrentHashMap<>();
      int port = f.port();
      try {
        for (int i = 0; i < 8; i++) loop(client, port, stop, ok, failures, byServer);
        // versions alternate between the two targets while the loops run; each swap waits until applied and some requests went
        for (int v = 2; v <= 7; v++) {
          IngressFixture.Target to = v % 2 == 0 ? b : a;
          int before = ok.get();
          f.serve(Integer.toString(v), IngressFixture.route(id, "app.example.com", "/", v % 2 == 0 ? IngressFixture.MESH_B : IngressFixture.MESH_A, to.port()));
          Await.until("requests after version " + v, 15_000, () -> ok.get() > before + 200);
        }
      } finally {
        stop.set(true);
        Await.until("the loops stopped", 15_000, () -> byServer.containsKey("stopped") && byServer.get("stopped").get() == 8);
        client.close().await(5, TimeUnit.SECONDS);
        vertx.close().await(5, TimeUnit.SECONDS);
      }
      assertTrue(failures.isEmpty(), "failed requests: " + failures + " of " + ok.get());
      assertTrue(byServer.get("a").get() > 0 && byServer.get("b").get() > 0, byServer.toString());
      // the heartbeat sent right after version 7 was applied may predate the last requests: a later report counts them all
      int answered = ok.get();
      JsonObject r = Await.until("version 7 reported with every request counted across versions", 15_000,
          () -> f.lastReport() != null && "7".equals(f.lastReport().getString("version")) ? f.lastReport().getJsonObject("routes").getJsonObject(id) : null,
          rep -> rep != null && rep.getLong("requests") >= answered);
      assertEquals(0, r.getLong("errors"));
    }
  }

  private static void loop(HttpClient client, int port, AtomicBoolean stop, AtomicInteger ok, Map<String, Integer> failures,
      Map<String, AtomicInteger> byServer) {
    if (stop.get()) {
      byServer.computeIfAbsent("stopped", k -> new AtomicInteger()).incrementAndGet();
      return;
    }
    client.request(new RequestOptions().setMethod(HttpMethod.POST).setHost("127.0.0.1").setPort(port).setURI("/swap")
            .putHeader("Host", "app.example.com"))
        .compose(req -> req.send("payload-" + ok.get()).compose(resp -> resp.body().map(body -> {
          if (resp.statusCode() != 200) throw new IllegalStateException("status " + resp.statusCode() + ": " + body);
          return body.toJsonObject().getString("server");
        })))
        .recover(e -> {
          failures.merge(String.valueOf(e.getMessage()), 1, Integer::sum);
          return Future.succeededFuture(null);
        })
        .onSuccess(server -> {
          if (server != null) {
            ok.incrementAndGet();
            byServer.computeIfAbsent(server, k -> new AtomicInteger()).incrementAndGet();
          }
          loop(client, port, stop, ok, failures, byServer);
        });
  }
}
