package io.meshplane.agent;

import java.nio.file.Path;
import java.util.List;

/** Starts a reference agent in the test's JVM, for tests outside this package (the dashboard's re-key). */
public final class TestAgents {
  private TestAgents() {}

  /** An agent that enrolls with {@code enrollToken} at {@code coordinatorUrl}, keeps its state in {@code stateDir}, listens on a free port. */
  public static NodeAgent start(String coordinatorUrl, String enrollToken, String name, List<String> tags, Path stateDir) {
    return NodeAgent.start(new NodeAgent.Settings(Coordinators.parse(List.of(coordinatorUrl)), enrollToken, name, tags, stateDir,
        "127.0.0.1", 0, Backoff.standard()));
  }
}
