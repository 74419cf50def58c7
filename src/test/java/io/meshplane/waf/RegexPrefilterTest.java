package io.meshplane.waf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.re2j.Pattern;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import org.junit.jupiter.api.Test;

/** The prefilter never changes a decision: every managed pattern, every corpus request, with and without it. */
class RegexPrefilterTest {
  private static final java.util.regex.Pattern RAW = java.util.regex.Pattern.compile("r'''(.*?)'''|r'((?:[^'\\\\]|\\\\.)*)'", java.util.regex.Pattern.DOTALL);

  static Set<String> managedPatterns() {
    Set<String> out = new LinkedHashSet<>();
    for (ManagedRules.Managed m : ManagedRules.shipped()) {
      Matcher mm = RAW.matcher(m.rule().expression());
      while (mm.find()) out.add(mm.group(1) != null ? mm.group(1) : mm.group(2));
    }
    return out;
  }

  @Test
  void everyManagedPatternAgreesWithTheAutomatonOnEveryCorpusValue() {
    Set<String> patterns = managedPatterns();
    assertTrue(patterns.size() >= 25, "patterns found: " + patterns.size());
    List<String> subjects = new ArrayList<>();
    for (String corpus : List.of("attacks.jsonl", "benign.jsonl")) {
      for (Corpus.Sample s : Corpus.load(corpus)) {
        RequestModel m = new RequestModel(s.request());
        subjects.add(m.argsText);
        subjects.add(m.path);
        subjects.add(m.pathNormalized);
        m.headers.values().forEach(subjects::addAll);
        m.query.values().forEach(subjects::addAll);
      }
    }
    // case-folding corners of RE2's (?i): LONG S and KELVIN SIGN fold to s and k
    subjects.addAll(List.of("1 UNION ALL SELECT 2", "1 union \u017felect 2", "<\u017fcript>", "\u212aill", "x' OR '1'='1", ""));
    int filtered = 0;
    for (String re : patterns) {
      RegexPrefilter f = RegexPrefilter.of(Pattern.compile(re));
      if (f.literals != null) filtered++;
      for (String s : subjects) {
        assertEquals(Pattern.compile(re).matcher(s).find(), f.find(s, RegexPrefilter.fold(s)), () -> "pattern " + re + " on " + s);
      }
    }
    assertTrue(filtered > patterns.size() / 2, "prefiltered " + filtered + " of " + patterns.size());
  }

  @Test
  void theManagedSetDecidesTheSameWithAndWithoutThePrefilter() {
    for (int level = 1; level <= 2; level++) {
      List<WafRule> rules = ManagedRules.select(ManagedRules.Overrides.paranoia(level));
      WafProgram with = WafCompiler.compile(rules);
      WafEnvironment.PREFILTER_ON = false;
      WafProgram without;
      try {
        without = WafCompiler.compile(rules);
      } finally {
        WafEnvironment.PREFILTER_ON = true;
      }
      for (String corpus : List.of("attacks.jsonl", "benign.jsonl")) {
        for (Corpus.Sample s : Corpus.load(corpus)) {
          assertEquals(without.evaluate(s.request(), RateLimiter.NONE), with.evaluate(s.request(), RateLimiter.NONE), s.request().target());
        }
      }
    }
  }

  @Test
  void literalsAreRequiredOrAbsent() {
    assertEquals(Set.of("union"), Set.of(RegexPrefilter.of(Pattern.compile("(?i)\\bUNION\\b\\s+select?")).literals));
    assertNull(RegexPrefilter.of(Pattern.compile("a|b*")).literals);
    assertNull(RegexPrefilter.of(Pattern.compile("\\x41bc")).literals);
    assertNotNull(RegexPrefilter.of(Pattern.compile("(?i)(sleep|benchmark)\\s*\\(")).literals);
    assertEquals(Set.of("sleep", "benchmark"), Set.of(RegexPrefilter.of(Pattern.compile("(?i)(sleep|benchmark)\\s*\\(")).literals));
  }
}
