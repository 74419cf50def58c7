package io.meshplane.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.security.SecureRandom;
import java.util.Base64;

/** Enrolls real nodes through the API and speaks for their agents. */
public final class Nodes {
  private static final SecureRandom RANDOM = new SecureRandom();

  private Nodes() {}

  /** An enrolled node: its id and its agent credential. */
  public record Enrolled(String id, String name, String token, JsonObject node) {}

  public static String key() {
    byte[] b = new byte[32];
    RANDOM.nextBytes(b);
    return Base64.getEncoder().encodeToString(b);
  }

  public static Enrolled enroll(Http http, int port, String adminToken, String name, String team, String env) {
    JsonObject body = new JsonObject().put("name", name).put("public_key", key()).put("team", team).put("environment", env)
        .put("tags", new JsonArray().add("tag:test"));
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, port, "/v1/nodes", adminToken, body);
    assertEquals(201, r.statusCode(), r.bodyAsString());
    JsonObject j = r.bodyAsJsonObject();
    return new Enrolled(j.getJsonObject("node").getString("id"), name, j.getJsonObject("credential").getString("token"),
        j.getJsonObject("node"));
  }

  public static JsonObject beat(int n) {
    return new JsonObject()
        .put("endpoints", new JsonArray().add("198.51.100." + (n % 250 + 1) + ":" + (40000 + n % 20000)))
        .put("routes", new JsonArray().add("10." + (n % 250) + ".0.0/24"))
        .put("telemetry", new JsonObject().put("agent_version", "1.4.0").put("seq", n))
        .put("known", new JsonObject().put("peers", 0).put("acl", 0));
  }
}
