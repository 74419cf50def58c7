package io.meshplane.common;

import java.util.List;

/**
 * A request the service refuses, with a place in the contract (API.md §1): what kind of refusal it is,
 * a stable {@code code}, a detail for people and, for validation, the fields at fault. Services and
 * repositories throw it (or fail a future with it) without knowing about HTTP; the one failure
 * handler of the HTTP layer turns its {@link Kind} into a status and a problem+json body. No stack
 * trace: these are expected.
 */
public final class Refusal extends RuntimeException {
  /** What went wrong, independent of the transport (the HTTP layer maps each to one status). */
  public enum Kind {
    INVALID, UNAUTHENTICATED, FORBIDDEN, NOT_FOUND, CONFLICT, TOO_LARGE, UNSUPPORTED_MEDIA_TYPE, URI_TOO_LONG,
    HEADERS_TOO_LARGE, RATE_LIMITED, UNAVAILABLE
  }

  /** One field at fault: its place ({@code scope.team}, {@code ingress[0].name}, {@code (body)}) and why. */
  public record FieldError(String field, String message) {}

  private final Kind kind;
  private final String code;
  private final List<FieldError> errors;
  private final int retryAfterSeconds;

  public Refusal(Kind kind, String code, String detail, List<FieldError> errors) {
    this(kind, code, detail, errors, 0);
  }

  /** @param retryAfterSeconds sent as {@code Retry-After} (0: no header) */
  public Refusal(Kind kind, String code, String detail, List<FieldError> errors, int retryAfterSeconds) {
    super(detail, null, false, false);
    this.kind = kind;
    this.code = code;
    this.errors = List.copyOf(errors);
    this.retryAfterSeconds = retryAfterSeconds;
  }

  public Refusal(Kind kind, String code, String detail) {
    this(kind, code, detail, List.of());
  }

  public Kind kind() {
    return kind;
  }

  public String code() {
    return code;
  }

  public List<FieldError> errors() {
    return errors;
  }

  /** When the client may try again ({@code Retry-After}, seconds); 0 when the refusal says nothing of it. */
  public int retryAfterSeconds() {
    return retryAfterSeconds;
  }

  public static Refusal invalid(String field, String message) {
    return new Refusal(Kind.INVALID, "invalid_request", field + ": " + message, List.of(new FieldError(field, message)));
  }

  public static Refusal invalid(List<FieldError> errors) {
    String detail = errors.size() == 1
        ? errors.get(0).field() + ": " + errors.get(0).message()
        : errors.size() + " fields are invalid";
    return new Refusal(Kind.INVALID, "invalid_request", detail, errors);
  }

  public static Refusal badRequest(String detail) {
    return new Refusal(Kind.INVALID, "invalid_request", detail);
  }

  public static Refusal unauthenticated(String detail) {
    return new Refusal(Kind.UNAUTHENTICATED, "unauthenticated", detail);
  }

  public static Refusal forbidden(String detail) {
    return new Refusal(Kind.FORBIDDEN, "forbidden", detail);
  }

  public static Refusal notFound(String detail) {
    return new Refusal(Kind.NOT_FOUND, "not_found", detail);
  }

  public static Refusal conflict(String detail) {
    return new Refusal(Kind.CONFLICT, "conflict", detail);
  }

  public static Refusal unavailable(String detail) {
    return new Refusal(Kind.UNAVAILABLE, "unavailable", detail);
  }

  /** 503 with {@code Retry-After}: the service is busy (or the work ran out of time); the same request may succeed later. */
  public static Refusal unavailable(String code, String detail, int retryAfterSeconds) {
    return new Refusal(Kind.UNAVAILABLE, code, detail, List.of(), retryAfterSeconds);
  }

  /** 429 with {@code Retry-After}: this caller asked for more at once than it may. */
  public static Refusal rateLimited(String detail, int retryAfterSeconds) {
    return new Refusal(Kind.RATE_LIMITED, "rate_limited", detail, List.of(), retryAfterSeconds);
  }
}
