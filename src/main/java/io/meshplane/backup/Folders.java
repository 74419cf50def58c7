package io.meshplane.backup;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;

/** Private working folders (0700) and their removal (links are removed, never followed). */
final class Folders {
  private Folders() {}

  /** A new folder only this account can enter, under the system's temporary folder. */
  static Path privateTemp(String prefix) throws IOException {
    Path dir = Files.createTempDirectory(prefix, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
    return dir;
  }

  /** Deletes {@code dir} and everything in it; returns false when something could not be deleted. */
  static boolean deleteQuietly(Path dir) {
    if (dir == null) return true;
    try {
      if (!Files.exists(dir, java.nio.file.LinkOption.NOFOLLOW_LINKS)) return true;
      Files.walkFileTree(dir, new SimpleFileVisitor<>() {
        @Override
        public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
          Files.delete(file);
          return FileVisitResult.CONTINUE;
        }

        @Override
        public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
          if (e != null) throw e;
          Files.delete(d);
          return FileVisitResult.CONTINUE;
        }
      });
      return true;
    } catch (IOException e) {
      return false;
    }
  }
}
