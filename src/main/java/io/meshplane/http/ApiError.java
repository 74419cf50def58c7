package io.meshplane.http;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;

/**
 * A failure with a place in the contract (SPEC §2): HTTP status, stable {@code code}, a detail for
 * people and, for validation, the fields at fault. Thrown or passed to {@code ctx.fail}; the one
 * {@link FailureHandler} turns it into a problem+json response. No stack trace: these are expected.
 */
public final class ApiError extends RuntimeException {
  public record FieldError(String field, String message) {
    JsonObject toJson() {
      return new JsonObject().put("field", field).put("message", message);
    }
  }

  private final int status;
  private final String code;
  private final List<FieldError> errors;

  public ApiError(int status, String code, String detail, List<FieldError> errors) {
    super(detail, null, false, false);
    this.status = status;
    this.code = code;
    this.errors = List.copyOf(errors);
  }

  public ApiError(int status, String code, String detail) {
    this(status, code, detail, List.of());
  }

  public int status() {
    return status;
  }

  public String code() {
    return code;
  }

  public List<FieldError> errors() {
    return errors;
  }

  public JsonArray errorsJson() {
    JsonArray a = new JsonArray();
    for (FieldError e : errors) a.add(e.toJson());
    return a;
  }

  public static ApiError invalid(String field, String message) {
    return new ApiError(400, "invalid_request", field + ": " + message, List.of(new FieldError(field, message)));
  }

  public static ApiError invalid(List<FieldError> errors) {
    String detail = errors.size() == 1
        ? errors.get(0).field() + ": " + errors.get(0).message()
        : errors.size() + " fields are invalid";
    return new ApiError(400, "invalid_request", detail, errors);
  }

  public static ApiError badRequest(String detail) {
    return new ApiError(400, "invalid_request", detail);
  }

  public static ApiError unauthenticated(String detail) {
    return new ApiError(401, "unauthenticated", detail);
  }

  public static ApiError forbidden(String detail) {
    return new ApiError(403, "forbidden", detail);
  }

  public static ApiError notFound(String detail) {
    return new ApiError(404, "not_found", detail);
  }

  public static ApiError conflict(String detail) {
    return new ApiError(409, "conflict", detail);
  }

  public static ApiError unavailable(String detail) {
    return new ApiError(503, "unavailable", detail);
  }
}
