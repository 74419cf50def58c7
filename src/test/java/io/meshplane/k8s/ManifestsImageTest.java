package io.meshplane.k8s;

import static io.meshplane.k8s.ManifestSources.*;
import static io.meshplane.k8s.Manifests.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The image of {@code k8s/Dockerfile}: it runs the jar as the Deployment's user, with a heap that fits the container.
 */
@Timeout(180)
class ManifestsImageTest {
  @BeforeAll
  static void load() throws IOException {
    Manifests.load();
  }

  @Test
  void theImageRunsTheJarAsTheDeploymentsUser() throws IOException {
    String dockerfile = Files.readString(K8S.resolve("Dockerfile"));
    String pom = Files.readString(Path.of("pom.xml"));
    int release = Integer.parseInt(find(pom, "<maven\\.compiler\\.release>(\\d+)<"));
    int java = Integer.parseInt(find(dockerfile, "(?m)^FROM\\s+eclipse-temurin:(\\d+)-jre"));
    assertTrue(java >= release, "the image's JRE " + java + " runs the classes compiled for " + release);
    String jar = "target/" + find(pom, "<finalName>([^<]+)</finalName>") + ".jar";
    String copied = find(dockerfile, "(?m)^COPY\\s+" + Pattern.quote(jar) + "\\s+(\\S+)\\s*$");

    Matcher user = Pattern.compile("(?m)^USER\\s+(\\d+):(\\d+)\\s*$").matcher(dockerfile);
    assertTrue(user.find(), "the Dockerfile sets a numeric USER uid:gid");
    Map<String, Object> security = map(podSpec().get("securityContext"));
    assertEquals(Integer.parseInt(user.group(1)), security.get("runAsUser"), "the image's user vs runAsUser");
    assertEquals(Integer.parseInt(user.group(2)), security.get("runAsGroup"), "the image's group vs runAsGroup");
    assertEquals(user.group(1), find(dockerfile, "useradd[^\\n]*--uid (\\d+)"), "useradd's uid vs USER");
    assertEquals(Boolean.TRUE, security.get("runAsNonRoot"));
    assertEquals(Boolean.TRUE, get(container(), "securityContext.readOnlyRootFilesystem"));

    List<String> entrypoint = jsonArray(find(dockerfile, "(?m)^ENTRYPOINT\\s+(\\[.*\\])\\s*$"));
    List<String> cmd = jsonArray(find(dockerfile, "(?m)^CMD\\s+(\\[.*\\])\\s*$"));
    assertEquals(List.of("-jar", copied), entrypoint.subList(entrypoint.size() - 2, entrypoint.size()), "ENTRYPOINT runs the copied jar");
    assertEquals(List.of("run"), cmd);
    assertEquals(entrypoint, container().get("command"), "the Deployment's command repeats the image's ENTRYPOINT");
    assertEquals(cmd, container().get("args"), "the Deployment's args repeat the image's CMD");
    String ignore = Files.readString(K8S.resolve("Dockerfile.dockerignore"));
    assertTrue(ignore.contains("\n*\n") && ignore.contains("!" + jar), "the build context holds only the jar");

    // the JVM writes only to /tmp: an emptyDir
    Set<String> emptyDirs = list(podSpec().get("volumes")).stream().filter(v -> map(v).containsKey("emptyDir"))
        .map(v -> (String) map(v).get("name")).collect(Collectors.toSet());
    assertTrue(list(container().get("volumeMounts")).stream()
        .anyMatch(v -> "/tmp".equals(map(v).get("mountPath")) && emptyDirs.contains(map(v).get("name"))), "/tmp is an emptyDir");

    // the heap is sized from the container's memory, and leaves room for what the JVM maps beside it
    long limit = mebibytes(str(container(), "resources.limits.memory"));
    assertEquals(limit, mebibytes(str(container(), "resources.requests.memory")), "memory request = limit (the heap is sized from the limit)");
    int percent = Integer.parseInt(find(String.join(" ", entrypoint), "-XX:MaxRAMPercentage=(\\d+)"));
    long heap = limit * percent / 100;
    // measured: metaspace, code cache, threads, G1's structures and Netty's buffers take ~200-250 MiB
    assertTrue(limit - heap >= 384, "heap " + heap + " MiB of " + limit + " MiB leaves " + (limit - heap) + " MiB beside it (< 384)");
    assertTrue(entrypoint.contains("-XX:+UseG1GC") || limit >= 1792, "below 1792 MiB the JVM picks the serial collector: name G1");
  }
}
