package io.meshplane.ops;

import java.util.concurrent.atomic.LongAdder;

/**
 * How many operations this replica has closed since it started, by outcome: each operation is closed
 * by exactly one replica (the one whose transaction closed its row), so the sum over the replicas is
 * the mesh's. Cumulative: a reader takes differences between two reads. The operations feature owns
 * the counts; others read them through this door.
 */
public interface OperationOutcomes {
  long succeeded();

  long failed();

  long expired();

  /** The operations feature's own counts. */
  final class Counts implements OperationOutcomes {
    private final LongAdder succeeded = new LongAdder();
    private final LongAdder failed = new LongAdder();
    private final LongAdder expired = new LongAdder();

    void committed(String status) {
      switch (status) {
        case "succeeded" -> succeeded.increment();
        case "failed" -> failed.increment();
        case "expired" -> expired.increment();
        default -> throw new IllegalArgumentException("not a final status: " + status);
      }
    }

    @Override
    public long succeeded() {
      return succeeded.sum();
    }

    @Override
    public long failed() {
      return failed.sum();
    }

    @Override
    public long expired() {
      return expired.sum();
    }
  }
}
