package io.meshplane.waf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.common.Refusal;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A whole traffic-policy document through the front door ({@link Waf}): custom rules before the managed
 * set, per-route overrides, shadow mode, the document's own tests, preview samples, and every fault of a
 * hostile document named by its field.
 */
class WafDocumentTest {
  static final String ROUTE = "ir_01m8jbcb7keyc0xhjsdgc6ch8j";
  static final String DOC = """
      {"mode": "enforce",
       "managed": {"paranoia": 1, "actions": {"mp-scan-001": {"type": "log"}}},
       "rules": [{"id": "office", "expression": "ip_in(request.client_ip, '192.0.2.0/24')", "action": {"type": "allow"}},
                 {"id": "no-admin", "expression": "request.path_normalized.startsWith('/admin')",
                  "action": {"type": "deny", "status": 403, "title": "Administration is internal"}}],
       "routes": {"%s": {"paranoia": 1, "disable": ["mp-xss-001"]}},
       "tests": [{"name": "admin is internal", "expect": "deny", "rule": "no-admin", "request": {"target": "/admin/users"}},
                 {"name": "the office passes everything", "expect": "allow", "rule": "office",
                  "request": {"target": "/admin", "client_ip": "192.0.2.7"}},
                 {"name": "a script is refused", "expect": "deny", "rule": "mp-xss-001", "request": {"target": "/s?q=%%3Cscript%%3Ealert(1)"}},
                 {"name": "a plain search passes", "expect": "pass", "request": {"method": "GET", "target": "/s?q=shoes",
                  "headers": {"user-agent": "Mozilla/5.0", "accept": ["text/html", "*/*"]}}},
                 {"name": "a scanner is only logged", "expect": "pass", "rule": "mp-scan-001",
                  "request": {"target": "/", "headers": {"user-agent": "sqlmap/1.7"}}}]}
      """.formatted(ROUTE);

  static Waf.Request get(String target) {
    return new Waf.Request("GET", target, List.of(Map.entry("user-agent", "Mozilla/5.0")), "203.0.113.9", new byte[0], 0, "");
  }

  @Test
  void aDocumentCompilesItsTestsPassAndItsRulesDecide() {
    Waf.Policy p = Waf.compile(DOC);
    assertEquals("enforce", p.mode());
    assertEquals(2, p.customRules());
    assertTrue(p.managed());
    assertEquals(5, p.tests());
    for (Waf.TestResult r : p.test()) assertTrue(r.passed(), r.toString());
    Waf.Decision admin = p.evaluate(get("/admin"), null);
    assertEquals("deny", admin.outcome());
    assertEquals(403, admin.status());
    assertEquals("Administration is internal", admin.title());
    assertEquals("no-admin", admin.rule());
    assertEquals("pass", p.evaluate(get("/shop?q=blue+shoes"), null).outcome());
    assertTrue(p.worstCaseCost() > 0);
  }

  @Test
  void aRouteWithItsOwnOverridesIsEvaluatedWithThem() {
    Waf.Policy p = Waf.compile(DOC);
    Waf.Request script = get("/s?q=%3Cscript%3Ealert(1)");
    assertEquals("mp-xss-001", p.evaluate(script, null).rule());
    assertEquals("mp-xss-001", p.evaluate(script, "ir_01m8jbcb7keyc0xhjsdgc6ch8k").rule(), "a route without overrides: the policy's own");
    Waf.Decision onRoute = p.evaluate(script, ROUTE);
    assertFalse(onRoute.matched().contains("mp-xss-001"), "disabled on the route: " + onRoute);
    assertEquals("deny", p.evaluate(get("/admin"), ROUTE).outcome(), "the custom rules apply on every route");
  }

  @Test
  void aFailingTestSaysWhatWasDecidedInstead() {
    Waf.Policy p = Waf.compile("""
        {"rules": [{"id": "no-admin", "expression": "request.path.startsWith('/admin')", "action": {"type": "deny", "status": 403}}],
         "tests": [{"name": "admin passes", "expect": "pass", "request": {"target": "/admin"}},
                   {"name": "by the wrong rule", "expect": "deny", "rule": "other", "request": {"target": "/admin"}}]}""");
    assertFalse(p.managed(), "no managed block: the managed set is not applied");
    List<Waf.TestResult> results = p.test();
    assertFalse(results.get(0).passed());
    assertEquals("deny", results.get(0).got().outcome());
    assertEquals("no-admin", results.get(0).got().rule());
    assertFalse(results.get(1).passed(), "denied, but not by the rule named");
  }

  @Test
  void shadowModeIsKeptAndDecidesTheSame() {
    Waf.Policy p = Waf.compile("""
        {"mode": "shadow", "rules": [{"id": "no-admin", "expression": "request.path.startsWith('/admin')", "action": {"type": "deny", "status": 403}}]}""");
    assertEquals("shadow", p.mode());
    assertEquals("deny", p.evaluate(get("/admin"), null).outcome(), "the decision is reported; applying it is the edge's choice");
    assertEquals(0, p.tests());
  }

  @Test
  void previewSamplesAreReadLikeTestRequests() {
    List<Waf.Sample> s = Waf.samples("[{\"target\": \"/a?b=c\", \"route\": \"" + ROUTE + "\"}, {\"method\": \"POST\", \"target\": \"/x\", \"body\": \"{}\"}]", 100);
    assertEquals(2, s.size());
    assertEquals(ROUTE, s.get(0).route());
    assertEquals("POST", s.get(1).request().method());
    assertEquals(2, s.get(1).request().bodySize());
    Refusal r = assertThrows(Refusal.class, () -> Waf.samples("[{\"target\": \"no-slash\"}, {\"target\": \"/\", \"client_ip\": \"x\"}]", 100));
    assertEquals(List.of("samples[0].target", "samples[1].client_ip"), r.errors().stream().map(Refusal.FieldError::field).toList());
    assertEquals("samples", assertThrows(Refusal.class, () -> Waf.samples("[{}, {}, {}]", 2)).errors().get(0).field());
  }

  static List<String> fields(String doc) {
    Refusal r = assertThrows(Refusal.class, () -> Waf.compile(doc));
    return r.errors().stream().map(Refusal.FieldError::field).toList();
  }

  @Test
  void everyFaultOfAHostileDocumentIsNamed() {
    assertEquals(List.of("color"), fields("{\"color\": 1}"));
    assertEquals(List.of("mode"), fields("{\"mode\": \"block\"}"));
    assertEquals(List.of("managed.paranoia"), fields("{\"managed\": {\"paranoia\": 3}}"));
    assertEquals(List.of("managed.disable"), fields("{\"managed\": {\"disable\": [\"mp-nope-001\"]}}"));
    assertEquals(List.of("managed.actions.mp-xss-001"), fields("{\"managed\": {\"actions\": {\"mp-xss-001\": {\"type\": \"rate_limit\", \"key\": \"'k'\", \"window_seconds\": 1, \"limit\": 1}}}}"));
    assertEquals(List.of("managed.exclusions.*"), fields("{\"managed\": {\"exclusions\": {\"*\": [\"cookie\"]}}}"));
    assertEquals(List.of("routes.web"), fields("{\"routes\": {\"web\": {}}}"));
    assertEquals(List.of("tests[0].expect", "tests[0].request.target"), fields("{\"tests\": [{\"name\": \"t\", \"expect\": \"block\", \"request\": {}}]}"));
    assertEquals(List.of("tests[1].name"), fields("{\"tests\": [{\"name\": \"t\", \"expect\": \"pass\", \"request\": {\"target\": \"/\"}},"
        + " {\"name\": \"t\", \"expect\": \"pass\", \"request\": {\"target\": \"/\"}}]}"));
    assertEquals(List.of("rules"), fields("{\"managed\": {}, \"rules\": [{\"id\": \"mp-xss-001\", \"expression\": \"true\", \"action\": {\"type\": \"log\"}}]}"));
    assertEquals(List.of("rules[0].expression"), fields("{\"rules\": [{\"id\": \"deep\", \"expression\": \"" + "(".repeat(300) + "true" + ")".repeat(300)
        + "\", \"action\": {\"type\": \"log\"}}]}"));
    assertEquals(List.of("rules[0].expression"), fields("{\"rules\": [{\"id\": \"bad-re\", \"expression\": \"request.path.matches('(a')\", \"action\": {\"type\": \"log\"}}]}"));
    assertEquals(List.of("(body)"), fields("[1, 2]"));
    assertEquals(List.of("(body)"), fields("{\"rules\": "));
  }
}
