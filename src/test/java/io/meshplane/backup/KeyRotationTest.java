package io.meshplane.backup;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.meshplane.testing.Tokens;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Base64;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The signing-key rotation of OPERATIONS ("Rotating the signing keys"), step by step with the openssl
 * commands it gives: a new public key published first (the old key still signs, both verify), then its
 * private key (the new key signs, tokens of the old one still verify), and the old public key retired
 * (its tokens answer 401).
 */
@Timeout(240)
class KeyRotationTest {
  @Test
  void theDocumentedRotationKeepsEveryTokenWorkingUntilTheOldKeyIsRetired(@TempDir Path dir) throws Exception {
    try (TestCluster cluster = TestCluster.of(1)) {
      Http http = cluster.http();
      Path keys = cluster.replicas().keysDir();
      Meshplane first = cluster.start(0);
      String oldAdmin = cluster.admin();
      String oldKid = kid(oldAdmin);
      Nodes.Enrolled node = Nodes.enroll(http, first.coordinatorPort(), oldAdmin, "rot-1", "rot", "prod");
      first.close();

      // step 1: the new pair is generated; only its public key goes into the folder. Kids sort by their UTC
      // second, then by 4 random hex digits: an operator rotates long after the first key was made, this
      // test within the same second, where the random digits would decide the order half the time
      waitForTheSecondAfter(oldKid);
      Path fresh = dir.resolve("fresh");
      Files.createDirectories(fresh);
      Process gen = new ProcessBuilder("bash", "-c", String.join("\n",
          "set -euo pipefail",
          "kid=k$(date -u +%Y%m%d%H%M%S)$(openssl rand -hex 2)",
          "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out \"$kid.private.pem\"",
          "openssl pkey -in \"$kid.private.pem\" -pubout -out \"$kid.public.pem\"",
          "chmod 600 \"$kid.private.pem\"",
          "echo $kid")).directory(fresh.toFile()).redirectErrorStream(true).start();
      assertTrue(gen.waitFor(30, TimeUnit.SECONDS));
      String out = new String(gen.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
      assertEquals(0, gen.exitValue(), out);
      String newKid = out.substring(out.lastIndexOf('\n') + 1);
      assertTrue(newKid.compareTo(oldKid) > 0, "the new kid sorts after the old one");
      Files.copy(fresh.resolve(newKid + ".public.pem"), keys.resolve(newKid + ".public.pem"));

      Meshplane second = cluster.start(0);
      assertEquals(200, http.get(second.coordinatorPort(), "/v1/nodes", oldAdmin).statusCode(), "old tokens verify");
      assertEquals(oldKid, kid(Tokens.admin(second)), "the old key still signs while only the new public key is published");
      beat(http, second.coordinatorPort(), node, 200);
      second.close();

      // step 2: the new private key: it signs, and the old key's tokens still verify
      Files.copy(fresh.resolve(newKid + ".private.pem"), keys.resolve(newKid + ".private.pem"));
      Meshplane third = cluster.start(0);
      String newAdmin = Tokens.admin(third);
      assertEquals(newKid, kid(newAdmin), "the new key signs");
      assertEquals(200, http.get(third.coordinatorPort(), "/v1/nodes", oldAdmin).statusCode(), "old tokens still verify");
      beat(http, third.coordinatorPort(), node, 201);
      Nodes.Enrolled later = Nodes.enroll(http, third.coordinatorPort(), newAdmin, "rot-2", "rot", "prod");
      assertEquals(newKid, kid(later.token()), "new agent credentials carry the new key");
      third.close();

      // step 3: the old pair retired: what it signed stops working, what the new key signed goes on
      Files.delete(keys.resolve(oldKid + ".private.pem"));
      Files.delete(keys.resolve(oldKid + ".public.pem"));
      Meshplane fourth = cluster.start(0);
      HttpResponse<Buffer> old = http.get(fourth.coordinatorPort(), "/v1/nodes", oldAdmin);
      assertEquals(401, old.statusCode(), old.bodyAsString());
      assertEquals(200, http.get(fourth.coordinatorPort(), "/v1/nodes", newAdmin).statusCode());
      beat(http, fourth.coordinatorPort(), later, 202);
      assertNotEquals(200, http.send(HttpMethod.POST, fourth.coordinatorPort(), "/v1/nodes/" + node.id() + "/heartbeat", node.token(),
          Nodes.beat(203)).statusCode(), "an agent credential of the retired key no longer verifies");
    }
  }

  /** Waits until the UTC clock's second (as kids spell it) is later than the one in {@code kid}. */
  private static void waitForTheSecondAfter(String kid) {
    DateTimeFormatter second = DateTimeFormatter.ofPattern("yyyyMMddHHmmss").withZone(ZoneOffset.UTC);
    String stamp = kid.substring(1, 15);
    Await.until("the UTC second after " + stamp, 2000, () -> second.format(Instant.now()).compareTo(stamp) > 0);
  }

  private static String kid(String jwt) {
    String header = new String(Base64.getUrlDecoder().decode(jwt.substring(0, jwt.indexOf('.'))), StandardCharsets.UTF_8);
    return new JsonObject(header).getString("kid");
  }

  private static void beat(Http http, int port, Nodes.Enrolled n, int seq) {
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, port, "/v1/nodes/" + n.id() + "/heartbeat", n.token(), Nodes.beat(seq));
    assertEquals(200, r.statusCode(), r.bodyAsString());
  }
}
