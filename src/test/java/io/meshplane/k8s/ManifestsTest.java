package io.meshplane.k8s;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.meshplane.app.ConfigException;
import io.meshplane.app.ConfigLoader;
import io.meshplane.app.MeshConfig;
import io.meshplane.app.Setting;
import io.meshplane.auth.AuthModule;
import io.meshplane.heartbeat.HeartbeatModule;
import io.meshplane.module.Module;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

/**
 * The Kubernetes manifests of {@code k8s/}, offline: their schemas (Node.js and the kubernetes-models
 * validators, {@code k8s/validate}), then what schemas cannot see: that the pieces fit each other
 * (selectors, ports, names), the image, and the code (settings, probe paths, shutdown timing, metric
 * names); and the alert rules (promtool, and their runbooks in docs/OPERATIONS.md).
 */
@Timeout(180)
class ManifestsTest {
  static final Path K8S = Path.of("k8s");
  static final Path OPERATIONS = Path.of("docs", "OPERATIONS.md");
  static final String NAMESPACE = "meshplane";
  /** The ingress controller's namespace, as networkpolicy.yaml and docs/OPERATIONS.md name it. */
  static final String INGRESS_NAMESPACE = "ingress-nginx";

  /** Every document of k8s/*.yaml, each with the file it came from. */
  static final List<Doc> DOCS = new ArrayList<>();

  record Doc(String file, Map<String, Object> body) {
    String kind() {
      return (String) body.get("kind");
    }

    String name() {
      return str(body, "metadata.name");
    }
  }

  @BeforeAll
  static void load() throws IOException {
    LoaderOptions options = new LoaderOptions();
    options.setAllowDuplicateKeys(false);
    for (Path file : manifestFiles()) {
      for (Object o : new Yaml(new SafeConstructor(options)).loadAll(Files.readString(file))) {
        if (o == null) continue;
        DOCS.add(new Doc(file.getFileName().toString(), map(o)));
      }
    }
    assertFalse(DOCS.isEmpty(), "no manifests in " + K8S.toAbsolutePath());
  }

  // ---- 1. schemas --------------------------------------------------------------------------------

  @Test
  void everyManifestPassesItsKubernetesSchema() throws Exception {
    Path modules = K8S.resolve("validate/node_modules");
    if (!Files.isDirectory(modules)) {
      fail("the manifest validators are not installed: run `npm ci --prefix k8s/validate` (.ci/run does it)");
    }
    List<String> command = new ArrayList<>(List.of("node", K8S.resolve("validate/validate.mjs").toString()));
    for (Path f : manifestFiles()) command.add(f.toString());
    Result r = run(command, "Node.js is needed to validate the manifests (Node.js 18 or later, with npm)");
    assertEquals(0, r.exit, "k8s/*.yaml against the Kubernetes schemas:\n" + r.out);
  }

  // ---- 2. what the schemas cannot see ------------------------------------------------------------

  @Test
  void everythingLivesInOneNamespace() {
    for (Doc d : DOCS) assertEquals(NAMESPACE, str(d.body, "metadata.namespace"), d.file + ": " + d.kind() + " " + d.name());
  }

  @Test
  void everySelectorPicksTheReplicas() {
    Map<String, Object> pod = podLabels();
    assertSelects(map(get(deployment(), "spec.selector")), pod, "Deployment spec.selector");
    for (Doc s : all("Service")) assertSelects(Map.of("matchLabels", get(s.body, "spec.selector")), pod, "Service " + s.name());
    assertSelects(map(get(one("PodDisruptionBudget").body, "spec.selector")), pod, "PodDisruptionBudget");
    // the replicas are spread over nodes: at least one anti-affinity term, preferred or required, and
    // every term keeps replicas apart by node
    List<Map<String, Object>> terms = antiAffinityTerms();
    assertFalse(terms.isEmpty(), "the pod spec has no pod anti-affinity term (preferred or required): replicas may share a node");
    for (Map<String, Object> term : terms) {
      assertSelects(map(term.get("labelSelector")), pod, "pod anti-affinity term " + term);
      assertEquals("kubernetes.io/hostname", term.get("topologyKey"), "pod anti-affinity term's topologyKey: " + term);
    }

    Map<String, Object> hpaTarget = map(get(one("HorizontalPodAutoscaler").body, "spec.scaleTargetRef"));
    assertEquals(List.of("apps/v1", "Deployment", deploymentDoc().name()),
        List.of(hpaTarget.get("apiVersion"), hpaTarget.get("kind"), hpaTarget.get("name")), "the HPA's scaleTargetRef");

    Map<String, Object> policy = one("NetworkPolicy").body;
    assertSelects(map(get(policy, "spec.podSelector")), pod, "NetworkPolicy spec.podSelector");
    assertEquals(List.of("Ingress", "Egress"), get(policy, "spec.policyTypes"), "the NetworkPolicy restricts both directions");
    // the replicas reach each other on the Hazelcast port and the (pinned) event bus port, and only there
    Map<String, Integer> ports = containerPorts();
    Set<Integer> between = new TreeSet<>(List.of(ports.get("hazelcast"), ports.get("eventbus")));
    assertEquals(between, replicaRulePorts(policy, "ingress", "from", ports), "NetworkPolicy: ingress from the replicas' own pods");
    assertEquals(between, replicaRulePorts(policy, "egress", "to", ports), "NetworkPolicy: egress to the replicas' own pods");
    // every rule names its ports (no rule opens every port)
    for (String direction : List.of("ingress", "egress")) {
      for (Object r : list(get(policy, "spec." + direction))) {
        assertFalse(list(map(r).get("ports")).isEmpty(), "NetworkPolicy " + direction + " rule without ports (every port): " + r);
      }
    }
    // and on the way in, only the API and the panel from outside: nothing else reaches 5701 or the event bus
    Set<Integer> served = new TreeSet<>(List.of(ports.get("http"), ports.get("panel")));
    boolean fromIngressController = false;
    for (Object o : list(get(policy, "spec.ingress"))) {
      Map<String, Object> r = map(o);
      if (isReplicaRule(r, "from")) continue;
      Set<Integer> opened = ingressPorts(r, ports);
      assertTrue(served.containsAll(opened), "NetworkPolicy ingress rule opens " + opened + ", not only http and panel " + served + ": " + r);
      if (list(r.get("from")).stream().anyMatch(p -> INGRESS_NAMESPACE.equals(get(map(p), "namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name")))) {
        assertEquals(served, opened, "the rule from the ingress controller's namespace " + INGRESS_NAMESPACE + " opens http and panel: " + r);
        fromIngressController = true;
      }
    }
    assertTrue(fromIngressController, "NetworkPolicy: no ingress rule from the ingress controller's namespace " + INGRESS_NAMESPACE);
  }

  @Test
  void theServiceMonitorScrapesEachReplicaOnce() {
    Map<String, Object> monitor = one("ServiceMonitor").body;
    Map<String, Object> wanted = map(get(monitor, "spec.selector.matchLabels"));
    List<String> endpoints = list(get(monitor, "spec.endpoints")).stream().map(e -> (String) map(e).get("port")).toList();
    assertTrue(endpoints.containsAll(List.of("http", "panel")), "the ServiceMonitor lists both ports: " + endpoints);
    List<String> scraped = new ArrayList<>();
    for (Doc s : all("Service")) {
      if (!contains(map(get(s.body, "metadata.labels")), wanted)) continue;
      for (Object p : list(get(s.body, "spec.ports"))) {
        if (endpoints.contains(map(p).get("name"))) scraped.add(s.name() + ":" + map(p).get("name"));
      }
    }
    // both ports serve the same registry: scraping a replica twice would double every sum in the alerts
    assertEquals(1, scraped.size(), "Service ports the ServiceMonitor scrapes (exactly one per replica): " + scraped);
    Object annotated = get(deployment(), "spec.template.metadata.annotations.prometheus\\.io/port");
    assertTrue(containerPorts().containsValue(Integer.parseInt(String.valueOf(annotated))), "prometheus.io/port is a container port");
  }

  @Test
  void portsAndProbesMatchTheContainer() throws IOException {
    Map<String, Integer> ports = containerPorts();
    for (Doc s : all("Service")) {
      for (Object p : list(get(s.body, "spec.ports"))) {
        Object target = map(p).get("targetPort");
        assertTrue(isContainerPort(target, ports), "Service " + s.name() + " targetPort " + target + " is not a containerPort " + ports);
      }
    }
    for (Object r : list(get(one("NetworkPolicy").body, "spec.ingress"))) {
      for (Object p : list(map(r).get("ports"))) {
        Object port = map(p).get("port");
        assertTrue(isContainerPort(port, ports), "NetworkPolicy ingress port " + port + " is not a containerPort " + ports);
      }
    }

    // the paths the HTTP components really mount for probes
    Set<String> served = new TreeSet<>();
    Matcher m = Pattern.compile("probe\\(router, \"(/[a-z]+)\"\\)").matcher(source("http/Routers.java"));
    while (m.find()) served.add(m.group(1));
    assertTrue(served.containsAll(List.of("/healthz", "/readyz")), "Routers.java serves " + served);
    // liveness and startup must not depend on PostgreSQL; readiness leaves the postgres check out (a
    // database outage must not take every replica out of the Service while heartbeats can be taken)
    Map<String, String> expected = Map.of("startupProbe", "/healthz", "livenessProbe", "/healthz", "readinessProbe", "/readyz?exclude=postgres");
    // the readiness checks the replicas register (an excluded name must be one: the replica answers 400 otherwise)
    Set<String> checks = new TreeSet<>();
    try (var files = Files.walk(Path.of("src/main/java/io/meshplane"))) {
      for (Path f : files.filter(f -> f.toString().endsWith(".java")).toList()) {
        Matcher c = Pattern.compile("\\.register(?:Local|Async)\\(\"([a-z]+)\"").matcher(Files.readString(f));
        while (c.find()) checks.add(c.group(1));
      }
    }
    assertTrue(checks.containsAll(List.of("postgres", "cluster", "deployment", "writebehind")), "readiness checks found: " + checks);
    for (Map.Entry<String, String> e : expected.entrySet()) {
      Map<String, Object> probe = map(get(container(), e.getKey()));
      assertNotNull(probe, "the container has no " + e.getKey());
      String target = str(probe, "httpGet.path");
      String path = target.contains("?") ? target.substring(0, target.indexOf('?')) : target;
      assertTrue(served.contains(path), e.getKey() + " path " + path + " is not served (" + served + ")");
      assertEquals(e.getValue(), target, e.getKey() + " path");
      if (target.contains("?exclude=")) {
        for (String name : target.substring(target.indexOf("?exclude=") + 9).split(",")) {
          assertTrue(checks.contains(name), e.getKey() + " excludes " + name + ", which is not a readiness check " + checks);
        }
      }
      Object port = get(probe, "httpGet.port");
      assertTrue(isContainerPort(port, ports), e.getKey() + " port " + port + " is not a containerPort " + ports);
    }
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

    // Kubernetes discovery through the headless Service, which must list pods before they are ready
    Doc headless = all("Service").stream().filter(s -> "None".equals(get(s.body, "spec.clusterIP"))).findFirst()
        .orElseThrow(() -> new AssertionError("no headless Service"));
    assertEquals(headless.name() + "." + NAMESPACE + ".svc.cluster.local", config.clusterKubernetesService());
    assertEquals(Boolean.TRUE, get(headless.body, "spec.publishNotReadyAddresses"), "the headless Service publishes pods that are not ready");

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

  @Test
  void theGracePeriodCoversEveryShutdownStep() throws Exception {
    MeshConfig config = ConfigLoader.load(null, false, environment(), Map.of());
    long grace = ((Number) podSpec().get("terminationGracePeriodSeconds")).longValue();
    Duration preStop = preStopSleep();

    // Meshplane.close(): the start's thread is stopped first (a SIGTERM while waiting for PostgreSQL),
    // then each module's stop() in turn, each bounded by its stopTimeout(), then Vert.x closes within
    // shutdown.grace + a fixed bound.
    String close = source("app/Meshplane.java");
    Duration starter = Duration.ofMillis(Long.parseLong(find(close, "t\\.join\\((\\d[\\d_]*)\\)").replace("_", "")));
    Duration closing = config.shutdownGrace().plusSeconds(Long.parseLong(find(close, "shutdownGrace\\(\\)\\.plusSeconds\\((\\d+)\\)")));

    // The modules whose stop() waits for PostgreSQL: the write-behind's last flush and the token
    // last-use times. The other stop() methods cancel timers (the change feed's undeploy cancels its poll
    // and trim timers) and return at once; a module that adds a
    // stop() must be classified here.
    Set<String> waiting = Set.of(HeartbeatModule.class.getName(), AuthModule.class.getName());
    Set<String> immediate = Set.of("io.meshplane.changes.ChangesModule", "io.meshplane.ops.OpsModule", "io.meshplane.policy.PolicyModule", "io.meshplane.panel.PanelModule");
    Set<String> stopping = new TreeSet<>();
    for (Class<?> c : moduleClasses()) {
      if (declares(c, "stop")) stopping.add(c.getName());
    }
    Set<String> known = new TreeSet<>(waiting);
    known.addAll(immediate);
    assertEquals(known, stopping, "the modules with a stop() of their own: classify a new one in this test");
    Duration modules = Duration.ZERO;
    for (String name : waiting) modules = modules.plus(stopTimeout(Class.forName(name)));

    Duration running = preStop.plus(modules).plus(closing);
    Duration starting = preStop.plus(starter).plus(closing);
    Duration worst = running.compareTo(starting) > 0 ? running : starting;
    String sum = "preStop " + preStop.toSeconds() + "s + modules' stop " + modules.toSeconds() + "s + closing " + closing.toSeconds()
        + "s (or + stopping the start " + starter.toSeconds() + "s) = " + worst.toSeconds() + "s";
    assertTrue(grace > worst.toSeconds(), "terminationGracePeriodSeconds " + grace + " does not cover " + sum);
    assertTrue(Duration.ofSeconds(grace).compareTo(config.flushInterval().multipliedBy(2)) > 0, "a last flush fits in the grace period");
  }

  @Test
  void theImageRunsTheJarAsTheDeploymentsUser() throws IOException {
    String dockerfile = Files.readString(K8S.resolve("Dockerfile"));
    String pom = Files.readString(Path.of("pom.xml"));
    int release = Integer.parseInt(find(pom, "<maven\\.compiler\\.release>(\\d+)<"));
    int java = Integer.parseInt(find(dockerfile, "(?m)^FROM\\s+eclipse-temurin:(\\d+)-jre"));
    assertTrue(java >= release, "the image's JRE " + java + " runs the classes compiled for " + release);
    String jar = "target/" + find(pom, "<finalName>([^<]+)</finalName>") + ".jar";
    String copied = find(dockerfile, "(?m)^COPY\\s+" + Pattern.quote(jar) + "\\s+(\\S+)\\s*$");

    Matcher user = Pattern.compile("(?m)^USER\\s+(\\d+):(\\d+)\\s*$").matcher(dockerfile);
    assertTrue(user.find(), "the Dockerfile sets a numeric USER uid:gid");
    Map<String, Object> security = map(podSpec().get("securityContext"));
    assertEquals(Integer.parseInt(user.group(1)), security.get("runAsUser"), "the image's user vs runAsUser");
    assertEquals(Integer.parseInt(user.group(2)), security.get("runAsGroup"), "the image's group vs runAsGroup");
    assertEquals(user.group(1), find(dockerfile, "useradd[^\\n]*--uid (\\d+)"), "useradd's uid vs USER");
    assertEquals(Boolean.TRUE, security.get("runAsNonRoot"));
    assertEquals(Boolean.TRUE, get(container(), "securityContext.readOnlyRootFilesystem"));

    List<String> entrypoint = jsonArray(find(dockerfile, "(?m)^ENTRYPOINT\\s+(\\[.*\\])\\s*$"));
    List<String> cmd = jsonArray(find(dockerfile, "(?m)^CMD\\s+(\\[.*\\])\\s*$"));
    assertEquals(List.of("-jar", copied), entrypoint.subList(entrypoint.size() - 2, entrypoint.size()), "ENTRYPOINT runs the copied jar");
    assertEquals(List.of("run"), cmd);
    assertEquals(entrypoint, container().get("command"), "the Deployment's command repeats the image's ENTRYPOINT");
    assertEquals(cmd, container().get("args"), "the Deployment's args repeat the image's CMD");
    String ignore = Files.readString(K8S.resolve("Dockerfile.dockerignore"));
    assertTrue(ignore.contains("\n*\n") && ignore.contains("!" + jar), "the build context holds only the jar");

    // the JVM writes only to /tmp: an emptyDir
    Set<String> emptyDirs = list(podSpec().get("volumes")).stream().filter(v -> map(v).containsKey("emptyDir"))
        .map(v -> (String) map(v).get("name")).collect(Collectors.toSet());
    assertTrue(list(container().get("volumeMounts")).stream()
        .anyMatch(v -> "/tmp".equals(map(v).get("mountPath")) && emptyDirs.contains(map(v).get("name"))), "/tmp is an emptyDir");

    // the heap is sized from the container's memory, and leaves room for what the JVM maps beside it
    long limit = mebibytes(str(container(), "resources.limits.memory"));
    assertEquals(limit, mebibytes(str(container(), "resources.requests.memory")), "memory request = limit (the heap is sized from the limit)");
    int percent = Integer.parseInt(find(String.join(" ", entrypoint), "-XX:MaxRAMPercentage=(\\d+)"));
    long heap = limit * percent / 100;
    // measured: metaspace, code cache, threads, G1's structures and Netty's buffers take ~200-250 MiB
    assertTrue(limit - heap >= 384, "heap " + heap + " MiB of " + limit + " MiB leaves " + (limit - heap) + " MiB beside it (< 384)");
    assertTrue(entrypoint.contains("-XX:+UseG1GC") || limit >= 1792, "below 1792 MiB the JVM picks the serial collector: name G1");
  }

  // ---- 3. and 4. alert rules ---------------------------------------------------------------------

  @Test
  void thePrometheusRuleAndTheRulesFileCarryTheSameGroups() throws IOException {
    Object file = map(new Yaml(new SafeConstructor(new LoaderOptions())).load(Files.readString(K8S.resolve("alerts.rules.yml")))).get("groups");
    assertEquals(file, get(one("PrometheusRule").body, "spec.groups"), "prometheus-rules.yaml's spec.groups vs alerts.rules.yml's groups");
  }

  @Test
  void promtoolLoadsTheRulesAndTheirUnitTestsPass() throws Exception {
    String missing = "promtool is needed (Debian package prometheus; .ci/run installs it)";
    Result check = run(List.of("promtool", "check", "rules", K8S.resolve("alerts.rules.yml").toString()), missing);
    assertEquals(0, check.exit, "promtool check rules:\n" + check.out);
    Result test = run(List.of("promtool", "test", "rules", K8S.resolve("alerts.test.yml").toString()), missing);
    assertEquals(0, test.exit, "promtool test rules:\n" + test.out);
  }

  @Test
  void everyAlertIsDescribedAndPointsAtAnExistingRunbook() throws IOException {
    Set<String> anchors = anchors(Files.readString(OPERATIONS));
    Set<String> metrics = metricNames();
    List<String> problems = new ArrayList<>();
    for (Map<String, Object> rule : rules()) {
      String alert = (String) rule.get("alert");
      if (alert == null) continue;
      Map<String, Object> labels = rule.get("labels") == null ? Map.of() : map(rule.get("labels"));
      Map<String, Object> annotations = rule.get("annotations") == null ? Map.of() : map(rule.get("annotations"));
      String severity = String.valueOf(labels.get("severity"));
      if (!List.of("critical", "warning", "info").contains(severity)) problems.add(alert + ": severity label " + severity);
      for (String a : List.of("summary", "description", "runbook_url")) {
        if (!(annotations.get(a) instanceof String s) || s.isBlank()) problems.add(alert + ": no " + a);
      }
      String runbook = String.valueOf(annotations.get("runbook_url"));
      Matcher m = Pattern.compile("^docs/OPERATIONS\\.md#([a-z0-9_-]+)$").matcher(runbook);
      if (!m.matches()) problems.add(alert + ": runbook_url " + runbook + " is not docs/OPERATIONS.md#<heading>");
      else if (!anchors.contains(m.group(1))) problems.add(alert + ": runbook_url " + runbook + ": no such heading in OPERATIONS.md");
      // the metric names are the ones the replicas export
      Matcher names = Pattern.compile("\\b((?:mesh|hazelcast)_[a-z_]+)\\b").matcher(String.valueOf(rule.get("expr")));
      while (names.find()) {
        if (!metrics.contains(names.group(1))) problems.add(alert + ": " + names.group(1) + " is not a metric Meshplane registers");
      }
    }
    assertEquals(List.of(), problems);
    // the alerts the issue asks for, by name (the unit tests below say what each one fires on)
    Set<String> missing = new TreeSet<>(REQUIRED_ALERTS);
    missing.removeAll(alertNames());
    assertEquals(Set.of(), missing, "alerts missing from alerts.rules.yml (found " + alertNames() + ")");
  }

  @Test
  void everyAlertHasAUnitTestThatFiresItAndOneThatDoesNot() throws IOException {
    Map<String, Object> tests = yaml(K8S.resolve("alerts.test.yml"));
    assertTrue(list(tests.get("rule_files")).contains("alerts.rules.yml"), "alerts.test.yml tests alerts.rules.yml: " + tests.get("rule_files"));
    Set<String> fired = new TreeSet<>();
    Set<String> silent = new TreeSet<>();
    for (Object t : list(tests.get("tests"))) {
      for (Object o : list(map(t).get("alert_rule_test"))) {
        Map<String, Object> check = map(o);
        String alert = (String) check.get("alertname");
        if (list(check.get("exp_alerts")).isEmpty()) silent.add(alert);
        else fired.add(alert);
      }
    }
    List<String> untested = new ArrayList<>();
    for (String alert : alertNames()) {
      if (!fired.contains(alert)) untested.add(alert + ": no unit test in which it fires (a non-empty exp_alerts)");
      if (!silent.contains(alert)) untested.add(alert + ": no unit test in which it stays silent (exp_alerts: [])");
    }
    assertEquals(List.of(), untested, "alerts.test.yml");
  }

  // ---- the manifests -----------------------------------------------------------------------------

  static List<Path> manifestFiles() throws IOException {
    try (Stream<Path> s = Files.list(K8S)) {
      return s.filter(p -> p.getFileName().toString().endsWith(".yaml")).sorted().toList();
    }
  }

  static List<Doc> all(String kind) {
    return DOCS.stream().filter(d -> kind.equals(d.kind())).toList();
  }

  static Doc one(String kind) {
    List<Doc> found = all(kind);
    assertEquals(1, found.size(), "documents of kind " + kind);
    return found.get(0);
  }

  static Doc deploymentDoc() {
    return one("Deployment");
  }

  static Map<String, Object> deployment() {
    return deploymentDoc().body;
  }

  static Map<String, Object> podSpec() {
    return map(get(deployment(), "spec.template.spec"));
  }

  static Map<String, Object> podLabels() {
    return map(get(deployment(), "spec.template.metadata.labels"));
  }

  static Map<String, Object> container() {
    List<Object> containers = list(podSpec().get("containers"));
    assertEquals(1, containers.size(), "containers in the pod");
    return map(containers.get(0));
  }

  static Map<String, Integer> containerPorts() {
    Map<String, Integer> ports = new LinkedHashMap<>();
    for (Object p : list(container().get("ports"))) ports.put((String) map(p).get("name"), (Integer) map(p).get("containerPort"));
    return ports;
  }

  static boolean isContainerPort(Object port, Map<String, Integer> ports) {
    return port instanceof String name ? ports.containsKey(name) : ports.containsValue(port);
  }

  /** The variables the container gets: the ConfigMap's, then its own, secrets and pod fields as stand-ins. */
  static Map<String, String> environment() {
    Map<String, String> env = new LinkedHashMap<>();
    map(one("ConfigMap").body.get("data")).forEach((k, v) -> env.put(k, String.valueOf(v)));
    for (Object o : list(container().get("env"))) {
      Map<String, Object> e = map(o);
      String name = (String) e.get("name");
      if (e.containsKey("value")) {
        env.put(name, String.valueOf(e.get("value")));
      } else if (get(e, "valueFrom.secretKeyRef") != null) {
        String secret = str(e, "valueFrom.secretKeyRef.name");
        String key = str(e, "valueFrom.secretKeyRef.key");
        Doc example = all("Secret").stream().filter(s -> secret.equals(s.name())).findFirst()
            .orElseThrow(() -> new AssertionError(name + ": Secret " + secret + " is not in secret.example.yaml"));
        Object value = map(example.body.get("stringData")).get(key);
        assertNotNull(value, name + ": secret.example.yaml's " + secret + " has no key " + key);
        env.put(name, String.valueOf(value).replace("REPLACE_WITH_HOST", "postgres.example.internal"));
      } else if ("status.podIP".equals(get(e, "valueFrom.fieldRef.fieldPath"))) {
        env.put(name, "10.1.2.3");
      } else {
        fail(name + ": a source this test does not know: " + e);
      }
    }
    return env;
  }

  static Duration preStopSleep() {
    Map<String, Object> preStop = map(get(container(), "lifecycle.preStop"));
    if (preStop.get("sleep") != null) return Duration.ofSeconds(((Number) get(preStop, "sleep.seconds")).longValue());
    List<Object> command = list(get(preStop, "exec.command"));
    assertEquals("sleep", command.get(0), "the preStop hook sleeps");
    return Duration.ofSeconds(Long.parseLong(String.valueOf(command.get(1))));
  }

  static void assertSelects(Map<String, Object> selector, Map<String, Object> labels, String what) {
    assertNotNull(selector, what + ": no selector");
    assertFalse(selector.containsKey("matchExpressions"), what + ": matchExpressions are not checked here: use matchLabels");
    Map<String, Object> match = map(selector.get("matchLabels"));
    assertTrue(match != null && !match.isEmpty() && contains(labels, match), what + " " + match + " does not select the pods " + labels);
  }

  static boolean contains(Map<String, Object> labels, Map<String, Object> wanted) {
    return labels != null && wanted.entrySet().stream().allMatch(e -> e.getValue().equals(labels.get(e.getKey())));
  }

  /** A rule whose only peer is the replicas' own pods (no namespace selector). */
  static boolean isReplicaRule(Map<String, Object> rule, String peers) {
    List<Object> list = list(rule.get(peers));
    if (list.size() != 1 || !map(list.get(0)).keySet().equals(Set.of("podSelector"))) return false;
    Map<String, Object> match = map(get(map(list.get(0)), "podSelector.matchLabels"));
    // an empty podSelector picks every pod of the namespace, not the replicas
    return match != null && !match.isEmpty() && contains(podLabels(), match);
  }

  /** The ports the rules between replicas open in one direction (none: no such rule). */
  static Set<Integer> replicaRulePorts(Map<String, Object> policy, String direction, String peers, Map<String, Integer> ports) {
    Set<Integer> opened = new TreeSet<>();
    for (Object r : list(get(policy, "spec." + direction))) {
      if (isReplicaRule(map(r), peers)) opened.addAll(ingressPorts(map(r), ports));
    }
    return opened;
  }

  /** The container ports a rule opens, by number (a named port resolved against the container's). */
  static Set<Integer> ingressPorts(Map<String, Object> rule, Map<String, Integer> ports) {
    List<Object> listed = list(rule.get("ports"));
    assertFalse(listed.isEmpty(), "NetworkPolicy rule without ports (every port, 5701 and the event bus too): " + rule);
    Set<Integer> opened = new TreeSet<>();
    for (Object o : listed) {
      Map<String, Object> p = map(o);
      Object port = p.get("port");
      assertNotNull(port, "NetworkPolicy port without a port (every port): " + rule);
      assertFalse(p.containsKey("endPort"), "NetworkPolicy port range " + port + "-" + p.get("endPort") + ": " + rule);
      if (port instanceof String name) {
        assertTrue(ports.containsKey(name), "NetworkPolicy port " + name + " is not a named containerPort " + ports);
        opened.add(ports.get(name));
      } else {
        opened.add((Integer) port);
      }
    }
    return opened;
  }

  /** The pod anti-affinity terms of the pod spec, preferred (their podAffinityTerm) and required. */
  static List<Map<String, Object>> antiAffinityTerms() {
    List<Map<String, Object>> terms = new ArrayList<>();
    for (Object t : list(get(podSpec(), "affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution"))) {
      Map<String, Object> term = map(get(map(t), "podAffinityTerm"));
      assertNotNull(term, "a preferred pod anti-affinity entry without podAffinityTerm: " + t);
      terms.add(term);
    }
    for (Object t : list(get(podSpec(), "affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"))) terms.add(map(t));
    return terms;
  }


  /** The alerts the issue names: each must exist (and, like every alert, have unit tests). */
  static final Set<String> REQUIRED_ALERTS = Set.of("MeshplaneNodesStale", "MeshplaneWriteBehindBacklogGrowing", "MeshplaneRowsQuarantined",
      "MeshplaneAuthFailureBurst", "MeshplanePolicyDrift", "MeshplaneReplicasBelowQuorum");

  /** The alert names of alerts.rules.yml (prometheus-rules.yaml carries the same groups: checked above). */
  static Set<String> alertNames() throws IOException {
    Set<String> names = new TreeSet<>();
    for (Object g : list(yaml(K8S.resolve("alerts.rules.yml")).get("groups"))) {
      for (Object r : list(map(g).get("rules"))) {
        if (map(r).get("alert") != null) names.add((String) map(r).get("alert"));
      }
    }
    assertFalse(names.isEmpty(), "no alert in alerts.rules.yml");
    return names;
  }

  static List<Map<String, Object>> rules() {
    List<Map<String, Object>> rules = new ArrayList<>();
    for (Object g : list(get(one("PrometheusRule").body, "spec.groups"))) {
      for (Object r : list(map(g).get("rules"))) rules.add(map(r));
    }
    return rules;
  }

  // ---- the code ----------------------------------------------------------------------------------

  static String source(String path) throws IOException {
    return Files.readString(Path.of("src/main/java/io/meshplane").resolve(path));
  }

  /**
   * The metric families the replicas register (Micrometer names in the sources, as Prometheus names:
   * dots become underscores, counters get _total). kube-state-metrics' families are not Meshplane's.
   */
  static Set<String> metricNames() throws IOException {
    Set<String> names = new TreeSet<>();
    Pattern builder = Pattern.compile("(Counter|Gauge|DistributionSummary|Timer)\\.builder\\(\"((?:mesh|hazelcast)\\.[a-z.]+)\"");
    try (Stream<Path> files = Files.walk(Path.of("src/main/java"))) {
      for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
        Matcher m = builder.matcher(Files.readString(f));
        while (m.find()) {
          String name = m.group(2).replace('.', '_');
          names.add(m.group(1).equals("Counter") ? name + "_total" : name);
        }
      }
    }
    assertTrue(names.contains("mesh_nodes") && names.contains("mesh_auth_failures_total"), "metric names found: " + names);
    return names;
  }

  static List<Class<?>> moduleClasses() throws Exception {
    Path classes = Path.of(Module.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    List<Class<?>> modules = new ArrayList<>();
    try (Stream<Path> files = Files.walk(classes)) {
      for (Path f : files.filter(p -> p.toString().endsWith("Module.class")).toList()) {
        String name = classes.relativize(f).toString().replace('/', '.').replaceAll("\\.class$", "");
        Class<?> c = Class.forName(name, false, ManifestsTest.class.getClassLoader());
        if (Module.class.isAssignableFrom(c) && !c.isInterface()) modules.add(c);
      }
    }
    assertTrue(modules.size() >= 5, "modules found: " + modules);
    return modules;
  }

  static boolean declares(Class<?> c, String method) {
    try {
      c.getDeclaredMethod(method);
      return true;
    } catch (NoSuchMethodException e) {
      return false;
    }
  }

  /** A module's stopTimeout(), read from the class without building the module (it needs a running replica). */
  static Duration stopTimeout(Class<?> module) throws Exception {
    @SuppressWarnings("removal")
    Constructor<?> bare = sun.reflect.ReflectionFactory.getReflectionFactory()
        .newConstructorForSerialization(module, Object.class.getDeclaredConstructor());
    return ((Module) bare.newInstance()).stopTimeout();
  }

  // ---- docs/OPERATIONS.md ------------------------------------------------------------------------

  /** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
  static Set<String> anchors(String markdown) {
    Set<String> anchors = new LinkedHashSet<>();
    Map<String, Integer> seen = new HashMap<>();
    boolean fenced = false;
    for (String line : markdown.split("\n")) {
      if (line.startsWith("```")) fenced = !fenced;
      if (fenced || !line.matches("^#{1,6} .*")) continue;
      String slug = line.replaceFirst("^#+ ", "").trim().toLowerCase(Locale.ROOT)
          .replaceAll("[^\\p{L}\\p{N} _-]", "").replace(' ', '-');
      int n = seen.merge(slug, 1, Integer::sum);
      anchors.add(n == 1 ? slug : slug + "-" + (n - 1));
    }
    return anchors;
  }

  /**
   * The body rows of the one Markdown table whose header starts with the given cells, each row as its
   * cells (trimmed, backticks kept). A cell with a | in it is not split correctly: none of the first
   * cells the tests read has one.
   */
  static List<List<String>> markdownTable(String markdown, String... header) {
    List<List<List<String>>> tables = new ArrayList<>();
    List<List<String>> current = null;
    boolean inTable = false;
    boolean fenced = false;
    for (String line : markdown.split("\n")) {
      if (line.startsWith("```")) fenced = !fenced;
      if (fenced || !line.startsWith("|")) {
        inTable = false;
        continue;
      }
      List<String> cells = Stream.of(line.trim().replaceAll("^\\||\\|$", "").split("\\|", -1)).map(String::trim).toList();
      if (!inTable) {
        // a table's first line is its header
        inTable = true;
        current = cells.size() >= header.length && cells.subList(0, header.length).equals(List.of(header)) ? new ArrayList<>() : null;
        if (current != null) tables.add(current);
      } else if (current != null && !cells.stream().allMatch(c -> c.matches(":?-+:?"))) {
        current.add(cells);
      }
    }
    assertEquals(1, tables.size(), "tables in docs/OPERATIONS.md whose header starts with " + List.of(header));
    assertFalse(tables.get(0).isEmpty(), "the table " + List.of(header) + " of docs/OPERATIONS.md has no rows");
    return tables.get(0);
  }

  // ---- helpers -----------------------------------------------------------------------------------

  record Result(int exit, String out) {}

  static Result run(List<String> command, String whenMissing) throws Exception {
    Process p;
    try {
      p = new ProcessBuilder(command).redirectErrorStream(true).start();
    } catch (IOException e) {
      throw new AssertionError(whenMissing, e);
    }
    p.getOutputStream().close();
    byte[] out = p.getInputStream().readAllBytes();
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      fail(String.join(" ", command) + " did not finish in 120 s");
    }
    return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8));
  }

  static Map<String, Object> yaml(Path file) throws IOException {
    LoaderOptions options = new LoaderOptions();
    options.setAllowDuplicateKeys(false);
    return map(new Yaml(new SafeConstructor(options)).load(Files.readString(file)));
  }

  static String find(String text, String regex) {
    Matcher m = Pattern.compile(regex).matcher(text);
    if (!m.find()) throw new AssertionError("not found: /" + regex + "/ (the file changed: update ManifestsTest)");
    return m.group(1);
  }

  static List<String> jsonArray(String text) {
    return new io.vertx.core.json.JsonArray(text).stream().map(String::valueOf).toList();
  }

  static long mebibytes(String quantity) {
    Matcher m = Pattern.compile("^(\\d+)(Mi|Gi)$").matcher(quantity);
    assertTrue(m.matches(), "memory quantity " + quantity + " (write it in Mi or Gi)");
    return Long.parseLong(m.group(1)) * (m.group(2).equals("Gi") ? 1024 : 1);
  }

  /** A dotted path into nested maps; a key with a dot in it is written with "\\.". */
  static Object get(Map<String, Object> root, String path) {
    Object node = root;
    for (String key : path.split("(?<!\\\\)\\.")) {
      if (!(node instanceof Map<?, ?> m)) return null;
      node = m.get(key.replace("\\.", "."));
    }
    return node;
  }

  static String str(Map<String, Object> root, String path) {
    Object v = get(root, path);
    return v == null ? null : String.valueOf(v);
  }

  @SuppressWarnings("unchecked")
  static Map<String, Object> map(Object o) {
    return (Map<String, Object>) o;
  }

  @SuppressWarnings("unchecked")
  static List<Object> list(Object o) {
    return o == null ? List.of() : (List<Object>) o;
  }
}
