package io.meshplane.k8s;

import static io.meshplane.k8s.ManifestSources.*;
import static io.meshplane.k8s.Manifests.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.meshplane.app.ConfigLoader;
import io.meshplane.app.MeshConfig;
import io.meshplane.auth.AuthModule;
import io.meshplane.heartbeat.HeartbeatModule;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The workload of {@code k8s/}, offline: its schemas (Node.js and the kubernetes-models validators,
 * {@code k8s/validate}), then what schemas cannot see: that the pieces fit each other (namespace,
 * selectors, ports, probes, the pod's security) and the code's shutdown timing.
 */
@Timeout(180)
class ManifestsWorkloadTest {
  @BeforeAll
  static void load() throws IOException {
    Manifests.load();
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
    assertEquals(0, r.exit(), "k8s/*.yaml against the Kubernetes schemas:\n" + r.out());
  }

  // ---- 2. what the schemas cannot see ------------------------------------------------------------

  @Test
  void everythingLivesInOneNamespace() {
    for (Doc d : DOCS) assertEquals(NAMESPACE, str(d.body(), "metadata.namespace"), d.file() + ": " + d.kind() + " " + d.name());
  }

  @Test
  void everySelectorPicksTheReplicas() {
    Map<String, Object> pod = podLabels();
    assertSelects(map(get(deployment(), "spec.selector")), pod, "Deployment spec.selector");
    for (Doc s : all("Service")) assertSelects(Map.of("matchLabels", get(s.body(), "spec.selector")), pod, "Service " + s.name());
    assertSelects(map(get(one("PodDisruptionBudget").body(), "spec.selector")), pod, "PodDisruptionBudget");
    // the replicas are spread over nodes: at least one anti-affinity term, preferred or required, and
    // every term keeps replicas apart by node
    List<Map<String, Object>> terms = antiAffinityTerms();
    assertFalse(terms.isEmpty(), "the pod spec has no pod anti-affinity term (preferred or required): replicas may share a node");
    for (Map<String, Object> term : terms) {
      assertSelects(map(term.get("labelSelector")), pod, "pod anti-affinity term " + term);
      assertEquals("kubernetes.io/hostname", term.get("topologyKey"), "pod anti-affinity term's topologyKey: " + term);
    }

    Map<String, Object> hpaTarget = map(get(one("HorizontalPodAutoscaler").body(), "spec.scaleTargetRef"));
    assertEquals(List.of("apps/v1", "Deployment", deploymentDoc().name()),
        List.of(hpaTarget.get("apiVersion"), hpaTarget.get("kind"), hpaTarget.get("name")), "the HPA's scaleTargetRef");

    Map<String, Object> policy = one("NetworkPolicy").body();
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
    Map<String, Object> monitor = one("ServiceMonitor").body();
    Map<String, Object> wanted = map(get(monitor, "spec.selector.matchLabels"));
    List<String> endpoints = list(get(monitor, "spec.endpoints")).stream().map(e -> (String) map(e).get("port")).toList();
    assertTrue(endpoints.containsAll(List.of("http", "panel")), "the ServiceMonitor lists both ports: " + endpoints);
    List<String> scraped = new ArrayList<>();
    for (Doc s : all("Service")) {
      if (!contains(map(get(s.body(), "metadata.labels")), wanted)) continue;
      for (Object p : list(get(s.body(), "spec.ports"))) {
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
      for (Object p : list(get(s.body(), "spec.ports"))) {
        Object target = map(p).get("targetPort");
        assertTrue(isContainerPort(target, ports), "Service " + s.name() + " targetPort " + target + " is not a containerPort " + ports);
      }
    }
    for (Object r : list(get(one("NetworkPolicy").body(), "spec.ingress"))) {
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

  /**
   * The watch streams (API.md §11) live for hours with a ping every 15 s: the Ingress that carries
   * their path keeps them open far beyond the ping and passes each line on unbuffered; every Ingress
   * sends to a Service port that exists.
   */
  @Test
  void theIngressKeepsWatchStreamsOpenAndUnbuffered() {
    List<Doc> ingresses = all("Ingress");
    assertFalse(ingresses.isEmpty(), "no Ingress in k8s/");
    Map<String, Set<String>> servicePorts = new java.util.HashMap<>();
    for (Doc s : all("Service")) {
      Set<String> names = new TreeSet<>();
      for (Object p : list(get(s.body(), "spec.ports"))) names.add(String.valueOf(map(p).get("name")));
      servicePorts.put(s.name(), names);
    }
    boolean watch = false;
    for (Doc ing : ingresses) {
      for (Object rule : list(get(ing.body(), "spec.rules"))) {
        for (Object p : list(get(map(rule), "http.paths"))) {
          String service = str(map(p), "backend.service.name");
          String port = str(map(p), "backend.service.port.name");
          assertTrue(servicePorts.getOrDefault(service, Set.of()).contains(port), ing.name() + ": backend " + service + ":" + port + " is no Service port");
          String path = str(map(p), "path");
          if (!path.contains("watch")) continue;
          watch = true;
          assertTrue("/v1/nodes/nd_01m8441djndvw0fmy2g5b1pnqb/watch".matches(path), ing.name() + ": path " + path + " matches the watch route");
          Map<String, Object> a = map(get(ing.body(), "metadata.annotations"));
          assertEquals("true", a.get("nginx.ingress.kubernetes.io/use-regex"), ing.name() + ": the path is a regular expression");
          for (String timeout : List.of("proxy-read-timeout", "proxy-send-timeout")) {
            long seconds = Long.parseLong(String.valueOf(a.get("nginx.ingress.kubernetes.io/" + timeout)));
            assertTrue(seconds >= 600, ing.name() + ": " + timeout + " " + seconds + " s cuts streams (a ping every 15 s, streams of hours)");
          }
          assertEquals("off", a.get("nginx.ingress.kubernetes.io/proxy-buffering"), ing.name() + ": buffering would hold the lines back");
        }
      }
    }
    assertTrue(watch, "no Ingress path for the watch streams (/v1/nodes/{id}/watch)");
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
    // and trim timers) or close a work pool (MeshCA's signing pool) and return at once; a module that adds a
    // stop() must be classified here (the traffic policies' stop() closes their work pool).
    Set<String> waiting = Set.of(HeartbeatModule.class.getName(), AuthModule.class.getName());
    Set<String> immediate = Set.of("io.meshplane.changes.ChangesModule", "io.meshplane.ops.OpsModule", "io.meshplane.policy.PolicyModule",
        "io.meshplane.panel.PanelModule", "io.meshplane.meshca.MeshcaModule", "io.meshplane.ingress.IngressModule",
        "io.meshplane.wafpolicy.WafPolicyModule");
    Set<String> stopping = new TreeSet<>();
    for (Class<?> c : moduleClasses()) {
      if (declares(c, "stop")) stopping.add(c.getName());
    }
    // the watch stream's stop() ends its streams over watch.drain (a rolling restart moves agents gradually)
    String draining = "io.meshplane.watch.WatchModule";
    Set<String> known = new TreeSet<>(waiting);
    known.addAll(immediate);
    known.add(draining);
    assertEquals(known, stopping, "the modules with a stop() of their own: classify a new one in this test");
    Duration modules = Duration.ZERO;
    for (String name : waiting) modules = modules.plus(stopTimeout(Class.forName(name)));
    modules = modules.plus(io.meshplane.watch.WatchModule.stopTimeout(config.watch().drain()));

    Duration running = preStop.plus(modules).plus(closing);
    Duration starting = preStop.plus(starter).plus(closing);
    Duration worst = running.compareTo(starting) > 0 ? running : starting;
    String sum = "preStop " + preStop.toSeconds() + "s + modules' stop " + modules.toSeconds() + "s + closing " + closing.toSeconds()
        + "s (or + stopping the start " + starter.toSeconds() + "s) = " + worst.toSeconds() + "s";
    assertTrue(grace > worst.toSeconds(), "terminationGracePeriodSeconds " + grace + " does not cover " + sum);
    assertTrue(Duration.ofSeconds(grace).compareTo(config.flushInterval().multipliedBy(2)) > 0, "a last flush fits in the grace period");
  }
}
