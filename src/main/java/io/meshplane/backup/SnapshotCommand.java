package io.meshplane.backup;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.util.Map;
import java.util.concurrent.Callable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code meshplane snapshot keygen|export|restore} (OPERATIONS "Backups and snapshots"). Exit codes:
 * 0 done; 2 refused (a usage error, a snapshot that does not verify or does not hold Meshplane's state
 * and nothing else, a target that is not empty, a restore role that could run code on the server),
 * nothing changed; 1 failed (the database, a tool, the file system), and what the restore had changed
 * is undone. Messages name what is wrong; they carry no stack trace, password or key material.
 */
@Command(name = "snapshot", mixinStandardHelpOptions = true,
    description = "Snapshots of the control-plane state (database and token signing keys), signed with a key kept outside them.",
    subcommands = {SnapshotCommand.Keygen.class, SnapshotCommand.Export.class, SnapshotCommand.Restore.class})
public final class SnapshotCommand implements Callable<Integer> {
  static final String SIGNING_KEY_ENV = "MESH_SNAPSHOT_SIGNING_KEY";
  static final String VERIFY_KEY_ENV = "MESH_SNAPSHOT_VERIFY_KEY";
  private static final Logger LOG = LoggerFactory.getLogger(SnapshotCommand.class);

  private final Map<String, String> env;
  private final SnapshotRestore.KeysMover mover;
  @Spec CommandSpec spec;

  public SnapshotCommand() {
    this(System.getenv(), SnapshotRestore.RENAME);
  }

  /** For tests: another environment, and another last step of a restore (moving the keys into place). */
  SnapshotCommand(Map<String, String> env, SnapshotRestore.KeysMover mover) {
    this.env = Map.copyOf(env);
    this.mover = mover;
  }

  @Override
  public Integer call() {
    spec.commandLine().usage(spec.commandLine().getErr());
    return 2;
  }

  private Path path(Path option, String variable, String fallback) {
    if (option != null) return option;
    String v = env.get(variable);
    return v != null && !v.isBlank() ? Path.of(v) : fallback == null ? null : Path.of(fallback);
  }

  /** Runs {@code action}, prints its result, and maps what it threw to the exit code and one line on stderr. */
  private static int run(CommandSpec spec, String what, Callable<String> action) {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    try {
      out.println(action.call());
      out.flush();
      return 0;
    } catch (Refused e) {
      err.println("snapshot " + what + " refused: " + e.getMessage());
      err.flush();
      return 2;
    } catch (Exception | LinkageError e) {
      LOG.debug("snapshot {} failed", what, e);
      err.println("snapshot " + what + " failed: " + Printable.message(e));
      err.flush();
      return 1;
    }
  }

  @Command(name = "keygen", mixinStandardHelpOptions = true,
      description = "Make the snapshot signing key pair (Ed25519): the private key signs exports (keep it on the machine that exports,"
          + " mode 0600), the public key verifies restores (keep it where restores run). Neither belongs in a snapshot or in the"
          + " deployment's keys folder.")
  static final class Keygen implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Option(names = "--private-key", required = true, paramLabel = "FILE", description = "where the private key goes (a new file, mode 0600)")
    Path privateKey;
    @Option(names = "--public-key", required = true, paramLabel = "FILE", description = "where the public key goes (a new file)")
    Path publicKey;

    @Override
    public Integer call() {
      return run(spec, "keygen", () -> {
        if (privateKey.toAbsolutePath().normalize().equals(publicKey.toAbsolutePath().normalize())) {
          throw new Refused("--private-key and --public-key name the same file");
        }
        if (java.nio.file.Files.exists(publicKey)) throw new Refused(publicKey + " exists already: keygen never writes over a key");
        KeyPair pair = SnapshotSignature.generate();
        SnapshotSignature.write(privateKey, "PRIVATE KEY", pair.getPrivate().getEncoded(), true);
        SnapshotSignature.write(publicKey, "PUBLIC KEY", pair.getPublic().getEncoded(), false);
        return "snapshot signing key written: private " + privateKey + " (0600; for export), public " + publicKey + " (for restore)";
      });
    }
  }

  @Command(name = "export", mixinStandardHelpOptions = true,
      description = "Write the database (MESH_PG_URL) and the signing keys (MESH_KEYS_DIR) into DIR, a new folder, with a signed manifest.")
  static final class Export implements Callable<Integer> {
    @ParentCommand SnapshotCommand parent;
    @Spec CommandSpec spec;
    @Parameters(paramLabel = "DIR", description = "the snapshot folder to create (must not exist)") Path dir;
    @Option(names = "--signing-key", paramLabel = "FILE", description = "the snapshot signing private key (default: $" + SIGNING_KEY_ENV + ")")
    Path signingKey;
    @Option(names = "--keys-dir", paramLabel = "DIR", description = "the token signing keys to include (default: $MESH_KEYS_DIR, else data/keys)")
    Path keysDir;

    @Override
    public Integer call() {
      return run(spec, "export", () -> {
        Path keyFile = parent.path(signingKey, SIGNING_KEY_ENV, null);
        PrivateKey key = SnapshotSignature.readPrivate(keyFile, "--signing-key (or " + SIGNING_KEY_ENV + ")");
        PgTarget pg = PgTarget.fromEnvironment(parent.env);
        return SnapshotExport.run(pg, parent.path(keysDir, "MESH_KEYS_DIR", "data/keys"), key, dir);
      });
    }
  }

  @Command(name = "restore", mixinStandardHelpOptions = true,
      description = "Restore DIR into the empty database of MESH_PG_URL (whose role must not be a superuser) and a new keys folder"
          + " (MESH_KEYS_DIR), whole or not at all, after verifying its signature with the public key.")
  static final class Restore implements Callable<Integer> {
    @ParentCommand SnapshotCommand parent;
    @Spec CommandSpec spec;
    @Parameters(paramLabel = "DIR", description = "the snapshot folder") Path dir;
    @Option(names = "--verify-key", paramLabel = "FILE", description = "the snapshot signing public key (default: $" + VERIFY_KEY_ENV + ")")
    Path verifyKey;
    @Option(names = "--keys-dir", paramLabel = "DIR", description = "where the keys go: a new or empty folder (default: $MESH_KEYS_DIR, else data/keys)")
    Path keysDir;

    @Override
    public Integer call() {
      return run(spec, "restore", () -> {
        Path keyFile = parent.path(verifyKey, VERIFY_KEY_ENV, null);
        PublicKey key = SnapshotSignature.readPublic(keyFile, "--verify-key (or " + VERIFY_KEY_ENV + ")");
        PgTarget pg = PgTarget.fromEnvironment(parent.env);
        return new SnapshotRestore(pg, parent.path(keysDir, "MESH_KEYS_DIR", "data/keys"), key, keyFile, parent.mover).run(dir);
      });
    }
  }
}
