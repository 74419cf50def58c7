package io.meshplane.backup;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * pg_dump and pg_restore as external processes (from the PATH; Debian: postgresql-client). A password
 * reaches them through {@code PGPASSWORD} in their environment, never on their command line. Their
 * output goes to files in a private working folder; what they say on stderr is quoted when they fail.
 */
final class PgTools {
  private PgTools() {}

  /**
   * pg_dump of schema {@code public} in the custom format, UTF-8, without owners or privileges, reading
   * the exported MVCC snapshot {@code snapshotId} (the one the manifest's counts were read in).
   */
  static void dump(PgTarget pg, String snapshotId, Path out, Path work) throws IOException {
    run(List.of("pg_dump", "--format=custom", "--no-owner", "--no-privileges", "--encoding=UTF8", "--schema=public",
        "--snapshot=" + snapshotId, "--file=" + out, "--dbname=" + pg.toolUrl()), pg.toolEnvironment(), work);
  }

  /** The archive's table of contents, as {@code pg_restore --list} prints it. */
  static void list(Path archive, Path out, Path work) throws IOException {
    run(List.of("pg_restore", "--list", "--file=" + out, archive.toString()), Map.of(), work);
  }

  /** The archive's data as SQL text ({@code --data-only}); nothing connects to a database. */
  static void renderData(Path archive, Path out, Path work) throws IOException {
    run(List.of("pg_restore", "--data-only", "--file=" + out, archive.toString()), Map.of(), work);
  }

  private static void run(List<String> command, Map<String, String> env, Path work) throws IOException {
    String tool = command.get(0);
    Path err = Files.createTempFile(work, tool, ".err");
    ProcessBuilder pb = new ProcessBuilder(new ArrayList<>(command)).redirectInput(ProcessBuilder.Redirect.from(nullDevice()))
        .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(err.toFile());
    pb.environment().putAll(env);
    Process p;
    try {
      p = pb.start();
    } catch (IOException e) {
      throw new Refused(tool + " cannot be run (" + e.getMessage() + "): install the PostgreSQL client tools of the server's major version"
          + " or newer (Debian: postgresql-client)");
    }
    int code;
    try {
      code = p.waitFor();
    } catch (InterruptedException e) {
      p.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new IOException(tool + " was interrupted");
    }
    if (code != 0) {
      String said = Files.readString(err, StandardCharsets.UTF_8).strip();
      if (said.length() > 2000) said = said.substring(0, 2000) + "…";
      throw new IOException(tool + " failed (exit " + code + "): " + said);
    }
  }

  private static java.io.File nullDevice() {
    return new java.io.File("/dev/null");
  }
}
