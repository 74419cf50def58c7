package io.meshplane.k8s;

import static io.meshplane.k8s.ManifestSources.*;
import static io.meshplane.k8s.Manifests.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.meshplane.app.ConfigException;
import io.meshplane.app.ConfigLoader;
import io.meshplane.app.MeshConfig;
import io.meshplane.app.Setting;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The configuration the manifests give the replicas: every environment variable is a setting that
 * loads, and docs/OPERATIONS.md's settings table lists every setting.
 */
@Timeout(180)
class ManifestsSettingsTest {
  @BeforeAll
  static void load() throws IOException {
    Manifests.load();
  }

  @Test
  void everyEnvironmentVariableIsASettingAndTheSetLoads() throws IOException {
    Map<String, String> env = environment();
    List<String> unknown = ConfigLoader.unknownEnvironment(env);
    assertEquals(List.of(), unknown, "MESH_* variables that no setting of Setting.java reads");
    for (String name : env.keySet()) {
      assertTrue(name.startsWith("MESH_"), name + ": the replica reads only MESH_* variables (JVM flags go in the command)");
    }
    MeshConfig config;
    try {
      config = ConfigLoader.load(null, false, env, Map.of());
    } catch (ConfigException e) {
      throw new AssertionError("the manifests' settings are refused: " + e.getMessage(), e);
    }
    Map<String, Integer> ports = containerPorts();
    assertEquals(ports.get("http"), config.httpPort(), "MESH_HTTP_PORT vs containerPort http");
    assertEquals(ports.get("panel"), config.panelPort(), "MESH_PANEL_PORT vs containerPort panel");
    assertEquals(ports.get("hazelcast"), config.clusterPort(), "MESH_CLUSTER_PORT vs containerPort hazelcast");
    assertEquals(ports.get("eventbus"), config.clusterEventBusPort(), "MESH_CLUSTER_EVENTBUS_PORT vs containerPort eventbus "
        + "(pinned: a random event bus port would need every port open between replicas)");
    assertFalse(config.embeddedPostgres(), "the replicas share an external PostgreSQL");
    // owner affinity: each pod advertises itself at its own address and the API's container port
    assertEquals("http://10.1.2.3:" + ports.get("http"), config.advertiseUrl(), "MESH_ADVERTISE_URL: the pod IP and containerPort http");

    // Kubernetes discovery through the headless Service, which must list pods before they are ready
    Doc headless = all("Service").stream().filter(s -> "None".equals(get(s.body(), "spec.clusterIP"))).findFirst()
        .orElseThrow(() -> new AssertionError("no headless Service"));
    assertEquals(headless.name() + "." + NAMESPACE + ".svc.cluster.local", config.clusterKubernetesService());
    assertEquals(Boolean.TRUE, get(headless.body(), "spec.publishNotReadyAddresses"), "the headless Service publishes pods that are not ready");

    // what the Deployment refers to exists
    assertEquals(one("ConfigMap").name(), str(map(list(container().get("envFrom")).get(0)), "configMapRef.name"));
    assertEquals(one("ServiceAccount").name(), str(podSpec(), "serviceAccountName"));
    Set<String> secrets = all("Secret").stream().map(Doc::name).collect(Collectors.toSet());
    for (Object v : list(podSpec().get("volumes"))) {
      Object secret = get(map(v), "secret.secretName");
      if (secret != null) assertTrue(secrets.contains(secret), "volume secret " + secret + " is in secret.example.yaml");
    }
    for (Object mount : list(container().get("volumeMounts"))) {
      if (config.keysDir().toString().equals(map(mount).get("mountPath"))) return;
    }
    fail("MESH_KEYS_DIR " + config.keysDir() + " is not a mounted volume");
  }

  @Test
  void theSettingsTableOfTheOperationsGuideListsEverySetting() throws IOException {
    String guide = Files.readString(OPERATIONS);
    // docs/OPERATIONS.md, Settings: | key | env var | default | meaning | accepted values |
    List<List<String>> rows = markdownTable(guide, "key", "env var");
    Map<String, String> documented = new LinkedHashMap<>();
    List<String> problems = new ArrayList<>();
    for (List<String> row : rows) {
      String key = row.get(0).replace("`", "").trim();
      String env = row.get(1).replace("`", "").trim();
      if (!env.matches("MESH_[A-Z0-9_]+")) problems.add("the row of " + key + " names no MESH_* variable: " + row.get(1));
      else if (documented.put(env, key) != null) problems.add(env + " has two rows");
    }
    Map<String, String> declared = new LinkedHashMap<>();
    for (Setting s : Setting.values()) declared.put(s.env, s.key);
    Set<String> onlyDocumented = new TreeSet<>(documented.keySet());
    onlyDocumented.removeAll(declared.keySet());
    Set<String> onlyDeclared = new TreeSet<>(declared.keySet());
    onlyDeclared.removeAll(documented.keySet());
    if (!onlyDocumented.isEmpty()) problems.add("in the OPERATIONS.md table but not in Setting.java: " + onlyDocumented);
    if (!onlyDeclared.isEmpty()) problems.add("in Setting.java but not in the OPERATIONS.md table: " + onlyDeclared);
    for (Map.Entry<String, String> e : documented.entrySet()) {
      String key = declared.get(e.getKey());
      if (key != null && !key.equals(e.getValue())) problems.add(e.getKey() + ": the table's key " + e.getValue() + ", Setting.java's " + key);
    }
    assertEquals(List.of(), problems, "docs/OPERATIONS.md's settings table vs Setting.java");

    // so every variable the manifests set is documented: a setting, or one of the logging variables
    Set<String> logging = new TreeSet<>();
    for (List<String> row : markdownTable(guide, "env var", "values")) logging.add(row.get(0).replace("`", "").trim());
    assertEquals(Set.of("MESH_LOG_FORMAT", "MESH_LOG_LEVEL"), logging, "docs/OPERATIONS.md's logging variables");
    Set<String> undocumented = new TreeSet<>(environment().keySet());
    undocumented.removeAll(documented.keySet());
    undocumented.removeAll(logging);
    assertEquals(Set.of(), undocumented, "variables the manifests set that docs/OPERATIONS.md does not document");
  }
}
