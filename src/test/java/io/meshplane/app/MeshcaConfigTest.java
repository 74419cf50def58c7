package io.meshplane.app;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.meshca.MeshcaModule;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code meshca.*}: defaults, the secret from the environment or a file (never echoed), and each bad value refused naming its key. */
class MeshcaConfigTest {
  @TempDir Path dir;

  static MeshcaModule.Settings load(Map<String, String> env, Map<String, String> overrides) {
    return ConfigLoader.load(null, false, env, overrides).meshca();
  }

  @Test
  void defaults() {
    MeshcaModule.Settings s = load(Map.of(), Map.of());
    assertNull(s.secret(), "no secret configured: the embedded default generates one");
    assertEquals(Path.of("data/meshca.secret").toAbsolutePath(), s.generatedSecret(), "beside the keys folder");
    assertEquals("mesh.local", s.trustDomain());
    assertEquals(Duration.ofHours(24), s.nodeLifetime());
    assertEquals(Duration.ofDays(7), s.renewalGrace());
    assertEquals(50, s.maxSignaturesPerSecond());
    assertEquals(Duration.ofDays(90), s.intermediateLifetime());
    assertEquals(Duration.ofDays(3650), s.rootLifetime());
    assertEquals("http://localhost:8080/v1/meshca/crl", s.crlUrl());
    assertEquals("https://mesh.example.com/v1/meshca/crl", load(Map.of("MESH_ADVERTISE_URL", "https://mesh.example.com"), Map.of()).crlUrl());
  }

  @Test
  void theSecretComesFromTheEnvironmentOrAFileAndIsNeverEchoed() throws Exception {
    String secret = "an environment secret of at least 32 bytes";
    assertArrayEquals(secret.getBytes(StandardCharsets.UTF_8), load(Map.of("MESH_MESHCA_SECRET", secret), Map.of()).secret());
    Path file = dir.resolve("secret");
    Files.writeString(file, "  a file secret of at least thirty-two bytes\n");
    assertArrayEquals("a file secret of at least thirty-two bytes".getBytes(StandardCharsets.UTF_8),
        load(Map.of("MESH_MESHCA_SECRET_FILE", file.toString()), Map.of()).secret());
    assertFalse(load(Map.of("MESH_MESHCA_SECRET", secret), Map.of()).toString().contains(secret), "toString omits the secret");

    ConfigException shortOne = assertThrows(ConfigException.class, () -> load(Map.of("MESH_MESHCA_SECRET", "too-short-secret"), Map.of()));
    assertTrue(shortOne.getMessage().startsWith("meshca.secret (env MESH_MESHCA_SECRET)"), shortOne.getMessage());
    assertFalse(shortOne.getMessage().contains("too-short-secret"), shortOne.getMessage());
    ConfigException both = assertThrows(ConfigException.class,
        () -> load(Map.of("MESH_MESHCA_SECRET", secret, "MESH_MESHCA_SECRET_FILE", file.toString()), Map.of()));
    assertTrue(both.getMessage().contains("set one of them"), both.getMessage());
    ConfigException missing = assertThrows(ConfigException.class,
        () -> load(Map.of("MESH_MESHCA_SECRET_FILE", dir.resolve("nope").toString()), Map.of()));
    assertTrue(missing.getMessage().startsWith("meshca.secret_file"), missing.getMessage());
  }

  @Test
  void badValuesAreRefusedNamingTheirKey() {
    Map<String, String> bad = Map.of(
        "meshca.trust_domain", "Mesh Local",
        "meshca.node_lifetime", "30m",
        "meshca.renewal_grace", "91d",
        "meshca.max_signatures_per_s", "0",
        "meshca.crl_url", "ftp://x/crl",
        "meshca.root_lifetime", "10d");
    for (Map.Entry<String, String> e : bad.entrySet()) {
      ConfigException ex = assertThrows(ConfigException.class, () -> load(Map.of(), Map.of(e.getKey(), e.getValue())), e.getKey());
      assertTrue(ex.getMessage().startsWith(e.getKey()), ex.getMessage());
    }
    ConfigException shortIntermediate = assertThrows(ConfigException.class,
        () -> load(Map.of(), Map.of("meshca.node_lifetime", "30d", "meshca.intermediate_lifetime", "40d")));
    assertTrue(shortIntermediate.getMessage().startsWith("meshca.intermediate_lifetime"), shortIntermediate.getMessage());
  }
}
