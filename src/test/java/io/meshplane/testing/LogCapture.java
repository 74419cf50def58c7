package io.meshplane.testing;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.LoggerFactory;

/**
 * Collects the log events a test must never cause: anything at ERROR, and any event that carries a
 * stack trace. Attached to the root logger of this JVM while open.
 */
public final class LogCapture extends AppenderBase<ILoggingEvent> implements AutoCloseable {
  private final List<ILoggingEvent> events = new CopyOnWriteArrayList<>();
  private final Logger root;

  private LogCapture() {
    LoggerContext context = (LoggerContext) LoggerFactory.getILoggerFactory();
    root = context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    setContext(context);
    setName("test-capture");
  }

  public static LogCapture attach() {
    LogCapture c = new LogCapture();
    c.start();
    c.root.addAppender(c);
    return c;
  }

  @Override
  protected void append(ILoggingEvent e) {
    if (e.getLevel().isGreaterOrEqual(Level.ERROR) || e.getThrowableProxy() != null) events.add(e);
  }

  /** The captured events, one line each ({@code LEVEL logger: message [exception]}). */
  public List<String> problems() {
    List<String> out = new ArrayList<>();
    for (ILoggingEvent e : events) {
      out.add(e.getLevel() + " " + e.getLoggerName() + ": " + e.getFormattedMessage()
          + (e.getThrowableProxy() == null ? "" : " [" + e.getThrowableProxy().getClassName() + ": " + e.getThrowableProxy().getMessage() + "]"));
    }
    return out;
  }

  public void clear() {
    events.clear();
  }

  @Override
  public void close() {
    root.detachAppender(this);
    stop();
  }
}
