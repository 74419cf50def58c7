package io.meshplane.waf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.common.Refusal;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Hostile and broken policies are refused at compile time, each fault naming the rule and its field. */
class WafCompilerTest {
  private static final WafRule.Action DENY = new WafRule.Deny(403, "no");

  private static Refusal.FieldError refusedOne(String expression) {
    Refusal r = assertThrows(Refusal.class, () -> WafCompiler.compile(List.of(new WafRule("ok-1", "true", DENY), new WafRule("bad-1", expression, DENY))));
    assertEquals(Refusal.Kind.INVALID, r.kind());
    Refusal.FieldError e = r.errors().get(0);
    assertEquals("rules[1].expression", e.field());
    assertTrue(e.message().startsWith("rule bad-1: "), e.message());
    return e;
  }

  @Test
  void unknownIdentifiersAndFieldsAreRefused() {
    assertTrue(refusedOne("request.pathh == '/'").message().contains("undeclared reference"));
    assertTrue(refusedOne("secrets == 1").message().contains("undeclared reference"));
  }

  @Test
  void typeErrorsAndNonBooleanExpressionsAreRefused() {
    assertTrue(refusedOne("request.path + 1 == 'a'").message().contains("found no matching overload"));
    assertTrue(refusedOne("request.path").message().contains("not bool"));
  }

  @Test
  void syntaxErrorsAreRefused() {
    assertTrue(refusedOne("request.path ==").message().contains("mismatched input"));
  }

  @Test
  void deepNestingIsRefused() {
    String deep = "(".repeat(200) + "true" + ")".repeat(200);
    refusedOne(deep);
    refusedOne("size(" + "[".repeat(100) + "]".repeat(100) + ") == 1");
  }

  @Test
  void hugeLiteralsAreRefused() {
    String big = "request.path == '" + "a".repeat(5_000) + "'";
    assertTrue(refusedOne(big).message().contains("at most " + WafEnvironment.MAX_EXPRESSION_CHARS));
  }

  @Test
  void patternsMustBeLiteralValidRe2AndSmall() {
    assertTrue(refusedOne("request.path.matches(request.body_text)").message().contains("must be a string literal"));
    assertTrue(refusedOne("request.path.matches('(a)\\\\1')").message().contains("not an RE2 pattern"), "backreferences are not RE2");
    assertTrue(refusedOne("request.path.matches('(?=a)b')").message().contains("not an RE2 pattern"), "lookahead is not RE2");
    assertTrue(refusedOne("request.path.matches('((a{1,100}){1,100}){1,100}')").message().contains("RE2"), "a repetition bomb");
  }

  @Test
  void cidrBlocksMustBeLiteralAndValid() {
    assertTrue(refusedOne("ip_in(request.client_ip, request.path)").message().contains("must be a string literal"));
    assertTrue(refusedOne("ip_in(request.client_ip, '10.0.0.1/8')").message().contains("host bits"));
  }

  @Test
  void nestedComprehensionsOverTheBudgetAreRefused() {
    Refusal.FieldError e = refusedOne("request.args.exists(a, request.args.exists(b, request.args.exists(c, a + b + c == 'x')))");
    assertTrue(e.message().contains("worst-case cost"), e.message());
    assertTrue(refusedOne("request.args.exists(a, request.args.exists(b, a.matches('x[a-z]{1,50}y') && b.matches('x[a-z]{1,50}y')))")
        .message().contains("worst-case cost"));
  }

  @Test
  void aPolicyOverItsBudgetIsRefusedAsAWhole() {
    List<WafRule> rules = new ArrayList<>();
    String heavy = "request.args.exists(a, a.matches('(?i)(union|select|insert|update|delete|drop|alter|create|exec|sleep)+[a-z0-9]{1,20}'))";
    for (int i = 0; i < 400; i++) rules.add(new WafRule("r" + i, heavy, DENY));
    Refusal r = assertThrows(Refusal.class, () -> WafCompiler.compile(rules));
    assertTrue(r.errors().stream().anyMatch(e -> e.field().equals("rules") && e.message().contains("policy's worst-case cost")), r.errors().toString());
  }

  @Test
  void thousandsOfRulesAreRefused() {
    List<WafRule> rules = new ArrayList<>();
    for (int i = 0; i < WafCompiler.MAX_RULES + 1; i++) rules.add(new WafRule("r" + i, "true", DENY));
    Refusal r = assertThrows(Refusal.class, () -> WafCompiler.compile(rules));
    assertEquals("rules", r.errors().get(0).field());
  }

  @Test
  void duplicateIdsAndBadRateLimitKeysAreRefused() {
    Refusal r = assertThrows(Refusal.class, () -> WafCompiler.compile(List.of(new WafRule("a", "true", new WafRule.Log()),
        new WafRule("a", "true", new WafRule.RateLimit("request.body_size", java.time.Duration.ofSeconds(1), 1)))));
    assertEquals(List.of("rules[1].id", "rules[1].action.key"), r.errors().stream().map(Refusal.FieldError::field).toList());
  }

  @Test
  void aDocumentWithBadFieldsNamesEachField() {
    Refusal r = assertThrows(Refusal.class, () -> WafPolicy.parse("{\"rules\": [{\"id\": \"Bad Id\", \"expression\": \"true\", \"action\": {\"type\": \"deny\", \"status\": 200}},"
        + " {\"id\": \"rl\", \"expression\": \"true\", \"action\": {\"type\": \"rate_limit\", \"key\": \"request.client_ip\", \"window_seconds\": 0, \"limit\": 5}},"
        + " {\"id\": \"x\", \"expression\": \"true\", \"action\": {\"type\": \"explode\"}, \"exclusions\": [\"cookie\"]}]}"));
    assertEquals(List.of("rules[0].id", "rules[0].action.status", "rules[1].action.window_seconds", "rules[2].action.type", "rules[2].exclusions"),
        r.errors().stream().map(Refusal.FieldError::field).toList());
    assertThrows(Refusal.class, () -> WafPolicy.parse("{\"rules\": " + "[".repeat(100) + "]".repeat(100) + "}"));
    assertThrows(Refusal.class, () -> WafPolicy.parse("not json"));
  }

  @Test
  void theManagedSetCompilesWithinItsBudgetAtEveryLevel() {
    for (int level = 1; level <= 2; level++) {
      WafProgram p = WafCompiler.compile(ManagedRules.select(ManagedRules.Overrides.paranoia(level)));
      assertTrue(p.worstCaseCost() <= WafCompiler.POLICY_BUDGET / 2, "headroom for a route's own rules: " + p.worstCaseCost());
    }
  }
}
