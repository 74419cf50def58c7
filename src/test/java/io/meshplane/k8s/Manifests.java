package io.meshplane.k8s;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

/**
 * The documents of {@code k8s/*.yaml} and the ways into them (the Deployment, its pod, its container, the
 * network policies), shared by the test classes of the manifests.
 */
final class Manifests {
  private Manifests() {}

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

  /** Reads every document of k8s/*.yaml, once for all the test classes of the manifests. */
  static synchronized void load() throws IOException {
    if (!DOCS.isEmpty()) return;
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

  /**
   * The variables the container gets: the ConfigMap's, then its own, secrets and pod fields as stand-ins
   * (an optional Secret's variable is left out: it is absent unless an operator creates that Secret).
   */
  static Map<String, String> environment() {
    Map<String, String> env = new LinkedHashMap<>();
    map(one("ConfigMap").body.get("data")).forEach((k, v) -> env.put(k, String.valueOf(v)));
    for (Object o : list(container().get("env"))) {
      Map<String, Object> e = map(o);
      String name = (String) e.get("name");
      if (e.containsKey("value")) {
        // $(NAME) is replaced by an earlier variable of the list, as the kubelet does (unknown: kept as written)
        Matcher ref = Pattern.compile("\\$\\(([A-Za-z_][A-Za-z0-9_]*)\\)").matcher(String.valueOf(e.get("value")));
        StringBuilder expanded = new StringBuilder();
        while (ref.find()) ref.appendReplacement(expanded, Matcher.quoteReplacement(env.getOrDefault(ref.group(1), ref.group())));
        ref.appendTail(expanded);
        env.put(name, expanded.toString());
      } else if (get(e, "valueFrom.secretKeyRef") != null) {
        String secret = str(e, "valueFrom.secretKeyRef.name");
        String key = str(e, "valueFrom.secretKeyRef.key");
        Doc example = all("Secret").stream().filter(s -> secret.equals(s.name())).findFirst()
            .orElseThrow(() -> new AssertionError(name + ": Secret " + secret + " is not in secret.example.yaml"));
        Object value = map(example.body.get("stringData")).get(key);
        assertNotNull(value, name + ": secret.example.yaml's " + secret + " has no key " + key);
        // an optional Secret (single sign-on's) is absent in the shipped set: the replica starts without it
        if (Boolean.TRUE.equals(get(e, "valueFrom.secretKeyRef.optional"))) continue;
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
    if (!m.find()) throw new AssertionError("not found: /" + regex + "/ (the file changed: update the test that reads it)");
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
