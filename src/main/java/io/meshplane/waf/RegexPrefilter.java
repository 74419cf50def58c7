package io.meshplane.waf;

import com.google.re2j.Pattern;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * A compile-time literal prefilter for one RE2 pattern: a set of lower-cased ASCII strings at least one of
 * which occurs (in {@link #fold} of the subject) in every subject the pattern finds a match in. At evaluation
 * the automaton runs only when one occurs; a pattern this conservative analysis does not understand gets no
 * prefilter ({@code literals == null}, the automaton always runs). Correctness first: the prefilter never
 * changes a decision (RegexPrefilterTest checks every managed pattern on every corpus request).
 *
 * <p>Soundness: the subject is folded char by char (ASCII lower-cased, U+017F LONG S to {@code s}, U+212A
 * KELVIN to {@code k}, U+212B ANGSTROM left alone as no literal is non-ASCII), which covers RE2's simple case
 * folding of ASCII letters, so a (?i) match of literal {@code l} leaves {@code fold(l)} in {@code fold(subject)};
 * without (?i) the match is exact and folding both sides keeps it.
 */
final class RegexPrefilter {
  final Pattern pattern;
  /** null: no prefilter. */
  final String[] literals;

  private RegexPrefilter(Pattern pattern, String[] literals) {
    this.pattern = pattern;
    this.literals = literals;
  }

  static RegexPrefilter of(Pattern p) {
    Set<String> lits;
    try {
      Parser parser = new Parser(p.pattern());
      lits = parser.alternation();
      if (parser.i != parser.re.length()) lits = null;
    } catch (RuntimeException e) {
      lits = null;
    }
    if (lits != null && (lits.isEmpty() || lits.contains(""))) lits = null;
    return new RegexPrefilter(p, lits == null ? null : lits.toArray(String[]::new));
  }

  static RegexPrefilter none(Pattern p) {
    return new RegexPrefilter(p, null);
  }

  /** Whether the pattern finds a match in s, with the prefilter (fold is the folded s, from {@link Subject}). */
  boolean find(String s, String folded) {
    if (literals != null) {
      boolean any = false;
      for (String l : literals) if (folded.contains(l)) { any = true; break; }
      if (!any) return false;
    }
    Subject.runs.get()[0]++;
    return pattern.matcher(s).find();
  }

  static String fold(String s) {
    char[] out = null;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i), f = c >= 'A' && c <= 'Z' ? (char) (c + 32) : c == '\u017f' ? 's' : c == '\u212a' ? 'k' : c;
      if (f != c) {
        if (out == null) out = s.toCharArray();
        out[i] = f;
      }
    }
    return out == null ? s : new String(out);
  }

  /** The folded subject, cached per thread for the last string seen (the request model's values are reused by every rule). */
  static final class Subject {
    private static final ThreadLocal<Object[]> LAST = ThreadLocal.withInitial(() -> new Object[2]);
    /** Automaton runs on this thread (the benchmark's deterministic figure). */
    static final ThreadLocal<long[]> runs = ThreadLocal.withInitial(() -> new long[1]);

    static String folded(String s) {
      Object[] last = LAST.get();
      if (last[0] != s) {
        last[0] = s;
        last[1] = fold(s);
      }
      return (String) last[1];
    }
  }

  /** Literal sets over the RE2 syntax; anything unknown throws (then: no prefilter). null set = "no requirement". */
  private static final class Parser {
    final String re;
    int i;

    Parser(String re) {
      this.re = re;
    }

    Set<String> alternation() {
      List<Set<String>> alts = new ArrayList<>();
      alts.add(concat());
      while (i < re.length() && re.charAt(i) == '|') {
        i++;
        alts.add(concat());
      }
      Set<String> all = new HashSet<>();
      for (Set<String> a : alts) {
        if (a == null) return null;
        all.addAll(a);
      }
      return all;
    }

    /** The best required set among the items and literal runs of a concatenation. */
    Set<String> concat() {
      Set<String> best = null;
      StringBuilder run = new StringBuilder();
      while (i < re.length() && re.charAt(i) != '|' && re.charAt(i) != ')') {
        Object atom = atom(); // Character (a literal), Set<String>, or null
        int[] rep = repeat();
        boolean once = rep[0] == 1 && rep[1] == 1;
        if (atom instanceof Character c && once) {
          run.append(c.charValue());
          continue;
        }
        best = better(best, run.length() == 0 ? null : Set.of(run.toString()));
        run.setLength(0);
        if (rep[0] == 0) continue; // optional: requires nothing
        if (atom instanceof Character c) {
          best = better(best, Set.of(String.valueOf(c)));
          continue;
        }
        @SuppressWarnings("unchecked") Set<String> s = (Set<String>) atom;
        best = better(best, s);
      }
      return better(best, run.length() == 0 ? null : Set.of(run.toString()));
    }

    private static Set<String> better(Set<String> a, Set<String> b) {
      if (a == null) return b;
      if (b == null) return a;
      return minLen(b) > minLen(a) ? b : a;
    }

    private static int minLen(Set<String> s) {
      int m = Integer.MAX_VALUE;
      for (String x : s) m = Math.min(m, x.length());
      return m;
    }

    private Object atom() {
      char c = re.charAt(i++);
      switch (c) {
        case '(' -> {
          if (re.startsWith("?", i)) {
            int j = i + 1;
            while (j < re.length() && "imsU-".indexOf(re.charAt(j)) >= 0) j++;
            if (j < re.length() && re.charAt(j) == ')') { i = j + 1; return null; } // flags only
            if (j < re.length() && re.charAt(j) == ':') i = j + 1;
            else throw new IllegalArgumentException("group syntax");
          }
          Set<String> inner = alternation();
          if (i >= re.length() || re.charAt(i) != ')') throw new IllegalArgumentException("unbalanced");
          i++;
          return inner;
        }
        case '[' -> {
          if (re.startsWith("^", i)) i++;
          if (re.startsWith("]", i)) i++;
          while (re.charAt(i) != ']') {
            if (re.charAt(i) == '\\') i++;
            else if (re.startsWith("[:", i)) { int e = re.indexOf(":]", i + 2); if (e < 0) throw new IllegalArgumentException("class"); i = e + 1; }
            i++;
          }
          i++;
          return null;
        }
        case '.', '^', '$' -> { return null; }
        case '\\' -> {
          char e = re.charAt(i++);
          if ("bBAzdDsSwW".indexOf(e) >= 0) return null;
          if (e == 'n') return '\n';
          if (e == 't') return '\t';
          if (e < 128 && !Character.isLetterOrDigit(e)) return lower(e);
          throw new IllegalArgumentException("escape \\" + e);
        }
        case '*', '+', '?', '{', ')' -> throw new IllegalArgumentException("unexpected " + c);
        default -> {
          if (c >= 128) throw new IllegalArgumentException("non-ASCII literal");
          return lower(c);
        }
      }
    }

    private static Character lower(char c) {
      return c >= 'A' && c <= 'Z' ? (char) (c + 32) : c;
    }

    /** {min, max}; max -1 is unbounded. */
    private int[] repeat() {
      if (i >= re.length()) return new int[] {1, 1};
      char c = re.charAt(i);
      int[] r;
      if (c == '*') { i++; r = new int[] {0, -1}; }
      else if (c == '+') { i++; r = new int[] {1, -1}; }
      else if (c == '?') { i++; r = new int[] {0, 1}; }
      else if (c == '{') {
        int e = re.indexOf('}', i);
        if (e < 0) throw new IllegalArgumentException("brace");
        String body = re.substring(i + 1, e);
        if (!body.matches("\\d+(,\\d*)?")) throw new IllegalArgumentException("brace");
        int min = Integer.parseInt(body.split(",", -1)[0]);
        i = e + 1;
        r = new int[] {min, -1};
      } else return new int[] {1, 1};
      if (i < re.length() && re.charAt(i) == '?') i++;
      if (i < re.length() && "*+?{".indexOf(re.charAt(i)) >= 0) throw new IllegalArgumentException("double repeat");
      return r;
    }
  }
}
