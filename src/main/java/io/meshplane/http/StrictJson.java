package io.meshplane.http;

import io.meshplane.common.StrictJsonReader;
import io.vertx.core.json.JsonObject;

/**
 * Request bodies as strict JSON: one JSON object, read by {@link StrictJsonReader} (well-formed UTF-8,
 * no comments or duplicate keys, finite numbers, depth {@value StrictJsonReader#MAX_DEPTH}); a problem
 * is a 400 naming the field at fault, or {@link #BODY} for the body as a whole.
 */
final class StrictJson {
  /** The field name used when a problem concerns the body as a whole rather than one field in it. */
  public static final String BODY = StrictJsonReader.BODY;

  private StrictJson() {}

  /** Parses a request body that must be one JSON object. Throws {@code Refusal} (400) naming the field at fault. */
  public static JsonObject parseObject(byte[] bytes) {
    return StrictJsonReader.parseObject(bytes);
  }
}
