package io.meshplane.testing;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** The real command line in a child JVM, as an operator runs it (same class path as the tests). */
public final class ChildJvm {
  private ChildJvm() {}

  /**
   * @param dir working directory
   * @param log where stderr (and stdout, when {@code stdout} is null) goes
   * @param stdout where stdout goes on its own, or null
   */
  public static Process launch(Path dir, Map<String, String> env, Path log, Path stdout, String... args) throws java.io.IOException {
    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xmx256m", "-Dhazelcast.wait.seconds.before.join=1", "-Djava.util.concurrent.ForkJoinPool.common.parallelism=4",
        "--add-opens", "java.base/java.lang=ALL-UNNAMED", "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
        "-cp", System.getProperty("java.class.path"), "io.meshplane.Main"));
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile());
    if (stdout == null) pb.redirectErrorStream(true).redirectOutput(log.toFile());
    else pb.redirectError(log.toFile()).redirectOutput(stdout.toFile());
    pb.environment().keySet().removeIf(k -> k.startsWith("MESH_"));
    pb.environment().putAll(env);
    return pb.start();
  }
}
