package io.meshplane.app;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.common.Durations;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ConfigLoaderTest {
  @TempDir Path dir;

  @Test
  void defaultsMatchTheSpecTable() {
    MeshConfig c = ConfigLoader.load(null, false, Map.of(), Map.of());
    assertEquals("0.0.0.0", c.httpHost());
    assertEquals(8080, c.httpPort());
    assertEquals(8081, c.panelPort());
    assertTrue(c.panel().cookieSecure());
    assertTrue(c.embeddedPostgres());
    assertEquals("meshplane", c.clusterName());
    assertEquals(5701, c.clusterPort());
    assertEquals(List.of("127.0.0.1"), c.clusterMembers());
    assertEquals("", c.clusterKubernetesService());
    assertEquals(Path.of("data/keys"), c.keysDir());
    assertEquals("meshplane", c.issuer());
    assertEquals(Duration.ofDays(90), c.tokensMaxLifetime());
    assertEquals(Duration.ofSeconds(30), c.heartbeatInterval());
    assertEquals(Duration.ofSeconds(90), c.staleAfter());
    assertEquals(Duration.ofSeconds(1), c.flushInterval());
  }

  @Test
  void theShippedConfigFileLoadsAndEqualsTheDefaults() {
    MeshConfig fromFile = ConfigLoader.load(Path.of("config/meshplane.yaml"), true, Map.of(), Map.of());
    assertEquals(ConfigLoader.load(null, false, Map.of(), Map.of()), fromFile);
  }

  @Test
  void environmentOverridesTheFileAndTheFileOverridesDefaults() throws Exception {
    Path f = dir.resolve("m.yaml");
    Files.writeString(f, "http:\n  port: 9000\nheartbeat:\n  stale_after: 2m\ncluster:\n  members: [\"10.0.0.1:5701\", \"10.0.0.2\"]\n");
    MeshConfig c = ConfigLoader.load(f, true, Map.of("MESH_HTTP_PORT", "9100", "MESH_FLUSH_INTERVAL", "250ms"), Map.of());
    assertEquals(9100, c.httpPort());
    assertEquals(Duration.ofMinutes(2), c.staleAfter());
    assertEquals(Duration.ofMillis(250), c.flushInterval());
    assertEquals(List.of("10.0.0.1:5701", "10.0.0.2"), c.clusterMembers());
  }

  @Test
  void aBadDurationNamesItsKey() {
    ConfigException e = assertThrows(ConfigException.class,
        () -> ConfigLoader.load(null, false, Map.of("MESH_STALE_AFTER", "90 seconds"), Map.of()));
    assertTrue(e.getMessage().startsWith("heartbeat.stale_after"), e.getMessage());
    assertTrue(e.getMessage().contains("MESH_STALE_AFTER"), e.getMessage());
  }

  @Test
  void aBadPortNamesItsKey() {
    ConfigException e = assertThrows(ConfigException.class,
        () -> ConfigLoader.load(null, false, Map.of("MESH_PANEL_PORT", "70000"), Map.of()));
    assertTrue(e.getMessage().startsWith("panel.port"), e.getMessage());
    ConfigException e2 = assertThrows(ConfigException.class,
        () -> ConfigLoader.load(null, false, Map.of("MESH_CLUSTER_PORT", "0"), Map.of()));
    assertTrue(e2.getMessage().startsWith("cluster.port"), e2.getMessage());
  }

  /** Ports in settings are read as everywhere else: ASCII digits, no sign, no leading zero (one spelling per port). */
  @Test
  void aPortWithALeadingZeroASignOrNonAsciiDigitsIsRefused() {
    for (String raw : List.of("08080", "+8080", "\uff18\uff10\uff18\uff10", "\u0668\u0660\u0668\u0660", "00")) {
      ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.load(null, false, Map.of("MESH_HTTP_PORT", raw), Map.of()), raw);
      assertTrue(e.getMessage().startsWith("http.port"), e.getMessage());
    }
    assertEquals(0, ConfigLoader.load(null, false, Map.of("MESH_CLUSTER_EVENTBUS_PORT", "0"), Map.of()).clusterEventBusPort());
    for (String member : List.of("10.0.0.1:05701", "10.0.0.1:+5701", "10.0.0.1:\uff15\uff17\uff10\uff11", "10.0.0.1:0")) {
      ConfigException e = assertThrows(ConfigException.class,
          () -> ConfigLoader.load(null, false, Map.of("MESH_CLUSTER_MEMBERS", member), Map.of()), member);
      assertTrue(e.getMessage().startsWith("cluster.members"), e.getMessage());
    }
    for (String url : List.of("https://f.example:0443", "https://f.example:0", "https://f.example:99999", "https://f.example:/x")) {
      String relays = "[{\"name\":\"fra1\",\"region\":\"eu\",\"url\":\"" + url + "\"}]";
      ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.load(null, false, Map.of("MESH_RELAYS", relays), Map.of()), url);
      assertTrue(e.getMessage().startsWith("relays[0].url"), e.getMessage());
    }
    assertEquals("https://f.example:8443/x", ConfigLoader.load(null, false, Map.of("MESH_RELAYS",
        "[{\"name\":\"fra1\",\"region\":\"eu\",\"url\":\"https://f.example:8443/x\"}]"), Map.of()).relays().all().get(0).url());
  }

  /** The advertised URL goes into every heartbeat answer's JSON: a base URL or nothing, refused by name otherwise. */
  @Test
  void theAdvertisedUrlIsEmptyByDefaultABaseUrlOrRefusedByName() {
    assertEquals("", ConfigLoader.load(null, false, Map.of(), Map.of()).advertiseUrl());
    for (String url : List.of("http://10.0.3.7:8080", "https://mesh-1.meshplane.example/coord", "http://[fd00::7]:8080", "http://a-b.c")) {
      assertEquals(url, ConfigLoader.load(null, false, Map.of("MESH_ADVERTISE_URL", url), Map.of()).advertiseUrl());
    }
    for (String url : List.of("10.0.3.7:8080", "ftp://x.example", "http://x.example/", "http://x.example:08080", "http://x.example:0",
        "http://x.example:99999", "http://x.example/a\"b", "http://x.example/?q=1", "http://x .example", "http://[::1")) {
      ConfigException e = assertThrows(ConfigException.class,
          () -> ConfigLoader.load(null, false, Map.of("MESH_ADVERTISE_URL", url), Map.of()), url);
      assertTrue(e.getMessage().startsWith("cluster.advertise_url (env MESH_ADVERTISE_URL)"), e.getMessage());
    }
  }

  @Test
  void theEventBusPortIsFreeByDefaultPinnableAndNeverTheHazelcastPort() {
    assertEquals(0, ConfigLoader.load(null, false, Map.of(), Map.of()).clusterEventBusPort());
    assertEquals(5702, ConfigLoader.load(null, false, Map.of("MESH_CLUSTER_EVENTBUS_PORT", "5702"), Map.of()).clusterEventBusPort());
    ConfigException bad = assertThrows(ConfigException.class,
        () -> ConfigLoader.load(null, false, Map.of("MESH_CLUSTER_EVENTBUS_PORT", "-1"), Map.of()));
    assertTrue(bad.getMessage().startsWith("cluster.eventbus_port"), bad.getMessage());
    ConfigException same = assertThrows(ConfigException.class,
        () -> ConfigLoader.load(null, false, Map.of("MESH_CLUSTER_EVENTBUS_PORT", "5801", "MESH_CLUSTER_PORT", "5801"), Map.of()));
    assertTrue(same.getMessage().startsWith("cluster.eventbus_port") && same.getMessage().contains("cluster.port"), same.getMessage());
  }

  @Test
  void relaysLoadAndABadEntryStopsTheStartNamingItsIndexAndKey() {
    MeshConfig ok = ConfigLoader.load(null, false, Map.of("MESH_RELAYS",
        "[{\"name\":\"fra1\",\"region\":\"eu\",\"url\":\"https://fra1.relay.example.net\"},{\"name\":\"nyc1\",\"region\":\"us\",\"url\":\"https://nyc1.relay.example.net:8443/derp\"}]"),
        Map.of());
    assertEquals(2, ok.relays().all().size());
    assertEquals("nyc1", ok.relays().all().get(1).name());
    assertEquals("us", ok.relays().all().get(1).region());
    String good = "{\"name\":\"fra1\",\"region\":\"eu\",\"url\":\"https://fra1.example\"}";
    Map<String, String> bad = new java.util.LinkedHashMap<>();
    bad.put("not a list", "relays (env MESH_RELAYS): must be a list");
    bad.put("[1]", "relays[0]: must be {name, region, url}");
    bad.put("[" + good + ",{\"name\":\"Fra 2\",\"region\":\"eu\",\"url\":\"https://f.example\"}]", "relays[1].name: must be a DNS label");
    bad.put("[" + good + "," + good + "]", "relays[1].name: 'fra1' is configured twice");
    bad.put("[{\"name\":\"fra1\",\"region\":\"EU\",\"url\":\"https://f.example\"}]", "relays[0].region: must be a slug");
    bad.put("[{\"name\":\"fra1\",\"region\":\"eu\",\"url\":\"ftp://f.example\"}]", "relays[0].url: must be an http(s) URL");
    bad.put("[{\"name\":\"fra1\",\"region\":\"eu\",\"url\":\"https://f.example\",\"weight\":2}]", "relays[0].weight: unknown key");
    for (Map.Entry<String, String> c : bad.entrySet()) {
      ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.load(null, false, Map.of("MESH_RELAYS", c.getKey()), Map.of()),
          c.getKey());
      assertTrue(e.getMessage().startsWith(c.getValue()), c.getKey() + " -> " + e.getMessage());
    }
  }

  @Test
  void aPortRangeInTheMemberListIsRejectedWithAHint() {
    ConfigException e = assertThrows(ConfigException.class,
        () -> ConfigLoader.load(null, false, Map.of("MESH_CLUSTER_MEMBERS", "127.0.0.1:5701-5703"), Map.of()));
    assertTrue(e.getMessage().startsWith("cluster.members") && e.getMessage().contains("separately"), e.getMessage());
  }

  @Test
  void unknownKeysInTheFileAreErrorsNotSilentDefaults() throws Exception {
    Path f = dir.resolve("typo.yaml");
    Files.writeString(f, "heartbeat:\n  stale_afer: 10s\n");
    ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.load(f, true, Map.of(), Map.of()));
    assertTrue(e.getMessage().startsWith("heartbeat.stale_afer"), e.getMessage());
  }

  @Test
  void aPostgresUrlWithAPasswordIsNeverEchoedInTheError() {
    ConfigException e = assertThrows(ConfigException.class,
        () -> ConfigLoader.load(null, false, Map.of("MESH_PG_URL", "mysql://u:hunter2@db/x"), Map.of()));
    assertTrue(e.getMessage().startsWith("postgres.url"), e.getMessage());
    assertFalse(e.getMessage().contains("hunter2"), e.getMessage());
  }

  @Test
  void loggingVariablesAreCheckedAndUnknownMeshVariablesAreReported() {
    ConfigException e = assertThrows(ConfigException.class,
        () -> ConfigLoader.load(null, false, Map.of("MESH_LOG_FORMAT", "xml"), Map.of()));
    assertTrue(e.getMessage().startsWith("MESH_LOG_FORMAT"), e.getMessage());
    assertEquals(List.of("MESH_STALE_AFTR"), ConfigLoader.unknownEnvironment(
        Map.of("MESH_STALE_AFTR", "10s", "MESH_HTTP_PORT", "1", "MESH_LOG_LEVEL", "INFO", "PATH", "/bin", "MESH_CA_PASSPHRASE", "x")));
  }

  @Test
  void aMissingExplicitConfigFileIsAnError() {
    assertThrows(ConfigException.class, () -> ConfigLoader.load(dir.resolve("none.yaml"), true, Map.of(), Map.of()));
  }

  @Test
  void durationsParseEveryUnitAndRejectGarbage() {
    assertEquals(Duration.ofMillis(500), Durations.parse("500ms"));
    assertEquals(Duration.ofSeconds(30), Durations.parse("30s"));
    assertEquals(Duration.ofMinutes(15), Durations.parse("15m"));
    assertEquals(Duration.ofHours(24), Durations.parse("24h"));
    assertEquals(Duration.ofDays(90), Durations.parse("90d"));
    for (String bad : new String[] {"", "10", "s", "-1s", "1.5h", "1w", "10 s"}) {
      assertThrows(IllegalArgumentException.class, () -> Durations.parse(bad), bad);
    }
  }
}
