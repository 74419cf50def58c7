package io.meshplane.backup;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * {@code manifest.txt}: what a snapshot holds, the text {@code manifest.sig} signs. One fact per line,
 * in this order, LF line ends, US-ASCII:
 *
 * <pre>
 * meshplane snapshot 2
 * taken_at=2026-11-23T12:00:00Z
 * schema_version=10
 * nodes=3
 * tokens=5
 * policy_versions=2
 * audit_events=12
 * dump_sha256=&lt;64 hex&gt;
 * key=&lt;kid&gt;.private.pem &lt;64 hex&gt;
 * key=&lt;kid&gt;.public.pem &lt;64 hex&gt;
 * </pre>
 *
 * The counts are read in the same database snapshot that pg_dump dumps, so a restore checks them
 * against what it loaded.
 */
record Manifest(String takenAt, int schemaVersion, long nodes, long tokens, long policyVersions, long auditEvents, String dumpSha256,
                SortedMap<String, String> keys) {
  static final String FILE = "manifest.txt";
  static final String SIGNATURE = "manifest.sig";
  static final String HEADER = "meshplane snapshot 2";
  private static final int MAX_BYTES = 64 * 1024;
  private static final List<String> FACTS = List.of("taken_at", "schema_version", "nodes", "tokens", "policy_versions", "audit_events",
      "dump_sha256");
  private static final Pattern TIME = Pattern.compile("\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z");
  private static final Pattern COUNT = Pattern.compile("0|[1-9]\\d{0,17}");
  private static final Pattern SHA256 = Pattern.compile("[0-9a-f]{64}");
  private static final Pattern KEY = Pattern.compile("(" + KeyFiles.NAME.pattern() + ") ([0-9a-f]{64})");

  Manifest {
    keys = Collections.unmodifiableSortedMap(new TreeMap<>(keys));
  }

  byte[] render() {
    StringBuilder b = new StringBuilder(HEADER).append('\n')
        .append("taken_at=").append(takenAt).append('\n')
        .append("schema_version=").append(schemaVersion).append('\n')
        .append("nodes=").append(nodes).append('\n')
        .append("tokens=").append(tokens).append('\n')
        .append("policy_versions=").append(policyVersions).append('\n')
        .append("audit_events=").append(auditEvents).append('\n')
        .append("dump_sha256=").append(dumpSha256).append('\n');
    keys.forEach((name, sha) -> b.append("key=").append(name).append(' ').append(sha).append('\n'));
    return b.toString().getBytes(StandardCharsets.US_ASCII);
  }

  /** Parses a manifest whose signature has been verified; anything but the exact form above is refused. */
  static Manifest parse(byte[] bytes) {
    if (bytes.length > MAX_BYTES) throw new Refused(FILE + " is larger than a manifest can be");
    String text;
    try {
      text = StandardCharsets.US_ASCII.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes)).toString();
    } catch (CharacterCodingException e) {
      throw new Refused(FILE + " is not US-ASCII text");
    }
    if (!text.endsWith("\n")) throw new Refused(FILE + " does not end with a line end");
    String[] lines = text.substring(0, text.length() - 1).split("\n", -1);
    if (!lines[0].equals(HEADER)) throw new Refused(FILE + ": the first line is not \"" + HEADER + "\" (a snapshot of another format or version)");
    Map<String, String> facts = new LinkedHashMap<>();
    SortedMap<String, String> keys = new TreeMap<>();
    for (int i = 1; i < lines.length; i++) {
      String line = lines[i];
      int eq = line.indexOf('=');
      String name = eq < 0 ? line : line.substring(0, eq);
      String value = eq < 0 ? "" : line.substring(eq + 1);
      if (eq < 0 || !(FACTS.contains(name) || name.equals("key"))) throw new Refused(FILE + " line " + (i + 1) + ": not a fact of a snapshot");
      if (name.equals("key")) {
        var m = KEY.matcher(value);
        if (!m.matches()) throw new Refused(FILE + " line " + (i + 1) + ": key= is not \"<kid>.(private|public).pem <sha256>\"");
        if (keys.put(m.group(1), m.group(m.groupCount())) != null) throw new Refused(FILE + ": key " + m.group(1) + " is listed twice");
      } else if (facts.put(name, value) != null) {
        throw new Refused(FILE + ": " + name + " is given twice");
      }
    }
    for (String f : FACTS) if (!facts.containsKey(f)) throw new Refused(FILE + " has no " + f);
    check(facts, "taken_at", TIME);
    check(facts, "dump_sha256", SHA256);
    for (String f : List.of("schema_version", "nodes", "tokens", "policy_versions", "audit_events")) check(facts, f, COUNT);
    long version = Long.parseLong(facts.get("schema_version"));
    if (version < 1 || version > Integer.MAX_VALUE) throw new Refused(FILE + ": schema_version " + version + " is not a migration version");
    return new Manifest(facts.get("taken_at"), (int) version, Long.parseLong(facts.get("nodes")), Long.parseLong(facts.get("tokens")),
        Long.parseLong(facts.get("policy_versions")), Long.parseLong(facts.get("audit_events")), facts.get("dump_sha256"), keys);
  }

  private static void check(Map<String, String> facts, String name, Pattern form) {
    if (!form.matcher(facts.get(name)).matches()) throw new Refused(FILE + ": " + name + "=" + facts.get(name) + " is not of the expected form");
  }
}
