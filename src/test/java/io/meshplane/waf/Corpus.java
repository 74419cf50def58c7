package io.meshplane.waf;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** The request corpora of src/test/resources/waf (one JSON request a line), and request builders for tests. */
final class Corpus {
  private Corpus() {}

  record Sample(String cls, WafRequest request) {}

  static List<Sample> load(String name) {
    try (InputStream in = Corpus.class.getResourceAsStream("/waf/" + name)) {
      List<Sample> out = new ArrayList<>();
      for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
        if (line.isBlank()) continue;
        Map<?, ?> m = (Map<?, ?>) BoundedJson.parse(line, 8, 10_000, null);
        List<Map.Entry<String, String>> headers = new ArrayList<>();
        for (Object h : (List<?>) m.get("headers")) {
          List<?> pair = (List<?>) h;
          headers.add(new AbstractMap.SimpleEntry<>((String) pair.get(0), (String) pair.get(1)));
        }
        byte[] body = ((String) m.get("body")).getBytes(StandardCharsets.UTF_8);
        long size = m.get("body_size") instanceof Long l ? l : body.length;
        out.add(new Sample((String) m.get("class"),
            new WafRequest((String) m.get("method"), (String) m.get("target"), headers, "203.0.113.5", body, size, "")));
      }
      return out;
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  static WafRequest get(String target, String... headerPairs) {
    return new WafRequest("GET", target, headers(headerPairs), "192.0.2.10", new byte[0], 0, "");
  }

  static WafRequest post(String target, String contentType, String body, String... headerPairs) {
    List<Map.Entry<String, String>> h = new ArrayList<>(headers(headerPairs));
    h.add(Map.entry("Content-Type", contentType));
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    return new WafRequest("POST", target, h, "192.0.2.10", b, b.length, "");
  }

  static List<Map.Entry<String, String>> headers(String... pairs) {
    List<Map.Entry<String, String>> h = new ArrayList<>();
    h.add(Map.entry("User-Agent", "Mozilla/5.0 test"));
    for (int i = 0; i + 1 < pairs.length; i += 2) h.add(Map.entry(pairs[i], pairs[i + 1]));
    return h;
  }
}
