package io.meshplane.agent;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * The reference agent's state directory ({@code --state-dir}, mode 0700). Every file is created 0600
 * from the start (never widened, then narrowed) and replaced atomically: written to a temporary file in
 * the same directory, forced to disk, then moved over the old one, so a crash leaves the old file or
 * the new one, never half of either. Blocking: called off the event loop.
 *
 * <ul>
 *   <li>{@code node.json}: {@code {id, name, address, tags, coordinator, enrolled_at}}</li>
 *   <li>{@code credential.json}: {@code {token, expires}}, the node's agent credential (a secret)</li>
 *   <li>{@code key.json}: {@code {public_key, private_key, created_at}}, the X25519 key pair (a secret)</li>
 *   <li>{@code state.json}: {@code {relay, drained, commands}}, the relay in use, the ingress drained and
 *       the last 256 executed commands with their results</li>
 * </ul>
 */
final class StateDir {
  static final String NODE = "node.json";
  static final String CREDENTIAL = "credential.json";
  static final String KEY = "key.json";
  static final String STATE = "state.json";
  static final Set<PosixFilePermission> DIR_MODE = PosixFilePermissions.fromString("rwx------");
  static final Set<PosixFilePermission> FILE_MODE = PosixFilePermissions.fromString("rw-------");

  private final Path dir;
  private final boolean posix;

  private StateDir(Path dir, boolean posix) {
    this.dir = dir;
    this.posix = posix;
  }

  /**
   * Opens the directory, creating it 0700 when missing; an existing one that others may read is
   * narrowed to 0700 (and its files to 0600).
   */
  static StateDir open(Path dir) throws IOException {
    Path abs = dir.toAbsolutePath().normalize();
    boolean posix = abs.getFileSystem().supportedFileAttributeViews().contains("posix");
    if (!Files.isDirectory(abs)) {
      if (Files.exists(abs)) throw new IOException(abs + " exists and is not a directory");
      if (abs.getParent() != null) Files.createDirectories(abs.getParent());
      if (posix) Files.createDirectory(abs, PosixFilePermissions.asFileAttribute(DIR_MODE));
      else Files.createDirectory(abs);
    }
    StateDir d = new StateDir(abs, posix);
    if (posix) {
      // creation is subject to the umask, and an existing directory may have been made by hand
      if (!Files.getPosixFilePermissions(abs).equals(DIR_MODE)) Files.setPosixFilePermissions(abs, DIR_MODE);
      for (String name : new String[] {NODE, CREDENTIAL, KEY, STATE}) {
        Path f = abs.resolve(name);
        if (Files.exists(f) && !Files.getPosixFilePermissions(f).equals(FILE_MODE)) Files.setPosixFilePermissions(f, FILE_MODE);
      }
    }
    return d;
  }

  Path path() {
    return dir;
  }

  /** The file's JSON, or null when it does not exist. */
  JsonObject read(String name) throws IOException {
    byte[] bytes;
    try {
      bytes = Files.readAllBytes(dir.resolve(name));
    } catch (NoSuchFileException e) {
      return null;
    }
    try {
      return new JsonObject(new String(bytes, StandardCharsets.UTF_8));
    } catch (DecodeException e) {
      throw new IOException(dir.resolve(name) + " is not valid JSON (" + e.getMessage() + "); move it away to start over", e);
    }
  }

  /** Replaces the file atomically with {@code json}; the file is 0600 from its first byte. */
  void write(String name, JsonObject json) throws IOException {
    Path target = dir.resolve(name);
    FileAttribute<?>[] attrs = posix ? new FileAttribute<?>[] {PosixFilePermissions.asFileAttribute(FILE_MODE)} : new FileAttribute<?>[0];
    Path tmp = Files.createTempFile(dir, "." + name + ".", ".tmp", attrs);
    try {
      try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
        ByteBuffer buf = ByteBuffer.wrap(json.encodePrettily().getBytes(StandardCharsets.UTF_8));
        while (buf.hasRemaining()) ch.write(buf);
        ch.force(true);
      }
      try {
        Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      } catch (AtomicMoveNotSupportedException e) {
        Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
      }
      syncDirectory();
    } finally {
      Files.deleteIfExists(tmp);
    }
  }

  /** Makes the rename itself durable (Linux: fsync on the directory). */
  private void syncDirectory() {
    try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
      ch.force(true);
    } catch (IOException | UnsupportedOperationException notSupported) {
      // some file systems cannot open a directory: the rename is still atomic
    }
  }
}
