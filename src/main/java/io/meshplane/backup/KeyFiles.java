package io.meshplane.backup;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.AlgorithmParameters;
import java.security.GeneralSecurityException;
import java.security.Key;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.interfaces.ECKey;
import java.security.spec.ECGenParameterSpec;
import java.security.spec.ECParameterSpec;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The token signing keys of {@code auth.keys_dir}, as {@code auth.SigningKeys} keeps them and
 * OPERATIONS "Rotating the signing keys" makes them: {@code <kid>.private.pem} (PKCS#8) and
 * {@code <kid>.public.pem} (SPKI), ES256 (P-256) keys in PEM, kids {@code k<UTC yyyyMMddHHmmss><4 hex>}.
 * A folder is accepted only when every file is one of those, each parses as a P-256 key of its kind,
 * each pair belongs together, and the private key that would sign (the greatest kid) has its public key.
 */
final class KeyFiles {
  static final Pattern NAME = Pattern.compile("(k[0-9]{14}[0-9a-f]{4})\\.(private|public)\\.pem");
  static final int MAX_BYTES = 16 * 1024;
  private static final Pattern PEM = Pattern.compile("-----BEGIN (PRIVATE|PUBLIC) KEY-----\\n((?:[A-Za-z0-9+/=]{1,76}\\n)+)-----END \\1 KEY-----\\n");
  private static final int MAX_PROBLEMS = 12;

  private KeyFiles() {}

  /**
   * The keys folder of a running deployment, for an export. Entries whose name starts with a dot are
   * not keys and are skipped ({@code .lock}, written by SigningKeys; Kubernetes' {@code ..data} links),
   * and files may be links (a Secret mount): they are read where they point.
   */
  static SortedMap<String, byte[]> readSource(Path dir) throws IOException {
    if (!Files.isDirectory(dir)) throw new Refused("the keys folder " + dir + " does not exist (set MESH_KEYS_DIR or --keys-dir)");
    SortedMap<String, byte[]> keys = new TreeMap<>();
    List<String> problems = new ArrayList<>();
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
      for (Path p : entries) {
        String name = p.getFileName().toString();
        if (name.startsWith(".")) continue;
        if (!NAME.matcher(name).matches()) {
          problems.add(dir + "/" + name + " is not a signing key file name (<kid>.private.pem or <kid>.public.pem)");
        } else if (!Files.isRegularFile(p)) {
          problems.add(dir + "/" + name + " is not a regular file");
        } else if (Files.size(p) > MAX_BYTES) {
          problems.add(dir + "/" + name + " is too large to be a key");
        } else {
          keys.put(name, Files.readAllBytes(p));
        }
      }
    }
    refuseIf(problems);
    check(keys, dir.toString());
    return keys;
  }

  /**
   * A snapshot's {@code keys/}: every entry a regular file (no folder, no link, dangling or not; read
   * with NOFOLLOW_LINKS), named in {@code listed} (manifest.txt's names and SHA-256), with that hash,
   * and together a valid keys folder. Returns the bytes read, which are what a restore installs.
   */
  static SortedMap<String, byte[]> readSnapshot(Path dir, Map<String, String> listed) throws IOException {
    String shown = "keys";
    BasicFileAttributes folder = attributes(dir);
    if (folder == null) throw new Refused(shown + "/ is missing from the snapshot");
    if (folder.isSymbolicLink()) throw new Refused(shown + "/ is a symbolic link: a snapshot's keys are a folder of regular files");
    if (!folder.isDirectory()) throw new Refused(shown + " is not a folder");
    SortedMap<String, byte[]> keys = new TreeMap<>();
    List<String> problems = new ArrayList<>();
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
      for (Path p : entries) {
        String name = p.getFileName().toString();
        String what = shown + "/" + Printable.of(name);
        BasicFileAttributes a = attributes(p);
        if (a == null) {
          problems.add(what + " vanished while it was read");
        } else if (a.isSymbolicLink()) {
          problems.add(what + " is a symbolic link" + (Files.exists(p) ? " (to " + Printable.of(String.valueOf(Files.readSymbolicLink(p))) + ")"
              : " that points nowhere") + ": a snapshot's keys are regular files");
        } else if (a.isDirectory()) {
          problems.add(what + " is a folder: a snapshot's keys/ holds key files only");
        } else if (!a.isRegularFile()) {
          problems.add(what + " is not a regular file");
        } else if (!NAME.matcher(name).matches()) {
          problems.add(what + " is not a signing key file name (<kid>.private.pem or <kid>.public.pem)");
        } else if (!listed.containsKey(name)) {
          problems.add(what + " is not listed in " + Manifest.FILE);
        } else if (a.size() > MAX_BYTES) {
          problems.add(what + " is too large to be a key");
        } else {
          byte[] bytes = readNoFollow(p);
          if (!Hashes.sha256(bytes).equals(listed.get(name))) problems.add(what + " does not match its SHA-256 in " + Manifest.FILE);
          else keys.put(name, bytes);
        }
      }
    }
    for (String name : listed.keySet()) {
      if (!keys.containsKey(name) && attributes(dir.resolve(name)) == null) problems.add(shown + "/" + name + " (listed in " + Manifest.FILE + ") is missing");
    }
    refuseIf(problems);
    check(keys, shown);
    return keys;
  }

  /** The file's own attributes (a link is reported as a link), or null when there is nothing there. */
  static BasicFileAttributes attributes(Path p) throws IOException {
    try {
      return Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    } catch (NoSuchFileException e) {
      return null;
    }
  }

  /** Reads a file whose last path element must not be a link (O_NOFOLLOW). */
  static byte[] readNoFollow(Path p) throws IOException {
    try (SeekableByteChannel ch = Files.newByteChannel(p, Set.of(StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS))) {
      long size = ch.size();
      if (size > MAX_BYTES) throw new Refused(p.getFileName() + " is too large");
      ByteBuffer buf = ByteBuffer.allocate((int) size + 1);
      while (ch.read(buf) > 0 && buf.hasRemaining()) {
        // read to the end
      }
      if (buf.position() > size) throw new Refused(p.getFileName() + " changed while it was read");
      byte[] out = new byte[buf.position()];
      buf.flip().get(out);
      return out;
    }
  }

  /** Names and contents of the expected form, pairs that belong together, a key to sign with. */
  static void check(SortedMap<String, byte[]> keys, String where) {
    List<String> problems = new ArrayList<>();
    SortedMap<String, PrivateKey> privates = new TreeMap<>();
    SortedMap<String, PublicKey> publics = new TreeMap<>();
    for (Map.Entry<String, byte[]> e : keys.entrySet()) {
      Matcher n = NAME.matcher(e.getKey());
      if (!n.matches()) {
        problems.add(where + "/" + Printable.of(e.getKey()) + " is not a signing key file name");
        continue;
      }
      boolean isPrivate = n.group(2).equals("private");
      try {
        Key k = parse(e.getValue(), isPrivate);
        if (isPrivate) privates.put(n.group(1), (PrivateKey) k);
        else publics.put(n.group(1), (PublicKey) k);
      } catch (IllegalArgumentException bad) {
        problems.add(where + "/" + e.getKey() + " " + bad.getMessage());
      }
    }
    for (Map.Entry<String, PrivateKey> e : privates.entrySet()) {
      PublicKey pub = publics.get(e.getKey());
      if (pub != null && !belongTogether(e.getValue(), pub)) {
        problems.add(where + ": " + e.getKey() + ".private.pem and " + e.getKey() + ".public.pem are not one key pair");
      }
    }
    refuseIf(problems);
    if (privates.isEmpty()) {
      throw new Refused(where + " holds no signing key pair (<kid>.private.pem with its <kid>.public.pem): without it no token verifies");
    }
    String signing = privates.lastKey();
    if (!publics.containsKey(signing)) {
      throw new Refused(where + ": " + signing + ".public.pem is missing, and " + signing + ".private.pem (the greatest kid) is the key that signs");
    }
  }

  private static Key parse(byte[] bytes, boolean isPrivate) {
    String type = isPrivate ? "PRIVATE" : "PUBLIC";
    for (byte b : bytes) {
      if (b != '\n' && (b < 0x20 || b > 0x7e)) throw new IllegalArgumentException("is not a PEM text file");
    }
    Matcher m = PEM.matcher(new String(bytes, StandardCharsets.US_ASCII));
    if (!m.matches() || !m.group(1).equals(type)) {
      throw new IllegalArgumentException("is not one \"-----BEGIN " + type + " KEY-----\" PEM block");
    }
    Key key;
    try {
      byte[] der = Base64.getMimeDecoder().decode(m.group(2));
      KeyFactory ec = KeyFactory.getInstance("EC");
      key = isPrivate ? ec.generatePrivate(new PKCS8EncodedKeySpec(der)) : ec.generatePublic(new X509EncodedKeySpec(der));
    } catch (GeneralSecurityException | IllegalArgumentException e) {
      throw new IllegalArgumentException("is not an EC " + type.toLowerCase(java.util.Locale.ROOT) + " key");
    }
    if (!(key instanceof ECKey ecKey) || !isP256(ecKey.getParams())) throw new IllegalArgumentException("is not a P-256 (ES256) key");
    return key;
  }

  private static boolean isP256(ECParameterSpec params) {
    try {
      AlgorithmParameters p = AlgorithmParameters.getInstance("EC");
      p.init(new ECGenParameterSpec("secp256r1"));
      ECParameterSpec want = p.getParameterSpec(ECParameterSpec.class);
      return params.getOrder().equals(want.getOrder()) && params.getCurve().equals(want.getCurve())
          && params.getGenerator().equals(want.getGenerator());
    } catch (GeneralSecurityException e) {
      return false;
    }
  }

  private static boolean belongTogether(PrivateKey priv, PublicKey pub) {
    try {
      byte[] challenge = new byte[32];
      new SecureRandom().nextBytes(challenge);
      Signature s = Signature.getInstance("SHA256withECDSA");
      s.initSign(priv);
      s.update(challenge);
      byte[] sig = s.sign();
      s.initVerify(pub);
      s.update(challenge);
      return s.verify(sig);
    } catch (GeneralSecurityException e) {
      return false;
    }
  }

  /** The target keys folder of a restore: it must not exist, or be an empty folder (not a link). */
  static void checkTarget(Path target) throws IOException {
    BasicFileAttributes a = attributes(target);
    if (a == null) return;
    if (a.isSymbolicLink()) throw new Refused("the keys folder " + target + " is a symbolic link: restore into a new folder");
    if (!a.isDirectory()) throw new Refused("the keys folder " + target + " exists and is not a folder: restore into a new one");
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(target)) {
      if (entries.iterator().hasNext()) throw new Refused("the keys folder " + target + " is not empty: restore into a new one");
    }
  }

  /**
   * Writes {@code keys} into a new hidden folder beside {@code target} (0700, files 0600, synced), to be
   * renamed to {@code target} once the database has committed.
   */
  static Path stage(Path target, SortedMap<String, byte[]> keys) throws IOException {
    Path abs = target.toAbsolutePath().normalize();
    Path parent = abs.getParent();
    Files.createDirectories(parent);
    byte[] random = new byte[6];
    new SecureRandom().nextBytes(random);
    Path staging = parent.resolve("." + abs.getFileName() + ".restore-" + HexFormat.of().formatHex(random));
    Files.createDirectory(staging, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    try {
      Files.setPosixFilePermissions(staging, PosixFilePermissions.fromString("rwx------"));
      for (Map.Entry<String, byte[]> e : keys.entrySet()) {
        Path f = staging.resolve(e.getKey());
        try (FileChannel ch = FileChannel.open(f, EnumSet.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))) {
          ch.write(ByteBuffer.wrap(e.getValue()));
          ch.force(true);
        }
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-------"));
      }
      try (FileChannel dir = FileChannel.open(staging, StandardOpenOption.READ)) {
        dir.force(true);
      } catch (IOException ignored) {
        // not every file system syncs a folder
      }
      return staging;
    } catch (IOException | RuntimeException e) {
      Folders.deleteQuietly(staging);
      throw e;
    }
  }

  private static void refuseIf(List<String> problems) {
    if (problems.isEmpty()) return;
    List<String> shown = problems.size() > MAX_PROBLEMS ? problems.subList(0, MAX_PROBLEMS) : problems;
    String more = problems.size() > MAX_PROBLEMS ? "; and " + (problems.size() - MAX_PROBLEMS) + " more" : "";
    throw new Refused(String.join("; ", shown) + more);
  }
}
