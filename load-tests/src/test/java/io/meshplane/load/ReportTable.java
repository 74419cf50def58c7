package io.meshplane.load;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Prints a Gatling report's statistics table (per request: count, KO, requests/s, p50, p95, p99, max)
 * as Markdown, read from the report's index.html (Gatling 3.15 writes its simulation.log in a binary
 * format). The figures in README.md's Gatling section come from it.
 *
 * <pre>
 * mvn -B -q test-compile exec:java -Dexec.mainClass=io.meshplane.load.ReportTable [-Dreport=target/gatling/heartbeatstorm-...]
 * </pre>
 *
 * Without -Dreport: the newest report under target/gatling.
 */
public final class ReportTable {
  private static final Pattern ROW = Pattern.compile(
      "class=\"ellipsed-name\">([^<]*)</span>.*?"
          + "col-2\">([^<]*)</td>.*?col-4\">([^<]*)</td>.*?col-6\">([^<]*)</td>.*?"
          + "col-8\">([^<]*)</td>.*?col-10\">([^<]*)</td>.*?col-11\">([^<]*)</td>.*?col-12\">([^<]*)</td>",
      Pattern.DOTALL);

  private ReportTable() {}

  public static void main(String[] args) throws IOException {
    Path report = report();
    String html = Files.readString(report.resolve("index.html"), StandardCharsets.UTF_8);
    int start = html.indexOf("id=\"container_statistics_head\"");
    if (start < 0) throw new IllegalStateException(report + "/index.html has no statistics table");
    Matcher m = ROW.matcher(html.substring(start));
    List<String> rows = new ArrayList<>();
    while (m.find()) {
      rows.add(String.format("| %s | %s | %s | %s | %s | %s | %s | %s |", unescape(m.group(1)), m.group(2), m.group(3),
          m.group(4), m.group(5), m.group(6), m.group(7), m.group(8)));
    }
    System.out.println(report.getFileName());
    System.out.println();
    System.out.println("| request | count | KO | req/s (whole run) | p50 ms | p95 ms | p99 ms | max ms |");
    System.out.println("|---|---:|---:|---:|---:|---:|---:|---:|");
    rows.forEach(System.out::println);
  }

  private static Path report() throws IOException {
    String given = System.getProperty("report");
    if (given != null && !given.isBlank()) return Path.of(given.trim());
    Path root = Path.of(System.getProperty("meshplane.basedir", "."), "target", "gatling");
    try (Stream<Path> s = Files.list(root)) {
      return s.filter(p -> Files.isRegularFile(p.resolve("index.html")))
          .max(Comparator.comparing(p -> p.toFile().lastModified()))
          .orElseThrow(() -> new IllegalStateException("no report under " + root));
    }
  }

  private static String unescape(String s) {
    return s.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#39;", "'")
        .replace("|", "\\|");
  }
}
