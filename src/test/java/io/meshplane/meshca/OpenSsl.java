package io.meshplane.meshca;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs the openssl command line (a tool no one here wrote) in a folder; its exit code and its output. */
final class OpenSsl {
  record Result(int exit, String output) {}

  private OpenSsl() {}

  static Result run(Path dir, String... args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add("openssl");
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
    p.getOutputStream().close();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("openssl " + String.join(" ", args) + " did not finish");
    }
    return new Result(p.exitValue(), out);
  }
}
