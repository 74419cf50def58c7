package io.meshplane.panel;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;

/**
 * One replica's figures for the overview's charts at one resolution: a fixed number of slots, one per
 * bucket of {@code stepMs} (bucket {@code b} starts at {@code b * stepMs} since the epoch). A slot holds
 * what this replica handled in that bucket (heartbeats, operations closed by outcome: summed over the
 * replicas when merged) and, when this replica sampled them, the mesh's node counts (cluster-wide
 * figures: taken from one replica per bucket when merged, never summed). Older buckets are overwritten
 * as time goes on, so the ring never grows.
 *
 * <p>Shared with the other replicas as a compact byte array ({@link #encode}): per slot one flag byte,
 * then each figure as its difference from the figure's previous value (zigzag, variable-length): a
 * steady figure costs one byte, a bucket without a sample one byte in all. The two full rings of a
 * busy replica are 2-4 KB (load-tests/RESULTS.md). Not thread-safe: one sampler writes it.
 */
final class SeriesRing {
  private static final byte VERSION = 2;
  private static final int PRESENT = 1;
  private static final int COUNTS = 2;
  /** Figures per slot: heartbeats, succeeded, failed, expired, then online, stale, pending (-1: not sampled). */
  static final int HEARTBEATS = 0;
  static final int SUCCEEDED = 1;
  static final int FAILED = 2;
  static final int EXPIRED = 3;
  static final int ONLINE = 4;
  static final int STALE = 5;
  static final int PENDING = 6;
  static final int FIGURES = 7;

  final long stepMs;
  final int slots;
  private final long[] bucketOf;
  private final long[][] values;

  SeriesRing(long stepMs, int slots) {
    if (stepMs <= 0 || slots <= 0 || slots > 10_000) throw new IllegalArgumentException("step " + stepMs + ", slots " + slots);
    this.stepMs = stepMs;
    this.slots = slots;
    this.bucketOf = new long[slots];
    java.util.Arrays.fill(bucketOf, Long.MIN_VALUE);
    this.values = new long[slots][FIGURES];
  }

  long bucket(long epochMillis) {
    return Math.floorDiv(epochMillis, stepMs);
  }

  /** The slot of {@code bucket}, emptied first if it held an older bucket. */
  private long[] slot(long bucket) {
    int i = (int) Math.floorMod(bucket, (long) slots);
    if (bucketOf[i] != bucket) {
      bucketOf[i] = bucket;
      java.util.Arrays.fill(values[i], 0);
      values[i][ONLINE] = values[i][STALE] = values[i][PENDING] = -1;
    }
    return values[i];
  }

  /** Adds what this replica handled since its last sample to {@code bucket}. */
  void add(long bucket, long heartbeats, long succeeded, long failed, long expired) {
    long[] v = slot(bucket);
    v[HEARTBEATS] += Math.max(0, heartbeats);
    v[SUCCEEDED] += Math.max(0, succeeded);
    v[FAILED] += Math.max(0, failed);
    v[EXPIRED] += Math.max(0, expired);
  }

  /** The mesh's node counts as sampled in {@code bucket} (a later sample in the same bucket replaces an earlier one). */
  void counts(long bucket, long online, long stale, long pending) {
    long[] v = slot(bucket);
    v[ONLINE] = Math.max(0, online);
    v[STALE] = Math.max(0, stale);
    v[PENDING] = Math.max(0, pending);
  }

  /** The figures of {@code bucket}, or null when this ring holds no sample of it. */
  long[] get(long bucket) {
    int i = (int) Math.floorMod(bucket, (long) slots);
    return bucketOf[i] == bucket ? values[i] : null;
  }

  /** The ring as bytes, its newest bucket being {@code newest} (slots older than the ring's reach are written empty). */
  byte[] encode(long newest) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(slots * 4 + 32);
    out.write(VERSION);
    varint(out, stepMs);
    varint(out, slots);
    varint(out, newest);
    long[] prev = new long[FIGURES]; // each figure is written as its difference from its last written value
    for (long b = newest - slots + 1; b <= newest; b++) {
      long[] v = get(b);
      if (v == null) {
        out.write(0);
        continue;
      }
      boolean counts = v[ONLINE] >= 0;
      out.write(PRESENT | (counts ? COUNTS : 0));
      for (int f = HEARTBEATS; f <= (counts ? PENDING : EXPIRED); f++) {
        varint(out, zigzag(v[f] - prev[f]));
        prev[f] = v[f];
      }
    }
    return out.toByteArray();
  }

  /** A ring read back from {@link #encode}; throws IllegalArgumentException on bytes it cannot read. */
  static SeriesRing decode(byte[] bytes) {
    try {
      ByteBuffer in = ByteBuffer.wrap(bytes);
      if (in.get() != VERSION) throw new IllegalArgumentException("unknown series ring version");
      long step = varint(in);
      int slots = (int) varint(in);
      long newest = varint(in);
      SeriesRing r = new SeriesRing(step, slots);
      long[] prev = new long[FIGURES];
      for (long b = newest - slots + 1; b <= newest; b++) {
        int flags = in.get();
        if ((flags & PRESENT) == 0) continue;
        int last = (flags & COUNTS) != 0 ? PENDING : EXPIRED;
        for (int f = HEARTBEATS; f <= last; f++) {
          prev[f] += unzigzag(varint(in));
          if (prev[f] < 0) throw new IllegalArgumentException("negative figure");
        }
        r.add(b, prev[HEARTBEATS], prev[SUCCEEDED], prev[FAILED], prev[EXPIRED]);
        if (last == PENDING) r.counts(b, prev[ONLINE], prev[STALE], prev[PENDING]);
      }
      return r;
    } catch (java.nio.BufferUnderflowException e) {
      throw new IllegalArgumentException("truncated series ring", e);
    }
  }

  private static long zigzag(long v) {
    return (v << 1) ^ (v >> 63);
  }

  private static long unzigzag(long v) {
    return (v >>> 1) ^ -(v & 1);
  }

  private static void varint(ByteArrayOutputStream out, long v) {
    if (v < 0) throw new IllegalArgumentException("negative figure " + v);
    while ((v & ~0x7FL) != 0) {
      out.write((int) ((v & 0x7F) | 0x80));
      v >>>= 7;
    }
    out.write((int) v);
  }

  private static long varint(ByteBuffer in) {
    long v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      byte b = in.get();
      v |= (long) (b & 0x7F) << shift;
      if ((b & 0x80) == 0) return v;
    }
    throw new IllegalArgumentException("varint too long");
  }
}
