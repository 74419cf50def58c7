package io.meshplane.waf;

import dev.cel.common.values.NullValue;

/** CEL's own values the request model hands out. */
final class CelValues {
  private CelValues() {}

  /** CEL {@code null} (with {@code CelOptions.current()}, native values: not protobuf's NullValue). */
  static final Object NULL = NullValue.NULL_VALUE;
}
