package io.meshplane.meshca;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The CA keys at rest: sealed with the secret, bound to their row's id, refused with another secret or on another row. */
class KeyVaultTest {
  static final byte[] SECRET = "correct horse battery staple, 32+ bytes long".getBytes(StandardCharsets.UTF_8);
  static final byte[] KEY = Pki.p256().getPrivate().getEncoded();

  @Test
  void aSealedKeyOpensWithTheSameSecretOnTheSameRow() throws Exception {
    byte[] sealed = new KeyVault(SECRET).seal("ca_a", KEY);
    assertEquals(KeyVault.V1, sealed[0], "the format's version comes first");
    assertEquals(1 + 12 + KEY.length + 16, sealed.length, "v1 ‖ nonce ‖ ciphertext ‖ tag");
    assertFalse(new String(sealed, StandardCharsets.ISO_8859_1).contains(new String(KEY, 20, 16, StandardCharsets.ISO_8859_1)),
        "the key is not in clear");
    // another vault made from the same secret (another replica) opens it
    assertArrayEquals(KEY, new KeyVault(SECRET.clone()).open("ca_a", sealed));
    // two seals of one key differ (a fresh nonce each)
    assertFalse(java.util.Arrays.equals(sealed, new KeyVault(SECRET).seal("ca_a", KEY)));
  }

  @Test
  void anotherSecretDoesNotOpenIt() {
    byte[] sealed = new KeyVault(SECRET).seal("ca_a", KEY);
    byte[] other = "another secret that is also long enough!".getBytes(StandardCharsets.UTF_8);
    assertThrows(KeyVault.WrongSecret.class, () -> new KeyVault(other).open("ca_a", sealed));
  }

  @Test
  void aRowCopiedOntoAnotherIdDoesNotOpen() {
    byte[] sealed = new KeyVault(SECRET).seal("ca_a", KEY);
    KeyVault.WrongSecret e = assertThrows(KeyVault.WrongSecret.class, () -> new KeyVault(SECRET).open("ca_b", sealed));
    assertTrue(e.getMessage().contains("ca_b"), e.getMessage());
  }

  @Test
  void alteredBytesOrAnotherFormatDoNotOpen() {
    byte[] sealed = new KeyVault(SECRET).seal("ca_a", KEY);
    byte[] flipped = sealed.clone();
    flipped[20] ^= 1;
    assertThrows(KeyVault.WrongSecret.class, () -> new KeyVault(SECRET).open("ca_a", flipped));
    byte[] v2 = sealed.clone();
    v2[0] = 2;
    assertThrows(KeyVault.WrongSecret.class, () -> new KeyVault(SECRET).open("ca_a", v2));
    assertThrows(KeyVault.WrongSecret.class, () -> new KeyVault(SECRET).open("ca_a", new byte[5]));
  }

  @Test
  void aShortSecretIsRefused() {
    assertThrows(IllegalArgumentException.class, () -> new KeyVault(new byte[31]));
  }

  @Test
  void theGeneratedSecretIsMadeOnceWithMode0600(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("meshca.secret");
    byte[] first = KeyVault.fileSecret(file);
    assertTrue(first.length >= 32);
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
    assertArrayEquals(first, KeyVault.fileSecret(file), "read again, not made again");
    try (var files = Files.list(dir)) {
      assertEquals(1, files.count(), "no temporary file is left");
    }
  }
}
