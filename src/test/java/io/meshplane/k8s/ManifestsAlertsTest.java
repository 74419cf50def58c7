package io.meshplane.k8s;

import static io.meshplane.k8s.ManifestSources.*;
import static io.meshplane.k8s.Manifests.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
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
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

/**
 * The alert rules: the PrometheusRule and the rules file agree, promtool loads them and their unit tests
 * pass, every alert has a runbook in docs/OPERATIONS.md and a unit test that fires it and one that does not.
 */
@Timeout(180)
class ManifestsAlertsTest {
  @BeforeAll
  static void load() throws IOException {
    Manifests.load();
  }

  // ---- 3. and 4. alert rules ---------------------------------------------------------------------

  @Test
  void thePrometheusRuleAndTheRulesFileCarryTheSameGroups() throws IOException {
    Object file = map(new Yaml(new SafeConstructor(new LoaderOptions())).load(Files.readString(K8S.resolve("alerts.rules.yml")))).get("groups");
    assertEquals(file, get(one("PrometheusRule").body(), "spec.groups"), "prometheus-rules.yaml's spec.groups vs alerts.rules.yml's groups");
  }

  @Test
  void promtoolLoadsTheRulesAndTheirUnitTestsPass() throws Exception {
    String missing = "promtool is needed (Debian package prometheus; .ci/run installs it)";
    Result check = run(List.of("promtool", "check", "rules", K8S.resolve("alerts.rules.yml").toString()), missing);
    assertEquals(0, check.exit(), "promtool check rules:\n" + check.out());
    Result test = run(List.of("promtool", "test", "rules", K8S.resolve("alerts.test.yml").toString()), missing);
    assertEquals(0, test.exit(), "promtool test rules:\n" + test.out());
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
}
