package io.meshplane.meshca;

import java.io.Console;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.Supplier;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code meshplane ca init|sign|show}: MeshCA's root kept outside the coordinator (OPERATIONS "MeshCA
 * with an offline root"). Exit codes as {@code snapshot}'s: 0 done; 2 refused (a usage error, a file
 * that exists, a passphrase that is too short or does not open the key, a CSR or certificate that is
 * not acceptable), nothing written; 1 failed (the file system). Messages are one line, without a
 * stack trace, a passphrase or key material.
 */
@Command(name = "ca", mixinStandardHelpOptions = true,
    description = "MeshCA with a root kept offline: make the root (init), sign a coordinator's intermediate from its CSR (sign),"
        + " show a certificate (show). The root's private key never reaches a replica.",
    subcommands = {CaCommand.Init.class, CaCommand.Sign.class, CaCommand.Show.class})
public final class CaCommand implements Callable<Integer> {
  static final String PASSPHRASE_ENV = "MESH_CA_PASSPHRASE";
  static final int MAX_PASSPHRASE_FILE = 4096;

  /** Reads a passphrase from the operator without echo; null when there is no terminal to ask on. */
  interface Prompt {
    char[] read(String question);
  }

  private final Map<String, String> env;
  private final Prompt prompt;
  @Spec CommandSpec spec;

  public CaCommand() {
    this(System.getenv(), CaCommand::console);
  }

  /** For tests: another environment and another terminal. */
  CaCommand(Map<String, String> env, Prompt prompt) {
    this.env = Map.copyOf(env);
    this.prompt = prompt;
  }

  @Override
  public Integer call() {
    spec.commandLine().usage(spec.commandLine().getErr());
    return 2;
  }

  private static char[] console(String question) {
    Console c = System.console();
    return c == null ? null : c.readPassword("%s", question);
  }

  /**
   * The passphrase, from the first that is given: {@code --passphrase-file} (its first line), {@code
   * MESH_CA_PASSPHRASE}, the terminal ({@code twice}: asked again and compared, for a new key).
   */
  private Supplier<char[]> passphrase(Path file, boolean twice) {
    return () -> {
      if (file != null) return fromFile(file);
      String v = env.get(PASSPHRASE_ENV);
      if (v != null && !v.isEmpty()) return v.toCharArray();
      char[] typed = prompt.read("passphrase of the root key: ");
      if (typed == null) {
        throw new OfflineCa.Refused("no passphrase: give --passphrase-file FILE, set " + PASSPHRASE_ENV + ", or run on a terminal");
      }
      if (twice) {
        char[] again = prompt.read("the same passphrase again: ");
        boolean same = again != null && Arrays.equals(typed, again);
        if (again != null) Arrays.fill(again, '\0');
        if (!same) {
          Arrays.fill(typed, '\0');
          throw new OfflineCa.Refused("the two passphrases typed differ");
        }
      }
      return typed;
    };
  }

  /** The file's first line (UTF-8, without its line end). */
  static char[] fromFile(Path file) {
    byte[] bytes;
    try (InputStream in = Files.newInputStream(file)) {
      bytes = in.readNBytes(MAX_PASSPHRASE_FILE + 1);
    } catch (NoSuchFileException e) {
      throw new OfflineCa.Refused("--passphrase-file " + file + " does not exist");
    } catch (IOException e) {
      throw new OfflineCa.Refused("--passphrase-file " + file + " cannot be read: " + e.getClass().getSimpleName());
    }
    try {
      if (bytes.length > MAX_PASSPHRASE_FILE) throw new OfflineCa.Refused("--passphrase-file " + file + " is larger than a passphrase");
      int end = 0;
      while (end < bytes.length && bytes[end] != '\n') end++;
      if (end > 0 && bytes[end - 1] == '\r') end--;
      CharBuffer chars;
      try {
        chars = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
            .decode(ByteBuffer.wrap(bytes, 0, end));
      } catch (CharacterCodingException e) {
        throw new OfflineCa.Refused("--passphrase-file " + file + " is not UTF-8 text");
      }
      char[] out = Arrays.copyOf(chars.array(), chars.limit());
      Arrays.fill(chars.array(), '\0');
      if (out.length == 0) throw new OfflineCa.Refused("--passphrase-file " + file + " has an empty first line");
      return out;
    } finally {
      Arrays.fill(bytes, (byte) 0);
    }
  }

  /** Runs {@code action}, prints its result, and maps what it threw to the exit code and one line on stderr. */
  private static int run(CommandSpec spec, String what, Callable<String> action) {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    try {
      out.print(action.call());
      out.flush();
      return 0;
    } catch (OfflineCa.Refused e) {
      err.println("ca " + what + " refused: " + e.getMessage());
      err.flush();
      return 2;
    } catch (Exception e) {
      err.println("ca " + what + " failed: " + e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage()));
      err.flush();
      return 1;
    }
  }

  @Command(name = "init", mixinStandardHelpOptions = true,
      description = "Make a root (ECDSA P-256, self-signed) in DIR: root.pem, its certificate, and root-key.pem, its private key encrypted"
          + " with a passphrase (PKCS#8, scrypt and AES-256-CBC), both new files of mode 0600. Keep DIR offline.")
  static final class Init implements Callable<Integer> {
    @ParentCommand CaCommand parent;
    @Spec CommandSpec spec;
    @Option(names = "--dir", required = true, paramLabel = "DIR", description = "where the root goes (created if missing; root.pem and"
        + " root-key.pem must not exist)") Path dir;
    @Option(names = "--trust-domain", paramLabel = "DOMAIN", defaultValue = "mesh.local",
        description = "named in the root's subject; the deployment's meshca.trust_domain (default: ${DEFAULT-VALUE})") String trustDomain;
    @Option(names = "--lifetime", paramLabel = "DURATION", defaultValue = "10y", description = "the root's lifetime: 10y, 3650d (default:"
        + " ${DEFAULT-VALUE})") String lifetime;
    @Option(names = "--passphrase-file", paramLabel = "FILE", description = "the passphrase, at least " + OfflineCa.MIN_PASSPHRASE
        + " characters, on the file's first line (else $" + PASSPHRASE_ENV + ", else asked twice on the terminal)") Path passphraseFile;

    @Override
    public Integer call() {
      return run(spec, "init", () -> OfflineCa.init(dir, trustDomain, OfflineCa.lifetime(lifetime, "--lifetime"),
          parent.passphrase(passphraseFile, true)));
    }
  }

  @Command(name = "sign", mixinStandardHelpOptions = true,
      description = "Sign a coordinator's intermediate from its CSR with the root in DIR: a CA certificate with path length 0,"
          + " keyCertSign and cRLSign, never valid beyond the root. Every name and extension the CSR asks for is ignored.")
  static final class Sign implements Callable<Integer> {
    @ParentCommand CaCommand parent;
    @Spec CommandSpec spec;
    @Option(names = "--dir", required = true, paramLabel = "DIR", description = "the root's folder (root.pem, root-key.pem)") Path dir;
    @Option(names = "--csr", required = true, paramLabel = "FILE", description = "the coordinator's CSR (PKCS#10, PEM or DER; an ECDSA"
        + " P-256 or Ed25519 key)") Path csr;
    @Option(names = "--out", required = true, paramLabel = "FILE", description = "where the intermediate's certificate goes (a new file)")
    Path out;
    @Option(names = "--lifetime", paramLabel = "DURATION", defaultValue = "90d", description = "the intermediate's lifetime, cut to the"
        + " root's (default: ${DEFAULT-VALUE})") String lifetime;
    @Option(names = "--passphrase-file", paramLabel = "FILE", description = "the root key's passphrase on the file's first line (else $"
        + PASSPHRASE_ENV + ", else asked on the terminal)") Path passphraseFile;

    @Override
    public Integer call() {
      return run(spec, "sign", () -> OfflineCa.sign(dir, csr, out, OfflineCa.lifetime(lifetime, "--lifetime"),
          parent.passphrase(passphraseFile, false)));
    }
  }

  @Command(name = "show", mixinStandardHelpOptions = true,
      description = "Print a certificate's subject, issuer, serial, validity, key, CA constraints, key identifiers and SHA-256"
          + " fingerprint: the root of --dir, or --cert FILE; with both, the certificate is also checked as an intermediate of that"
          + " root (exit 2 when it is not one).")
  static final class Show implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Option(names = "--dir", paramLabel = "DIR", description = "the root's folder (its root.pem)") Path dir;
    @Option(names = "--cert", paramLabel = "FILE", description = "a PEM certificate file") Path cert;

    @Override
    public Integer call() {
      return run(spec, "show", () -> {
        OfflineCa.Shown shown = OfflineCa.show(dir, cert);
        if (shown.problem().isPresent()) {
          spec.commandLine().getOut().print(shown.text());
          throw new OfflineCa.Refused(cert + " is no intermediate of " + dir.resolve(OfflineCa.ROOT_CERT) + ": it "
              + shown.problem().get());
        }
        return shown.text();
      });
    }
  }
}
