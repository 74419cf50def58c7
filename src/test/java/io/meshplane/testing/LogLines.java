package io.meshplane.testing;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;
import org.slf4j.LoggerFactory;

/**
 * Every line logged in this JVM at or above a level, while open: for tests that check what is logged
 * and how often (a warning once per node, say). {@link LogCapture} collects what must never be logged.
 */
public final class LogLines extends AppenderBase<ILoggingEvent> implements AutoCloseable {
  /** One line: its level, its logger's name, and the message with its arguments filled in. */
  public record Line(Level level, String logger, String message) {
    @Override
    public String toString() {
      return level + " " + logger + ": " + message;
    }
  }

  private final List<Line> lines = new CopyOnWriteArrayList<>();
  private final Level threshold;
  private final Logger root;

  private LogLines(Level threshold) {
    this.threshold = threshold;
    LoggerContext context = (LoggerContext) LoggerFactory.getILoggerFactory();
    root = context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    setContext(context);
    setName("test-lines-" + threshold);
  }

  /** Starts collecting the lines at {@code threshold} or above (lines the loggers' own levels let through). */
  public static LogLines attach(Level threshold) {
    LogLines l = new LogLines(threshold);
    l.start();
    l.root.addAppender(l);
    return l;
  }

  @Override
  protected void append(ILoggingEvent e) {
    if (e.getLevel().isGreaterOrEqual(threshold)) lines.add(new Line(e.getLevel(), e.getLoggerName(), e.getFormattedMessage()));
  }

  /** The lines collected since attached or cleared, in order. */
  public List<Line> lines() {
    return List.copyOf(lines);
  }

  /** The lines at exactly {@code level} whose message passes {@code test}. */
  public List<Line> at(Level level, Predicate<String> test) {
    return lines.stream().filter(l -> l.level().equals(level) && test.test(l.message())).toList();
  }

  public void clear() {
    lines.clear();
  }

  @Override
  public void close() {
    root.detachAppender(this);
    stop();
  }
}
