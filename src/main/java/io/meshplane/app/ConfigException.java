package io.meshplane.app;

/** A setting that cannot be used; the message names the key so an operator can fix it. */
public final class ConfigException extends RuntimeException {
  public ConfigException(String message) {
    super(message);
  }
}
