package io.meshplane.waf;

import com.google.re2j.Pattern;
import dev.cel.common.CelAbstractSyntaxTree;
import dev.cel.common.ast.CelConstant;
import dev.cel.common.ast.CelExpr;
import dev.cel.common.ast.CelExpr.CelCall;
import dev.cel.common.ast.CelExpr.CelComprehension;
import dev.cel.common.types.CelKind;
import dev.cel.common.types.CelType;
import java.util.Map;

/**
 * A worst-case cost of one checked expression, computed on its AST (CEL-Java has no cost estimator:
 * ARCHITECTURE.md "WAF"), and the literal checks that go with it. The unit is one step: visiting a
 * node, comparing or copying one character, one RE2 instruction over one character. The bound is
 * sound for the request model, whose strings and collections are bounded
 * ({@link RequestModel#MAX_STRING}, {@link RequestModel#MAX_ENTRIES}):
 *
 * <ul>
 *   <li>a node costs 1 plus its children;
 *   <li>a string function ({@code contains}, {@code startsWith}, {@code ==}, {@code +}, {@code lower}, ...)
 *       costs the sizes of its string operands: a literal its length, anything else the model's longest
 *       string;
 *   <li>{@code matches} costs the subject's size times the pattern's RE2 program size (RE2J simulates
 *       the automaton: linear in the input, at most one step per instruction per character);
 *   <li>{@code in} over a list costs its entries times the element's size;
 *   <li>a comprehension ({@code exists}, {@code all}, {@code map}, {@code filter}) costs its range plus
 *       the range's entries times its loop, so nesting multiplies; over a collection of the request,
 *       whose strings together are at most {@link RequestModel#MAX_STRING} characters, the loop's
 *       size-dependent part is counted once at full size and its fixed part once per entry (the loop's
 *       cost is linear in its variable's size: every function above is).
 * </ul>
 *
 * While walking it compiles each {@code matches} pattern and {@code ip_in} block into the given maps,
 * refusing a pattern or block that is not a literal, not valid, or over its size.
 */
final class CostBound {
  private final CelAbstractSyntaxTree ast;
  private final Map<String, Pattern> patterns;
  private final Map<String, Cidr> blocks;
  /** Sizes of comprehension variables in scope, for {@link #size}. */
  private final Map<String, Long> bound = new java.util.HashMap<>();

  private CostBound(CelAbstractSyntaxTree ast, Map<String, Pattern> patterns, Map<String, Cidr> blocks) {
    this.ast = ast;
    this.patterns = patterns;
    this.blocks = blocks;
  }

  /** The bound; {@link IllegalArgumentException} for a literal the environment refuses. */
  static long of(CelAbstractSyntaxTree ast, Map<String, Pattern> patterns, Map<String, Cidr> blocks) {
    return new CostBound(ast, patterns, blocks).cost(ast.getExpr());
  }

  private long cost(CelExpr e) {
    CelExpr.ExprKind k = e.exprKind();
    switch (k.getKind()) {
      case CONSTANT:
      case IDENT:
        return 1;
      case SELECT:
        return 1 + cost(k.select().operand());
      case LIST: {
        long c = 1;
        for (CelExpr x : k.list().elements()) c = add(c, cost(x));
        return c;
      }
      case MAP: {
        long c = 1;
        for (var entry : k.map().entries()) c = add(c, add(cost(entry.key()), cost(entry.value())));
        return c;
      }
      case STRUCT: {
        long c = 1;
        for (var entry : k.struct().entries()) c = add(c, cost(entry.value()));
        return c;
      }
      case CALL:
        return call(k.call());
      case COMPREHENSION: {
        CelComprehension c = k.comprehension();
        long total = add(cost(c.iterRange()), cost(c.accuInit()));
        long n = entries(c.iterRange());
        Long outer = bound.get(c.iterVar());
        bound.put(c.iterVar(), 1L);
        long small = add(cost(c.loopCondition()), cost(c.loopStep()));
        long elementSize = elementSize(c.iterRange());
        bound.put(c.iterVar(), elementSize);
        long large = add(cost(c.loopCondition()), cost(c.loopStep()));
        if (outer == null) bound.remove(c.iterVar()); else bound.put(c.iterVar(), outer);
        // The loop is linear in its variable's size; over a collection of the request, whose strings
        // together are at most MAX_STRING, the sum of the sizes is too: n fixed parts plus one full-size part.
        boolean shared = elementSize == RequestModel.MAX_STRING && c.iterRange().exprKind().getKind() != CelExpr.ExprKind.Kind.LIST;
        total = add(total, shared ? add(mul(n, small), large) : mul(n, large));
        return add(total, cost(c.result()));
      }
      default:
        return 1;
    }
  }

  private long call(CelCall c) {
    long total = 1;
    if (c.target().isPresent()) total = add(total, cost(c.target().get()));
    for (CelExpr a : c.args()) total = add(total, cost(a));
    String f = c.function();
    CelExpr subject = c.target().orElse(c.args().isEmpty() ? null : c.args().get(0));
    CelExpr second = c.target().isPresent() ? (c.args().isEmpty() ? null : c.args().get(0)) : (c.args().size() > 1 ? c.args().get(1) : null);
    switch (f) {
      case "matches": {
        String re = literal(second, "the pattern of matches");
        Pattern p = patterns.get(re);
        if (p == null) {
          p = WafEnvironment.compileRegex(re);
          patterns.put(re, p);
        }
        return add(total, mul(size(subject), p.programSize()));
      }
      case "ip_in": {
        String cidr = literal(second, "the block of ip_in");
        if (!blocks.containsKey(cidr)) blocks.put(cidr, Cidr.parse(cidr));
        return add(total, 40);
      }
      case "@in":
        return add(total, mul(entries(second), size(subject)));
      case "contains", "startsWith", "endsWith", "lower", "_+_", "_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_", "size", "_[_]":
        return add(total, add(size(subject), second == null ? 0 : size(second)));
      default:
        return total;
    }
  }

  private static String literal(CelExpr e, String what) {
    if (e == null || e.exprKind().getKind() != CelExpr.ExprKind.Kind.CONSTANT
        || e.exprKind().constant().getKind() != CelConstant.Kind.STRING_VALUE) {
      throw new IllegalArgumentException(what + " must be a string literal");
    }
    return e.exprKind().constant().stringValue();
  }

  /** Characters of a string, entries of a list or map, 1 for anything else. */
  private long size(CelExpr e) {
    if (e == null) return 0;
    CelExpr.ExprKind k = e.exprKind();
    if (k.getKind() == CelExpr.ExprKind.Kind.CONSTANT) {
      CelConstant c = k.constant();
      return c.getKind() == CelConstant.Kind.STRING_VALUE ? Math.max(1, c.stringValue().length()) : 1;
    }
    if (k.getKind() == CelExpr.ExprKind.Kind.IDENT && bound.containsKey(k.ident().name())) return bound.get(k.ident().name());
    if (k.getKind() == CelExpr.ExprKind.Kind.LIST) {
      long s = 1;
      for (CelExpr x : k.list().elements()) s = Math.max(s, size(x));
      return s;
    }
    if (k.getKind() == CelExpr.ExprKind.Kind.CALL && k.call().function().equals("_+_") && kind(e) == CelKind.STRING) {
      return add(size(k.call().args().get(0)), size(k.call().args().get(1)));
    }
    CelKind kind = kind(e);
    if (kind == CelKind.STRING || kind == CelKind.DYN || kind == CelKind.BYTES) return RequestModel.MAX_STRING;
    if (kind == CelKind.LIST || kind == CelKind.MAP) return RequestModel.MAX_ENTRIES;
    return 1;
  }

  /** The largest element (or key) of a range: a literal list's longest literal, else the model's longest string. */
  private long elementSize(CelExpr range) {
    if (range.exprKind().getKind() == CelExpr.ExprKind.Kind.LIST) {
      long m = 1;
      for (CelExpr x : range.exprKind().list().elements()) m = Math.max(m, size(x));
      return m;
    }
    return RequestModel.MAX_STRING;
  }

  /** Entries a comprehension or {@code in} walks: a literal list's length, else the model's largest collection. */
  private long entries(CelExpr e) {
    if (e == null) return 1;
    CelExpr.ExprKind k = e.exprKind();
    if (k.getKind() == CelExpr.ExprKind.Kind.LIST) return Math.max(1, k.list().elements().size());
    if (k.getKind() == CelExpr.ExprKind.Kind.MAP) return Math.max(1, k.map().entries().size());
    return RequestModel.MAX_ENTRIES;
  }

  private CelKind kind(CelExpr e) {
    return ast.getType(e.id()).map(CelType::kind).orElse(CelKind.DYN);
  }

  private static long add(long a, long b) {
    long s = a + b;
    return s < 0 ? Long.MAX_VALUE : s;
  }

  private static long mul(long a, long b) {
    if (a == 0 || b == 0) return 0;
    return a > Long.MAX_VALUE / b ? Long.MAX_VALUE : a * b;
  }
}
