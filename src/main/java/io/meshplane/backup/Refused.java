package io.meshplane.backup;

/**
 * A snapshot command refused what it was given (exit 2): a bad option, a snapshot that does not
 * verify or does not hold what a Meshplane snapshot holds, a target that is not empty, a role that
 * could run code on the server. The message names what is wrong and is shown as it is, without a
 * stack trace; it never holds a password or key material.
 */
final class Refused extends RuntimeException {
  private static final long serialVersionUID = 1L;

  Refused(String message) {
    super(message, null, false, false);
  }
}
