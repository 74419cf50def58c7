package io.meshplane.waf;

import com.google.re2j.Pattern;
import com.google.re2j.PatternSyntaxException;
import dev.cel.common.CelFunctionDecl;
import dev.cel.common.CelOptions;
import dev.cel.common.CelOverloadDecl;
import dev.cel.common.types.CelType;
import dev.cel.common.types.ListType;
import dev.cel.common.types.MapType;
import dev.cel.common.types.SimpleType;
import dev.cel.compiler.CelCompiler;
import dev.cel.compiler.CelCompilerBuilder;
import dev.cel.compiler.CelCompilerFactory;
import dev.cel.parser.CelStandardMacro;
import dev.cel.runtime.CelEvaluationException;
import dev.cel.runtime.CelFunctionBinding;
import dev.cel.runtime.CelRuntime;
import dev.cel.runtime.CelRuntimeFactory;
import dev.cel.runtime.CelStandardFunctions;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The CEL environment of WAF expressions, the same for the coordinator and the edge: the declared
 * {@code request.*} variables (qualified names, so that {@code request.pathh} is an undeclared
 * reference at compile time, not a missing key at run time), the options that bound parsing and
 * evaluation, and the three functions added to CEL's standard library:
 *
 * <ul>
 *   <li>{@code ip_in(ip, 'cidr')}: whether an IP literal lies in a CIDR block (the block a literal,
 *       checked at compile time; an address that is not an IP literal is in no block);
 *   <li>{@code s.lower()}: Unicode lower case (CEL's standard library has none);
 *   <li>{@code s.matches('re')} / {@code matches(s, 're')}: CEL's own function, re-bound so that the
 *       pattern, which must be a literal, is compiled once per policy (RE2J: linear time in the input)
 *       instead of at every call, and refused at compile time over {@link #MAX_REGEX_PROGRAM}.
 * </ul>
 */
final class WafEnvironment {
  private WafEnvironment() {}

  /** RE2J program size (instructions) a pattern may compile to. */
  static final int MAX_REGEX_PROGRAM = 2_000;
  /** Characters of one expression. */
  static final int MAX_EXPRESSION_CHARS = 4_096;
  /** Nesting the parser follows before refusing. */
  static final int MAX_PARSE_DEPTH = 32;
  /** Iterations of every comprehension of one evaluation together (the run-time guard). */
  static final int MAX_ITERATIONS = 10_000;

  static final ListType STRINGS = ListType.create(SimpleType.STRING);
  static final MapType MULTIMAP = MapType.create(SimpleType.STRING, STRINGS);

  /** Every {@code request.*} variable with its type; {@link RequestModel#find} answers each. */
  static final Map<String, CelType> VARIABLES = variables();

  static final CelOptions OPTIONS = CelOptions.current()
      .maxExpressionCodePointSize(MAX_EXPRESSION_CHARS)
      .maxParseRecursionDepth(MAX_PARSE_DEPTH)
      .comprehensionMaxIterations(MAX_ITERATIONS)
      .maxRegexProgramSize(MAX_REGEX_PROGRAM)
      .enableRegexPartialMatch(true)
      .build();

  /** CEL's standard functions but {@code matches}, which {@link #runtime} binds itself (0.14 refuses a second binding of an overload id). */
  private static final CelStandardFunctions STANDARD_BUT_MATCHES =
      CelStandardFunctions.newBuilder().excludeFunctions(CelStandardFunctions.StandardFunction.MATCHES).build();

  /** Immutable and thread-safe: one for every policy. */
  static final CelCompiler COMPILER = compiler();

  private static Map<String, CelType> variables() {
    Map<String, CelType> v = new LinkedHashMap<>();
    v.put("request.method", SimpleType.STRING);
    v.put("request.path", SimpleType.STRING);
    v.put("request.path_normalized", SimpleType.STRING);
    v.put("request.query", MULTIMAP);
    v.put("request.form", MULTIMAP);
    v.put("request.headers", MULTIMAP);
    v.put("request.client_ip", SimpleType.STRING);
    v.put("request.body_text", SimpleType.STRING);
    v.put("request.body_json", SimpleType.DYN);
    v.put("request.body_size", SimpleType.INT);
    v.put("request.body_truncated", SimpleType.BOOL);
    v.put("request.body_malformed", SimpleType.BOOL);
    v.put("request.content_type", SimpleType.STRING);
    v.put("request.mesh_identity", SimpleType.STRING);
    v.put("request.args", STRINGS);
    v.put("request.args_text", SimpleType.STRING);
    v.put("request.overflow", SimpleType.BOOL);
    v.put("request.encoding_malformed", SimpleType.BOOL);
    return Map.copyOf(v);
  }

  private static CelCompiler compiler() {
    CelCompilerBuilder b = CelCompilerFactory.standardCelCompilerBuilder()
        .setOptions(OPTIONS)
        .setStandardMacros(CelStandardMacro.STANDARD_MACROS)
        .addFunctionDeclarations(
            CelFunctionDecl.newFunctionDeclaration("ip_in",
                CelOverloadDecl.newGlobalOverload("ip_in_string_string", SimpleType.BOOL, SimpleType.STRING, SimpleType.STRING)),
            CelFunctionDecl.newFunctionDeclaration("lower",
                CelOverloadDecl.newMemberOverload("string_lower", SimpleType.STRING, SimpleType.STRING)));
    VARIABLES.forEach(b::addVar);
    return b.build();
  }

  /** A runtime whose {@code matches} and {@code ip_in} read the patterns and blocks a policy compiled. */
  static CelRuntime runtime(Map<String, Pattern> compiled, Map<String, Cidr> blocks) {
    Map<String, RegexPrefilter> patterns = new java.util.HashMap<>();
    compiled.forEach((re, p) -> patterns.put(re, PREFILTER_ON ? RegexPrefilter.of(p) : RegexPrefilter.none(p)));
    return CelRuntimeFactory.standardCelRuntimeBuilder()
        .setOptions(OPTIONS)
        .setStandardEnvironmentEnabled(false)
        .setStandardFunctions(STANDARD_BUT_MATCHES)
        .addFunctionBindings(
            CelFunctionBinding.from("matches", String.class, String.class, (s, re) -> pattern(patterns, re).find(s, RegexPrefilter.Subject.folded(s))),
            CelFunctionBinding.from("matches_string", String.class, String.class, (s, re) -> pattern(patterns, re).find(s, RegexPrefilter.Subject.folded(s))),
            CelFunctionBinding.from("string_lower", String.class, s -> s.toLowerCase(java.util.Locale.ROOT)),
            CelFunctionBinding.from("ip_in_string_string", String.class, String.class, (ip, cidr) -> block(blocks, cidr).contains(ip)))
        .build();
  }

  /** Off only in RegexPrefilterTest's comparison (system property meshplane.waf.prefilter=false). */
  static boolean PREFILTER_ON = !"false".equals(System.getProperty("meshplane.waf.prefilter"));

  private static RegexPrefilter pattern(Map<String, RegexPrefilter> patterns, String re) throws CelEvaluationException {
    RegexPrefilter p = patterns.get(re);
    if (p == null) throw new IllegalStateException("pattern not compiled with the policy"); // the compiler refuses non-literals
    return p;
  }

  private static Cidr block(Map<String, Cidr> blocks, String cidr) {
    Cidr c = blocks.get(cidr);
    if (c == null) throw new IllegalStateException("CIDR block not compiled with the policy");
    return c;
  }

  /** The compiled pattern, or the reason it is refused. */
  static Pattern compileRegex(String re) {
    Pattern p;
    try {
      p = Pattern.compile(re);
    } catch (PatternSyntaxException e) {
      throw new IllegalArgumentException("not an RE2 pattern: " + e.getMessage());
    }
    if (p.programSize() > MAX_REGEX_PROGRAM) {
      throw new IllegalArgumentException("pattern compiles to " + p.programSize() + " RE2 instructions, over " + MAX_REGEX_PROGRAM);
    }
    return p;
  }
}
