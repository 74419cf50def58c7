package io.meshplane.audit;

import io.meshplane.access.Caller;

/** Who did something, as the audit trail names it (API.md §7): {@code token}, {@code node}, {@code user} or {@code cli}. */
public record Actor(String type, String id, String name) {
  public static Actor of(Caller caller) {
    return new Actor(caller.kind().wire, caller.id(), caller.name());
  }

  /** The coordinator itself (an operation that expired): {@code what} names the job. */
  public static Actor system(String what) {
    return new Actor("system", "meshplane", what);
  }

  /** The command line, run by an operating-system user. */
  public static Actor cli(String osUser) {
    return new Actor("cli", "cli", osUser);
  }
}
