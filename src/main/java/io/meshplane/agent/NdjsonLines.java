package io.meshplane.agent;

import io.vertx.core.buffer.Buffer;
import java.util.function.Consumer;

/**
 * Splits a byte stream into newline-delimited lines (NDJSON, API.md §11 "The watch stream"): a line may
 * arrive split over several chunks, several lines may arrive in one chunk. Each complete line goes to the
 * consumer without its {@code \n} (and without a {@code \r} before it); empty lines are skipped. A line
 * longer than the cap is a protocol error: {@link #feed} returns false and the splitter stays failed.
 *
 * <p>Holds nothing between chunks unless a chunk ended in the middle of a line (a fleet simulator holds
 * 100,000 of these). Not thread-safe: one stream's event loop feeds it.
 */
final class NdjsonLines {
  /** The longest line a watch stream may send (an answer with thousands of peers stays far below). */
  static final int DEFAULT_MAX_LINE = 4 * 1024 * 1024;

  private final int maxLine;
  /** The start of a line whose end has not arrived yet; null when none. */
  private Buffer pending;
  private boolean failed;

  NdjsonLines(int maxLine) {
    if (maxLine < 1) throw new IllegalArgumentException("maxLine must be at least 1");
    this.maxLine = maxLine;
  }

  /**
   * Takes one chunk and hands every line it completes to {@code lines}, in order.
   *
   * @return false when a line passed the cap (nothing more is delivered, now or later)
   */
  boolean feed(Buffer chunk, Consumer<Buffer> lines) {
    if (failed) return false;
    int from = 0;
    int length = chunk.length();
    for (int i = 0; i < length; i++) {
      if (chunk.getByte(i) != '\n') continue;
      Buffer line;
      if (pending != null) {
        if (pending.length() + (i - from) > maxLine) return fail();
        line = pending.appendBuffer(chunk, from, i - from);
        pending = null;
      } else {
        if (i - from > maxLine) return fail();
        line = chunk.slice(from, i);
      }
      from = i + 1;
      deliver(line, lines);
      if (failed) return false;
    }
    if (from < length) {
      int rest = length - from;
      if ((pending == null ? 0 : pending.length()) + rest > maxLine) return fail();
      // copied: the transport may reuse the chunk's memory once this returns
      if (pending == null) pending = Buffer.buffer(Math.max(64, rest * 2));
      pending.appendBuffer(chunk, from, rest);
    }
    return true;
  }

  private static void deliver(Buffer line, Consumer<Buffer> lines) {
    int n = line.length();
    if (n > 0 && line.getByte(n - 1) == '\r') n--;
    if (n == 0) return;
    lines.accept(n == line.length() ? line : line.slice(0, n));
  }

  private boolean fail() {
    failed = true;
    pending = null;
    return false;
  }

  /** Bytes held of a line not complete yet. */
  int pendingBytes() {
    return pending == null ? 0 : pending.length();
  }

  boolean failed() {
    return failed;
  }

  /** Forgets a partial line (a new stream starts clean). */
  void reset() {
    pending = null;
    failed = false;
  }
}
