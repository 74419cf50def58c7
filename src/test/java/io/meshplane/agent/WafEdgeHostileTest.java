package io.meshplane.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.testing.Await;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Hostile requests through an edge that enforces the managed rule set (API.md §20): malformed
 * percent-encoding, hundreds of parameters, JSON nested far past the WAF's depth, bytes that are not
 * UTF-8, a chunked body of 2 MiB, a hundred headers. Each gets a decision (an answer from the target,
 * or the product's 400/403 problem), never a 5xx of the edge's own; the edge keeps serving ordinary
 * requests and the large body reaches the target whole.
 */
@Timeout(120)
class WafEdgeHostileTest {
  @TempDir Path dir;

  @Test
  void hostileRequestsGetADecisionAndTheEdgeKeepsServing() throws Exception {
    try (IngressFixture.Target a = new IngressFixture.Target("a"); IngressFixture f = new IngressFixture(dir.resolve("state"), IngressFixture.plain())) {
      String id = IngressFixture.routeId();
      JsonObject policy = new JsonObject().put("mode", "enforce").put("managed", new JsonObject().put("paranoia", 1));
      JsonObject waf = new JsonObject().put("version", "1").putNull("shadow")
          .put("enforce", new JsonObject().put("version", 1).put("probe", "nonce-1").put("policy", policy));
      f.routes.set(new JsonObject().put("version", "1.1").put("routes", new JsonArray()
          .add(IngressFixture.route(id, "app.example.com", "/", IngressFixture.MESH_A, a.port()))).put("waf", waf));
      Await.until("the managed set in force", 30_000, () -> "1".equals(f.agent.ingress().waf().held().version()));
      int port = f.port();

      StringBuilder params = new StringBuilder("/search?");
      for (int i = 0; i < 900; i++) params.append(i == 0 ? "" : "&").append("p").append(i).append("=x");
      String deep = "[".repeat(5000) + "]".repeat(5000);
      byte[] notUtf8 = {(byte) 0xff, (byte) 0xfe, 'q', '=', (byte) 0xc3, (byte) 0x28, '%', 'z', 'z'};
      StringBuilder manyHeaders = new StringBuilder();
      for (int i = 0; i < 100; i++) manyHeaders.append("X-H").append(i).append(": v").append(i).append("\r\n");
      Map<String, byte[]> requests = new LinkedHashMap<>();
      requests.put("malformed percent-encoding", head("GET", "/a%zz/%c3%28?q=%ff%fe%", "", 0));
      requests.put("900 query parameters", head("GET", params.toString(), "", 0));
      requests.put("JSON nested 5,000 deep", concat(head("POST", "/api", "Content-Type: application/json\r\n", deep.length()), deep.getBytes()));
      requests.put("a form body that is not UTF-8", concat(head("POST", "/form", "Content-Type: application/x-www-form-urlencoded\r\n", notUtf8.length),
          notUtf8));
      requests.put("100 headers", head("GET", "/", manyHeaders.toString(), 0));
      for (Map.Entry<String, byte[]> r : requests.entrySet()) {
        IngressFixture.Answer answer = send(port, r.getValue());
        assertTrue(Set.of(200, 400, 403).contains(answer.status()), r.getKey() + ": " + answer.status() + " " + answer.body());
      }
      // a 2 MiB chunked body: read 8 KiB for the WAF, the rest streamed, every byte at the target
      byte[] chunk = "a".repeat(64 * 1024).getBytes(StandardCharsets.US_ASCII);
      ByteArrayOutputStream chunked = new ByteArrayOutputStream();
      chunked.write(("POST /upload HTTP/1.1\r\nHost: app.example.com\r\nUser-Agent: Mozilla/5.0\r\nContent-Type: text/plain\r\n"
          + "Transfer-Encoding: chunked\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      for (int i = 0; i < 32; i++) {
        chunked.write((Integer.toHexString(chunk.length) + "\r\n").getBytes(StandardCharsets.US_ASCII));
        chunked.write(chunk);
        chunked.write("\r\n".getBytes(StandardCharsets.US_ASCII));
      }
      chunked.write("0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
      IngressFixture.Answer big = send(port, chunked.toByteArray());
      assertEquals(200, big.status(), big.body());
      assertEquals(32 * 64 * 1024, big.json().getInteger("body_bytes"));
      // and the edge still serves the ordinary and refuses the plain attack
      assertEquals(200, send(port, head("GET", "/search?q=union+station", "", 0)).status());
      assertEquals(403, send(port, head("GET", "/search?q=%3Cscript%3Ealert(1)%3C/script%3E", "", 0)).status());
      IngressCounters.Waf w = f.agent.ingress().counters().of(id).waf;
      assertEquals(0, w.busy);
      assertTrue(w.evaluated >= requests.size() + 3, "every request was evaluated: " + w.evaluated);
    }
  }

  private static byte[] head(String method, String target, String headers, int length) {
    return (method + " " + target + " HTTP/1.1\r\nHost: app.example.com\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64)\r\n" + headers
        + "Content-Length: " + length + "\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1);
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] out = new byte[a.length + b.length];
    System.arraycopy(a, 0, out, 0, a.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  private static IngressFixture.Answer send(int port, byte[] request) throws IOException {
    try (IngressFixture.Raw c = new IngressFixture.Raw(port)) {
      c.out.write(request);
      c.out.flush();
      return c.read();
    }
  }
}
