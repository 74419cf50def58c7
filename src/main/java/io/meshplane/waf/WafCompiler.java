package io.meshplane.waf;

import com.google.re2j.Pattern;
import dev.cel.common.CelAbstractSyntaxTree;
import dev.cel.common.CelValidationException;
import dev.cel.common.CelValidationResult;
import dev.cel.common.types.SimpleType;
import dev.cel.runtime.CelEvaluationException;
import dev.cel.runtime.CelRuntime;
import io.meshplane.common.Refusal;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Compiles ordered {@link WafRule}s into a {@link WafProgram}, or refuses them with every fault named
 * (a {@link Refusal} whose fields are {@code rules[i].expression} and whose messages start with the
 * rule's id): a parse or type error, an unknown identifier, an expression that is not boolean (a
 * rate-limit key that is not a string), a regular expression or CIDR block that is not a valid
 * literal, a rule whose worst-case cost ({@link CostBound}) is over {@link #RULE_BUDGET}, a policy
 * over {@link #POLICY_BUDGET} or {@link #MAX_RULES}, a duplicate id.
 */
final class WafCompiler {
  private WafCompiler() {}

  static final int MAX_RULES = 1_000;
  /** Worst-case steps of one rule (its expression and its rate-limit key together). */
  static final long RULE_BUDGET = 20_000_000L;
  /** Worst-case steps of one whole policy. */
  static final long POLICY_BUDGET = 400_000_000L;
  /** Distinct exclusion sets of one policy (each is one narrowed model per request at most). */
  static final int MAX_EXCLUSION_SETS = 32;

  static WafProgram compile(List<WafRule> rules) {
    List<Refusal.FieldError> errors = new ArrayList<>();
    if (rules.size() > MAX_RULES) throw Refusal.invalid("rules", "at most " + MAX_RULES + " rules, not " + rules.size());
    Map<String, Pattern> patterns = new HashMap<>();
    Map<String, Cidr> blocks = new HashMap<>();
    Set<String> ids = new HashSet<>();
    List<CelAbstractSyntaxTree> asts = new ArrayList<>();
    List<CelAbstractSyntaxTree> keys = new ArrayList<>();
    List<Set<String>> exclusionSets = new ArrayList<>();
    long total = 0;
    for (int i = 0; i < rules.size(); i++) {
      WafRule r = rules.get(i);
      String at = "rules[" + i + "]";
      if (!ids.add(r.id())) errors.add(new Refusal.FieldError(at + ".id", "rule " + r.id() + ": the id is used by an earlier rule"));
      CelAbstractSyntaxTree ast = check(at + ".expression", r.id(), r.expression(), SimpleType.BOOL, errors);
      CelAbstractSyntaxTree key = r.action() instanceof WafRule.RateLimit rl
          ? check(at + ".action.key", r.id(), rl.key(), SimpleType.STRING, errors) : null;
      long cost = 0;
      try {
        if (ast != null) cost += CostBound.of(ast, patterns, blocks);
        if (key != null) cost += CostBound.of(key, patterns, blocks);
      } catch (IllegalArgumentException e) {
        errors.add(new Refusal.FieldError(at + ".expression", "rule " + r.id() + ": " + e.getMessage()));
      }
      if (cost > RULE_BUDGET) {
        errors.add(new Refusal.FieldError(at + ".expression",
            "rule " + r.id() + ": worst-case cost " + cost + " is over the budget of " + RULE_BUDGET + " per rule"));
      }
      total += cost;
      if (!r.exclusions().isEmpty() && !exclusionSets.contains(r.exclusions())) exclusionSets.add(r.exclusions());
      asts.add(ast);
      keys.add(key);
    }
    if (total > POLICY_BUDGET) {
      errors.add(new Refusal.FieldError("rules", "the policy's worst-case cost " + total + " is over the budget of " + POLICY_BUDGET));
    }
    if (exclusionSets.size() > MAX_EXCLUSION_SETS) {
      errors.add(new Refusal.FieldError("rules", "at most " + MAX_EXCLUSION_SETS + " different sets of exclusions"));
    }
    if (!errors.isEmpty()) throw Refusal.invalid(errors);
    CelRuntime runtime = WafEnvironment.runtime(Map.copyOf(patterns), Map.copyOf(blocks));
    List<WafProgram.Compiled> compiled = new ArrayList<>();
    try {
      for (int i = 0; i < rules.size(); i++) {
        WafRule r = rules.get(i);
        CelRuntime.Program key = keys.get(i) == null ? null : runtime.createProgram(keys.get(i));
        compiled.add(new WafProgram.Compiled(r, runtime.createProgram(asts.get(i)), key,
            r.exclusions().isEmpty() ? -1 : exclusionSets.indexOf(r.exclusions())));
      }
    } catch (CelEvaluationException e) {
      throw Refusal.invalid("rules", "the policy could not be planned: " + e.getMessage());
    }
    return new WafProgram(compiled, exclusionSets, total);
  }

  /** The checked AST of one expression of type {@code want}, or null with its errors added. */
  private static CelAbstractSyntaxTree check(String field, String id, String expression, dev.cel.common.types.CelType want, List<Refusal.FieldError> errors) {
    if (expression == null || expression.isBlank()) {
      errors.add(new Refusal.FieldError(field, "rule " + id + ": the expression is empty"));
      return null;
    }
    if (expression.length() > WafEnvironment.MAX_EXPRESSION_CHARS) {
      errors.add(new Refusal.FieldError(field, "rule " + id + ": an expression is at most " + WafEnvironment.MAX_EXPRESSION_CHARS + " characters"));
      return null;
    }
    CelValidationResult result;
    try {
      result = WafEnvironment.COMPILER.compile(expression);
    } catch (RuntimeException e) { // a stack overflow in the parser is caught as its own failure below
      errors.add(new Refusal.FieldError(field, "rule " + id + ": " + e.getMessage()));
      return null;
    } catch (StackOverflowError e) {
      errors.add(new Refusal.FieldError(field, "rule " + id + ": nested too deeply"));
      return null;
    }
    if (result.hasError()) {
      errors.add(new Refusal.FieldError(field, "rule " + id + ": " + firstLines(result.getErrorString())));
      return null;
    }
    try {
      CelAbstractSyntaxTree ast = result.getAst();
      if (!ast.getResultType().equals(want)) {
        errors.add(new Refusal.FieldError(field, "rule " + id + ": the expression gives " + ast.getResultType().name() + ", not " + want.name()));
        return null;
      }
      return ast;
    } catch (CelValidationException e) {
      errors.add(new Refusal.FieldError(field, "rule " + id + ": " + firstLines(e.getMessage())));
      return null;
    }
  }

  /** CEL's message without the long source excerpts: at most 3 lines and 400 characters. */
  private static String firstLines(String s) {
    String[] lines = s.split("\n");
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < Math.min(3, lines.length); i++) b.append(i == 0 ? "" : " ").append(lines[i].trim());
    return b.length() > 400 ? b.substring(0, 400) + "…" : b.toString();
  }
}
